#include "CLV2Support.h"
#include <stdarg.h>
#include <stdio.h>

// Formats on the stack: vsnprintf with plain conversions does not allocate, so this is
// usable from a plugin's run() (longer messages are truncated rather than allocated).
static int sonora_log_vprintf(LV2_Log_Handle handle, LV2_URID type, const char *fmt, va_list ap) {
    SonoraLogHandle *h = (SonoraLogHandle *)handle;
    char text[512];
    int n = vsnprintf(text, sizeof text, fmt, ap);
    if (n < 0) return n;
    uint32_t length = (uint32_t)(n < (int)sizeof text ? n : (int)sizeof text - 1);
    if (h && h->sink) h->sink(h->context, type, text, length);
    return n;
}

static int sonora_log_printf(LV2_Log_Handle handle, LV2_URID type, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = sonora_log_vprintf(handle, type, fmt, ap);
    va_end(ap);
    return n;
}

void sonora_lv2_log_init(LV2_Log_Log *log, SonoraLogHandle *handle) {
    log->handle = handle;
    log->printf = sonora_log_printf;
    log->vprintf = sonora_log_vprintf;
}
