#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #12 item 1 (short connections): a real web server whose connections carry one request
# each. lighttpd (one process, one thread) serves a 1 KiB file on NIC A (its receive IRQ on
# CPU 1) to `ab` without keep-alive (a new connection per request, 4 at a time) from namespace
# cli, while 4 CPU hogs (stress-ng) keep half the guest busy. No connection lives long enough to
# close a 100 ms window, so the paper's representative connection has no rate; the server is as
# communication-intensive as its call rate says only if the monitor counts all of a task's
# calls. Checked, with default flags (--class-bounds auto):
#   - the scheduler lists lighttpd as a network task with IRQ CPU 1 (its --stats task table),
#     with an intensiveness near its TCP calls per second (see the bounds below), counted by kprobes
#     on tcp_sendmsg/tcp_recvmsg (the code before this issue said 12 where they counted ~130:
#     under TCG a few connections live past one 100 ms window, and gave their own slow rate);
#   - where lighttpd's runs happen (neutral probe, probe.py --trace --runs: each switch-in counts
#     once; lighttpd runs a few hundred short bursts, a few ms in all, which run time sampling
#     cannot place): at least 90% in core+cache, no less than EEVDF's in the same run (EEVDF's
#     wakeups follow the softirq that wakes the server and mostly stay in CPU 1's LLC too), and
#     at most half of EEVDF's share of runs off CPU 1 itself: the core tier is what MiAMI adds
#     (a free IRQ CPU takes every class, so the low class the old code gave it placed it there
#     too here). EEVDF's wakeups follow the softirq onto CPU 1 more often than not, hog there or
#     not: 70.8%, 89.5% and (with 6 hogs) 79.1% of the runs, so the check used to be "20 points
#     more than EEVDF on CPU 1", which a run where EEVDF read 89.5% failed by construction
#     (scx_miami 97.3%). Off CPU 1, those runs read 29.2%, 10.5% and 20.9% for EEVDF against
#     0.3%, 2.7% and 2.2% for scx_miami; in the run after the change, 88.6% against 0.0%.
# Requests per second are printed for both schedulers (a TCG figure, not a claim).
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

net_default
www=/tmp/www
mkdir -p "$www"
head -c 1024 /dev/zero | tr '\0' x >"$www/index.html"
cat >/tmp/lighttpd.conf <<EOF
server.document-root = "$www"
server.bind = "$ADDR_A_SRV"
server.port = 80
server.errorlog = "/tmp/lighttpd-error.log"
server.pid-file = "/tmp/lighttpd.pid"
index-file.names = ( "index.html" )
EOF
bg lighttpd -D -f /tmp/lighttpd.conf
lt=$BG_PID
for i in $(seq 50); do ss -ltn "sport = :80" 2>/dev/null | grep -q LISTEN && break; sleep 0.1; done
bg stress-ng --cpu 4 --timeout 0 --quiet
hogs=$BG_PID
on_exit "kill $hogs 2>/dev/null; pkill -f stress-ng"

# lighttpd's TCP calls per second over 4 s, counted by kprobes on tcp_sendmsg/tcp_recvmsg in a
# private tracefs instance: neutral (not the scheduler's own probes) and exact.
count_calls() {
	local inst=/sys/kernel/tracing/instances/t_short_conn e n
	mkdir -p "$inst"
	echo 'p:t_sc_send tcp_sendmsg' >>/sys/kernel/tracing/kprobe_events
	echo 'p:t_sc_recv tcp_recvmsg' >>/sys/kernel/tracing/kprobe_events
	for e in t_sc_send t_sc_recv; do
		echo "common_pid == $lt" >"$inst/events/kprobes/$e/filter"
		echo 1 >"$inst/events/kprobes/$e/enable"
	done
	sleep 4
	for e in t_sc_send t_sc_recv; do echo 0 >"$inst/events/kprobes/$e/enable"; done
	n=$(grep -c ': t_sc_' "$inst/trace" || true)
	rmdir "$inst"
	echo '-:t_sc_send' >>/sys/kernel/tracing/kprobe_events
	echo '-:t_sc_recv' >>/sys/kernel/tracing/kprobe_events
	echo $((n / 4))
}

# $1 = label: ab under the probe (8 s), then, under scx_miami (the only figure checked),
# lighttpd's calls per second (4 s) into /tmp/$1-calls; requests/s in /tmp/$1-rps. ab runs until all that is done and is then stopped
# (SIGINT: it prints its report): the probe's Python took 15 s to start here under load, so a
# fixed ab time can end before the probe's window begins.
run() {
	ip netns exec cli ab -q -t 600 -n 10000000 -c 4 "http://$ADDR_A_SRV/index.html" \
		>"/tmp/$1-ab.out" 2>&1 &
	local ab=$!
	sleep 1
	$PROBE --pids "$lt" --irq-cpu 1 --duration 8 --trace --runs --probe-cpu "$PROBE_CPU" --json \
		>"/tmp/$1.json" 2>"/tmp/$1.txt" || true
	[[ $1 == eevdf ]] || count_calls >"/tmp/$1-calls"
	pkill -INT -x ab || true
	wait "$ab" || true
	awk '/^Requests per second/ { print $4 }' "/tmp/$1-ab.out" >"/tmp/$1-rps"
	echo "--- $1: lighttpd placement (core = CPU 1)"; cat "/tmp/$1.txt"
	grep -E '^(Complete|Failed) requests' "/tmp/$1-ab.out" | sed "s/^/$1: /"
}
run eevdf
# The hogs stop while the scheduler loads (lib.sh sched_start_paused): beside them a start took
# 16 s.
sched_start_paused '^stress-ng' --stats 0.5
run miami
# The hogs end before the stop, so that the stop and the readings after it run on an idle guest
# (beside them a Python start took 3-15 s); stress-ng stops its workers on SIGTERM. A builtin
# kill, not waited for: the task-table rows read below are the last printed before the stop,
# which must not come any later than without the kill.
kill "$hogs" 2>/dev/null || true
sched_stop || fail "sched_stop"

# lighttpd's rows in the --stats task tables (tid tgid comm intens class tier irq ...), printed
# every 0.5 s: the 8 of the 4 s in which its calls were counted come last but one (the very last
# follows ab's stop).
rows=$(awk -v p="$lt" '$2 == p && $3 == "lighttpd"' "$SCHED_LOG" | tail -n 9)
row=$(tail -n 1 <<<"$rows")
log "lighttpd in the scheduler's task table:"; echo "$rows"
intens=$(head -n 8 <<<"$rows" | awk '{ s += $4 } END { print int(s / NR) }')
calls=$(cat /tmp/miami-calls)
log "lighttpd: intensiveness $intens (mean of 8 rows), TCP calls/s counted by kprobes $calls"
log "requests/s: EEVDF $(cat /tmp/eevdf-rps), scx_miami $(cat /tmp/miami-rps)"
cc='round(100 * (d["total"]["tiers"]["core"] + d["total"]["tiers"]["cache"]), 1)'
off='round(100 * (1 - d["total"]["tiers"]["core"]), 1)'
# One Python start per file: EEVDF's core+cache %, runs off CPU 1 % and half of that; scx_miami's
# lost events, runs, core+cache % and runs off CPU 1 %.
{ read -r base; read -r base_off; read -r half_off; } \
	< <(jgets /tmp/eevdf.json "$cc" "$off" "$off / 2") || true
{ read -r lost; read -r runs; read -r m_cc; read -r m_off; } \
	< <(jgets /tmp/miami.json 'd["lost_events"]' 'd["samples"]' "$cc" "$off") || true
check_eq "lighttpd is a network task with IRQ CPU 1" "$(awk '{ print $3, $7 }' <<<"$row")" "lighttpd 1"
# Intensiveness is calls per second (10^6 / mean interval in us). Each row shows one 100 ms window,
# which under the hogs swings by 2x either way (58-158 where the count said 195): the mean of 8 must
# lie within a factor of 3 below and 2 above the count. Before this issue it was that of whichever
# connection lived past a 100 ms window: 12 and 25 where the count said 195 and 201.
check_ge "lighttpd intensiveness against its calls/s ($calls)" "$intens" "$((calls / 3))"
check_le "lighttpd intensiveness against its calls/s ($calls)" "$intens" "$((calls * 2))"
check_eq "probe events lost" "$lost" 0
check_ge "lighttpd runs seen" "$runs" 100
check_ge "lighttpd core+cache %" "$m_cc" 90
check_ge "lighttpd core+cache % against EEVDF's ($base%)" "$m_cc" "$base"
check_le "lighttpd runs off CPU 1 % (EEVDF's ${base_off}% / 2)" "$m_off" "$half_off"
check_ge "ab requests/s under scx_miami" "$(cat /tmp/miami-rps)" 1
finish
