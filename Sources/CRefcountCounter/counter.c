#define _GNU_SOURCE
#include "CRefcountCounter.h"
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>

// The Swift runtime's entry points as the compiler calls them on x86-64 and arm64 Linux:
// the C calling convention (the runtime's own code clobbers only caller-saved registers).
typedef void *(*retain_fn)(void *);
typedef void *(*retain_n_fn)(void *, uint32_t);
typedef void (*release_fn)(void *);
typedef void (*release_n_fn)(void *, uint32_t);

static retain_fn real_retain, real_bridge_retain;
static retain_n_fn real_retain_n, real_bridge_retain_n;
static release_fn real_release, real_bridge_release;
static release_n_fn real_release_n, real_bridge_release_n;

// A plain global first, so every other command of the program pays one predictable branch per
// operation, not a thread-local access.
static int armed;
static __thread int counting, trapping;
static __thread long retains, releases;
// Set by the first call that came through here: proof that the program's calls are bound to
// this file (not only that the symbols exist).
static int seen;

// On first use, not in a constructor: shared libraries' initializers (Foundation's) retain
// before the executable's constructors run.
static void resolve(void) {
    real_retain = (retain_fn)dlsym(RTLD_NEXT, "swift_retain");
    real_retain_n = (retain_n_fn)dlsym(RTLD_NEXT, "swift_retain_n");
    real_release = (release_fn)dlsym(RTLD_NEXT, "swift_release");
    real_release_n = (release_n_fn)dlsym(RTLD_NEXT, "swift_release_n");
    real_bridge_retain = (retain_fn)dlsym(RTLD_NEXT, "swift_bridgeObjectRetain");
    real_bridge_retain_n = (retain_n_fn)dlsym(RTLD_NEXT, "swift_bridgeObjectRetain_n");
    real_bridge_release = (release_fn)dlsym(RTLD_NEXT, "swift_bridgeObjectRelease");
    // Last, and published with release order: once it is seen set, all are.
    __atomic_store_n(&real_bridge_release_n, (release_n_fn)dlsym(RTLD_NEXT, "swift_bridgeObjectRelease_n"), __ATOMIC_RELEASE);
}

// SONORA_REFCOUNT_TRAP=1 raises SIGTRAP at the first counted operation, so a debugger shows
// who retained (as SONORA_ALLOCATION_TRAP does for the tests' heap calls).
// SONORA_REFCOUNT_TRAP=2 traps at the first counted heap call instead.
static int trap_checked, trap_mode;
// The object of the operation that trapped: in the debugger, `x/gx sonora_refcount_trapped_object`
// gives its metadata and `info symbol` on that its type.
void *volatile sonora_refcount_trapped_object;
static void maybe_trap(int kind) {
    if (!trap_checked) { trap_checked = 1; const char *v = getenv("SONORA_REFCOUNT_TRAP"); trap_mode = v && (*v == '1' || *v == '2') ? *v - '0' : 0; }
    if (trap_mode == kind && trapping) { counting = 0; raise(SIGTRAP); }
}

#define COUNT(what, n, object) do { \
    if (__builtin_expect(!__atomic_load_n(&real_bridge_release_n, __ATOMIC_ACQUIRE), 0)) resolve(); \
    if (!seen) seen = 1; \
    if (__builtin_expect(armed, 0) && counting) { what += (n); sonora_refcount_trapped_object = (object); maybe_trap(1); } \
} while (0)

void *swift_retain(void *object) { COUNT(retains, 1, object); return real_retain(object); }
void *swift_retain_n(void *object, uint32_t n) { COUNT(retains, n, object); return real_retain_n(object, n); }
void swift_release(void *object) { COUNT(releases, 1, object); real_release(object); }
void swift_release_n(void *object, uint32_t n) { COUNT(releases, n, object); real_release_n(object, n); }
void *swift_bridgeObjectRetain(void *object) { COUNT(retains, 1, object); return real_bridge_retain(object); }
void *swift_bridgeObjectRetain_n(void *object, uint32_t n) { COUNT(retains, n, object); return real_bridge_retain_n(object, n); }
void swift_bridgeObjectRelease(void *object) { COUNT(releases, 1, object); real_bridge_release(object); }
void swift_bridgeObjectRelease_n(void *object, uint32_t n) { COUNT(releases, n, object); real_bridge_release_n(object, n); }

// The heap's entry points, counted the same way (the realtime rules forbid heap calls too; the
// tests prove it per unit with their own counter, this counts on the rigs' device threads).
// Forwarded to glibc's own (`__libc_*`: no dlsym, which may allocate itself). Sanitized builds
// define malloc in their runtime: no heap counting there (`sonora_refcount_counter_heap_available`).
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define SONORA_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SONORA_SANITIZED 1
#endif

static __thread long heap_calls;

#ifndef SONORA_SANITIZED
#include <errno.h>
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

#define COUNT_HEAP() do { \
    if (__builtin_expect(armed, 0) && counting) { heap_calls++; maybe_trap(2); } \
} while (0)

void *malloc(size_t size) { COUNT_HEAP(); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { COUNT_HEAP(); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { COUNT_HEAP(); return __libc_realloc(p, size); }
void free(void *p) { if (p) COUNT_HEAP(); __libc_free(p); }
void *memalign(size_t alignment, size_t size) { COUNT_HEAP(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { COUNT_HEAP(); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    COUNT_HEAP();
    void *p = __libc_memalign(alignment, size);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
int sonora_refcount_counter_heap_available(void) { return 1; }
#else
int sonora_refcount_counter_heap_available(void) { return 0; }
#endif

long sonora_refcount_counter_heap_calls(void) { return heap_calls; }

// One malloc and one free, through pointers the compiler cannot see through (a malloc/free
// pair it can see is removed): the counter's self-check.
void sonora_refcount_counter_heap_touch(void) {
    void *(*volatile allocate)(size_t) = malloc;
    void (*volatile release)(void *) = free;
    release(allocate(64));
}

int sonora_refcount_counter_available(void) {
    if (!real_bridge_release_n) resolve();
    return seen && real_retain && real_retain_n && real_release && real_release_n && real_bridge_retain
        && real_bridge_retain_n && real_bridge_release && real_bridge_release_n;
}

void sonora_refcount_counter_begin(int may_trap) {
    armed = 1;
    trapping = may_trap;
    retains = 0;
    releases = 0;
    heap_calls = 0;
    counting = 1;
}

void sonora_refcount_counter_end(long *out_retains, long *out_releases) {
    counting = 0;
    *out_retains = retains;
    *out_releases = releases;
}
