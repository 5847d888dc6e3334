// JACK on first use: the libjack and libjacknet functions Sonora's HAL calls, as
// `sonora_`-prefixed forwarders to the libraries opened with dlopen (see jack_loader.c).
#ifndef SONORA_CJACKLOADER_H
#define SONORA_CJACKLOADER_H

#include <jack/jack.h>
#include <jack/net.h>
#include <jack/statistics.h>

// Opens libjack.so.0 and resolves every function below, once; 1 when they all are.
// Call before any other function of this header (a JACK device's open does): the
// forwarders never resolve lazily, so none of them calls dlsym on a realtime thread.
int sonora_jack_load(void);
// Why sonora_jack_load failed (dlerror's text, or the missing symbol); NULL if it did not.
const char *sonora_jack_load_error(void);
// The same for libjacknet.so.0 (netjack2) and its functions.
int sonora_jacknet_load(void);
const char *sonora_jacknet_load_error(void);

// jack_client_open is C-variadic (the server name rides in the varargs), which Swift
// cannot call: this fixed-arity wrapper passes it (NULL: the default server).
jack_client_t *sonora_jack_client_open(const char *client_name, jack_options_t options, jack_status_t *status, const char *server_name);

int sonora_jack_client_close(jack_client_t *client);
int sonora_jack_activate(jack_client_t *client);
int sonora_jack_deactivate(jack_client_t *client);
char *sonora_jack_get_client_name(jack_client_t *client);
jack_nframes_t sonora_jack_get_sample_rate(jack_client_t *client);
jack_nframes_t sonora_jack_get_buffer_size(jack_client_t *client);
float sonora_jack_get_xrun_delayed_usecs(jack_client_t *client);
int sonora_jack_set_process_callback(jack_client_t *client, JackProcessCallback callback, void *arg);
int sonora_jack_set_buffer_size_callback(jack_client_t *client, JackBufferSizeCallback callback, void *arg);
int sonora_jack_set_sample_rate_callback(jack_client_t *client, JackSampleRateCallback callback, void *arg);
int sonora_jack_set_xrun_callback(jack_client_t *client, JackXRunCallback callback, void *arg);
int sonora_jack_set_latency_callback(jack_client_t *client, JackLatencyCallback callback, void *arg);
void sonora_jack_on_info_shutdown(jack_client_t *client, JackInfoShutdownCallback callback, void *arg);
jack_port_t *sonora_jack_port_register(jack_client_t *client, const char *port_name, const char *port_type, unsigned long flags, unsigned long buffer_size);
void *sonora_jack_port_get_buffer(jack_port_t *port, jack_nframes_t frames);
const char *sonora_jack_port_name(const jack_port_t *port);
int sonora_jack_port_flags(const jack_port_t *port);
jack_port_t *sonora_jack_port_by_name(jack_client_t *client, const char *port_name);
void sonora_jack_port_get_latency_range(jack_port_t *port, jack_latency_callback_mode_t mode, jack_latency_range_t *range);
void sonora_jack_port_set_latency_range(jack_port_t *port, jack_latency_callback_mode_t mode, jack_latency_range_t *range);
int sonora_jack_connect(jack_client_t *client, const char *source_port, const char *destination_port);
const char **sonora_jack_get_ports(jack_client_t *client, const char *port_name_pattern, const char *type_name_pattern, unsigned long flags);
void sonora_jack_free(void *ptr);

jack_net_slave_t *sonora_jack_net_slave_open(const char *ip, int port, const char *name, jack_slave_t *request, jack_master_t *result);
int sonora_jack_net_slave_close(jack_net_slave_t *net);
int sonora_jack_net_slave_activate(jack_net_slave_t *net);
int sonora_jack_net_slave_deactivate(jack_net_slave_t *net);
int sonora_jack_set_net_slave_process_callback(jack_net_slave_t *net, JackNetSlaveProcessCallback callback, void *arg);
int sonora_jack_set_net_slave_error_callback(jack_net_slave_t *net, JackNetSlaveErrorCallback callback, void *arg);
int sonora_jack_set_net_slave_restart_callback(jack_net_slave_t *net, JackNetSlaveRestartCallback callback, void *arg);
jack_net_master_t *sonora_jack_net_master_open(const char *ip, int port, jack_master_t *request, jack_slave_t *result);
int sonora_jack_net_master_close(jack_net_master_t *net);
int sonora_jack_net_master_recv(jack_net_master_t *net, int audio_input, float **audio_input_buffer, int midi_input, void **midi_input_buffer);
int sonora_jack_net_master_send(jack_net_master_t *net, int audio_output, float **audio_output_buffer, int midi_output, void **midi_output_buffer);

#endif
