#include <jack/ringbuffer.h>
