// JACK on first use. Linked at start-up, libjack and libjacknet (with libdb, libsamplerate
// and libopus behind them) are mapped — and, under `sonora run`'s mlockall, resident — in
// every process, even one that never opens a `jack:` or `netjack:` device; opened here with
// dlopen, only a process that uses JACK pays for them. As with FFmpeg (CFFmpegLoader).
//
// Unlike FFmpeg's forwarders these resolve everything at load time, not on first call:
// jack_port_get_buffer is first called on JACK's realtime thread, where dlsym must not run.
// The forwarders are prefixed (`sonora_jack_…`) because sonora-bench and the tests also link
// libjack itself (its ring buffer is a benchmark anchor): same-named definitions here would
// interpose on libjack's own exported functions in those programs.
#define _GNU_SOURCE
#include "CJackLoader.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define SONORA_JACK_SONAME "libjack.so.0"
#define SONORA_JACKNET_SONAME "libjacknet.so.0"

// Every forwarder must have its function's exact type (checked here, at compile time).
#define SAME_TYPE(name) \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name), __typeof__(&sonora_##name)), #name "'s forwarder has another type");

#define JACK_FUNCTIONS(X) \
    X(jack_client_close) X(jack_activate) X(jack_deactivate) X(jack_get_client_name) X(jack_get_sample_rate) \
    X(jack_get_buffer_size) X(jack_get_xrun_delayed_usecs) X(jack_set_process_callback) X(jack_set_buffer_size_callback) \
    X(jack_set_sample_rate_callback) X(jack_set_xrun_callback) X(jack_set_latency_callback) X(jack_on_info_shutdown) \
    X(jack_port_register) X(jack_port_get_buffer) X(jack_port_name) X(jack_port_flags) X(jack_port_by_name) \
    X(jack_port_get_latency_range) X(jack_port_set_latency_range) X(jack_connect) X(jack_get_ports) X(jack_free)

#define JACKNET_FUNCTIONS(X) \
    X(jack_net_slave_open) X(jack_net_slave_close) X(jack_net_slave_activate) X(jack_net_slave_deactivate) \
    X(jack_set_net_slave_process_callback) X(jack_set_net_slave_error_callback) X(jack_set_net_slave_restart_callback) \
    X(jack_net_master_open) X(jack_net_master_close) X(jack_net_master_recv) X(jack_net_master_send)

JACK_FUNCTIONS(SAME_TYPE)
JACKNET_FUNCTIONS(SAME_TYPE)

#define TABLE_ENTRY(name) __typeof__(&name) name;
static struct { JACK_FUNCTIONS(TABLE_ENTRY) __typeof__(&jack_client_open) jack_client_open; } jack;
static struct { JACKNET_FUNCTIONS(TABLE_ENTRY) } jacknet;

// Resolves into `table` (written before pthread_once returns, so every later reader sees it).
#define RESOLVE(name) \
    if (!(table->name = (__typeof__(&name))dlsym(library, #name))) { \
        snprintf(error, error_size, "%s has no %s", soname, #name); \
        return 0; \
    }

static int jack_loaded, jacknet_loaded;
static char jack_error[512], jacknet_error[512];
static pthread_once_t jack_once = PTHREAD_ONCE_INIT, jacknet_once = PTHREAD_ONCE_INIT;

static void *open_library(const char *soname, char *error, size_t size) {
    void *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!library) snprintf(error, size, "cannot load %s: %s", soname, dlerror());
    return library;
}

static int resolve_jack(void) {
    char *error = jack_error;
    size_t error_size = sizeof(jack_error);
    const char *soname = SONORA_JACK_SONAME;
    __typeof__(jack) *table = &jack;
    void *library = open_library(soname, error, error_size);
    if (!library) return 0;
    JACK_FUNCTIONS(RESOLVE)
    RESOLVE(jack_client_open)
    return 1;
}

static int resolve_jacknet(void) {
    char *error = jacknet_error;
    size_t error_size = sizeof(jacknet_error);
    const char *soname = SONORA_JACKNET_SONAME;
    __typeof__(jacknet) *table = &jacknet;
    void *library = open_library(soname, error, error_size);
    if (!library) return 0;
    JACKNET_FUNCTIONS(RESOLVE)
    return 1;
}

static void load_jack(void) { jack_loaded = resolve_jack(); }
static void load_jacknet(void) { jacknet_loaded = resolve_jacknet(); }

int sonora_jack_load(void) { pthread_once(&jack_once, load_jack); return jack_loaded; }
const char *sonora_jack_load_error(void) { return sonora_jack_load() ? NULL : jack_error; }
int sonora_jacknet_load(void) { pthread_once(&jacknet_once, load_jacknet); return jacknet_loaded; }
const char *sonora_jacknet_load_error(void) { return sonora_jacknet_load() ? NULL : jacknet_error; }

jack_client_t *sonora_jack_client_open(const char *client_name, jack_options_t options, jack_status_t *status, const char *server_name) {
    if (server_name) return jack.jack_client_open(client_name, (jack_options_t)(options | JackServerName), status, server_name);
    return jack.jack_client_open(client_name, options, status);
}

int sonora_jack_client_close(jack_client_t *client) { return jack.jack_client_close(client); }
int sonora_jack_activate(jack_client_t *client) { return jack.jack_activate(client); }
int sonora_jack_deactivate(jack_client_t *client) { return jack.jack_deactivate(client); }
char *sonora_jack_get_client_name(jack_client_t *client) { return jack.jack_get_client_name(client); }
jack_nframes_t sonora_jack_get_sample_rate(jack_client_t *client) { return jack.jack_get_sample_rate(client); }
jack_nframes_t sonora_jack_get_buffer_size(jack_client_t *client) { return jack.jack_get_buffer_size(client); }
float sonora_jack_get_xrun_delayed_usecs(jack_client_t *client) { return jack.jack_get_xrun_delayed_usecs(client); }
int sonora_jack_set_process_callback(jack_client_t *client, JackProcessCallback callback, void *arg) {
    return jack.jack_set_process_callback(client, callback, arg);
}
int sonora_jack_set_buffer_size_callback(jack_client_t *client, JackBufferSizeCallback callback, void *arg) {
    return jack.jack_set_buffer_size_callback(client, callback, arg);
}
int sonora_jack_set_sample_rate_callback(jack_client_t *client, JackSampleRateCallback callback, void *arg) {
    return jack.jack_set_sample_rate_callback(client, callback, arg);
}
int sonora_jack_set_xrun_callback(jack_client_t *client, JackXRunCallback callback, void *arg) {
    return jack.jack_set_xrun_callback(client, callback, arg);
}
int sonora_jack_set_latency_callback(jack_client_t *client, JackLatencyCallback callback, void *arg) {
    return jack.jack_set_latency_callback(client, callback, arg);
}
void sonora_jack_on_info_shutdown(jack_client_t *client, JackInfoShutdownCallback callback, void *arg) {
    jack.jack_on_info_shutdown(client, callback, arg);
}
jack_port_t *sonora_jack_port_register(jack_client_t *client, const char *port_name, const char *port_type, unsigned long flags, unsigned long buffer_size) {
    return jack.jack_port_register(client, port_name, port_type, flags, buffer_size);
}
void *sonora_jack_port_get_buffer(jack_port_t *port, jack_nframes_t frames) { return jack.jack_port_get_buffer(port, frames); }
const char *sonora_jack_port_name(const jack_port_t *port) { return jack.jack_port_name(port); }
int sonora_jack_port_flags(const jack_port_t *port) { return jack.jack_port_flags(port); }
jack_port_t *sonora_jack_port_by_name(jack_client_t *client, const char *port_name) { return jack.jack_port_by_name(client, port_name); }
void sonora_jack_port_get_latency_range(jack_port_t *port, jack_latency_callback_mode_t mode, jack_latency_range_t *range) {
    jack.jack_port_get_latency_range(port, mode, range);
}
void sonora_jack_port_set_latency_range(jack_port_t *port, jack_latency_callback_mode_t mode, jack_latency_range_t *range) {
    jack.jack_port_set_latency_range(port, mode, range);
}
int sonora_jack_connect(jack_client_t *client, const char *source_port, const char *destination_port) {
    return jack.jack_connect(client, source_port, destination_port);
}
const char **sonora_jack_get_ports(jack_client_t *client, const char *port_name_pattern, const char *type_name_pattern, unsigned long flags) {
    return jack.jack_get_ports(client, port_name_pattern, type_name_pattern, flags);
}
void sonora_jack_free(void *ptr) { jack.jack_free(ptr); }

jack_net_slave_t *sonora_jack_net_slave_open(const char *ip, int port, const char *name, jack_slave_t *request, jack_master_t *result) {
    return jacknet.jack_net_slave_open(ip, port, name, request, result);
}
int sonora_jack_net_slave_close(jack_net_slave_t *net) { return jacknet.jack_net_slave_close(net); }
int sonora_jack_net_slave_activate(jack_net_slave_t *net) { return jacknet.jack_net_slave_activate(net); }
int sonora_jack_net_slave_deactivate(jack_net_slave_t *net) { return jacknet.jack_net_slave_deactivate(net); }
int sonora_jack_set_net_slave_process_callback(jack_net_slave_t *net, JackNetSlaveProcessCallback callback, void *arg) {
    return jacknet.jack_set_net_slave_process_callback(net, callback, arg);
}
int sonora_jack_set_net_slave_error_callback(jack_net_slave_t *net, JackNetSlaveErrorCallback callback, void *arg) {
    return jacknet.jack_set_net_slave_error_callback(net, callback, arg);
}
int sonora_jack_set_net_slave_restart_callback(jack_net_slave_t *net, JackNetSlaveRestartCallback callback, void *arg) {
    return jacknet.jack_set_net_slave_restart_callback(net, callback, arg);
}
jack_net_master_t *sonora_jack_net_master_open(const char *ip, int port, jack_master_t *request, jack_slave_t *result) {
    return jacknet.jack_net_master_open(ip, port, request, result);
}
int sonora_jack_net_master_close(jack_net_master_t *net) { return jacknet.jack_net_master_close(net); }
int sonora_jack_net_master_recv(jack_net_master_t *net, int audio_input, float **audio_input_buffer, int midi_input, void **midi_input_buffer) {
    return jacknet.jack_net_master_recv(net, audio_input, audio_input_buffer, midi_input, midi_input_buffer);
}
int sonora_jack_net_master_send(jack_net_master_t *net, int audio_output, float **audio_output_buffer, int midi_output, void **midi_output_buffer) {
    return jacknet.jack_net_master_send(net, audio_output, audio_output_buffer, midi_output, midi_output_buffer);
}
