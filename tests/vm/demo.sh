#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make demo`, guest side: the default guest (8 vCPUs, LLCs 0-3 / 4-7, NIC A's IRQ on CPU 1,
# NIC B's on CPU 5) runs scx_miami under a short network workload over both NIC pairs. Prints
# scx_miami's live stats while it runs, then a placement summary from the neutral probe (where
# the receivers ran, per tier of their own NIC's IRQ CPU), and stops the scheduler cleanly.
set -euo pipefail
source "$(dirname "$0")/guest/lib.sh"
T_NAME=demo

net_default
log "NIC A $NIC_A: receive IRQ $IRQ_A -> CPU 1; NIC B $NIC_B: receive IRQ $IRQ_B -> CPU 5"
log "LLCs: $(cat /sys/devices/system/cpu/cpu{0,4}/cache/index3/shared_cpu_list | paste -sd' ')"
sched_start --stats 2
tail -n +1 -f "$SCHED_LOG" &
tailer=$!
# A light flow beside the bulk ones: 64 bytes every 200 ms (a heartbeat) over NIC A. With the
# default --class-bounds auto it lands in another class than the bulk receivers.
bg ip netns exec cli "$PACER" sink 7001
sleep 0.3
PACER_SLEEP=1 "$PACER" send "$ADDR_A_CLI" 7001 200000 60 64 >/dev/null &
light=$!
log "workload: 2 iperf3 receivers per NIC pair for 12 s, and a light flow (pacer, pid $light)"
receivers_run demo 2 2 12 >/tmp/demo-run.txt
sleep 0.5
kill "$light" 2>/dev/null || true
kill "$tailer" 2>/dev/null || true
if sched_stop; then log "scx_miami stopped: exit 0, sched_ext $(sched_state)"; else fail "stop"; fi
echo
echo "=== placement summary (neutral probe; core = the NIC's IRQ CPU, cache = its LLC siblings)"
cat /tmp/demo-run.txt
echo
# The clients are stopped by a signal (receivers_run), so iperf3 prints no summary: average
# its once-a-second reports instead.
for i in 0 1 2 3; do
	printf 'client %d: ' "$i"
	awk '/bits\/sec/ && !/sender|receiver/ {
		for (f = 2; f <= NF; f++) if ($f ~ /bits\/sec$/) {
			u = substr($f, 1, 1); v = $(f - 1)
			s += (u == "G" ? v * 1000 : u == "M" ? v : u == "K" ? v / 1000 : v / 1e6); n++
		}
	} END { if (n) printf "%.1f Mbit/s (mean of %d one-second reports)\n", s / n, n; else print "no reports" }' \
		"/tmp/demo-cl$i.out"
done
# Classes in the last task table scx_miami printed (rows: tid tgid comm intens class ...).
classes=$(awk '/^ *tid +tgid/ { delete c; t = 1; next } t && NF == 10 && $1 ~ /^[0-9]+$/ { c[$5]++ }
	END { for (k in c) printf "%s:%d ", k, c[k] }' "$SCHED_LOG")
echo "classes in the last task table: $classes"
cc='round(100 * (d["total"]["tiers"]["core"] + d["total"]["tiers"]["cache"]), 1)'
check_ge "receivers core+cache %" "$(jget /tmp/demo.json "$cc")" 90
check_ge "classes in use with default flags" "$(wc -w <<<"$classes")" 2
finish
