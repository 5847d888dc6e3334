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

/// Demuxes (libavformat) and decodes (libavcodec) a whole compressed file into one float
/// buffer per channel; frames decoded are left in `sonora_anchor_codec_decoded_frames`.
double sonora_anchor_codec_decode(const char *path);
extern long sonora_anchor_codec_decoded_frames;

/// Encodes `frames` frames of split float channels with libavcodec's `encoder_name`
/// (aac, libmp3lame, alac …) and writes the packets to `path` as they come.
double sonora_anchor_codec_encode(const char *encoder_name, const char *path, int channels, int rate, long bit_rate,
                                  const float *const *split, long frames);

#endif
