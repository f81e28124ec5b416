#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The agent does not move a pair of flows back and forth. Two iperf3 receivers on NIC A (IRQ CPU
# 1) and their two senders in ns cli (one IRQ CPU on that side): two pairs of class-high tasks
# that share an IRQ CPU, each using about half a CPU under TCG. Before the agent checked what a
# move brings to its target (src/policy.rs, fits) and held a shed target for 5 s (agent.bpf.c
# shed_ttl_ns), it upgraded one of a pair onto the other's CPU whenever that CPU read below
# --low-load-pct, shed it again once the two read above --high-load-pct, and the task went back
# at the target's end, 1 s later: 2.3-3.3 moves a second, and the iperf3 threads migrated 1.9-2.4
# times as often as under EEVDF. The bound on moves, from the rules: each of the four tasks is
# shed at most once per hold and upgraded back at most once, 2 moves per task per 5 s, 1.6 a
# second. Migrations: at most 1.5x EEVDF's in the same shape, plus one a second. And what the
# quiet is not bought with: the receivers keep CPU 1's LLC (core+cache at least 90%) and run on
# CPU 1 itself at least 20 points more than under EEVDF.
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
for i in 0 1; do iperf_client_bg "/tmp/pair-cl$i.out" cli "$ADDR_A_SRV" $((5201 + i)) 3600; done
wait_streaming "${srv[@]}"
# Every thread of the four iperf3 processes (the servers' data threads come with the streams).
files=$(for p in $(pgrep -x iperf3); do ls -d /proc/"$p"/task/*/sched; done)
migrations() { cat $files 2>/dev/null | awk '/^se.nr_migrations/ { s += $3 } END { print s + 0 }'; }
# $1 = label: migrations per second over the probe's window, placement into /tmp/$1.json.
window() {
	local m0 t0
	m0=$(migrations) t0=$EPOCHREALTIME
	$PROBE --pids "$(IFS=,; echo "${srv[*]}")" --irq-cpu 1 --duration "$secs" \
		--probe-cpu "$PROBE_CPU" --json >"/tmp/$1.json" 2>"/tmp/$1.txt" || true
	awk -v a="$m0" -v b="$(migrations)" -v t0="$t0" -v t1="$EPOCHREALTIME" \
		'BEGIN { printf "%.1f", (b - a) / (t1 - t0) }' >"/tmp/$1.migr"
}
window eevdf
t0=$EPOCHREALTIME
sched_start
sleep 3
window miami
sched_stop || fail "sched_stop"
run_s=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')

moves=$(($(stats_total policy_upgrades) + $(stats_total policy_sheds)))
log "agent moves: $(stats_total policy_upgrades) upgrades, $(stats_total policy_sheds) sheds in ${run_s%.*} s"
log "iperf3 migrations per second: EEVDF $(cat /tmp/eevdf.migr), scx_miami $(cat /tmp/miami.migr)"
cc='round(100 * (d["total"]["tiers"]["core"] + d["total"]["tiers"]["cache"]), 1)'
core='round(100 * d["total"]["tiers"]["core"], 1)'
log "receivers core / core+cache: EEVDF $(jget /tmp/eevdf.json "$core")% / $(jget /tmp/eevdf.json "$cc")%," \
	"scx_miami $(jget /tmp/miami.json "$core")% / $(jget /tmp/miami.json "$cc")%"
check_le "agent moves per second" "$(awk -v m="$moves" -v s="$run_s" 'BEGIN { printf "%.2f", m / s }')" 1.6
check_le "scx_miami iperf3 migrations per second (EEVDF $(cat /tmp/eevdf.migr) x 1.5 + 1)" \
	"$(cat /tmp/miami.migr)" "$(awk -v e="$(cat /tmp/eevdf.migr)" 'BEGIN { print e * 1.5 + 1 }')"
check_ge "scx_miami receivers' runtime ms" "$(jget /tmp/miami.json "d['total']['runtime_ns'] / 1e6")" 50
check_ge "scx_miami receivers core+cache %" "$(jget /tmp/miami.json "$cc")" 90
check_ge "scx_miami receivers core % (EEVDF $(jget /tmp/eevdf.json "$core")% + 20)" \
	"$(jget /tmp/miami.json "$core")" "$(python3 -c "print($(jget /tmp/eevdf.json "$core") + 20)")"
finish
