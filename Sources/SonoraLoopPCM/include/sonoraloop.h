/*
 * sonoraloop.h - public include directory for the SonoraLoopPCM C target.
 *
 * The target builds libasound_module_pcm_sonoraloop.so, an alsa-lib ioplug
 * PCM plugin loaded by alsa-lib itself (pcm_type.sonoraloop { lib "..." }).
 * Its only exported entry point is the one alsa-lib resolves by name,
 * _snd_pcm_sonoraloop_open; Swift code does not call into it directly.
 * See sonoraloop.c for the configuration syntax and the design.
 */
#ifndef SONORALOOP_H
#define SONORALOOP_H
#endif
