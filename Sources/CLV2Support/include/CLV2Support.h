#ifndef CLV2_SUPPORT_H
#define CLV2_SUPPORT_H
// What a Swift LV2 host cannot write in Swift: log:log's printf-style (variadic) callbacks.
#include <lv2/log/log.h>
#include <stdint.h>

/// Receives one formatted log line. Called on whatever thread the plugin logs from
/// (the realtime thread included), so it must not block; Sonora's sink copies the
/// text into a lock-free ring and returns.
typedef void (*SonoraLogSink)(void *context, LV2_URID type, const char *text, uint32_t length);

/// The handle behind an LV2_Log_Log this support library fills in.
typedef struct SonoraLogHandle {
    SonoraLogSink sink;
    void *context;
} SonoraLogHandle;

/// Fills `log` so that its printf/vprintf format into a 512-byte stack buffer (no heap)
/// and pass the text to `handle->sink`.
void sonora_lv2_log_init(LV2_Log_Log *log, SonoraLogHandle *handle);

#endif
