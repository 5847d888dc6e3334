#!/bin/sh
# Runs a command beside a private JACK2 server on the dummy backend (no sound card):
#   scripts/with-jack-dummy.sh RATE PERIOD COMMAND [ARGS...]
# jackd and the command share a private mount namespace with their own tmpfs on
# /dev/shm, so a killed jackd leaves nothing behind that blocks the next start
# machine-wide. Exits 77 (skip) when jackd or unshare is missing or not permitted.
# SONORA_JACK_REALTIME=PRIORITY runs jackd with SCHED_FIFO; SONORA_JACK_LOG=FILE keeps
# jackd's output (where it reports its xruns). The command finds jackd's pid in
# SONORA_JACK_PID (to read its CPU time).
set -u
rate=$1; period=$2; shift 2
command -v jackd >/dev/null 2>&1 || { echo "jackd not installed (Debian: jackd2)" >&2; exit 77; }
command -v unshare >/dev/null 2>&1 || { echo "unshare not available" >&2; exit 77; }
exec unshare --mount --propagation private sh ${SONORA_JACK_TRACE:+-x} -c '
    mount -t tmpfs tmpfs /dev/shm || { echo "cannot mount a private /dev/shm (needs root)" >&2; exit 77; }
    rate=$1; period=$2; shift 2
    log=$(mktemp)
    export JACK_NO_START_SERVER=1
    if [ -n "${SONORA_JACK_REALTIME:-}" ]; then realtime="-R -P $SONORA_JACK_REALTIME"; else realtime="--no-realtime"; fi
    JACK_NO_AUDIO_RESERVATION=1 jackd $realtime -d dummy -r "$rate" -p "$period" >"$log" 2>&1 &
    jack=$!
    tries=0
    until jack_lsp >/dev/null 2>&1; do
        tries=$((tries + 1))
        if [ $tries -gt 100 ] || ! kill -0 $jack 2>/dev/null; then echo "jackd did not start:" >&2; cat "$log" >&2; exit 77; fi
        sleep 0.05
    done
    export SONORA_JACK_PID=$jack
    "$@"
    status=$?
    kill $jack 2>/dev/null; wait $jack 2>/dev/null
    [ -n "${SONORA_JACK_LOG:-}" ] && cp "$log" "$SONORA_JACK_LOG"
    rm -f "$log"
    exit $status
' sh "$rate" "$period" "$@"
