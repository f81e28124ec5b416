#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #13 test 1 (stress plus traffic; in `make test` on 7.3 and 6.12, the newest and the
# oldest kernel of the matrix, and for 60 s on every kernel in `make soak`): the scx CI line,
#   stress-ng --aggressive -M -c N -f N --affinity 1 --affinity-delay 1 --affinity-pin
# (CPU, fork and affinity-changing stressors, N = CPUs) beside 16 iperf3 flows, 8 over each NIC
# pair, for MIAMI_STRESS_SECS seconds (default 15 in `make test`; `make soak` runs 60). Pass:
#   - the scheduler is still enabled at the end and exits 0 on SIGINT (the runner also fails on
#     a stall, BUG or WARNING in the console);
#   - every flow completed: each iperf3 client exits 0 and reports its full time;
#   - no task was left runnable for 5 s: no thread's run_delay (/proc/PID/task/TID/schedstat,
#     field 2), read each second, grew by 4.5 s or more over 5 reads in which its run time
#     (field 1) did not move at all (a busy fair scheduler makes tasks wait most of the time,
#     but they do run).
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

secs=${MIAMI_STRESS_SECS:-15}
net_default
sched_start
n=$(nproc)
for ((i = 0; i < 16; i++)); do
	ip=$ADDR_A_SRV
	((i < 8)) || ip=$ADDR_B_SRV
	IPERF_WAIT=0 iperf_server $((5201 + i)) "$ip"
done
wait_listening $(seq 5201 5216) || fail "16 iperf3 servers listening"
cl=()
for ((i = 0; i < 16; i++)); do
	ip=$ADDR_A_SRV
	((i < 8)) || ip=$ADDR_B_SRV
	iperf_client_bg "/tmp/flow$i.out" cli "$ip" $((5201 + i)) "$secs" -J
	cl+=("$IPERF_CLIENT_PID")
done
stress-ng -t "$secs" --aggressive -M -c "$n" -f "$n" --affinity 1 --affinity-delay 1 \
	--affinity-pin >/tmp/stress.out 2>&1 &
st=$!
# The runnable-wait watch: one read per second of every thread's run_delay, for the whole run.
python3 - "$((secs + 2))" >/tmp/waits.txt 2>&1 <<'PY' &
import glob, sys, time
end = time.monotonic() + float(sys.argv[1])
hist = {}  # thread -> (run time, run_delay) in ns at each of the last 6 reads
worst = (0, None)
while time.monotonic() < end:
    for f in glob.glob("/proc/[0-9]*/task/[0-9]*/schedstat"):
        try:
            run, delay = (int(v) for v in open(f).read().split()[:2])
        except (OSError, ValueError):
            continue
        h = hist.setdefault(f, [])
        h.append((run, delay))
        del h[:-6]
        # Waited all along and never ran in between: the run time did not move.
        if len(h) == 6 and h[-1][0] == h[0][0] and h[-1][1] - h[0][1] > worst[0]:
            worst = (h[-1][1] - h[0][1], f)
    time.sleep(1)
print(f"worst_wait_without_running_ms {worst[0] // 1000000} {worst[1]}")
PY
watch=$!
wait "$st" || log "stress-ng exit status $?"
fails=0
for p in "${cl[@]}"; do wait "$p" || fails=$((fails + 1)); done
wait "$watch" || true
state=$(sched_state)
sched_stop && rc=0 || rc=1

tail -n 5 /tmp/stress.out
cat /tmp/waits.txt
# One Python for the 16 reports (a start each took seconds with stress-ng's leftovers).
done_flows=$(python3 - "$secs" /tmp/flow{0..15}.out <<'PY'
import json, sys
n = 0
for f in sys.argv[2:]:
    try:
        n += round(json.load(open(f))["end"]["sum_received"]["seconds"]) >= int(sys.argv[1]) - 1
    except (OSError, ValueError, KeyError, TypeError):
        pass
print(n)
PY
)
check_eq "scheduler state at the end" "$state" enabled
check_eq "scheduler stopped with exit 0, sched_ext disabled" "$rc" 0
check_eq "iperf3 clients that failed" "$fails" 0
check_eq "flows that ran their full $secs s" "$done_flows" 16
check_le "longest wait without running, over 5 s, ms" "$(awk '/^worst_wait/ { print $2 }' /tmp/waits.txt)" 4500
finish
