#include "CLV2BenchAnchor.h"
#include <lv2/atom/atom.h>
#include <string.h>
#include <time.h>

// The thread's CPU time, as the host's side of the bench measures: time the thread spends
// preempted by the machine's other tenants counts for neither side.
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

double sonora_lv2_anchor_run(const LV2_Descriptor *descriptor, LV2_Handle handle,
                             const uint32_t *in_ports, int in_count, const uint32_t *out_ports, int out_count,
                             const float *const *inputs, float *const *outputs, long frames, int block,
                             float *const *in_block, float *const *out_block,
                             void *const *atom_outs, const uint32_t *atom_caps, int atom_out_count,
                             uint32_t chunk_urid) {
    for (int c = 0; c < in_count; c++) descriptor->connect_port(handle, in_ports[c], in_block[c]);
    for (int c = 0; c < out_count; c++) descriptor->connect_port(handle, out_ports[c], out_block[c]);
    double start = now();
    for (long position = 0; position < frames; position += block) {
        long n = frames - position < block ? frames - position : block;
        for (int c = 0; c < in_count; c++) memcpy(in_block[c], inputs[c] + position, (size_t)n * sizeof(float));
        for (int a = 0; a < atom_out_count; a++) {
            LV2_Atom *atom = (LV2_Atom *)atom_outs[a];
            atom->size = atom_caps[a] - (uint32_t)sizeof(LV2_Atom);
            atom->type = chunk_urid;
        }
        descriptor->run(handle, (uint32_t)n);
        for (int c = 0; c < out_count; c++) memcpy(outputs[c] + position, out_block[c], (size_t)n * sizeof(float));
    }
    return now() - start;
}
