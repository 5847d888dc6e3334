/* Sonora's ring cursors in C, put in the place of libjack's ring calls in `sonora-bench ring`'s JACK loop
 * (BENCHMARKS.md, ring section, "2026-11-28 late"): the bench's own JACK loop then drives Sonora's cursor
 * protocol — positions on own 128-byte lines, each side's cached copy of the other's position refreshed only
 * when it looks short, release stores / acquire loads — over one interleaved byte buffer.
 *   gcc -O2 -shared -fPIC -o /tmp/ring-jack-slot-sonora.so scripts/ring-jack-slot-sonora.c
 *   LD_PRELOAD=/tmp/ring-jack-slot-sonora.so sonora-bench ring --chunks 32 --show-trials   # the "JACK" row is these cursors
 * Only the calls the bench makes are replaced (create, free, write_space, write, read_space, read). The wanted
 * count of a space call is the size of the side's last write or read (the bench moves whole equal chunks). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <jack/ringbuffer.h>

typedef struct {
    jack_ringbuffer_t head; /* buf and size used; the rest untouched */
    char pad0[128 - sizeof(jack_ringbuffer_t)];
    _Alignas(128) _Atomic long w; long cachedRead; long lastWrite; char pad1[128 - 24];
    _Atomic long r; long cachedWrite; long lastRead; char pad2[128 - 24];
} Ring;

jack_ringbuffer_t *jack_ringbuffer_create(size_t sz) {
    size_t n = 1;
    while (n < sz) n <<= 1;
    Ring *ring;
    if (posix_memalign((void **)&ring, 128, sizeof(Ring))) return NULL;
    memset(ring, 0, sizeof *ring);
    ring->head.size = n;
    ring->head.size_mask = n - 1;
    if (posix_memalign((void **)&ring->head.buf, 128, n)) { free(ring); return NULL; }
    memset(ring->head.buf, 0, n);
    ring->lastWrite = ring->lastRead = 1L << 60; /* first look always refreshes */
    return &ring->head;
}

void jack_ringbuffer_free(jack_ringbuffer_t *rb) { free(rb->buf); free(rb); }

static inline long freeSlots(Ring *s, long wanted) {
    long p = atomic_load_explicit(&s->w, memory_order_relaxed);
    long f = (long)s->head.size - (p - s->cachedRead);
    if (f < wanted) {
        s->cachedRead = atomic_load_explicit(&s->r, memory_order_acquire);
        f = (long)s->head.size - (p - s->cachedRead);
    }
    return f;
}

static inline long filledSlots(Ring *s, long wanted) {
    long p = atomic_load_explicit(&s->r, memory_order_relaxed);
    long f = s->cachedWrite - p;
    if (f < wanted) {
        s->cachedWrite = atomic_load_explicit(&s->w, memory_order_acquire);
        f = s->cachedWrite - p;
    }
    return f;
}

size_t jack_ringbuffer_write_space(const jack_ringbuffer_t *rb) { Ring *s = (Ring *)rb; return freeSlots(s, s->lastWrite); }
size_t jack_ringbuffer_read_space(const jack_ringbuffer_t *rb) { Ring *s = (Ring *)rb; return filledSlots(s, s->lastRead); }

size_t jack_ringbuffer_write(jack_ringbuffer_t *rb, const char *src, size_t cnt) {
    Ring *s = (Ring *)rb;
    s->lastWrite = (long)cnt;
    long p = atomic_load_explicit(&s->w, memory_order_relaxed);
    long f = freeSlots(s, (long)cnt), n = (long)cnt < f ? (long)cnt : f;
    if (n <= 0) return 0;
    long start = p & (long)rb->size_mask, first = (long)rb->size - start;
    if (first >= n) memcpy(rb->buf + start, src, n);
    else { memcpy(rb->buf + start, src, first); memcpy(rb->buf, src + first, n - first); }
    atomic_store_explicit(&s->w, p + n, memory_order_release);
    return n;
}

size_t jack_ringbuffer_read(jack_ringbuffer_t *rb, char *dst, size_t cnt) {
    Ring *s = (Ring *)rb;
    s->lastRead = (long)cnt;
    long p = atomic_load_explicit(&s->r, memory_order_relaxed);
    long f = filledSlots(s, (long)cnt), n = (long)cnt < f ? (long)cnt : f;
    if (n <= 0) return 0;
    long start = p & (long)rb->size_mask, first = (long)rb->size - start;
    if (first >= n) memcpy(dst, rb->buf + start, n);
    else { memcpy(dst, rb->buf + start, first); memcpy(dst + first, rb->buf, n - first); }
    atomic_store_explicit(&s->r, p + n, memory_order_release);
    return n;
}
