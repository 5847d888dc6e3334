// FFmpeg on first use: the functions Sonora's file layer calls, each forwarding to libavformat
// (and the libavcodec/libavutil it loads) opened with dlopen the first time one is called.
// Linked at start-up instead, FFmpeg's dependency tree (~90 libraries: codecs, TLS, SVG,
// X11, ICU) costs ~20 MB resident and locked in every `sonora run`, even one that never
// reads an MP4; now only a process that uses a codec or container of FFmpeg's pays it.
// Generated from FFmpeg's headers (the prototypes below must match them: the compiler checks).
#define _GNU_SOURCE
#include "CFFmpegLoader.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/frame.h>
#include <libavutil/mathematics.h>
#include <libavutil/mem.h>

#define SONORA_AVFORMAT_SONAME "libavformat.so." AV_STRINGIFY(LIBAVFORMAT_VERSION_MAJOR)

static void *library;
static pthread_once_t opened = PTHREAD_ONCE_INIT;

static void open_library(void) {
    // libavformat's dependencies (libavcodec, libavutil) come with it; dlsym searches them too.
    library = dlopen(SONORA_AVFORMAT_SONAME, RTLD_NOW | RTLD_LOCAL);
}

int sonora_ffmpeg_load(void) {
    pthread_once(&opened, open_library);
    return library != NULL;
}

const char *sonora_ffmpeg_library_name(void) { return SONORA_AVFORMAT_SONAME; }

// A missing FFmpeg is a broken installation (the package depends on it): say which and stop.
static void *resolve(const char *name) {
    if (!sonora_ffmpeg_load()) {
        fprintf(stderr, "sonora: cannot load %s: %s\n", SONORA_AVFORMAT_SONAME, dlerror());
        abort();
    }
    void *function = dlsym(library, name);
    if (function == NULL) {
        fprintf(stderr, "sonora: %s has no %s\n", SONORA_AVFORMAT_SONAME, name);
        abort();
    }
    return function;
}

#define FORWARD(name) \
    static __typeof__(&name) real; \
    __typeof__(&name) function = __atomic_load_n(&real, __ATOMIC_ACQUIRE); \
    if (function == NULL) { \
        function = (__typeof__(&name))resolve(#name); \
        __atomic_store_n(&real, function, __ATOMIC_RELEASE); \
    }

void *av_mallocz(size_t size) {
    FORWARD(av_mallocz)
    return function(size);
}

int av_strerror(int errnum, char *errbuf, size_t errbuf_size) {
    FORWARD(av_strerror)
    return function(errnum, errbuf, errbuf_size);
}

int64_t av_rescale_q(int64_t a, AVRational bq, AVRational cq) {
    FORWARD(av_rescale_q)
    return function(a, bq, cq);
}

void av_log_set_level(int level) {
    FORWARD(av_log_set_level)
    function(level);
}

AVDictionaryEntry *av_dict_get(const AVDictionary *m, const char *key, const AVDictionaryEntry *prev, int flags) {
    FORWARD(av_dict_get)
    return function(m, key, prev, flags);
}

int av_dict_set(AVDictionary **pm, const char *key, const char *value, int flags) {
    FORWARD(av_dict_set)
    return function(pm, key, value, flags);
}

void av_dict_free(AVDictionary **m) {
    FORWARD(av_dict_free)
    function(m);
}

void av_channel_layout_default(AVChannelLayout *ch_layout, int nb_channels) {
    FORWARD(av_channel_layout_default)
    function(ch_layout, nb_channels);
}

int av_channel_layout_copy(AVChannelLayout *dst, const AVChannelLayout *src) {
    FORWARD(av_channel_layout_copy)
    return function(dst, src);
}

AVFrame *av_frame_alloc(void) {
    FORWARD(av_frame_alloc)
    return function();
}

void av_frame_free(AVFrame **frame) {
    FORWARD(av_frame_free)
    function(frame);
}

void av_frame_unref(AVFrame *frame) {
    FORWARD(av_frame_unref)
    function(frame);
}

int av_frame_get_buffer(AVFrame *frame, int align) {
    FORWARD(av_frame_get_buffer)
    return function(frame, align);
}

const char *avcodec_get_name(enum AVCodecID id) {
    FORWARD(avcodec_get_name)
    return function(id);
}

const AVCodec *avcodec_find_decoder_by_name(const char *name) {
    FORWARD(avcodec_find_decoder_by_name)
    return function(name);
}

const AVCodec *avcodec_find_encoder_by_name(const char *name) {
    FORWARD(avcodec_find_encoder_by_name)
    return function(name);
}

AVPacket *av_packet_alloc(void) {
    FORWARD(av_packet_alloc)
    return function();
}

void av_packet_free(AVPacket **pkt) {
    FORWARD(av_packet_free)
    function(pkt);
}

int av_new_packet(AVPacket *pkt, int size) {
    FORWARD(av_new_packet)
    return function(pkt, size);
}

uint8_t *av_packet_new_side_data(AVPacket *pkt, enum AVPacketSideDataType type, size_t size) {
    FORWARD(av_packet_new_side_data)
    return function(pkt, type, size);
}

uint8_t *av_packet_get_side_data(const AVPacket *pkt, enum AVPacketSideDataType type, size_t *size) {
    FORWARD(av_packet_get_side_data)
    return function(pkt, type, size);
}

void av_packet_unref(AVPacket *pkt) {
    FORWARD(av_packet_unref)
    function(pkt);
}

unsigned int avcodec_version(void) {
    FORWARD(avcodec_version)
    return function();
}

AVCodecContext *avcodec_alloc_context3(const AVCodec *codec) {
    FORWARD(avcodec_alloc_context3)
    return function(codec);
}

void avcodec_free_context(AVCodecContext **avctx) {
    FORWARD(avcodec_free_context)
    function(avctx);
}

int avcodec_open2(AVCodecContext *avctx, const AVCodec *codec, AVDictionary **options) {
    FORWARD(avcodec_open2)
    return function(avctx, codec, options);
}

int avcodec_send_packet(AVCodecContext *avctx, const AVPacket *avpkt) {
    FORWARD(avcodec_send_packet)
    return function(avctx, avpkt);
}

int avcodec_receive_frame(AVCodecContext *avctx, AVFrame *frame) {
    FORWARD(avcodec_receive_frame)
    return function(avctx, frame);
}

int avcodec_send_frame(AVCodecContext *avctx, const AVFrame *frame) {
    FORWARD(avcodec_send_frame)
    return function(avctx, frame);
}

int avcodec_receive_packet(AVCodecContext *avctx, AVPacket *avpkt) {
    FORWARD(avcodec_receive_packet)
    return function(avctx, avpkt);
}

void avcodec_flush_buffers(AVCodecContext *avctx) {
    FORWARD(avcodec_flush_buffers)
    function(avctx);
}

int avio_open(AVIOContext **s, const char *url, int flags) {
    FORWARD(avio_open)
    return function(s, url, flags);
}

int avio_closep(AVIOContext **s) {
    FORWARD(avio_closep)
    return function(s);
}

void avformat_free_context(AVFormatContext *s) {
    FORWARD(avformat_free_context)
    function(s);
}

AVStream *avformat_new_stream(AVFormatContext *s, const AVCodec *c) {
    FORWARD(avformat_new_stream)
    return function(s, c);
}

int avformat_alloc_output_context2(AVFormatContext **ctx, const AVOutputFormat *oformat, const char *format_name, const char *filename) {
    FORWARD(avformat_alloc_output_context2)
    return function(ctx, oformat, format_name, filename);
}

const AVInputFormat *av_find_input_format(const char *short_name) {
    FORWARD(av_find_input_format)
    return function(short_name);
}

const AVInputFormat *av_probe_input_format3(const AVProbeData *pd, int is_opened, int *score_ret) {
    FORWARD(av_probe_input_format3)
    return function(pd, is_opened, score_ret);
}

int avformat_open_input(AVFormatContext **ps, const char *url, const AVInputFormat *fmt, AVDictionary **options) {
    FORWARD(avformat_open_input)
    return function(ps, url, fmt, options);
}

int avformat_find_stream_info(AVFormatContext *ic, AVDictionary **options) {
    FORWARD(avformat_find_stream_info)
    return function(ic, options);
}

int av_find_best_stream(AVFormatContext *ic, enum AVMediaType type, int wanted_stream_nb, int related_stream, const AVCodec **decoder_ret, int flags) {
    FORWARD(av_find_best_stream)
    return function(ic, type, wanted_stream_nb, related_stream, decoder_ret, flags);
}

int av_read_frame(AVFormatContext *s, AVPacket *pkt) {
    FORWARD(av_read_frame)
    return function(s, pkt);
}

void avformat_close_input(AVFormatContext **s) {
    FORWARD(avformat_close_input)
    function(s);
}

int avformat_write_header(AVFormatContext *s, AVDictionary **options) {
    FORWARD(avformat_write_header)
    return function(s, options);
}

int av_write_frame(AVFormatContext *s, AVPacket *pkt) {
    FORWARD(av_write_frame)
    return function(s, pkt);
}

int av_write_trailer(AVFormatContext *s) {
    FORWARD(av_write_trailer)
    return function(s);
}
