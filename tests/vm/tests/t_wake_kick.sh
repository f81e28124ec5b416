#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A wakeup onto the woken task's own CPU sends no idle kick (bpf/cpus.bpf.h kick_queued(),
# docs/design.md section 7). The kernel reschedules that CPU itself if it idles, and from
# ops.enqueue(), which holds that CPU's runqueue lock, scx_bpf_kick_cpu() cannot look whether it
# idles: it queues an irq_work, one IRQ work interrupt ("IWI" in /proc/interrupts) per wakeup on
# the waking CPU, which for a receiver is its NIC's IRQ CPU. In micro-2n-32 that kick was half
# of enqueue()'s BPF time (docs/results/bench.md, stop 46).
#
# Shape: a pinned hog on every CPU of NIC A's LLC (CPUs 0-3; IRQ CPU 1), one iperf3 receiver on
# NIC A, and --class-bounds 1000000,999999, so that the receiver is class low: pick_net_cpu()
# finds no idle CPU in the LLC and queues it on its busy previous CPU there, its own, at each
# wakeup (the pinned hogs never pass ops.enqueue()'s kicks, and the client in namespace cli uses
# NIC A's peer, not a NIC scx_miami is given). Before the change every such wakeup raised an IRQ
# work interrupt on the waking CPU, NIC A's IRQ CPU 1: run on the build before it, this test
# counted 411 there in 5 s for 494 switch-ins of the receiver (0.83), and 16 for 451 after it
# (0.035). The other CPUs of the LLC, each with its hog, counted 15-28 either way: interrupts at
# a rate of their own, not one per wakeup. So the check counts CPU 1's alone: over all CPUs, a
# slower run, where the receiver wakes less often, reads a higher share (0.16 alone and 0.30
# inside a full make test, on one machine). CPU 1's must stay below a quarter of the switch-ins.
# EEVDF kicks nothing, so it has no figure to compare.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

# IRQ work interrupts so far, per CPU: "N0 N1 ...".
iwi() { awk '$1 == "IWI:" { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) printf "%s%s", (i > 2 ? " " : ""), $i; print "" }' /proc/interrupts; }
# Switch-ins so far of every thread of process $1 (schedstat's third field).
runs() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $3 } END { print s + 0 }'; }

net_default
for c in 0 1 2 3; do bg taskset -c "$c" stress-ng --cpu 1 --timeout 60 --quiet; done
sched_start --class-bounds 1000000,999999
iperf_server 5201 "$ADDR_A_SRV"
srv=$IPERF_SERVER_PID
iperf_client_bg /tmp/kick-c.out cli "$ADDR_A_SRV" 5201 30
wait_streaming "$srv"
sleep 2
i0=$(iwi) r0=$(runs "$srv") b0=$(cat "/sys/class/net/$NIC_A/statistics/rx_bytes")
sleep 5
i1=$(iwi) r1=$(runs "$srv") b1=$(cat "/sys/class/net/$NIC_A/statistics/rx_bytes")
sched_stop || fail "sched_stop"
# Per CPU over the window, and on the IRQ CPU, where NIC A's softirq wakes the receiver.
per=$(paste -d' ' <(tr ' ' '\n' <<<"$i1") <(tr ' ' '\n' <<<"$i0") | awk '{ printf "%s%d", (NR > 1 ? " " : ""), $1 - $2 }')
ints=$(awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; print s }' <<<"$per")
on_irq=$(awk '{ print $2 }' <<<"$per") sw=$((r1 - r0))
log "over 5 s: IRQ work interrupts per CPU $per (all $ints), $sw switch-ins of the receiver, $(((b1 - b0) / 5000)) kB/s received"
log "placements of class low: core $(stats_total enq_core_low), cache $(stats_total enq_cache_low), other $(stats_total enq_other_low)"
# The shape does what it is for: the receiver woke often and was placed as class low.
check_ge "receiver switch-ins in 5 s" "$sw" 100
check_ge "class-low placements in the IRQ CPU's LLC" "$(($(stats_total enq_core_low) + $(stats_total enq_cache_low)))" 100
check_le "IRQ work interrupts on IRQ CPU 1 per switch-in of the receiver" "$(awk -v a="$on_irq" -v b="$sw" 'BEGIN { printf "%.3f", a / b }')" 0.25
finish
