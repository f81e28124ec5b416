#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #13 tests 5 and 6 (connection churn and task churn), short forms:
#   - netperf TCP_CRR (a new connection per transaction) from namespace cli to a netserver on
#     NIC A for 15 s, as fast as the guest goes (the rate is printed: a TCG guest makes a few
#     hundred a second, not the 1,000+ a host does), then stress-ng --sock (processes that
#     create, use and close socket pairs, and exit) for 10 s;
#   - no error: netperf and stress-ng exit 0, the scheduler stays enabled and exits 0;
#   - per-connection and per-task state stay bounded and fall back: every connection got a
#     socket storage (socks_tracked grows at least by the transactions), and the net_tasks table
#     (bpftool map dump) holds at most a few dozen entries 7 s after the churn (the agent deletes
#     entries silent for 5 s; socket and task storage die with their socket and task, which the
#     kernel guarantees). The scheduler's BPF map memory (memlock, bpftool) and the kernel's
#     slab are printed before and after.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

net_default
netserver -L "$ADDR_A_SRV" -p 12865 -D >/tmp/netserver.out 2>&1 &
ns=$!
on_exit "kill $ns 2>/dev/null"
sleep 0.5
memlock() { bpftool map show 2>/dev/null | awk '/memlock/ { for (i = 1; i <= NF; i++) if ($i == "memlock") s += $(i + 1) } END { print s + 0 }'; }
net_tasks() { bpftool map dump name net_tasks 2>/dev/null | grep -c '"key"\|^key' || true; }
slab() { awk '/^Slab:/ { print $2 }' /proc/meminfo; }
sched_start --stats 5
log "before: memlock $(memlock) B, net_tasks $(net_tasks), slab $(slab) kB"
ip netns exec cli netperf -H "$ADDR_A_SRV" -p 12865 -t TCP_CRR -l 15 -- -o THROUGHPUT,TRANSACTION_RATE \
	>/tmp/crr.out 2>&1 && crr_rc=0 || crr_rc=$?
log "during/after CRR: memlock $(memlock) B, net_tasks $(net_tasks), slab $(slab) kB"
stress-ng --sock 4 --timeout 10 --metrics-brief >/tmp/sock.out 2>&1 && sock_rc=0 || sock_rc=$?
n_after=$(net_tasks)
sleep 7
n_later=$(net_tasks)
log "after the churn: memlock $(memlock) B, net_tasks $n_after, 7 s later $n_later, slab $(slab) kB"
state=$(sched_state)
sched_stop && rc=0 || rc=1
cat /tmp/crr.out; tail -n 3 /tmp/sock.out
trans=$(awk -F, 'NF == 2 && $2 + 0 > 0 { print int($2 * 15) }' /tmp/crr.out | tail -n 1)
log "TCP_CRR: $(awk -F, 'NF == 2 && $2 + 0 > 0 { print $2 }' /tmp/crr.out | tail -n 1) connections/s, about ${trans:-0} in 15 s"
check_eq "netperf TCP_CRR exit status" "$crr_rc" 0
check_eq "stress-ng --sock exit status" "$sock_rc" 0
check_eq "state through the churn" "$state" enabled
check_eq "scheduler exit status" "$rc" 0
check_ge "sockets tracked, against the transactions" "$(stats_total socks_tracked)" "${trans:-1}"
check_le "net_tasks entries 7 s after the churn" "$n_later" 40
finish
