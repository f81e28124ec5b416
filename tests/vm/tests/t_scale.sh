#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #14 §4 (scale), a benchmark: figures, and checks only that each row measured something.
# What one call of the TCP probes and of the sched_ext callbacks costs as live sockets and
# network tasks grow. For each N in $MIAMI_SCALE_N (default 8 64 512 4096): a thread-per-
# connection server (shapes tpc) on NIC A and N connections from namespace cli (shapes fanout):
# 2N sockets in the guest, N server threads, every (N/8)th connection busy (64 bytes every
# 20 ms, so 8 busy connections in every row), the others idle (1 byte every 2 s). scx_miami with
# default flags starts fresh per row; once all are connected, kernel.bpf_stats_enabled gives
# run time and calls per program over 8 s: ns per call of the send, recv and receive-path probes
# and of all struct_ops callbacks together, and the agent's last round (agent_round_us). The
# cost should stay flat: the probes use socket and task local storage (no table walks) and the
# callbacks touch per-CPU state; the agent reads the task table in one batch. A row the guest
# could not drive prints what it reached. `make scale`; docs/results/scale.md holds a run.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

SHAPES=$VM_TOP/target/tools/shapes
read -ra sizes <<<"${MIAMI_SCALE_N:-8 64 512 4096}"
net_default
sysctl -q kernel.bpf_stats_enabled=1
out=${VM_OUT:-/tmp}/scale.txt
printf '%-6s %-7s %-8s %-9s %-9s %-9s %-11s %-9s %s\n' conns sockets threads send_ns recv_ns rcv_ns \
	struct_ops agent_us net_tasks | tee "$out"
k=0
for n in "${sizes[@]}"; do
	k=$((k + 1)) port=$((7100 + k))
	# A descriptor per connection: past the default limit of 1,024 the server's accept fails.
	(ulimit -n $((n + 64)) && exec "$SHAPES" tpc "$port") >/tmp/tpc.out 2>&1 & tpc=$!
	wait_listening "$port" || true
	sched_start --stats 1
	every=$((n / 8 > 0 ? n / 8 : 1))
	ip netns exec cli "$SHAPES" fanout "$ADDR_A_SRV" "$port" "$n" "$every" 20000 2000 600 \
		>/tmp/fanout.out 2>&1 & fan=$!
	for ((i = 0; i < 1800; i++)); do grep -q connected /tmp/fanout.out && break; sleep 0.1; done
	up=$(awk '/connected/ { print $4 }' /tmp/fanout.out)
	sleep 2
	bpf_cost >/tmp/s0.txt
	sleep 8
	bpf_cost >/tmp/s1.txt
	threads=$(awk '/^Threads:/ { print $2 }' "/proc/$tpc/status" 2>/dev/null || echo 0)
	agent=$(awk '/^agent: most moves/ { for (i = 1; i <= NF; i++) { if ($(i + 1) == "network") t = $i; if ($i == "round") c = $(i + 1) } } END { print c + 0, t + 0 }' "$SCHED_LOG")
	kill "$fan" "$tpc" 2>/dev/null || true
	wait "$fan" "$tpc" 2>/dev/null || true
	sched_stop >/dev/null || fail "N=$n: sched_stop"
	# ns per call over the window: per program for the probes, summed over the callbacks.
	awk -v n="${up:-0}" -v th="$threads" -v agent="$agent" '
		FNR == NR { ns0[$2] = $3; c0[$2] = $4; next }
		{ dn = $3 - ns0[$2]; dc = $4 - c0[$2]
		  if ($1 == "struct_ops") { sn += dn; sc += dc } else { pn[$2] = dn; pc[$2] = dc } }
		# bpftool names tracing programs in full from BTF (miami_tcp_sendmsg), the kernel
		# cuts them to 15 characters: match the start.
		function per(pre,  k, ns, c) {
			for (k in pc) if (index(k, pre) == 1) { ns += pn[k]; c += pc[k] }
			return c > 0 ? sprintf("%.0f", ns / c) : "-" }
		END { split(agent, a, " ")
		      printf "%-6d %-7d %-8d %-9s %-9s %-9s %-11s %-9d %d\n", n, 2 * n, th,
		          per("miami_tcp_send"), per("miami_tcp_recv"), per("miami_tcp_rcv_e"),
		          (sc > 0 ? sprintf("%.0f", sn / sc) : "-"), a[1], a[2] }' /tmp/s0.txt /tmp/s1.txt |
		tee -a "$out"
	check_ge "N=$n: connections up" "${up:-0}" "$n"
done
finish
