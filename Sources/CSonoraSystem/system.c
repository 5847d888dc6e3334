#define _GNU_SOURCE
#include "CSonoraSystem.h"
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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

__attribute__((noinline)) void sonora_prefault_stack(size_t bytes) {
    volatile unsigned char *stack = __builtin_alloca(bytes);
    for (size_t offset = 0; offset < bytes; offset += 4096) stack[offset] = 0;
}

int sonora_lock_memory_on_fault(void) {
#ifdef MCL_ONFAULT
    return mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT);
#else
    errno = EINVAL;
    return -1;
#endif
}

size_t sonora_drop_mapped_code(void) {
    FILE *smaps = fopen("/proc/self/smaps", "re");
    if (!smaps) return 0;
    char line[4096];
    unsigned long start = 0, end = 0;
    int candidate = 0;
    size_t dropped = 0;
    while (fgets(line, sizeof line, smaps)) {
        unsigned long low, high;
        char perms[8];
        int path = 0;
        /* A mapping's header: "start-end perms offset dev inode [path]". */
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &low, &high, perms, &path) == 3 && strchr(line, '-') < strchr(line, ' ')) {
            start = low;
            end = high;
            /* Executable, private, read-only code of a file: its pages are the file's own. */
            candidate = strcmp(perms, "r-xp") == 0 && path > 0 && line[path] == '/';
            continue;
        }
        unsigned long anonymous;
        if (candidate && sscanf(line, "Anonymous: %lu kB", &anonymous) == 1) {
            /* A page written since it was mapped (text relocations, a debugger's breakpoint)
               is the only copy: such a mapping is left alone. */
            if (anonymous == 0 && madvise((void *)start, end - start, MADV_DONTNEED) == 0) dropped += end - start;
            candidate = 0;
        }
    }
    fclose(smaps);
    return dropped;
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

int sonora_memfd_create_sealed(const char *name, size_t size) {
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -1;
    if (ftruncate(fd, (off_t)size) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int sonora_memfd_seals(int fd) {
    return fcntl(fd, F_GET_SEALS);
}

int sonora_memfd_seals_complete(int seals) {
    int wanted = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
    return seals >= 0 && (seals & wanted) == wanted;
}

int sonora_pipe_nonblocking(int ends[2]) {
    return pipe2(ends, O_NONBLOCK | O_CLOEXEC);
}

int sonora_accept_nonblocking(int listener) {
    return accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int sonora_eventfd(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

void sonora_eventfd_signal(int fd) {
    uint64_t one = 1;
    ssize_t written = write(fd, &one, sizeof one);
    (void)written;
}

unsigned long long sonora_eventfd_drain(int fd) {
    uint64_t value = 0;
    if (read(fd, &value, sizeof value) != (ssize_t)sizeof value) return 0;
    return value;
}

long sonora_send_with_fds(int socket, const void *bytes, size_t length, const int *fds, int count) {
    struct iovec part = { .iov_base = (void *)bytes, .iov_len = length };
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    union { char buffer[CMSG_SPACE(8 * sizeof(int))]; struct cmsghdr align; } control;
    if (count > 8) { errno = EINVAL; return -1; }
    if (count > 0) {
        memset(&control, 0, sizeof control);
        message.msg_control = control.buffer;
        message.msg_controllen = CMSG_SPACE((size_t)count * sizeof(int));
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN((size_t)count * sizeof(int));
        memcpy(CMSG_DATA(header), fds, (size_t)count * sizeof(int));
    }
    return (long)sendmsg(socket, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
}

long sonora_receive_with_fds(int socket, void *bytes, size_t length, int *fds, int capacity, int *count, int blocking) {
    struct iovec part = { .iov_base = bytes, .iov_len = length };
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    union { char buffer[CMSG_SPACE(16 * sizeof(int))]; struct cmsghdr align; } control;
    message.msg_control = control.buffer;
    message.msg_controllen = sizeof control.buffer;
    *count = 0;
    ssize_t got = recvmsg(socket, &message, MSG_CMSG_CLOEXEC | (blocking ? 0 : MSG_DONTWAIT));
    if (got < 0) return -1;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        int n = (int)((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int *passed = (int *)CMSG_DATA(header);
        for (int i = 0; i < n; i++) {
            if (*count < capacity) fds[(*count)++] = passed[i];
            else close(passed[i]);
        }
    }
    return (long)got;
}

int sonora_peer_credentials(int socket, int *pid, unsigned int *uid, unsigned int *gid) {
    struct ucred credentials;
    socklen_t size = sizeof credentials;
    if (getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) return errno;
    *pid = credentials.pid;
    *uid = credentials.uid;
    *gid = credentials.gid;
    return 0;
}

int sonora_errno(void) {
    return errno;
}

sonora_clock_function sonora_vdso_clock_function(void) {
    // glibc lists the vDSO among the loaded objects under this name; RTLD_NOLOAD never loads a file.
    void *vdso = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *function = vdso ? dlsym(vdso, "__vdso_clock_gettime") : NULL;
    if (vdso) dlclose(vdso);
    return function ? (sonora_clock_function)function : clock_gettime;
}
