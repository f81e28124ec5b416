#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #13 tests 3 and 4, short forms: NICs and IRQs that change under a running scheduler.
#   - IRQ moves: NIC A's receive IRQ moves every second for 12 s (CPUs 1, 2, 3, 6, ...) while 2
#     receivers run on it (--irq-refresh-ms 200). At the end the IRQ CPUs scx_miami reports
#     equal the two NICs' pinned CPUs, and it counted the moves (nr_irq_changes >= 6).
#   - NIC hot-unplug and re-plug: while a receiver streams over NIC B (IRQ CPU 5), the server
#     NIC B's PCI function is removed (echo 1 > .../remove), then brought back (PCI rescan) and
#     set up again. While it is gone, CPU 5 is no longer an IRQ CPU, nic_cpus (bpftool) has one
#     entry fewer, and the receiver is released (its row gone from the task table, or older
#     than --release-after-ms) within release time + 1 s. After the re-plug, with its IRQ pinned
#     to CPU 5 again, the IRQ CPUs are 1,5 and nic_cpus has both entries again.
#   - no error throughout (the vanished --nic is a logged warning); the scheduler exits 0.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami}
mon() { timeout -s INT 3 "$bin" --monitor 0.5 2>/dev/null || true; }
irq_cpus_now() { mon | awk '/^irq_cpus/ { print $2; exit }'; }
nic_entries() { bpftool map dump name nic_cpus 2>/dev/null | grep -c '"key"\|^key' || true; }
net_default
sched_start --irq-refresh-ms 200
srv=() cl=()
for i in 0 1; do
	iperf_server $((5201 + i)) "$ADDR_A_SRV"
	srv+=("$IPERF_SERVER_PID")
done
iperf_server 5203 "$ADDR_B_SRV"
rx_b=$IPERF_SERVER_PID
srv+=("$rx_b")
for i in 0 1; do
	iperf_client_bg "/tmp/cl$i.out" cli "$ADDR_A_SRV" $((5201 + i)) 3600
	cl+=("$IPERF_CLIENT_PID")
done
iperf_client_bg /tmp/clb.out cli "$ADDR_B_SRV" 5203 3600
cl+=("$IPERF_CLIENT_PID")
wait_streaming "$rx_b"

# IRQ moves, once a second
for c in 2 3 6 2 7 3 1 6 2 3 7 1; do pin_irq "$IRQ_A" "$c"; sleep 1; done
sleep 1
# Both from one monitor run (3 s): its first "irq_cpus 1,5 (changes since start: N)" line, where
# the IRQ CPUs and the count come from the same snapshot.
{ read -r irq_end; read -r changes; } \
	< <(mon | awk '/^irq_cpus/ { print $2; gsub(/[()]/, ""); print $NF; exit }') || true
check_eq "IRQ CPUs after 12 moves, NIC A back on 1" "$irq_end" 1,5
check_ge "IRQ map changes counted" "${changes:-0}" 6

# NIC B away and back
entries0=$(nic_entries)
pci=$(basename "$(readlink -f "/sys/class/net/$NIC_B/device/..")")
tid_b=$(ls "/proc/$rx_b/task" | sort -n | tail -n 1)
log "removing NIC B: $NIC_B, PCI $pci; its receiver's stream thread $tid_b"
echo 1 >"/sys/bus/pci/devices/$pci/remove"
t_rm=$SECONDS
sleep 2.5
irq_gone=$(irq_cpus_now)
entries_gone=$(nic_entries)
row=$(mon | awk -v t="$tid_b" '$1 == t')
log "NIC B gone: IRQ CPUs $irq_gone, nic_cpus entries $entries0 -> $entries_gone, receiver row: ${row:-none}"
echo 1 >/sys/bus/pci/rescan
# The kernel names it eth0 first and udev renames it a moment later: "NIC B back as eth0",
# then "Cannot find device eth0". Wait for its final name (10 s at most).
new= irq_new=
for i in $(seq 100); do
	new=$(_iface_by_mac $MAC_B_SRV) && [[ $new != eth* ]] && irq_new=$(_input_irq "$new") && break
	sleep 0.1
done
log "NIC B back as $new, receive IRQ $irq_new"
$IP addr add "$ADDR_B_SRV/24" dev "$new" && $IP link set "$new" up
[[ -n $irq_new ]] && pin_irq "$irq_new" 5
sleep 1.5
irq_back=$(irq_cpus_now)
entries_back=$(nic_entries)
# Every stream ends before the stop (nothing below needs one), so that the stop runs on an idle
# guest. Killing a server ends its client's iperf3 too (the client PIDs are the shells around
# them).
kill "${cl[@]}" "${srv[@]}" 2>/dev/null || true
wait "${cl[@]}" 2>/dev/null || true
state=$(sched_state)
sched_stop && rc=0 || rc=1

check_eq "IRQ CPUs with NIC B gone" "$irq_gone" 1
check_eq "nic_cpus entries with NIC B gone" "$entries_gone" "$((entries0 - 1))"
check_eq "NIC B's receiver released (no row, or silent past the release time)" \
	"$(awk '{ print ($10 >= 1000) ? "released" : "listed" }' <<<"${row:-x x x x x x x x x 99999}")" released
check_eq "IRQ CPUs with NIC B back on CPU 5" "$irq_back" 1,5
check_eq "nic_cpus entries with NIC B back" "$entries_back" "$entries0"
# The named NIC vanished: a warning (not an error that froze the IRQ map, as before: its IRQ
# CPU stayed in the set), and a note when it is back.
check_ge "log lines: --nic $NIC_B is gone" "$(grep -c -- "--nic $NIC_B is gone" "$SCHED_LOG" || true)" 1
check_ge "log lines: --nic $NIC_B is back" "$(grep -c -- "--nic $NIC_B is back" "$SCHED_LOG" || true)" 1
check_eq "state throughout" "$state" enabled
check_eq "scheduler exit status" "$rc" 0
finish
