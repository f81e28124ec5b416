#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #12 item 4 (agent targets expire): three iperf3 receivers on NIC A (IRQ CPU 1) while
# three CPU hogs pinned to CPUs 0, 2 and 3 overload the IRQ CPU's LLC. The agent sheds
# receivers off CPU 1 into the other LLC (policy_sheds). Then the hogs stop: the overload, the
# shed targets' reason, is gone, and the receivers must come back to CPU 1's LLC at once:
# over the 8 s that follow, their runtime in core+cache (probe.py --trace) is at least 90%
# (EEVDF's in the same shape printed beside), and target_expired counts the dropped targets.
# A target lives at most 10 agent rounds (1 s), a shed target 50 (5 s), and a target outside the
# IRQ CPU's LLC only while that LLC is overloaded. Before this issue a shed target lived until the task was released, so
# the receivers kept waking on their targets in the other LLC long after the overload.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

net_default
# $1 = label: overload for 8 s, then relief; /tmp/$1.json measured over the relief.
run() {
	local i srv=() cl=() irqof=() hogs=()
	# One wait until all three listen, as receivers_run does: a wait of its own for each polled
	# ss once per server.
	for i in 0 1 2; do
		IPERF_WAIT=0 iperf_server $((5201 + i)) "$ADDR_A_SRV"
		srv+=("$IPERF_SERVER_PID")
		irqof+=(--irq-cpu-of "$IPERF_SERVER_PID=1")
	done
	wait_listening 5201 5202 5203
	for i in 0 1 2; do
		iperf_client_bg "/tmp/$1-cl$i.out" cli "$ADDR_A_SRV" $((5201 + i)) 3600
		cl+=("$IPERF_CLIENT_PID")
	done
	for i in 0 2 3; do
		taskset -c "$i" stress-ng --cpu 1 --timeout 0 --quiet &
		hogs+=($!)
	done
	wait_streaming "${srv[@]}"
	sleep 8
	kill "${hogs[@]}" 2>/dev/null || true
	pkill -f stress-ng 2>/dev/null || true
	$PROBE --pids "$(IFS=,; echo "${srv[*]}")" "${irqof[@]}" --duration 8 --trace \
		--probe-cpu "$PROBE_CPU" --json >"/tmp/$1.json" 2>"/tmp/$1.txt" || true
	kill "${cl[@]}" "${srv[@]}" 2>/dev/null || true
	wait "${cl[@]}" 2>/dev/null || true
	echo "--- $1: receivers after the overload (core = CPU 1)"; cat "/tmp/$1.txt"
}
run eevdf
sched_start --stats 1
run miami
sched_stop || fail "sched_stop"

cc='round(100 * (d["total"]["tiers"]["core"] + d["total"]["tiers"]["cache"]), 1)'
log "agent: sheds $(stats_total policy_sheds), upgrades $(stats_total policy_upgrades), targets expired $(stats_total target_expired), spills $(stats_total net_spill)"
check_ge "agent moves applied (the shape overloads)" \
	"$(($(stats_total policy_sheds) + $(stats_total policy_upgrades)))" 1
check_ge "targets expired" "$(stats_total target_expired)" 1
# One Python start for the three (jpairs): 0.85 s each in the idle guest.
mapfile -t v < <(jpairs /tmp/miami.json 'd["lost_events"]' /tmp/eevdf.json "$cc" \
	/tmp/miami.json "$cc")
check_eq "probe events lost" "${v[0]}" 0
check_ge "receivers core+cache % after the overload (EEVDF ${v[1]}%)" "${v[2]}" 90
finish
