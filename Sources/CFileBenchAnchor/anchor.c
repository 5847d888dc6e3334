#include "CFileBenchAnchor.h"
#include <sndfile.h>
#include <soxr.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

double sonora_anchor_decode(const char *path, int block) {
    SF_INFO info = {0};
    double start = now();
    SNDFILE *file = sf_open(path, SFM_READ, &info);
    if (!file) return -1;
    float *buffer = malloc(sizeof(float) * block * info.channels);
    // The same result Sonora delivers: one buffer per channel.
    float *split = malloc(sizeof(float) * block * info.channels);
    sf_count_t read;
    while ((read = sf_readf_float(file, buffer, block)) > 0) {
        for (int c = 0; c < info.channels; c++) {
            float *out = split + (long)c * block;
            for (sf_count_t f = 0; f < read; f++) out[f] = buffer[f * info.channels + c];
        }
    }
    sf_close(file);
    double seconds = now() - start;
    free(buffer);
    free(split);
    return seconds;
}

double sonora_anchor_encode(const char *path, int format, int channels, int rate,
                            const float *const *split, long frames, int block) {
    SF_INFO info = {0};
    info.samplerate = rate;
    info.channels = channels;
    info.format = format;
    double start = now();
    SNDFILE *file = sf_open(path, SFM_WRITE, &info);
    if (!file) return -1;
    sf_command(file, SFC_SET_ADD_PEAK_CHUNK, NULL, SF_FALSE);
    // From one buffer per channel, as Sonora's callers hold audio.
    float *interleaved = malloc(sizeof(float) * block * channels);
    for (long done = 0; done < frames; done += block) {
        long count = frames - done < block ? frames - done : block;
        for (int c = 0; c < channels; c++)
            for (long f = 0; f < count; f++) interleaved[f * channels + c] = split[c][done + f];
        sf_writef_float(file, interleaved, count);
    }
    sf_close(file);
    free(interleaved);
    return now() - start;
}

double sonora_anchor_resample(const float *const *channels, int channel_count, long frames,
                              double input_rate, double output_rate, int block) {
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_S, SOXR_FLOAT32_S);
    soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
    soxr_error_t error = NULL;
    soxr_t soxr = soxr_create(input_rate, output_rate, channel_count, &error, &io, &quality, NULL);
    if (error) return -1;
    long room = (long)(block * output_rate / input_rate) + 64;
    float **out = malloc(sizeof(float *) * channel_count);
    const float **in = malloc(sizeof(float *) * channel_count);
    for (int c = 0; c < channel_count; c++) out[c] = malloc(sizeof(float) * room);
    double start = now();
    for (long done = 0; done < frames;) {
        long count = frames - done < block ? frames - done : block;
        for (int c = 0; c < channel_count; c++) in[c] = channels[c] + done;
        size_t consumed = 0, produced = 0;
        soxr_process(soxr, (soxr_in_t)in, count, &consumed, (soxr_out_t)out, room, &produced);
        done += consumed;
        if (consumed == 0 && produced == 0) break;
    }
    double seconds = now() - start;
    for (int c = 0; c < channel_count; c++) free(out[c]);
    free(out);
    free(in);
    soxr_delete(soxr);
    return seconds;
}
