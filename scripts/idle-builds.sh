#!/usr/bin/env bash
# The builds of `make test`'s last phases — the Debian package (.build-deb), the ThreadSanitizer
# build (.build-tsan) and the check that the package loads as a versioned dependency
# (`make check-package-graph`) — run in the background from the start of `make test`, on the
# CPU the foreground leaves idle:
#   scripts/idle-builds.sh start        returns at once
#   scripts/idle-builds.sh wait deb     waits for the package alone (at most LIMIT, default 40m),
#                                       prints its log, exits with its status
#   scripts/idle-builds.sh wait         waits for all of them (at most LIMIT), prints the logs,
#                                       exits with their status
#   scripts/idle-builds.sh deb          the .deb's path (after a successful wait)
#   scripts/idle-builds.sh stop         stops them (a phase before failed)
# How they stay out of the way: they run in a session of their own (setsid, so `stop` ends the
# compilers they started too). Where the kernel's autogroup scheduling is on
# (/proc/sys/kernel/sched_autogroup_enabled; 1 on the 2-core VMs this runs on) a session is a
# scheduling group, weighed against `make`'s group by the group's nice, not by its tasks'
# policies: SCHED_IDLE inside it only orders its own tasks, and the group took half of a
# contended core (seen 2026-11-28: started before the debug build at the default group nice, the
# debug build took 1,199 s instead of 464). So the group's nice is set to 19
# (/proc/self/autogroup): weight 15 against the foreground's 1,024, i.e. what the debug build's
# serial stretches, phase 1 and the device-paced realtime suites leave idle. Inside the group the
# package's build (a serial chain of whole-module compiles, the one that decided the end) runs at
# the normal policy and the sanitizer's build at SCHED_IDLE, so the package gets a core whenever
# it can use one and the sanitizer's compilers fill the rest. Without autogroups both run at
# SCHED_IDLE, which then orders them below every normal task on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
state=.build-idle
SWIFT=${SWIFT:-swift}

# Polls until FILE exists or the group's leader has exited, for at most LIMIT.
wait_for() {
    local limit=$1 file=$2 pid
    [[ -f "$state/pid" ]] || { echo "idle-builds: nothing to wait for: not started in $PWD ($state/pid missing); run '$0 start' first" >&2; exit 1; }
    pid=$(cat "$state/pid")
    # The leader is not our child: wait by polling, bounded like every phase.
    timeout "$limit" bash -c 'until [[ -f "$2" ]] || ! kill -0 "$1" 2>/dev/null; do sleep 1; done' _ "$pid" "$file" || {
        echo "idle-builds: not finished within $limit" >&2; "$0" stop; exit 1; }
}

case ${1:-} in
start)
    mkdir -p "$state"
    rm -f "$state/deb" "$state/log" "$state/deb.log" "$state/tsan.log" "$state/deb.done" "$state/all.done"
    autogroup=$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo 0)
    SWIFT="$SWIFT" AUTOGROUP="$autogroup" nohup setsid bash -c '
        state='"$state"'
        if [[ $AUTOGROUP == 1 ]] && echo 19 > /proc/self/autogroup 2>/dev/null; then
            deb_policy=(chrt --other 0)
            echo "idle-builds: their group at nice 19 ($(cat /proc/self/autogroup)); the package at the normal policy, the sanitizer at SCHED_IDLE"
        else
            deb_policy=(chrt --idle 0)
            echo "idle-builds: no autogroup to lower; both at SCHED_IDLE"
        fi
        (
            set -o pipefail
            start=$(date +%s)
            if deb=$("${deb_policy[@]}" scripts/build-deb.sh | tail -1); then
                echo "$deb" > "$state/deb"
                echo "idle-builds: built $deb in $(($(date +%s) - start)) s"
            fi
            touch "$state/deb.done"
        ) > "$state/deb.log" 2>&1 &
        (
            start=$(date +%s)
            chrt --idle 0 make --no-print-directory tsan-build SWIFT="$SWIFT" || exit 1
            echo "idle-builds: ThreadSanitizer build in $(($(date +%s) - start)) s"
            start=$(date +%s)
            chrt --idle 0 make --no-print-directory check-package-graph || exit 1
            echo "idle-builds: checked the package as a versioned dependency in $(($(date +%s) - start)) s"
        ) > "$state/tsan.log" 2>&1 &
        wait
        cat "$state/deb.log" "$state/tsan.log"
        touch "$state/all.done"
    ' > "$state/log" 2>&1 < /dev/null &
    echo $! > "$state/pid"
    echo "idle-builds: the .deb and the ThreadSanitizer build run on idle CPU (logs: $state/deb.log, $state/tsan.log)"
    ;;
wait)
    if [[ ${2:-} == deb ]]; then
        wait_for "${3:-40m}" "$state/deb.done"
        cat "$state/deb.log"
        [[ -f "$state/deb" ]] || { echo "idle-builds: the package's build failed (its log is above)" >&2; exit 1; }
    else
        wait_for "${2:-40m}" "$state/all.done"
        cat "$state/log"
        # Success is each build's last line in the log (the leader's status is not ours to read).
        grep -q '^idle-builds: built ' "$state/log" && grep -q '^idle-builds: checked the package' "$state/log" \
            || { echo "idle-builds: failed (the log is above)" >&2; exit 1; }
    fi
    ;;
deb)
    [[ -f "$state/deb" ]] || { echo "idle-builds: no package built ($state/deb missing): run '$0 start' and '$0 wait deb' first" >&2; exit 1; }
    cat "$state/deb"
    ;;
stop)
    [[ -f "$state/pid" ]] && kill -TERM -- "-$(cat "$state/pid")" 2>/dev/null || true
    ;;
*)
    echo "usage: $0 start | wait [deb] [LIMIT] | deb | stop" >&2; exit 2
    ;;
esac
