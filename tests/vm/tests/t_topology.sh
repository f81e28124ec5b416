#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest test (EEVDF, no scheduler): the VM has the topology and NIC interrupts the scheduler
# tests rely on.
#  - two LLC domains, 0-3 and 4-7 (cpu*/cache/index3/shared_cpu_list);
#  - both NIC pairs pass traffic, and a pinned receive IRQ really fires on its pinned CPU:
#    IRQ_A -> CPU 1, IRQ_B -> CPU 5, ~3 s of iperf3 over both pairs, >= 90% of each input IRQ's
#    interrupts (from /proc/interrupts deltas) on the pinned CPU.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

llcs=$(cat /sys/devices/system/cpu/cpu*/cache/index3/shared_cpu_list | sort -u | paste -sd' ')
check_eq "LLC groups" "$llcs" "0-3 4-7"

net_setup
pass "net_setup (A: $NIC_A irq $IRQ_A, B: $NIC_B irq $IRQ_B)"
pin_irq "$IRQ_A" 1
pin_irq "$IRQ_B" 5

iperf_server 5201 $ADDR_A_SRV
iperf_server 5202 $ADDR_B_SRV
read -r -a a0 <<<"$(irq_counts "$IRQ_A")"
read -r -a b0 <<<"$(irq_counts "$IRQ_B")"
iperf_client_bg /tmp/iperf-a.txt cli $ADDR_A_SRV 5201 3; pa=$IPERF_CLIENT_PID
iperf_client_bg /tmp/iperf-b.txt cli $ADDR_B_SRV 5202 3; pb=$IPERF_CLIENT_PID
wait $pa && pass "iperf3 pair A: $(grep receiver /tmp/iperf-a.txt | awk '{print $7, $8}')" || { fail "iperf3 pair A"; cat /tmp/iperf-a.txt; }
wait $pb && pass "iperf3 pair B: $(grep receiver /tmp/iperf-b.txt | awk '{print $7, $8}')" || { fail "iperf3 pair B"; cat /tmp/iperf-b.txt; }
read -r -a a1 <<<"$(irq_counts "$IRQ_A")"
read -r -a b1 <<<"$(irq_counts "$IRQ_B")"

share() { # share CPU old-array-name new-array-name -> "pct total"
	local -n o=$2 n=$3
	python3 -c '
import sys
cpu = int(sys.argv[1]); n = len(sys.argv[2:]) // 2
o = list(map(int, sys.argv[2:2 + n])); w = list(map(int, sys.argv[2 + n:]))
d = [b - a for a, b in zip(o, w)]
print(f"{100 * d[cpu] / max(1, sum(d)):.1f} {sum(d)} {d}")' "$1" "${o[@]}" "${n[@]}"
}
read -r pa tot_a rest_a <<<"$(share 1 a0 a1)"
read -r pb tot_b rest_b <<<"$(share 5 b0 b1)"
log "IRQ_A $IRQ_A per-CPU delta $rest_a; IRQ_B $IRQ_B per-CPU delta $rest_b"
check_ge "IRQ_A interrupts" "$tot_a" 100
check_ge "IRQ_B interrupts" "$tot_b" 100
check_ge "IRQ_A % on CPU 1" "$pa" 90
check_ge "IRQ_B % on CPU 5" "$pb" 90
finish
