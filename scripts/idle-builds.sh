#!/usr/bin/env bash
# The builds of `make test`'s last phases — the Debian package (.build-deb), the check that the
# package loads as a versioned dependency (`make check-package-graph`) and the ThreadSanitizer build
# (.build-tsan) — run in the background while the realtime suites run:
#   scripts/idle-builds.sh start   returns at once
#   scripts/idle-builds.sh wait    waits (at most LIMIT, default 40m), prints the builds' log,
#                                  exits with their status
#   scripts/idle-builds.sh deb     the .deb's path (after a successful wait)
#   scripts/idle-builds.sh stop    stops them (a phase before failed)
# Why: the realtime suites are paced by their devices and leave the two cores mostly idle for
# six minutes; the builds take that time. They run at SCHED_IDLE in a session of their own
# (setsid, so `stop` can end them as a group). Where the kernel's autogroup scheduling is on
# (/proc/sys/kernel/sched_autogroup_enabled, 1 on this VM), a session is a scheduling group
# weighed like any other, so SCHED_IDLE only orders them among themselves: against the suites'
# normal threads they get an equal share of a contended core, not what is left over. The
# suites' I/O threads are SCHED_FIFO and never wait for them. (Tried 2026-11-28: starting them
# before the debug build, to use its idle stretches too — with that equal share the debug
# build took 1,199 s instead of 464 and neither build was done 22 minutes in; `make test`
# would have been longer, so they start with the realtime suites again.)
set -euo pipefail
cd "$(dirname "$0")/.."
state=.build-idle
SWIFT=${SWIFT:-swift}

case ${1:-} in
start)
    mkdir -p "$state"
    rm -f "$state/deb" "$state/log" "$state/deb.log" "$state/tsan.log"
    # setsid: its own process group, so `stop` ends the compilers it started too. The two
    # lines run at once: the package's release build compiles one whole module at a time and
    # leaves a core idle for long stretches, which the sanitizer's build then takes.
    SWIFT="$SWIFT" nohup setsid chrt --idle 0 bash -c '
        state='"$state"'
        (
            set -o pipefail
            start=$(date +%s)
            deb=$(scripts/build-deb.sh | tail -1) || exit 1
            echo "$deb" > "$state/deb"
            echo "idle-builds: built $deb in $(($(date +%s) - start)) s"
        ) > "$state/deb.log" 2>&1 &
        (
            start=$(date +%s)
            make --no-print-directory tsan-build SWIFT="$SWIFT" || exit 1
            echo "idle-builds: ThreadSanitizer build in $(($(date +%s) - start)) s"
            start=$(date +%s)
            make --no-print-directory check-package-graph || exit 1
            echo "idle-builds: checked the package as a versioned dependency in $(($(date +%s) - start)) s"
        ) > "$state/tsan.log" 2>&1 &
        wait
        cat "$state/deb.log" "$state/tsan.log"
    ' > "$state/log" 2>&1 < /dev/null &
    echo $! > "$state/pid"
    echo "idle-builds: the .deb and the ThreadSanitizer build run at idle priority (logs: $state/deb.log, $state/tsan.log)"
    ;;
wait)
    limit=${2:-40m}
    [[ -f "$state/pid" ]] || { echo "idle-builds: nothing to wait for: not started in $PWD ($state/pid missing); run '$0 start' first" >&2; exit 1; }
    pid=$(cat "$state/pid")
    # The leader is not our child: wait by polling, bounded like every phase.
    timeout "$limit" bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done' _ "$pid" || {
        echo "idle-builds: not finished within $limit" >&2; "$0" stop; exit 1; }
    cat "$state/log"
    # Success is each build's last line in the log (the leader's status is not ours to read).
    grep -q '^idle-builds: built ' "$state/log" && grep -q '^idle-builds: checked the package' "$state/log" \
        || { echo "idle-builds: failed (the log is above)" >&2; exit 1; }
    ;;
deb)
    [[ -f "$state/deb" ]] || { echo "idle-builds: no package built ($state/deb missing): run '$0 start' and '$0 wait' first" >&2; exit 1; }
    cat "$state/deb"
    ;;
stop)
    [[ -f "$state/pid" ]] && kill -TERM -- "-$(cat "$state/pid")" 2>/dev/null || true
    ;;
*)
    echo "usage: $0 start|wait [LIMIT]|deb|stop" >&2; exit 2
    ;;
esac
