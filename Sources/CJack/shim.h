#include <jack/jack.h>
#include <jack/ringbuffer.h>
#include <jack/statistics.h>

// jack_client_open is C-variadic (the server name rides in the varargs), which Swift
// cannot call: this fixed-arity wrapper passes it (NULL: the default server).
static inline jack_client_t *sonora_jack_client_open(const char *client_name, jack_options_t options, jack_status_t *status, const char *server_name) {
    if (server_name) return jack_client_open(client_name, (jack_options_t)(options | JackServerName), status, server_name);
    return jack_client_open(client_name, options, status);
}
