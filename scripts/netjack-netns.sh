#!/bin/sh
# A private network for netjack2 tests: a master namespace and N slave namespaces on one
# bridge, addresses only inside them (10.77.X.0/24; nothing changes in the host's own
# namespace but the namespace names).
#   scripts/netjack-netns.sh up PREFIX SLAVES SUBNET   # PREFIX-m, PREFIX-s1..N; master 10.77.SUBNET.1, slave i 10.77.SUBNET.(10+i)
#   scripts/netjack-netns.sh down PREFIX               # removes them (and whatever runs in them)
#   scripts/netjack-netns.sh master PREFIX RATE PERIOD # in PREFIX-m: jackd (dummy, realtime) + netmanager; loops every slave's
#                                                      # returned channels straight back to it; runs until killed
#   scripts/netjack-netns.sh master PREFIX RATE PERIOD cross
#                                                      # the same, but the first two slaves (by name) are crossed
#                                                      # instead: what one returns goes to the other
#   scripts/netjack-netns.sh link PREFIX I up|down     # slave I's link
# Exits 77 (skip) when namespaces cannot be made (not root, no `ip`, no veth/bridge).
set -u
cmd=$1; prefix=$2
case "$cmd" in
up)
    slaves=$3; subnet=$4
    command -v ip >/dev/null 2>&1 || { echo "no ip command (iproute2)" >&2; exit 77; }
    [ "$(id -u)" = 0 ] || { echo "network namespaces need root" >&2; exit 77; }
    ip netns add "$prefix-m" 2>/dev/null || { echo "cannot make a network namespace (ip netns add failed)" >&2; exit 77; }
    ip -n "$prefix-m" link set lo up
    ip -n "$prefix-m" link add br0 type bridge || { echo "cannot make a bridge in a namespace" >&2; "$0" down "$prefix"; exit 77; }
    ip -n "$prefix-m" link set br0 type bridge mcast_snooping 0 2>/dev/null
    ip -n "$prefix-m" addr add "10.77.$subnet.1/24" dev br0
    ip -n "$prefix-m" link set br0 up
    ip -n "$prefix-m" route add 224.0.0.0/4 dev br0
    i=1
    while [ $i -le "$slaves" ]; do
        ns="$prefix-s$i"
        ip netns add "$ns" || { "$0" down "$prefix"; exit 77; }
        ip -n "$ns" link set lo up
        # Both ends are made in the slave's namespace, then one moves to the master's.
        ip -n "$ns" link add eth0 type veth peer name "p$i" || { echo "cannot make a veth pair" >&2; "$0" down "$prefix"; exit 77; }
        ip -n "$ns" link set "p$i" netns "$prefix-m"
        ip -n "$prefix-m" link set "p$i" master br0
        ip -n "$prefix-m" link set "p$i" up
        ip -n "$ns" addr add "10.77.$subnet.$((10 + i))/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" route add 224.0.0.0/4 dev eth0
        i=$((i + 1))
    done
    ;;
down)
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$prefix-"); do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null
    done
    exit 0
    ;;
link)
    ip -n "$prefix-s$3" link set eth0 "$4"
    ;;
master)
    rate=$3; period=$4; route=${5:-loop}
    command -v jackd >/dev/null 2>&1 || { echo "jackd not installed (Debian: jackd2)" >&2; exit 77; }
    exec ip netns exec "$prefix-m" unshare --mount --propagation private sh -c '
        mount -t tmpfs tmpfs /dev/shm || { echo "cannot mount a private /dev/shm" >&2; exit 77; }
        export JACK_NO_START_SERVER=1 JACK_NO_AUDIO_RESERVATION=1
        # jackd reports on stdout (the caller keeps it): slaves joining, packets missing.
        # Realtime, as a real master runs (not realtime, its late cycles shift the
        # replies of its slaves by whole cycles); where realtime is not permitted, without.
        for realtime in "-R -P 70" "--no-realtime"; do
            jackd $realtime -d dummy -r "$1" -p "$2" 2>&1 &
            jack=$!
            tries=0
            until timeout 5 jack_lsp >/dev/null 2>&1; do
                tries=$((tries + 1))
                if [ $tries -gt 200 ] || ! kill -0 $jack 2>/dev/null; then jack=; break; fi
                sleep 0.05
            done
            [ -n "$jack" ] && break
        done
        [ -n "$jack" ] || { echo "jackd did not start" >&2; exit 77; }
        # A wedged jackd (a client removed mid-cycle) ignores SIGTERM: SIGKILL after 2 s. The
        # JACK tools below run under timeout so the trap is never held up behind one of them.
        trap "kill \$jack 2>/dev/null; i=0; while kill -0 \$jack 2>/dev/null && [ \$i -lt 40 ]; do sleep 0.05; i=\$((i + 1)); done; kill -9 \$jack 2>/dev/null; wait \$jack 2>/dev/null; exit 0" TERM INT
        jack_load netmanager >/dev/null || { echo "jack_load netmanager failed" >&2; exit 77; }
        echo ready
        # Loop each slave back: what it returns (SLAVE:from_slave_N) goes back to it (SLAVE:to_slave_N);
        # or (cross) the first two slaves into each other: A:from_slave_N -> B:to_slave_N and back.
        # Only ports not yet connected are connected (a slave that rejoins comes back with new
        # ones), and the graph is looked at 5 times a second: every JACK tool run is a client
        # joining and leaving jackd, which reorders its graph under the slaves. (Connecting
        # every port every 0.1 s, as before, made the tools half of all CPU samples in a bench run.)
        while kill -0 $jack 2>/dev/null; do
            ports=$(timeout 5 jack_lsp -c 2>/dev/null)
            # Port lines are flush left, their connections indented below them.
            open=$(printf "%s\n" "$ports" | awk "/^[^ \t]/ { if (p != \"\" && !c) print p; p = (\$0 ~ /:from_slave_/) ? \$0 : \"\"; c = 0; next } { c = 1 } END { if (p != \"\" && !c) print p }")
            if [ -n "$open" ]; then
                if [ "$3" = cross ]; then
                    pair=$(printf "%s\n" "$ports" | grep "^[^ ].*:from_slave_" | cut -d: -f1 | sort -u | head -n 2)
                    if [ "$(echo "$pair" | wc -w)" = 2 ]; then
                        a=$(echo "$pair" | head -n 1); b=$(echo "$pair" | tail -n 1)
                        for port in $open; do
                            case "$port" in
                            "$a":*) timeout 5 jack_connect "$port" "$b:to_slave_${port##*_}" 2>/dev/null && echo "crossed $port" ;;
                            "$b":*) timeout 5 jack_connect "$port" "$a:to_slave_${port##*_}" 2>/dev/null && echo "crossed $port" ;;
                            esac
                        done
                    fi
                else
                    for port in $open; do
                        timeout 5 jack_connect "$port" "$(echo "$port" | sed "s/:from_slave_/:to_slave_/")" 2>/dev/null && echo "looped $port"
                    done
                fi
            fi
            sleep 0.2
        done
    ' sh "$rate" "$period" "$route"
    ;;
*)
    echo "usage: $0 up|down|master|link PREFIX …" >&2; exit 2
    ;;
esac
