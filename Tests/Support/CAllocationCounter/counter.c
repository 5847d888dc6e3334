#include "CAllocationCounter.h"
#include <errno.h>
#include <stddef.h>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define SONORA_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SONORA_SANITIZED 1
#endif

#ifdef SONORA_SANITIZED
// The sanitizer runtime defines malloc itself; counting is unavailable.
int sonora_allocation_counter_available(void) { return 0; }
void sonora_allocation_counter_begin(void) {}
long sonora_allocation_counter_end(void) { return 0; }
#else

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static __thread int counting;
static __thread long calls;

#include <stdlib.h>
#include <signal.h>
// SONORA_ALLOCATION_TRAP=1 raises SIGTRAP at the first counted call, so a debugger
// shows who allocated.
static int trap_checked, trap_enabled;
static void maybe_trap(void) {
    if (!trap_checked) { trap_checked = 1; const char *v = getenv("SONORA_ALLOCATION_TRAP"); trap_enabled = v && *v == '1'; }
    if (trap_enabled) { counting = 0; raise(SIGTRAP); }
}
#define COUNT() do { if (counting) { calls++; maybe_trap(); } } while (0)

void *malloc(size_t size) { COUNT(); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { COUNT(); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { COUNT(); return __libc_realloc(p, size); }
void free(void *p) { if (p) COUNT(); __libc_free(p); }
void *memalign(size_t alignment, size_t size) { COUNT(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { COUNT(); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    COUNT();
    void *p = __libc_memalign(alignment, size);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

int sonora_allocation_counter_available(void) { return 1; }
void sonora_allocation_counter_begin(void) { calls = 0; counting = 1; }
long sonora_allocation_counter_end(void) { counting = 0; return calls; }
#endif
