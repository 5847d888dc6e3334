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

/// The calling thread's floating-point control state (x86 MXCSR, arm64 FPCR). Plugins may
/// change it (many set flush-to-zero in instantiate() or run()); the host saves it before
/// calling into a plugin and puts it back after, so a plugin never changes its caller's maths.
static inline unsigned long sonora_fp_state_save(void) {
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_stmxcsr();
#elif defined(__aarch64__)
    unsigned long fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    return fpcr;
#else
    return 0;
#endif
}

static inline void sonora_fp_state_restore(unsigned long state) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_ldmxcsr((unsigned)state);
#elif defined(__aarch64__)
    __asm__ __volatile__("msr fpcr, %0" : : "r"(state));
#else
    (void)state;
#endif
}

#endif
