#ifndef CSONORA_SYSTEM_H
#define CSONORA_SYSTEM_H
// Linux calls that Swift cannot make directly: macros (CPU_SET), CPU control
// registers (MXCSR / FPCR), _GNU_SOURCE-only functions (memfd_create, seals), eventfd,
// and the CMSG macros of SCM_RIGHTS / SO_PEERCRED.
#include <pthread.h>
#include <stddef.h>
#include <time.h>

/// Pins `thread` to one CPU. Returns 0 or an errno value.
int sonora_thread_set_affinity(pthread_t thread, int cpu);

/// Makes threads created with `attributes` start pinned to one CPU. Returns 0 or an errno value.
int sonora_thread_attr_set_affinity(pthread_attr_t *attributes, int cpu);

/// Names the calling thread (at most 15 bytes are kept). Returns 0 or an errno value.
int sonora_thread_set_name(const char *name);

/// Writes one byte in every page of the next `bytes` of the calling thread's stack, so a
/// realtime thread never takes its first page faults mid-cycle when memory is locked on fault.
void sonora_prefault_stack(size_t bytes);

/// mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT): locks the pages the process has touched
/// and those it touches later, not every page of every mapped library. Returns 0 or -1 with errno.
int sonora_lock_memory_on_fault(void);

/// Unmaps the pages of the process's file-backed, read-only code mappings (the binary's and
/// the libraries' text) that are mapped now: they stay in the page cache and fault back in
/// when run again. Called before locking memory on fault, so what is locked is the code run
/// from then on, not everything start-up ran (argument parsing, YAML, graph building) or the
/// kernel's fault-around mapped beside it (64 KB per fault). A mapping with a written
/// (anonymous) page is left alone. Returns the bytes of mappings dropped.
size_t sonora_drop_mapped_code(void);

/// The CPU the calling thread runs on (sched_getcpu), or -1.
int sonora_current_cpu(void);

/// Flushes denormals to zero on the calling thread (x86 FTZ+DAZ, arm64 FPCR.FZ).
/// Returns 1 if the mode is supported on this CPU, else 0.
int sonora_flush_denormals(void);

/// Returns 1 if the calling thread currently flushes denormals to zero.
int sonora_denormals_flushed(void);

/// clock_gettime's signature, for a clock function called through a pointer.
typedef int (*sonora_clock_function)(clockid_t clock, struct timespec *time);

/// The vDSO's own `__vdso_clock_gettime` (found once through the dynamic linker), or libc's
/// `clock_gettime` where there is no vDSO. Same clocks and values as `clock_gettime`; a cycle
/// that keeps the pointer in its own (warm) state skips the libc wrapper's loads of
/// `_rtld_global_ro` through libc's GOT — two cold pages after each sleep (profile in
/// BENCHMARKS.md, `sonora-bench network`).
sonora_clock_function sonora_vdso_clock_function(void);  // never NULL

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

/// `value`, passed through an empty asm statement: the compiler cannot merge the load that
/// produced it with a neighbouring one. Sonora's render copies a caller's `AudioTimeStamp`
/// field by field through this: the caller has just stored the fields one by one, and a
/// 16-byte load spanning two such stores cannot be forwarded from the store buffer — it waits
/// until both stores reach the cache, behind every store before them (profile in
/// BENCHMARKS.md, `sonora-bench lv2`).
static inline unsigned long long sonora_opaque_u64(unsigned long long value) {
    __asm__("" : "+r"(value));
    return value;
}

/// pipe2(ends, O_NONBLOCK | O_CLOEXEC): both ends non-blocking and close-on-exec, made
/// atomically (no window in which a fork elsewhere inherits them). 0, or -1 with errno set.
int sonora_pipe_nonblocking(int ends[2]);

/// accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC): the connection ready to poll
/// and closed on exec. A descriptor, or -1 with errno set.
int sonora_accept_nonblocking(int listener);

/// memfd_create(name, MFD_CLOEXEC). Returns a file descriptor or -1 with errno set.
int sonora_memfd_create(const char *name);

/// memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING) sized to `size` bytes and sealed
/// against shrinking, growing and further sealing (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
/// so a peer that maps it can never make the owner's mapping fault. Returns a file
/// descriptor or -1 with errno set.
int sonora_memfd_create_sealed(const char *name, size_t size);

/// The seals of a memfd (F_GET_SEALS), or -1 with errno set.
int sonora_memfd_seals(int fd);

/// 1 when `seals` holds shrink, grow and seal; else 0.
int sonora_memfd_seals_complete(int seals);

/// eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC). Returns a file descriptor or -1 with errno set.
int sonora_eventfd(void);

/// Adds 1 to an eventfd (never blocks: a full counter is already a wake-up). No allocation.
void sonora_eventfd_signal(int fd);

/// Reads and clears an eventfd's counter; 0 when it was zero (non-blocking) or on error.
unsigned long long sonora_eventfd_drain(int fd);

/// sendmsg of `length` bytes with `count` (0…8) descriptors as SCM_RIGHTS on the first
/// byte; MSG_NOSIGNAL | MSG_DONTWAIT. Returns bytes sent or -1 with errno set.
long sonora_send_with_fds(int socket, const void *bytes, size_t length, const int *fds, int count);

/// recvmsg of at most `length` bytes (MSG_DONTWAIT unless `blocking`, MSG_CMSG_CLOEXEC);
/// descriptors that came with them are stored in `fds` (at most `capacity`, the rest
/// closed) and counted in `*count`. Returns bytes read, 0 at end of stream, or -1 with errno.
long sonora_receive_with_fds(int socket, void *bytes, size_t length, int *fds, int capacity, int *count, int blocking);

/// The peer's credentials of a connected Unix socket (SO_PEERCRED). Returns 0 or an errno value.
int sonora_peer_credentials(int socket, int *pid, unsigned int *uid, unsigned int *gid);

/// The calling thread's errno (Glibc's errno is a macro over a TLS slot).
int sonora_errno(void);

#endif
