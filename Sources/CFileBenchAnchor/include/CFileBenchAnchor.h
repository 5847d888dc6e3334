#ifndef CFILEBENCHANCHOR_H
#define CFILEBENCHANCHOR_H
// The anchors of `sonora-bench files`: the same work done by calling libsndfile
// and libsoxr directly from C. Each returns seconds, or a negative number on failure.

/// Reads a whole file as float, `block` frames at a time, into one buffer per channel.
double sonora_anchor_decode(const char *path, int block);

/// Writes `frames` float frames, held one buffer per channel, as a new file of libsndfile `format`.
double sonora_anchor_encode(const char *path, int format, int channels, int rate,
                            const float *const *split, long frames, int block);

/// Resamples `frames` frames of split (non-interleaved) float channels, `block` input frames at a time.
double sonora_anchor_resample(const float *const *channels, int channel_count, long frames,
                              double input_rate, double output_rate, int block);

#endif
