#ifndef CLV2_BENCH_ANCHOR_H
#define CLV2_BENCH_ANCHOR_H
// The anchor of `sonora-bench lv2`: the bare C loop a minimal host would write around a
// plugin's run() — copy a block in, run, copy the block out — with nothing else.
#include <lv2/core/lv2.h>
#include <stdint.h>

/// Renders `frames` frames through an instantiated, activated plugin in `block`-frame runs.
/// Input channel c (`inputs[c]`, `frames` long) is copied into `in_block[c]` (connected to
/// port `in_ports[c]` once), the plugin runs, and `out_block[c]` (port `out_ports[c]`) is
/// copied to `outputs[c]`. Atom outputs (`atom_outs`, capacities `atom_caps`) get their
/// capacity back before every run, as LV2 requires. Returns seconds of the
/// calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID).
double sonora_lv2_anchor_run(const LV2_Descriptor *descriptor, LV2_Handle handle,
                             const uint32_t *in_ports, int in_count, const uint32_t *out_ports, int out_count,
                             const float *const *inputs, float *const *outputs, long frames, int block,
                             float *const *in_block, float *const *out_block,
                             void *const *atom_outs, const uint32_t *atom_caps, int atom_out_count,
                             uint32_t chunk_urid);

/// For `sonora-bench lv2 --versus swift-loop`'s probes: the FP mode read and written back, as
/// Sonora's host does around run() (x86 only; elsewhere nothing).
static inline unsigned sonora_lv2_anchor_mxcsr_save(void) {
#if defined(__x86_64__)
    return __builtin_ia32_stmxcsr();
#else
    return 0;
#endif
}
static inline void sonora_lv2_anchor_mxcsr_restore(unsigned state) {
#if defined(__x86_64__)
    __builtin_ia32_ldmxcsr(state);
#else
    (void)state;
#endif
}

#endif
