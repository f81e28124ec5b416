#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #5: the TUI against the live scheduler under traffic, in a real terminal (tmux). One
# iperf3 receiver on NIC A (IRQ -> CPU 1). The CPUs view marks CPU 1 with its NIC; after Tab the
# network-tasks view lists the receiver's pid with tier core or cache; q ends the TUI with exit
# status 0. The captured screens are kept in /tmp (tui-cpus.txt, tui-tasks.txt) and printed.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami}
export TERM=xterm-256color
net_default
sched_start
iperf_server 5201 "$ADDR_A_SRV"
iperf_client_bg /tmp/cl.out cli "$ADDR_A_SRV" 5201 20
sleep 2
on_exit "tmux kill-server 2>/dev/null"
tmux new-session -d -s tui -x 160 -y 48 "$bin --tui 0.5; echo tui-exit=\$? >/tmp/tui.rc"
sleep 4
tmux capture-pane -p -t tui >/tmp/tui-cpus.txt
tmux send-keys -t tui Tab
sleep 2
tmux capture-pane -p -t tui >/tmp/tui-tasks.txt
# CPU use of the TUI itself (a figure, not a check): utime+stime over its lifetime so far.
tpid=$(pgrep -n -f -- "scx_miami --tui 0.5" || true)
if [[ -n $tpid ]]; then
	read -r ut st start < <(awk '{ print $14, $15, $22 }' "/proc/$tpid/stat")
	hz=$(getconf CLK_TCK)
	up=$(awk '{ print $1 }' /proc/uptime)
	log "TUI CPU use: $(python3 -c "print(round(100 * ($ut + $st) / $hz / ($up - $start / $hz), 2))")% of one CPU over $(python3 -c "print(round($up - $start / $hz, 1))") s at 2 Hz (utime+stime)"
fi
tmux send-keys -t tui q
for i in $(seq 50); do [[ -s /tmp/tui.rc ]] && break; sleep 0.1; done
wait "$IPERF_CLIENT_PID" || true
sched_stop || fail "sched_stop"
echo "--- CPUs view:"; cat /tmp/tui-cpus.txt
echo "--- network tasks view:"; cat /tmp/tui-tasks.txt

grep -E "cpu +1 .*IRQ $NIC_A" /tmp/tui-cpus.txt >/dev/null && pass "CPU 1 marked IRQ $NIC_A" ||
	fail "CPU 1 not marked with $NIC_A"
grep -q "connected" /tmp/tui-cpus.txt && pass "TUI connected to the stats socket" ||
	fail "TUI not connected"
# Rows read PID/TID: the receiver process and its stream thread.
row=$(grep -E "(^|[^0-9])$IPERF_SERVER_PID/[0-9]+ +iperf3" /tmp/tui-tasks.txt | head -1 || true)
[[ -n $row ]] && pass "receiver pid $IPERF_SERVER_PID listed: $row" ||
	fail "receiver pid $IPERF_SERVER_PID not in the tasks view"
grep -Eq " (core|cache) " <<<"$row" && pass "receiver tier core or cache" ||
	fail "receiver tier: $row"
check_eq "TUI exit on q" "$(cat /tmp/tui.rc 2>/dev/null)" tui-exit=0
finish
