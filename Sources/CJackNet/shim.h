// libjacknet (jackd2 / libjack-jackd2-dev): netjack2's slave and master API, no JACK server needed.
#include <jack/net.h>
