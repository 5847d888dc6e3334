#ifndef SONORA_ALSA_H
#define SONORA_ALSA_H
// alsa-lib reports errors through a C-variadic handler, which Swift cannot define.
// This routes them, formatted, to a plain callback (or drops them when it is NULL).

/// Sends every alsa-lib error message to `sink` instead of stderr (NULL: discard).
void sonora_alsa_route_errors(void (*sink)(const char *message));

#endif
