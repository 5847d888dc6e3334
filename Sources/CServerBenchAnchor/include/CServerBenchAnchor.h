#ifndef CSERVER_BENCH_ANCHOR_H
#define CSERVER_BENCH_ANCHOR_H
// The anchors of `sonora-bench server`: JACK2 clients in the style of jack_simple_client,
// and the one per-source job every contender runs (a stereo sine from a table, as
// jack_simple_client's process callback), so that only the frameworks' costs differ.
#include <stdint.h>
#include <sys/types.h>

/// jack_simple_client's generator: a 200-entry sine table, left and right phases.
typedef struct {
    float table[200];
    int left_phase;
    int right_phase;
} sonora_simple_source;

/// Fills the table and starts the phases at `offset` (each source at its own place).
void sonora_simple_source_init(sonora_simple_source *source, int offset);

/// Writes the next `frames` frames of the sine into `left` and `right` (either may be NULL).
void sonora_simple_source_fill(sonora_simple_source *source, float *left, float *right, uint32_t frames);

typedef struct {
    // What the run measured.
    uint32_t sample_rate;
    uint32_t period;
    long cycles;                 ///< cycles client 0 ran between the two readings
    double elapsed_seconds;      ///< wall time between the two readings
    double jackd_cpu_seconds;    ///< jackd's CPU time (its CPU-time clock) between the readings; -1 if unknown
    double clients_cpu_seconds;  ///< this process's CPU time (the clients' threads) between the readings
    double jackd_idle_cpu_per_cycle;  ///< jackd alone (no client yet), seconds per cycle; -1 if unknown
    double dsp_load_mean;        ///< mean of jack_cpu_load() sampled every 100 ms, percent
    int xruns;                   ///< xrun callbacks seen by client 0
    long chain_latency_frames;   ///< frames from client 0 writing an impulse to the last client hearing it; -1 if not heard
    int chain_hops;              ///< connections in that chain (clients - 1)
    char error[256];             ///< non-empty when the run failed
} sonora_jack_anchor_result;

/// Opens `clients` JACK clients (threads of this process, each its own jack_client_t) on the
/// running server. First a chain run (client i's output → client i+1's input, each copying
/// input to output) measures the frames an impulse takes through the chain; then each client
/// generates a stereo sine into two outputs connected to system:playback_1/2 (JACK sums
/// them) for `seconds`, measuring jackd's and this process's CPU over that span.
/// `jackd_pid` ≤ 0: jackd's CPU is not measured. Returns 0, or -1 with `result->error` set.
int sonora_jack_anchor_run(int clients, double seconds, pid_t jackd_pid, sonora_jack_anchor_result *result);

/// `sonora-bench io`'s lateness anchor: one client on the running server records the
/// CLOCK_MONOTONIC time (ns) of each process callback into `times` for `seconds`. `count`:
/// the wake-ups recorded (at most `capacity`); `xruns`: JACK's xrun callbacks meanwhile.
/// Returns 0, or -1 with `error` set.
int sonora_jack_wake_times_run(double seconds, uint64_t *times, long capacity, long *count, int *xruns, char *error, size_t error_size);

typedef struct {
    long cycles;                ///< the waker's cycles in the measured span
    double waker_cpu_seconds;   ///< the waking thread's run time over that span
    double clients_cpu_seconds; ///< all client processes' run time over that span
    char error[256];            ///< non-empty when the run failed
} sonora_wake_floor_result;

/// The floor of a design that wakes one process per client every cycle: `clients` forked
/// processes each block in `read` on an eventfd of their own; one thread (SCHED_FIFO
/// `priority`, as are the processes; 0: normal) wakes on an absolute timer every
/// `period_seconds` and writes every eventfd — no audio, no ring, no mixing. After 0.5 s,
/// over `seconds`: the run time of the waker and of the processes (schedstat). Returns 0,
/// or -1 with `result->error` set.
int sonora_wake_floor_run(int clients, double period_seconds, double seconds, int priority, sonora_wake_floor_result *result);

/// CPU time of process `pid` (its CPU-time clock), seconds; -1 if it cannot be read.
double sonora_process_cpu_seconds(pid_t pid);

#endif
