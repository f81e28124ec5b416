#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #13 item 10 (the emulator's own crash): sched_ext enabled and disabled in a loop under
# load, with a trivial scheduler and with scx_miami, to see whether the kernel-text-patching
# int3 that killed two guests (docs/operations.md, Troubleshooting) comes with our scheduler or
# with any. Load: 4 iperf3 receivers (2 per NIC) and a CPU hog per CPU, the shape the crashes
# came in (a detach under load). Cycles: $MIAMI_LOOP_PEER (default 10) of peer_fifo
# (tests/vm/tools/peer.bpf.c: a name and no callbacks), then $MIAMI_LOOP_MIAMI (default 6) of
# scx_miami; each must reach `enabled` and come back to `disabled`. A guest that dies of the trap
# is retried by suite.sh on that exact signature and counted in its summary, and the console
# shows the last cycle reached. `make soak` runs it; MIAMI_TCG_THREAD=single runs the guest with
# one TCG thread for all vCPUs instead (tests/vm/run.sh).
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

n_peer=${MIAMI_LOOP_PEER:-10} n_miami=${MIAMI_LOOP_MIAMI:-6}
net_default
srv=() cl=()
for i in 0 1 2 3; do
	if ((i < 2)); then addr=$ADDR_A_SRV; else addr=$ADDR_B_SRV; fi
	iperf_server $((5201 + i)) "$addr"
	srv+=("$IPERF_SERVER_PID")
	iperf_client_bg "/tmp/cl-$i.out" cli "$addr" $((5201 + i)) 3600
	cl+=("$IPERF_CLIENT_PID")
done
wait_streaming "${srv[@]}"
stress-ng --cpu "$(nproc)" --timeout 0 --quiet & hogs=$!
on_exit "kill $hogs 2>/dev/null; pkill -x stress-ng"

ok_peer=0 ok_miami=0 t0=$SECONDS
for ((i = 1; i <= n_peer; i++)); do
	peer_start || { log "peer_fifo cycle $i: not enabled"; break; }
	sleep 0.5
	peer_stop
	[[ $(sched_state) == disabled ]] || { log "peer_fifo cycle $i: state $(sched_state)"; break; }
	ok_peer=$i
	((i % 5)) || log "peer_fifo: $i cycles ($((SECONDS - t0)) s)"
done
t1=$SECONDS
for ((i = 1; i <= n_miami; i++)); do
	sched_start >/dev/null || { log "scx_miami cycle $i: not enabled"; break; }
	sleep 1
	sched_stop >/dev/null || { log "scx_miami cycle $i: stop failed"; break; }
	ok_miami=$i
	((i % 5)) || log "scx_miami: $i cycles ($((SECONDS - t1)) s)"
done
alive=$(for p in "${srv[@]}"; do kill -0 "$p" 2>/dev/null && echo x; done | wc -l)
kill "$hogs" "${cl[@]}" "${srv[@]}" 2>/dev/null || true
log "peer_fifo $ok_peer cycles in $((t1 - t0)) s, scx_miami $ok_miami cycles in $((SECONDS - t1)) s, under load"
check_eq "peer_fifo enable/disable cycles under load" "$ok_peer" "$n_peer"
check_eq "scx_miami enable/disable cycles under load" "$ok_miami" "$n_miami"
check_eq "receivers still running after the cycles" "$alive" 4
finish
