#!/bin/sh
# Runs a test phase line-buffered and with a time limit:
#   scripts/bounded.sh LIMIT COMMAND…      (LIMIT as timeout(1) takes it: 20m, 90s)
# Line-buffered, so a log cut short still ends at the last test that started (block-buffered,
# the last 4 KB of a killed run were lost); bounded, so a hang fails this phase with a reason
# instead of using up CI's whole budget.
limit=$1; shift
stdbuf -oL -eL timeout --kill-after=30 "$limit" "$@"
status=$?
if [ $status = 124 ] || [ $status = 137 ]; then
    echo "sonora: '$*' did not finish within $limit: a hang (the last test started is above)" >&2
fi
exit $status
