#ifndef CSONORA_SYSTEM_H
#define CSONORA_SYSTEM_H
// Linux calls that Swift cannot make directly: macros (CPU_SET), CPU control
// registers (MXCSR / FPCR) and _GNU_SOURCE-only functions (memfd_create).
#include <pthread.h>
#include <stddef.h>

/// Pins `thread` to one CPU. Returns 0 or an errno value.
int sonora_thread_set_affinity(pthread_t thread, int cpu);

/// Makes threads created with `attributes` start pinned to one CPU. Returns 0 or an errno value.
int sonora_thread_attr_set_affinity(pthread_attr_t *attributes, int cpu);

/// Names the calling thread (at most 15 bytes are kept). Returns 0 or an errno value.
int sonora_thread_set_name(const char *name);

/// The CPU the calling thread runs on (sched_getcpu), or -1.
int sonora_current_cpu(void);

/// Flushes denormals to zero on the calling thread (x86 FTZ+DAZ, arm64 FPCR.FZ).
/// Returns 1 if the mode is supported on this CPU, else 0.
int sonora_flush_denormals(void);

/// Returns 1 if the calling thread currently flushes denormals to zero.
int sonora_denormals_flushed(void);

/// A CPU hint for spin-wait loops (x86 `pause`, arm64 `yield`), repeated `count` times.
static inline void sonora_cpu_relax(int count) {
    for (int i = 0; i < count; i++) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
    }
}

/// memfd_create(name, MFD_CLOEXEC). Returns a file descriptor or -1 with errno set.
int sonora_memfd_create(const char *name);

/// The calling thread's errno (Glibc's errno is a macro over a TLS slot).
int sonora_errno(void);

#endif
