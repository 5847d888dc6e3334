#define _GNU_SOURCE
#include "CSonoraSystem.h"
#include <errno.h>
#include <sched.h>
#include <sys/mman.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

int sonora_thread_set_affinity(pthread_t thread, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(thread, sizeof(set), &set);
}

int sonora_thread_attr_set_affinity(pthread_attr_t *attributes, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_attr_setaffinity_np(attributes, sizeof(set), &set);
}

int sonora_thread_set_name(const char *name) {
    char truncated[16];
    size_t i = 0;
    for (; name[i] && i < 15; i++) truncated[i] = name[i];
    truncated[i] = 0;
    return pthread_setname_np(pthread_self(), truncated);
}

int sonora_current_cpu(void) {
    return sched_getcpu();
}

int sonora_flush_denormals(void) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(_mm_getcsr() | 0x8040); /* FTZ (bit 15) | DAZ (bit 6) */
    return 1;
#elif defined(__aarch64__)
    unsigned long fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    fpcr |= (1UL << 24); /* FZ */
    __asm__ __volatile__("msr fpcr, %0" : : "r"(fpcr));
    return 1;
#else
    return 0;
#endif
}

int sonora_denormals_flushed(void) {
#if defined(__x86_64__) || defined(__i386__)
    return (_mm_getcsr() & 0x8040) == 0x8040;
#elif defined(__aarch64__)
    unsigned long fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    return (fpcr >> 24) & 1;
#else
    return 0;
#endif
}

int sonora_memfd_create(const char *name) {
    return memfd_create(name, MFD_CLOEXEC);
}

int sonora_errno(void) {
    return errno;
}
