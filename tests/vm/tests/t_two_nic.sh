#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #4 test 5: one process (one thread) with two connections on two NICs, a bulk one and a
# slow one (one 64-byte send every 20 ms): `pacer send2`. Its ACKs arrive on the bulk
# connection's NIC, whose IRQ CPU it must be placed toward. Run twice with the roles swapped
# (bulk over pair A, IRQ -> CPU 1, slow over pair B, IRQ -> CPU 5; then the other way round),
# so that neither "the first connection" nor "NIC A" can pass for "the bulk one":
#   - the neutral probe: >= 80% of its runtime in core+cache of the bulk NIC's IRQ CPU;
#   - the scheduler's task table: its IRQ CPU and NIC are the bulk connection's.
# EEVDF as the baseline for the first case.
# Then the receive probe's check against the per-NIC IRQ CPU sets (BPF's nic_cpus map): a bulk
# receiver on NIC B (IRQ -> CPU 5), one scheduler run each
#   - as is: most received segments are processed on CPU 5 (rx_irq_cpu);
#   - with RFS on and RPS on NIC B rx-0 to CPUs 0-3: the log must say so (one line each), and
#     nearly all segments are processed off CPU 5 (rx_off_irq).
# Then both are switched off again.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami}
net_default
bg ip netns exec cli "$PACER" sink 7001
sleep 0.5

# $1 = label, $2/$3 = bulk/slow address, $4 = the bulk NIC's IRQ CPU, $5 = its name.
run() {
	"$PACER" send2 "$2" 7001 "$3" 7001 20000 60 >"/tmp/$1.out" 2>&1 &
	local pid=$! row go=/tmp/$1.go probe
	# The probe loads (3.3-4.2 s beside the sender) during the 2 s settle and opens its window on
	# the go file once that is over: loaded after the settle, it added its start to it.
	rm -f "$go" "$go.ready"
	$PROBE --pids "$pid" --irq-cpu "$4" --duration 5 --hz 100 --probe-cpu "$PROBE_CPU" \
		--go-file "$go" --json >"/tmp/$1.json" 2>"/tmp/$1.txt" &
	probe=$!
	sleep 2
	wait_ready "$go.ready" "$probe" || true
	: >"$go"
	wait "$probe" || true
	check_eq "$1: still sending when the probe ended" "$(kill -0 "$pid" 2>/dev/null && echo yes)" yes
	if [[ $1 != eevdf ]]; then
		# tid tgid comm intens class tier irq cpu nic age_ms
		row=$(timeout -s INT 3 "$bin" --monitor 1 2>/dev/null | awk -v p="$pid" '$1 == p { print; exit }' || true)
		echo "--- task table row: $row"
		check_eq "$1: its IRQ CPU in the task table" "$(awk '{ print $7 }' <<<"$row")" "$4"
		check_eq "$1: its NIC in the task table" "$(awk '{ print $9 }' <<<"$row")" "$5"
	fi
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	echo "--- placement, $1 (core = CPU $4):"; cat "/tmp/$1.txt"
}
cc='round(100 * (d["total"]["tiers"]["core"] + d["total"]["tiers"]["cache"]), 1)'
run eevdf "$ADDR_A_CLI" "$ADDR_B_CLI" 1 "$NIC_A"
sched_start
run bulk-a "$ADDR_A_CLI" "$ADDR_B_CLI" 1 "$NIC_A"
run bulk-b "$ADDR_B_CLI" "$ADDR_A_CLI" 5 "$NIC_B"
sched_stop || fail "sched_stop"

# $1 = label: 3 s of bulk from the client namespace to a receiver behind NIC B, under a
# scheduler of its own; sets rx_counts to "<rx_irq_cpu> <rx_off_irq>" of that run.
bg "$PACER" sink 7002
rx_run() {
	sched_start
	ip netns exec cli "$PACER" send "$ADDR_B_SRV" 7002 0 3 >"/tmp/rx-$1.out" 2>&1 ||
		fail "$1: pacer send"
	sched_stop || fail "sched_stop ($1)"
	rx_counts="$(stats_total rx_irq_cpu) $(stats_total rx_off_irq)"
}
off_pct() { # "<on> <off>" -> off share in percent, one decimal; -1 when nothing was counted
	awk '{ t = $1 + $2; print t ? int(1000 * $2 / t + 0.5) / 10 : -1 }' <<<"$1"
}
rx_run plain
rx_plain=$rx_counts
log "receiver behind NIC B, as is: rx_irq_cpu rx_off_irq = $rx_plain"

rfs0=$(cat /proc/sys/net/core/rps_sock_flow_entries)
rps=/sys/class/net/$NIC_B/queues/rx-0/rps_cpus
on_exit "echo $rfs0 >/proc/sys/net/core/rps_sock_flow_entries; echo 0 >$rps"
echo 4096 >/proc/sys/net/core/rps_sock_flow_entries
echo 0f >"$rps"
rx_run rps
rx_rps=$rx_counts
log "receiver behind NIC B, RPS to CPUs 0-3: rx_irq_cpu rx_off_irq = $rx_rps"
grep -E '^.*(RFS|RPS) ' "$SCHED_LOG" | sed 's/^/  | /'
check_eq "log: RFS detected" "$(grep -c 'RFS is on (net.core.rps_sock_flow_entries = 4096)' "$SCHED_LOG")" 1
check_eq "log: RPS on $NIC_B rx-0 detected" "$(grep -c "RPS on $NIC_B rx-0 (rps_cpus 0*f)" "$SCHED_LOG")" 1

# At least 200 segments in 3 s of bulk (1500-2500 seen here): enough that a share means
# something and an empty nic_cpus map fails, with room for a machine several times slower.
check_ge "as is: segments counted" "$(awk '{ print $1 + $2 }' <<<"$rx_plain")" 200
check_le "as is: % of segments processed off NIC B's IRQ CPU" "$(off_pct "$rx_plain")" 20
check_ge "RPS: segments counted" "$(awk '{ print $1 + $2 }' <<<"$rx_rps")" 200
check_ge "RPS: % of segments processed off NIC B's IRQ CPU" "$(off_pct "$rx_rps")" 90
# One Python start for the three (jpairs): 0.85 s each in the idle guest.
mapfile -t v < <(jpairs /tmp/eevdf.json "$cc" /tmp/bulk-a.json "$cc" /tmp/bulk-b.json "$cc")
check_ge "bulk over A: core+cache % of CPU 1 (EEVDF ${v[0]}%)" "${v[1]}" 80
check_ge "bulk over B: core+cache % of CPU 5" "${v[2]}" 80
finish
