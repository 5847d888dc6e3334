// The anchors of `sonora-bench files`' codec rows: libavformat + libavcodec called
// directly from C, ending with (or starting from) one float buffer per channel as
// Sonora's file layer does.
#include "CFileBenchAnchor.h"
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/// Copies a decoded frame into per-channel float buffers (planar or interleaved float).
static void split_frame(const AVFrame *frame, float **split, int channels, int capacity) {
    int count = frame->nb_samples < capacity ? frame->nb_samples : capacity;
    if (frame->format == AV_SAMPLE_FMT_FLTP) {
        for (int c = 0; c < channels; c++) memcpy(split[c], frame->extended_data[c], (size_t)count * sizeof(float));
    } else if (frame->format == AV_SAMPLE_FMT_FLT) {
        const float *in = (const float *)frame->data[0];
        for (int i = 0; i < count; i++)
            for (int c = 0; c < channels; c++) split[c][i] = in[i * channels + c];
    } else if (frame->format == AV_SAMPLE_FMT_S16P) {
        for (int c = 0; c < channels; c++) {
            const int16_t *in = (const int16_t *)frame->extended_data[c];
            for (int i = 0; i < count; i++) split[c][i] = in[i] * (1.0f / 32768.0f);
        }
    } else if (frame->format == AV_SAMPLE_FMT_S16) {
        const int16_t *in = (const int16_t *)frame->data[0];
        for (int i = 0; i < count; i++)
            for (int c = 0; c < channels; c++) split[c][i] = in[i * channels + c] * (1.0f / 32768.0f);
    } else if (frame->format == AV_SAMPLE_FMT_S32P) {
        for (int c = 0; c < channels; c++) {
            const int32_t *in = (const int32_t *)frame->extended_data[c];
            for (int i = 0; i < count; i++) split[c][i] = in[i] * (1.0f / 2147483648.0f);
        }
    }
}

long sonora_anchor_codec_decoded_frames;

double sonora_anchor_codec_decode(const char *path) {
    double start = seconds_now();
    AVFormatContext *format = NULL;
    if (avformat_open_input(&format, path, NULL, NULL) < 0) return -1;
    if (avformat_find_stream_info(format, NULL) < 0) { avformat_close_input(&format); return -1; }
    int stream = av_find_best_stream(format, AVMEDIA_TYPE_AUDIO, -1, -1, NULL, 0);
    if (stream < 0) { avformat_close_input(&format); return -1; }
    const AVCodec *codec = avcodec_find_decoder(format->streams[stream]->codecpar->codec_id);
    AVCodecContext *context = codec ? avcodec_alloc_context3(codec) : NULL;
    if (!context || avcodec_parameters_to_context(context, format->streams[stream]->codecpar) < 0 ||
        avcodec_open2(context, codec, NULL) < 0) {
        avcodec_free_context(&context);
        avformat_close_input(&format);
        return -1;
    }
    int channels = context->ch_layout.nb_channels;
    enum { capacity = 16384 };
    float *split[16];
    for (int c = 0; c < channels && c < 16; c++) split[c] = malloc(capacity * sizeof(float));
    AVPacket *packet = av_packet_alloc();
    AVFrame *frame = av_frame_alloc();
    long total = 0;
    int failed = 0;
    while (!failed) {
        int status = av_read_frame(format, packet);
        if (status < 0) {
            avcodec_send_packet(context, NULL);
        } else if (packet->stream_index != stream) {
            av_packet_unref(packet);
            continue;
        } else {
            if (avcodec_send_packet(context, packet) < 0) failed = 1;
            av_packet_unref(packet);
        }
        while (avcodec_receive_frame(context, frame) == 0) {
            split_frame(frame, split, channels < 16 ? channels : 16, capacity);
            total += frame->nb_samples;
            av_frame_unref(frame);
        }
        if (status < 0) break;
    }
    sonora_anchor_codec_decoded_frames = total;
    av_frame_free(&frame);
    av_packet_free(&packet);
    for (int c = 0; c < channels && c < 16; c++) free(split[c]);
    avcodec_free_context(&context);
    avformat_close_input(&format);
    return failed ? -1 : seconds_now() - start;
}

double sonora_anchor_codec_encode(const char *encoder_name, const char *path, int channels, int rate, long bit_rate,
                                  const float *const *split, long frames) {
    double start = seconds_now();
    const AVCodec *codec = avcodec_find_encoder_by_name(encoder_name);
    if (!codec) return -1;
    AVCodecContext *context = avcodec_alloc_context3(codec);
    context->sample_rate = rate;
    av_channel_layout_default(&context->ch_layout, channels);
    context->bit_rate = bit_rate;
    context->sample_fmt = codec->sample_fmts ? codec->sample_fmts[0] : AV_SAMPLE_FMT_FLTP;
    context->time_base = (AVRational){1, rate};
    if (avcodec_open2(context, codec, NULL) < 0) { avcodec_free_context(&context); return -1; }
    FILE *out = fopen(path, "wb");
    if (!out) { avcodec_free_context(&context); return -1; }
    int frame_size = context->frame_size > 0 ? context->frame_size : 4096;
    AVFrame *frame = av_frame_alloc();
    frame->nb_samples = frame_size;
    frame->format = context->sample_fmt;
    av_channel_layout_copy(&frame->ch_layout, &context->ch_layout);
    av_frame_get_buffer(frame, 0);
    AVPacket *packet = av_packet_alloc();
    int failed = 0;
    for (long done = 0; done <= frames && !failed; done += frame_size) {
        int status;
        if (done == frames) {
            status = avcodec_send_frame(context, NULL);
        } else {
            int count = frames - done < frame_size ? (int)(frames - done) : frame_size;
            av_frame_make_writable(frame);
            frame->nb_samples = count;
            frame->pts = done;
            if (context->sample_fmt == AV_SAMPLE_FMT_FLTP) {
                for (int c = 0; c < channels; c++) memcpy(frame->extended_data[c], split[c] + done, (size_t)count * sizeof(float));
            } else if (context->sample_fmt == AV_SAMPLE_FMT_FLT) {
                float *o = (float *)frame->data[0];
                for (int i = 0; i < count; i++)
                    for (int c = 0; c < channels; c++) o[i * channels + c] = split[c][done + i];
            } else if (context->sample_fmt == AV_SAMPLE_FMT_S16P || context->sample_fmt == AV_SAMPLE_FMT_S32P) {
                int wide = context->sample_fmt == AV_SAMPLE_FMT_S32P;
                for (int c = 0; c < channels; c++)
                    for (int i = 0; i < count; i++) {
                        float v = split[c][done + i];
                        v = v > 1 ? 1 : v < -1 ? -1 : v;
                        if (wide) ((int32_t *)frame->extended_data[c])[i] = (int32_t)(v * 2147483647.0f);
                        else ((int16_t *)frame->extended_data[c])[i] = (int16_t)(v * 32767.0f);
                    }
            } else if (context->sample_fmt == AV_SAMPLE_FMT_S16) {
                int16_t *o = (int16_t *)frame->data[0];
                for (int i = 0; i < count; i++)
                    for (int c = 0; c < channels; c++) {
                        float v = split[c][done + i];
                        v = v > 1 ? 1 : v < -1 ? -1 : v;
                        o[i * channels + c] = (int16_t)(v * 32767.0f);
                    }
            } else {
                failed = 1;
                break;
            }
            status = avcodec_send_frame(context, frame);
            if (count < frame_size) done = frames - frame_size;  // the next round flushes
        }
        if (status < 0) failed = 1;
        while (avcodec_receive_packet(context, packet) == 0) {
            fwrite(packet->data, 1, (size_t)packet->size, out);
            av_packet_unref(packet);
        }
    }
    fclose(out);
    av_packet_free(&packet);
    av_frame_free(&frame);
    avcodec_free_context(&context);
    return failed ? -1 : seconds_now() - start;
}
