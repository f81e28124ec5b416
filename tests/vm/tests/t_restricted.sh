#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #12 item 7 (containers and pinned services): placement inside the CPUs a task may use.
# Two iperf3 receivers on NIC A (IRQ CPU 1) restricted with taskset to CPUs 1,2,4-7 (the IRQ
# CPU, one LLC sibling, and the whole other LLC), and two CPU hogs restricted to CPUs 0-3 (a
# batch job pinned to the first LLC, which holds the IRQ CPU). Under EEVDF, then scx_miami,
# 7 s each (probe.py --trace):
#   - the receivers' runtime in core+cache >= 95%: they find the idle sibling inside their CPUs;
#   - the hogs' runtime on CPU 1 <= 5%: two hogs fit on CPUs 0, 2, 3 and leave the IRQ CPU to
#     the receivers' softirq.
# Before this issue any restriction turned the LLC idle search and the IRQ-CPU avoidance off:
# the hogs landed on CPU 1 and stayed. EEVDF's figures are printed beside.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

net_default
# $1 = label: hogs and receivers for 7 s; /tmp/$1-rx.json, /tmp/$1-hogs.json.
run() {
	bg taskset -c 0-3 stress-ng --cpu 2 --timeout 0 --quiet
	local hogs=$BG_PID i srv=() cl=() irqof=() workers
	for i in 0 1; do
		iperf_server $((5201 + i)) "$ADDR_A_SRV"
		taskset -a -p -c 1,2,4-7 "$IPERF_SERVER_PID" >/dev/null
		srv+=("$IPERF_SERVER_PID")
		irqof+=(--irq-cpu-of "$IPERF_SERVER_PID=1")
	done
	for i in 0 1; do
		iperf_client_bg "/tmp/$1-cl$i.out" cli "$ADDR_A_SRV" $((5201 + i)) 3600
		cl+=("$IPERF_CLIENT_PID")
	done
	wait_streaming "${srv[@]}"
	# iperf3 starts a thread per stream: restrict those too (taskset -a covers existing ones).
	for i in "${srv[@]}"; do taskset -a -p -c 1,2,4-7 "$i" >/dev/null; done
	for i in $(seq 50); do (($(pgrep -c -P "$hogs") >= 2)) && break; sleep 0.1; done
	workers=$(pgrep -P "$hogs" | paste -sd,)
	sleep 1
	$PROBE --pids "$(IFS=,; echo "${srv[*]}")" "${irqof[@]}" --duration 7 --trace \
		--probe-cpu "$PROBE_CPU" --json >"/tmp/$1-rx.json" 2>"/tmp/$1-rx.txt" &
	local p=$!
	$PROBE --pids "$workers" --irq-cpu 1 --duration 7 --trace --probe-cpu "$PROBE_CPU" --json \
		>"/tmp/$1-hogs.json" 2>"/tmp/$1-hogs.txt" || true
	wait "$p" || true
	kill "${cl[@]}" "${srv[@]}" "$hogs" 2>/dev/null || true
	pkill -f stress-ng 2>/dev/null || true
	wait "${cl[@]}" 2>/dev/null || true
	echo "--- $1: receivers (core = CPU 1)"; cat "/tmp/$1-rx.txt"
	echo "--- $1: hogs (core = CPU 1)"; cat "/tmp/$1-hogs.txt"
}
run eevdf
sched_start
run miami
sched_stop || fail "sched_stop"

cc='round(100 * (d["total"]["tiers"]["core"] + d["total"]["tiers"]["cache"]), 1)'
core='round(100 * d["total"]["tiers"]["core"], 1)'
lost='d["lost_events"]'
# One Python start for the six (jpairs): 0.85 s each in the idle guest.
mapfile -t v < <(jpairs /tmp/miami-rx.json "$lost" /tmp/miami-hogs.json "$lost" \
	/tmp/eevdf-rx.json "$cc" /tmp/miami-rx.json "$cc" \
	/tmp/eevdf-hogs.json "$core" /tmp/miami-hogs.json "$core")
check_eq "probe events lost" "${v[0]} ${v[1]}" "0 0"
check_ge "restricted receivers core+cache % (EEVDF ${v[2]}%)" "${v[3]}" 95
check_le "restricted hogs on IRQ CPU 1 % (EEVDF ${v[4]}%)" "${v[5]}" 5
finish
