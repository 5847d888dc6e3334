#ifndef CFFMPEG_LOADER_H
#define CFFMPEG_LOADER_H
// FFmpeg opened on first use (see ffmpeg_loader.c): the av* functions Sonora calls are defined
// here and forward to libavformat loaded with dlopen; their prototypes are FFmpeg's (CFFmpeg).

/// Opens FFmpeg now (once per process). Returns 1 when it is loaded, 0 when it cannot be.
int sonora_ffmpeg_load(void);

/// The file name dlopen is given ("libavformat.so.59").
const char *sonora_ffmpeg_library_name(void);

#endif
