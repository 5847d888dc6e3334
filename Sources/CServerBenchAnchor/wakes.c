// `sonora-bench io`'s JACK2 lateness anchor: one client whose process callback records the
// time it was woken, every cycle, so JACK's wake-ups are measured as Sonora's I/O thread's are.
#define _GNU_SOURCE
#include "CServerBenchAnchor.h"
#include <jack/jack.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    uint64_t *times;
    long capacity;
    atomic_long count;
    atomic_int xruns;
} wake_recorder;

static int record_wake(jack_nframes_t frames, void *arg) {
    (void)frames;
    wake_recorder *recorder = arg;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long index = atomic_load_explicit(&recorder->count, memory_order_relaxed);
    if (index < recorder->capacity) recorder->times[index] = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
    atomic_store_explicit(&recorder->count, index + 1, memory_order_release);
    return 0;
}

static int count_xrun(void *arg) {
    wake_recorder *recorder = arg;
    atomic_fetch_add(&recorder->xruns, 1);
    return 0;
}

int sonora_jack_wake_times_run(double seconds, uint64_t *times, long capacity, long *count, int *xruns, char *error, size_t error_size) {
    wake_recorder recorder = {.times = times, .capacity = capacity};
    atomic_init(&recorder.count, 0);
    atomic_init(&recorder.xruns, 0);
    jack_status_t status = 0;
    jack_client_t *client = jack_client_open("sonora-bench-wakes", JackNoStartServer, &status);
    if (!client) {
        snprintf(error, error_size, "jack_client_open failed, status 0x%x (is jackd running?)", (unsigned)status);
        return -1;
    }
    jack_set_process_callback(client, record_wake, &recorder);
    jack_set_xrun_callback(client, count_xrun, &recorder);
    if (jack_activate(client) != 0) {
        snprintf(error, error_size, "jack_activate failed");
        jack_client_close(client);
        return -1;
    }
    usleep((useconds_t)(seconds * 1e6));
    jack_deactivate(client);
    jack_client_close(client);
    long n = atomic_load_explicit(&recorder.count, memory_order_acquire);
    *count = n < capacity ? n : capacity;
    *xruns = atomic_load(&recorder.xruns);
    return 0;
}
