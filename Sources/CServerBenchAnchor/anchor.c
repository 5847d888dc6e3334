// JACK2 clients in the style of jack_simple_client (example-clients/simple_client.c), run as
// threads of one process (libjack allows several jack_client_t per process; each gets its own
// realtime thread from the server, as a client process would).
#define _GNU_SOURCE
#include "CServerBenchAnchor.h"
#include <jack/jack.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TABLE_SIZE 200
#define MAX_CLIENTS 256

void sonora_simple_source_init(sonora_simple_source *source, int offset) {
    for (int i = 0; i < TABLE_SIZE; i++) source->table[i] = 0.2f * (float)sin(((double)i / (double)TABLE_SIZE) * M_PI * 2.0);
    source->left_phase = offset % TABLE_SIZE;
    source->right_phase = offset % TABLE_SIZE;
}

// As jack_simple_client's process(): left steps by 1, right by 3, through the table.
void sonora_simple_source_fill(sonora_simple_source *source, float *left, float *right, uint32_t frames) {
    for (uint32_t i = 0; i < frames; i++) {
        if (left) left[i] = source->table[source->left_phase];
        if (right) right[i] = source->table[source->right_phase];
        source->left_phase += 1;
        if (source->left_phase >= TABLE_SIZE) source->left_phase -= TABLE_SIZE;
        source->right_phase += 3;
        if (source->right_phase >= TABLE_SIZE) source->right_phase -= TABLE_SIZE;
    }
}

double sonora_process_cpu_seconds(pid_t pid) {
    clockid_t clock;
    if (pid <= 0) {
        clock = CLOCK_PROCESS_CPUTIME_ID;
    } else if (clock_getcpuclockid(pid, &clock) != 0) {
        return -1;
    }
    struct timespec t;
    if (clock_gettime(clock, &t) != 0) return -1;
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

enum { MODE_IDLE, MODE_CHAIN, MODE_SINE };

typedef struct {
    jack_client_t *client;
    jack_port_t *in;
    jack_port_t *out_left;
    jack_port_t *out_right;
    sonora_simple_source source;
    int index;
    int last;
} bench_client;

static _Atomic int mode = MODE_IDLE;
static _Atomic long cycles;
static _Atomic int xruns;
// Chain run: client 0 writes an impulse once `impulse_armed` is set; the last client reports it.
static _Atomic int impulse_armed;
static _Atomic long impulse_written_at = -1;
static _Atomic long impulse_heard_at = -1;

static int process(jack_nframes_t frames, void *argument) {
    bench_client *c = argument;
    float *left = jack_port_get_buffer(c->out_left, frames);
    float *right = jack_port_get_buffer(c->out_right, frames);
    int current = atomic_load_explicit(&mode, memory_order_relaxed);
    if (current == MODE_SINE) {
        sonora_simple_source_fill(&c->source, left, right, frames);
    } else if (current == MODE_CHAIN) {
        const float *in = jack_port_get_buffer(c->in, frames);
        memset(right, 0, frames * sizeof(float));
        if (c->index == 0) {
            memset(left, 0, frames * sizeof(float));
            if (atomic_exchange_explicit(&impulse_armed, 0, memory_order_relaxed)) {
                left[0] = 1.0f;
                atomic_store_explicit(&impulse_written_at, (long)jack_last_frame_time(c->client), memory_order_relaxed);
            }
        } else {
            memcpy(left, in, frames * sizeof(float));
        }
        if (c->last && atomic_load_explicit(&impulse_heard_at, memory_order_relaxed) < 0) {
            for (jack_nframes_t i = 0; i < frames; i++) {
                if (in[i] != 0.0f) {
                    atomic_store_explicit(&impulse_heard_at, (long)jack_last_frame_time(c->client) + (long)i, memory_order_relaxed);
                    break;
                }
            }
        }
    } else {
        memset(left, 0, frames * sizeof(float));
        memset(right, 0, frames * sizeof(float));
    }
    if (c->index == 0) atomic_fetch_add_explicit(&cycles, 1, memory_order_relaxed);
    return 0;
}

static int on_xrun(void *argument) {
    (void)argument;
    atomic_fetch_add_explicit(&xruns, 1, memory_order_relaxed);
    return 0;
}

static void sleep_seconds(double seconds) {
    struct timespec t = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&t, NULL);
}

static void close_all(bench_client *clients, int count) {
    for (int i = count - 1; i >= 0; i--) {
        if (clients[i].client) {
            jack_deactivate(clients[i].client);
            jack_client_close(clients[i].client);
        }
    }
}

int sonora_jack_anchor_run(int count, double seconds, pid_t jackd_pid, sonora_jack_anchor_result *result) {
    memset(result, 0, sizeof *result);
    result->chain_latency_frames = -1;
    result->jackd_cpu_seconds = -1;
    result->jackd_idle_cpu_per_cycle = -1;
    if (count < 2 || count > MAX_CLIENTS) {
        snprintf(result->error, sizeof result->error, "clients must be in 2…%d, not %d", MAX_CLIENTS, count);
        return -1;
    }
    atomic_store(&mode, MODE_IDLE);
    atomic_store(&cycles, 0);
    atomic_store(&xruns, 0);
    atomic_store(&impulse_armed, 0);
    atomic_store(&impulse_written_at, -1);
    atomic_store(&impulse_heard_at, -1);
    bench_client *clients = calloc((size_t)count, sizeof *clients);
    if (!clients) {
        snprintf(result->error, sizeof result->error, "out of memory");
        return -1;
    }
    for (int i = 0; i < count; i++) {
        char name[32];
        snprintf(name, sizeof name, "simple%d", i);
        jack_status_t status;
        bench_client *c = &clients[i];
        c->client = jack_client_open(name, JackNoStartServer, &status);
        if (!c->client) {
            snprintf(result->error, sizeof result->error, "jack_client_open(%s) failed, status 0x%x (is jackd running?)", name, (unsigned)status);
            close_all(clients, count);
            free(clients);
            return -1;
        }
        c->index = i;
        c->last = i == count - 1;
        sonora_simple_source_init(&c->source, i * 13);
        c->in = jack_port_register(c->client, "input", JACK_DEFAULT_AUDIO_TYPE, JackPortIsInput, 0);
        c->out_left = jack_port_register(c->client, "output1", JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
        c->out_right = jack_port_register(c->client, "output2", JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
        if (!c->in || !c->out_left || !c->out_right) {
            snprintf(result->error, sizeof result->error, "jack_port_register failed for %s", name);
            close_all(clients, count);
            free(clients);
            return -1;
        }
        jack_set_process_callback(c->client, process, c);
        if (i == 0) jack_set_xrun_callback(c->client, on_xrun, NULL);
    }
    result->sample_rate = jack_get_sample_rate(clients[0].client);
    result->period = jack_get_buffer_size(clients[0].client);
    double cycle_seconds = (double)result->period / (double)result->sample_rate;

    // jackd alone: its CPU per cycle with no client active (the driver's own cost).
    if (jackd_pid > 0) {
        double cpu0 = sonora_process_cpu_seconds(jackd_pid), t0 = now();
        sleep_seconds(0.5);
        double cpu1 = sonora_process_cpu_seconds(jackd_pid), t1 = now();
        if (cpu0 >= 0 && cpu1 >= 0) result->jackd_idle_cpu_per_cycle = (cpu1 - cpu0) / ((t1 - t0) / cycle_seconds);
    }

    for (int i = 0; i < count; i++) {
        if (jack_activate(clients[i].client) != 0) {
            snprintf(result->error, sizeof result->error, "jack_activate failed for client %d", i);
            close_all(clients, count);
            free(clients);
            return -1;
        }
    }

    // Chain: client i's output1 → client i+1's input, each copying.
    atomic_store(&mode, MODE_CHAIN);
    for (int i = 0; i + 1 < count; i++) {
        if (jack_connect(clients[i].client, jack_port_name(clients[i].out_left), jack_port_name(clients[i + 1].in)) != 0) {
            snprintf(result->error, sizeof result->error, "jack_connect failed in the chain at client %d", i);
            close_all(clients, count);
            free(clients);
            return -1;
        }
    }
    result->chain_hops = count - 1;
    sleep_seconds(0.2);  // the graph settled
    atomic_store(&impulse_armed, 1);
    for (int tries = 0; tries < 100 && atomic_load(&impulse_heard_at) < 0; tries++) sleep_seconds(0.01);
    long written = atomic_load(&impulse_written_at), heard = atomic_load(&impulse_heard_at);
    if (written >= 0 && heard >= 0) result->chain_latency_frames = heard - written;
    for (int i = 0; i + 1 < count; i++) jack_disconnect(clients[i].client, jack_port_name(clients[i].out_left), jack_port_name(clients[i + 1].in));

    // Sources: every client's output1/2 → system:playback_1/2 (JACK sums the 16 into each).
    const char **playback = jack_get_ports(clients[0].client, NULL, JACK_DEFAULT_AUDIO_TYPE, JackPortIsPhysical | JackPortIsInput);
    if (!playback || !playback[0] || !playback[1]) {
        snprintf(result->error, sizeof result->error, "the server has fewer than two playback ports");
        if (playback) jack_free(playback);
        close_all(clients, count);
        free(clients);
        return -1;
    }
    for (int i = 0; i < count; i++) {
        jack_connect(clients[i].client, jack_port_name(clients[i].out_left), playback[0]);
        jack_connect(clients[i].client, jack_port_name(clients[i].out_right), playback[1]);
    }
    jack_free(playback);
    atomic_store(&mode, MODE_SINE);
    sleep_seconds(0.5);  // past the reconnection: page faults, first cycles of the new graph

    long cycles0 = atomic_load(&cycles);
    int xruns0 = atomic_load(&xruns);
    double jack0 = jackd_pid > 0 ? sonora_process_cpu_seconds(jackd_pid) : -1;
    double own0 = sonora_process_cpu_seconds(0), t0 = now();
    double load_sum = 0;
    int load_samples = 0;
    double end = t0 + seconds;
    while (now() < end) {
        sleep_seconds(0.1);
        load_sum += jack_cpu_load(clients[0].client);
        load_samples++;
    }
    double jack1 = jackd_pid > 0 ? sonora_process_cpu_seconds(jackd_pid) : -1;
    double own1 = sonora_process_cpu_seconds(0), t1 = now();
    result->cycles = atomic_load(&cycles) - cycles0;
    result->xruns = atomic_load(&xruns) - xruns0;
    result->elapsed_seconds = t1 - t0;
    result->clients_cpu_seconds = own1 - own0;
    if (jackd_pid > 0 && jack0 >= 0 && jack1 >= 0) result->jackd_cpu_seconds = jack1 - jack0;
    result->dsp_load_mean = load_samples ? load_sum / load_samples : 0;
    atomic_store(&mode, MODE_IDLE);
    close_all(clients, count);
    free(clients);
    return 0;
}
