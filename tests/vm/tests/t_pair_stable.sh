#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The agent does not move a pair of flows back and forth. Two iperf3 receivers on NIC A (IRQ CPU
# 1) and their two senders in ns cli (one IRQ CPU on that side): two pairs of class-high tasks
# that share an IRQ CPU, each using about half a CPU under TCG. Before the agent checked what a
# move brings to its target (src/policy.rs, fits) and held a shed target for 5 s (agent.bpf.c
# shed_ttl_ns), it upgraded one of a pair onto the other's CPU whenever that CPU read below
# --low-load-pct, shed it again once the two read above --high-load-pct, and the task went back
# at the target's end, 1 s later: 2.3-3.7 moves a second. With those two rules it still sent
# 0.6-2.3 (the most on a slower host): it upgraded a shed task back half a second after the shed,
# whenever its partner's rate dipped below class high for a round. Now a shed task goes back
# onto the CPU it was shed off only when its pair has ended or after the 5-s hold (policy.rs
# held_off): one shed per pair per hold, 0.4 a second for two pairs, and no upgrades. Measured:
# 0.25, 0.31, and 0.38 inside a full suite. The bound, at most 1 move sent a second over the window, fails the previous
# rules in five of their seven runs (0.61-2.34) and the rules before them in all.
# And what the quiet is not bought with: the receivers keep CPU 1's LLC (core+cache at least
# 90%) and run on CPU 1 itself at least 20 points more than under EEVDF. The iperf3 threads'
# migrations per second are printed beside EEVDF's in the same shape (6.2-16.5 for EEVDF in ten
# boots: too noisy a reference to assert a ratio on; 19.3-22.5 before the share check, 9.1-16.8
# with it, 6.8-7.8 with the hold).
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

secs=12
net_default
srv=()
for i in 0 1; do
	IPERF_WAIT=0 iperf_server $((5201 + i)) "$ADDR_A_SRV"
	srv+=("$IPERF_SERVER_PID")
done
wait_listening 5201 5202
cl=()
for i in 0 1; do
	iperf_client_bg "/tmp/pair-cl$i.out" cli "$ADDR_A_SRV" $((5201 + i)) 3600
	cl+=("$IPERF_CLIENT_PID")
done
wait_streaming "${srv[@]}"
# Every thread of the four iperf3 processes (the servers' data threads come with the streams).
files=$(for p in $(pgrep -x iperf3); do ls -d /proc/"$p"/task/*/sched; done)
migrations() { cat $files 2>/dev/null | awk '/^se.nr_migrations/ { s += $3 } END { print s + 0 }'; }
# The moves the agent sent so far (upgrades + sheds), from its --verbose log: a count that needs
# no client (a stats scrape can take seconds under TCG); 0 without a scheduler.
moves_now() { grep -c 'agent: \(Upgrade\|Shed\) tid' "$SCHED_LOG" 2>/dev/null || true; }
# $1 = label: migrations and agent moves per second over the probe's window (the steady state:
# the first placements of a start are not churn), placement into /tmp/$1.json.
window() {
	local m0 a0 t0
	m0=$(migrations) a0=$(moves_now) t0=$EPOCHREALTIME
	$PROBE --pids "$(IFS=,; echo "${srv[*]}")" --irq-cpu 1 --duration "$secs" \
		--probe-cpu "$PROBE_CPU" --json >"/tmp/$1.json" 2>"/tmp/$1.txt" || true
	awk -v a="$m0" -v b="$(migrations)" -v t0="$t0" -v t1="$EPOCHREALTIME" \
		'BEGIN { printf "%.1f", (b - a) / (t1 - t0) }' >"/tmp/$1.migr"
	awk -v a="$a0" -v b="$(moves_now)" -v t0="$t0" -v t1="$EPOCHREALTIME" \
		'BEGIN { printf "%.2f", (b - a) / (t1 - t0) }' >"/tmp/$1.moves"
}
window eevdf
sched_start --verbose
sleep 3
window miami
# The windows have read all they need: the streams end before the stop, so that the stop and
# the readings after it run on an idle guest (beside the streams each Python start took 3-15 s).
# Killing a server ends its client's iperf3 too (the client PIDs are the shells around them).
kill "${cl[@]}" "${srv[@]}" 2>/dev/null || true
wait "${cl[@]}" 2>/dev/null || true
sched_stop || fail "sched_stop"

log "agent moves applied since the start: $(stats_total policy_upgrades) upgrades, $(stats_total policy_sheds) sheds"
log "agent moves sent per second over the window: $(cat /tmp/miami.moves)"
log "iperf3 migrations per second: EEVDF $(cat /tmp/eevdf.migr), scx_miami $(cat /tmp/miami.migr)"
cc='round(100 * (d["total"]["tiers"]["core"] + d["total"]["tiers"]["cache"]), 1)'
core='round(100 * d["total"]["tiers"]["core"], 1)'
# One Python start per file: "EEVDF core, core+cache, core + 20" and "scx_miami core,
# core+cache, runtime ms". Without an EEVDF reading (a failed probe) the bound is 20 alone.
{ read -r e_core; read -r e_cc; read -r e_bound; } \
	< <(jgets /tmp/eevdf.json "$core" "$cc" "$core + 20") || true
{ read -r m_core; read -r m_cc; read -r m_ms; } \
	< <(jgets /tmp/miami.json "$core" "$cc" "d['total']['runtime_ns'] / 1e6") || true
log "receivers core / core+cache: EEVDF $e_core% / $e_cc%, scx_miami $m_core% / $m_cc%"
check_le "agent moves sent per second over the window" "$(cat /tmp/miami.moves)" 1
check_ge "scx_miami receivers' runtime ms" "$m_ms" 50
check_ge "scx_miami receivers core+cache %" "$m_cc" 90
check_ge "scx_miami receivers core % (EEVDF $e_core% + 20)" "$m_core" "${e_bound:-20}"
finish
