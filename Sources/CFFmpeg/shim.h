// FFmpeg's codec and container libraries (Debian's libavcodec/libavformat/libavutil), the
// codecs Sonora's file layer does not write itself: AAC, MP3 (LAME), ALAC, FLAC and Opus
// (libopus) packets, and the MP4/M4A and Ogg containers.
#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/mem.h>
#include <libavutil/opt.h>
#include <libavutil/samplefmt.h>

// FFmpeg's error codes are function-like macros, which Swift cannot import.
static inline int sonora_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int sonora_averror_eof(void) { return AVERROR_EOF; }
static inline int sonora_averror_invalid_data(void) { return AVERROR_INVALIDDATA; }
static inline int64_t sonora_av_nopts_value(void) { return AV_NOPTS_VALUE; }
