#include "sonora_alsa.h"
#include <alsa/asoundlib.h>
#include <stdarg.h>
#include <stdio.h>

static void (*error_sink)(const char *message);

static void route(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err;
    if (!error_sink) return;
    char message[512];
    va_list arguments;
    va_start(arguments, fmt);
    vsnprintf(message, sizeof message, fmt, arguments);
    va_end(arguments);
    error_sink(message);
}

void sonora_alsa_route_errors(void (*sink)(const char *message)) {
    error_sink = sink;
    snd_lib_error_set_handler(route);
}
