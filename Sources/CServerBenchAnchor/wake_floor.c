// `sonora-bench server`'s floor for issue 19's CPU goal: what waking one process per client
// once a cycle costs by itself, with no audio, no rings, no mixing — the least any design in
// which each client is a process woken every cycle (the appliance's design, JACK's) pays.
#define _GNU_SOURCE
#include "CServerBenchAnchor.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    atomic_int stop;
    atomic_long cycles;
    atomic_int waker_tid;
} floor_shared;

typedef struct {
    floor_shared *shared;
    int *descriptors;
    int clients;
    long period_ns;
    int priority;
} waker_args;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

// Sum of the scheduler's run time (ns, the first field of schedstat) of a thread or process.
static double schedstat_seconds(const char *path) {
    FILE *file = fopen(path, "r");
    if (!file) return -1;
    unsigned long long ns = 0;
    int read = fscanf(file, "%llu", &ns);
    fclose(file);
    return read == 1 ? (double)ns / 1e9 : -1;
}

static void set_fifo(int priority) {
    if (priority <= 0) return;
    struct sched_param param = {.sched_priority = priority};
    sched_setscheduler(0, SCHED_FIFO, &param);  // refused without the right: then normal priority, as stated by the caller
}

static void *waker(void *raw) {
    waker_args *args = raw;
    set_fifo(args->priority);
    atomic_store(&args->shared->waker_tid, (int)syscall(SYS_gettid));
    long long next = now_ns();
    const uint64_t one = 1;
    while (!atomic_load_explicit(&args->shared->stop, memory_order_relaxed)) {
        next += args->period_ns;
        struct timespec deadline = {.tv_sec = next / 1000000000LL, .tv_nsec = next % 1000000000LL};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL) == EINTR) {}
        for (int i = 0; i < args->clients; i++) {
            ssize_t written = write(args->descriptors[i], &one, sizeof one);
            (void)written;
        }
        atomic_fetch_add_explicit(&args->shared->cycles, 1, memory_order_relaxed);
    }
    return NULL;
}

int sonora_wake_floor_run(int clients, double period_seconds, double seconds, int priority, sonora_wake_floor_result *result) {
    memset(result, 0, sizeof *result);
    if (clients < 1 || clients > 256 || !(period_seconds > 0) || !(seconds > 0)) {
        snprintf(result->error, sizeof result->error, "bad arguments: %d clients, period %g s, %g s", clients, period_seconds, seconds);
        return -1;
    }
    floor_shared *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        snprintf(result->error, sizeof result->error, "mmap: %s", strerror(errno));
        return -1;
    }
    int descriptors[256];
    pid_t children[256];
    int made = 0;
    int status = 0;
    for (; made < clients; made++) {
        descriptors[made] = eventfd(0, 0);
        if (descriptors[made] < 0) {
            snprintf(result->error, sizeof result->error, "eventfd: %s", strerror(errno));
            status = -1;
            break;
        }
        pid_t child = fork();
        if (child < 0) {
            snprintf(result->error, sizeof result->error, "fork: %s", strerror(errno));
            close(descriptors[made]);
            status = -1;
            break;
        }
        if (child == 0) {
            // The client: blocks in one read of its eventfd a cycle and does nothing else.
            set_fifo(priority);
            uint64_t value;
            while (!atomic_load_explicit(&shared->stop, memory_order_relaxed)) {
                if (read(descriptors[made], &value, sizeof value) < 0 && errno != EINTR) break;
            }
            _exit(0);
        }
        children[made] = child;
    }
    pthread_t thread;
    waker_args args = {.shared = shared, .descriptors = descriptors, .clients = made, .period_ns = (long)(period_seconds * 1e9), .priority = priority};
    int started = status == 0 && pthread_create(&thread, NULL, waker, &args) == 0;
    if (status == 0 && !started) {
        snprintf(result->error, sizeof result->error, "pthread_create failed");
        status = -1;
    }
    if (started) {
        usleep(500000);  // past start-up, as the other contenders
        char path[64];
        int tid = atomic_load(&shared->waker_tid);
        double waker_before, waker_after, clients_before = 0, clients_after = 0;
        snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
        long cycles_before = atomic_load(&shared->cycles);
        waker_before = schedstat_seconds(path);
        for (int i = 0; i < made; i++) {
            char child_path[64];
            snprintf(child_path, sizeof child_path, "/proc/%d/schedstat", (int)children[i]);
            clients_before += schedstat_seconds(child_path);
        }
        usleep((useconds_t)(seconds * 1e6));
        long cycles_after = atomic_load(&shared->cycles);
        waker_after = schedstat_seconds(path);
        for (int i = 0; i < made; i++) {
            char child_path[64];
            snprintf(child_path, sizeof child_path, "/proc/%d/schedstat", (int)children[i]);
            clients_after += schedstat_seconds(child_path);
        }
        result->cycles = cycles_after - cycles_before;
        result->waker_cpu_seconds = waker_after - waker_before;
        result->clients_cpu_seconds = clients_after - clients_before;
        atomic_store(&shared->stop, 1);
        pthread_join(thread, NULL);
        if (waker_before < 0 || waker_after < 0) {
            snprintf(result->error, sizeof result->error, "the waker's schedstat could not be read");
            status = -1;
        }
    }
    atomic_store(&shared->stop, 1);
    const uint64_t one = 1;
    for (int i = 0; i < made; i++) {
        ssize_t written = write(descriptors[i], &one, sizeof one);  // lets a blocked child see `stop`
        (void)written;
    }
    for (int i = 0; i < made; i++) {
        int child_status;
        while (waitpid(children[i], &child_status, 0) < 0 && errno == EINTR) {}
        close(descriptors[i]);
    }
    munmap(shared, sizeof *shared);
    return status;
}
