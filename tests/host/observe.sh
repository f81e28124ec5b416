#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Host tier: `scx_miami --observe` on this machine's own kernel, which has BTF but no sched_ext
# (as this project's machines do). Root. Traffic: iperf3 over 127.0.0.1 only.
#   - it starts (no sched_ext needed), says it is observing, and serves stats;
#   - its TCP probes are the fentry ones, or where the kernel refuses fentry (this project's
#     build hosts force lockdown) the tracepoint ones, after a warning that says so: the
#     programs loaded match the warning; its context-switch probe is loaded too;
#   - its probes count the calls of an iperf3 transfer, and the task table lists the transfer's
#     threads with an intensiveness and no IRQ CPU (-1: loopback names none);
#   - the agent's loads: a CPU kept busy by a pinned spinner reads at least 90% busy
#     (OpenMetrics miami_cpu_load): the spinner alone fills it, whatever else runs there;
#   - one socket, a fast and a slow thread (shapes duplex against shapes ping over 127.0.0.1:
#     the writer sends every 20 us, pinned to CPU 0; the reader, pinned to CPU 1, gets 64 bytes
#     every 20 ms): both are represented by the connection (paper III-B), so the reader's median
#     row is at least half the writer's. On a real CPU the writer makes dozens of calls per
#     jiffy; with one call count per socket (the monitor updates a task once per jiffy,
#     netmon.bpf.c section 6) the first call of each jiffy took both threads' calls, nearly
#     always the writer's, so the reader's representative looked quiet and its rows fell to its
#     own rate. Counted per CPU, each ticks with its own. (A VM under TCG does not show it: the
#     host stops the writer's vCPU for milliseconds at a time, and the reader often comes first.)
#   - a second --observe beside it exits 1, says another scx_miami runs (the instance lock's
#     pid), and leaves the first one's stats socket in place (the later --monitor reads are the
#     first one's);
#   - SIGINT ends it with exit 0 and nothing of ours stays loaded (bpftool), the socket gone;
#   - two started at the same moment: one runs, the other exits 1 naming it; --stats-socket
#     serves elsewhere and --monitor reads it there; with --test-observe-no-switch it loads
#     the TCP probes and no context-switch probe;
#   - a socket another program answers on is refused (exit 1, whose it is), not taken over.
# Prints PASS/FAIL lines and "N passed, N failed"; exits 1 on any failure.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$top/target/release/scx_miami
. "$top/tests/host/lib.sh"

if [[ -d /sys/kernel/sched_ext ]]; then
	echo "observe: this kernel has sched_ext; the host tier runs on kernels without it" >&2
	exit 1
fi
[[ -e /var/run/scx/root/stats ]] && { echo "observe: a scx_miami runs here" >&2; exit 1; }
log=$(mktemp)
port=5391
iperf3 -s -B 127.0.0.1 -p $port -1 >/dev/null 2>&1 &
srv=$!
"$bin" --observe --stats 1 >"$log" 2>&1 &
obs=$!
for i in $(seq 100); do grep -q 'observing' "$log" && break; kill -0 "$obs" 2>/dev/null || break; sleep 0.1; done
# A kernel that refuses the tracepoint programs too: nothing here can run, nothing is counted
# (the VM test t_observe covers --observe on every run).
if ! grep -q 'observing' "$log" && grep -q 'refuses fentry' "$log" && ! kill -0 "$obs" 2>/dev/null; then
	echo "observe: NOT RUN: this host's kernel refuses fentry and tracepoint programs; t_observe covers --observe"
	tail -n 3 "$log"
	kill "$srv" 2>/dev/null
	exit 0
fi
check_eq "says it is observing" "$(grep -c 'observing (no scheduling)' "$log")" 1
# A second instance refuses before loading anything (no sched_ext scheduler names the first):
# before the check it ran beside the first, took its stats socket over and removed it on exit.
# Its socket comes up after the "observing" line.
for i in $(seq 100); do [[ -S /var/run/scx/root/stats ]] && break; sleep 0.1; done
second=$(timeout 20 "$bin" --observe 2>&1)
rc2=$?
check_eq "a second --observe beside it: exit status" "$rc2" 1
check_eq "... says another scx_miami runs, and names it" \
	"$(grep -c "another scx_miami is running (pid $obs): it holds /run/scx_miami.lock" <<<"$second")" 1
check_eq "... the first one's stats socket left in place" \
	"$([[ -S /var/run/scx/root/stats ]] && echo yes || echo no)" yes
# bpftool may cut names at 15 characters: count by prefix. Tracepoints: miami_tp_{send,recv,rcv};
# fentry: miami_tcp_{sendmsg,recvmsg,close,rcv_established}.
progs=$(bpftool prog show 2>/dev/null)
tp=$(grep -c 'name miami_tp_' <<<"$progs" || true) fe=$(grep -c 'name miami_tcp_' <<<"$progs" || true)
if grep -q 'refuses fentry' "$log"; then
	echo "observe: TCP probes on tracepoints (this kernel refuses fentry)"
	check_eq "TCP probe programs loaded, tracepoint and fentry" "$tp $fe" "3 0"
else
	echo "observe: TCP probes on fentry"
	check_eq "TCP probe programs loaded, tracepoint and fentry" "$tp $fe" "0 4"
fi
check_eq "context-switch probe loaded" "$(grep -c 'name miami_observe_s' <<<"$progs" || true)" 1
iperf3 -c 127.0.0.1 -p $port -t 4 >/dev/null 2>&1 &
cl=$!
sleep 3
mon=$(timeout -s INT 3 "$bin" --monitor 1 2>/dev/null)
wait "$cl" || true
taskset -c 1 timeout 4 sh -c 'while :; do :; done' &
spin=$!
sleep 1
om=$(timeout -s INT 2.5 "$bin" --monitor 1 --format openmetrics 2>/dev/null)
wait "$spin" || true
shapes=$top/target/tools/shapes
"$shapes" ping 5392 20000 &
ping=$!
sleep 0.3
"$shapes" duplex 127.0.0.1 5392 20 4 /tmp/miami-duplex.times >/tmp/miami-duplex.out &
dup=$!
for i in $(seq 50); do grep -q send_tid /tmp/miami-duplex.out && break; sleep 0.1; done
read -r wtid rtid < <(awk '/send_tid/ { print $4, $6 }' /tmp/miami-duplex.out)
taskset -pc 0 "$wtid" >/dev/null 2>&1
taskset -pc 1 "$rtid" >/dev/null 2>&1
sleep 1.5
mon2=$(timeout -s INT 2.2 "$bin" --monitor 0.5 2>/dev/null)
wait "$dup" || true
kill "$ping" 2>/dev/null
kill -INT "$obs"
rc=0
wait "$obs" || rc=$?
kill "$srv" 2>/dev/null
echo "$mon" | head -n 12
rows=$(echo "$mon" | awk '$3 == "iperf3" && NF == 10')
echo "$rows"
check_ge "probe_send in a second of the transfer" "$(echo "$mon" | awk '$1 == "probe_send" { print $2; exit }')" 100
check_ge "iperf3 rows in the task table" "$(echo "$rows" | grep -c . || true)" 1
check_eq "their IRQ CPUs" "$(echo "$rows" | awk '{ print $7 }' | sort -u | paste -sd,)" -1
check_ge "their highest intensiveness" "$(echo "$rows" | awk '$4 > m { m = $4 } END { print m + 0 }')" 10
check_ge "CPU 1's load with a spinner pinned there, last scrape" \
	"$(echo "$om" | awk -F'[{}" ]+' '/^miami_cpu_load\{cpu="1"/ { v = $NF } END { print v + 0 }')" 90
cat /tmp/miami-duplex.out
# Task-table rows (tid tgid comm intens class tier irq cpu nic age_ms) of each thread, fresh.
med() { echo "$mon2" | awk -v t="$1" '$1 == t && NF == 10 && $10 < 500 { print $4 }' | sort -n |
	awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'; }
mw=$(med "${wtid:-x}") mr=$(med "${rtid:-x}")
echo "observe: duplex writer $wtid median row $mw, reader $rtid median row $mr"
check_ge "one socket, fast writer and slow reader: reader's median row, % of the writer's" \
	"$(awk -v w="$mw" -v r="$mr" 'BEGIN { print (w > 0 ? int(100 * r / w) : 0) }')" 50
check_eq "exit status on SIGINT" "$rc" 0
wait_progs_gone miami_
check_eq "programs left (10 s)" "$progs_left" 0
echo "observe: programs gone after $progs_waited s"
check_eq "stats socket left" "$([[ -e /var/run/scx/root/stats ]] && echo yes || echo no)" no

# Two started at the same moment: the instance lock lets one through, the other exits 1 and
# names it. (A connect to the stats socket, the check before the lock, let both through: the
# socket comes up only after the BPF load.) The one that runs serves on --stats-socket, where
# --monitor reads it with the same option, and removes it on exit. Both without the
# context-switch probe (--test-observe-no-switch, for the bench's eevdf-pin-obs): the one that
# runs loads none.
sdir=$(mktemp -d)
sock=$sdir/stats
"$bin" --observe --test-observe-no-switch --stats-socket "$sock" >"$log.a" 2>&1 &
a=$!
"$bin" --observe --test-observe-no-switch --stats-socket "$sock" >"$log.b" 2>&1 &
b=$!
for i in $(seq 100); do
	[[ -S $sock ]] && ! { kill -0 "$a" && kill -0 "$b"; } 2>/dev/null && break
	sleep 0.1
done
alive=$( (kill -0 "$a" && echo "$a"; kill -0 "$b" && echo "$b") 2>/dev/null)
check_eq "two started together: how many run once the socket is up" "$(grep -c . <<<"$alive")" 1
run=${alive:-$a}
check_eq "--test-observe-no-switch: context-switch probe loaded" \
	"$(bpftool prog show 2>/dev/null | grep -c 'name miami_observe_s' || true)" 0
check_eq "... and the TCP probes" "$(bpftool prog show 2>/dev/null | grep -c 'name miami_t[pc][p_]' || true)" "$((tp + fe))"
if ((run == a)); then lost=$b lostlog=$log.b; else lost=$a lostlog=$log.a; fi
lrc=0
wait "$lost" || lrc=$?
check_eq "... the other one's exit status" "$lrc" 1
check_eq "... it names the one that runs" \
	"$(grep -c "another scx_miami is running (pid $run)" "$lostlog")" 1
mon3=$(timeout -s INT 2.5 "$bin" --monitor 1 --stats-socket "$sock" 2>/dev/null)
check_ge "--monitor --stats-socket: reports read" "$(grep -c '^probe_send' <<<"$mon3" || true)" 1
def=$(timeout 10 "$bin" --monitor 1 2>&1)
check_eq "--monitor on the default socket meanwhile" \
	"$(grep -c 'cannot connect to /var/run/scx/root/stats: no scx_miami is running' <<<"$def")" 1
kill -INT "$run"
rc=0
wait "$run" || rc=$?
check_eq "... exit status on SIGINT" "$rc" 0
check_eq "... its --stats-socket left" "$([[ -e $sock ]] && echo yes || echo no)" no

# A socket another program answers on (the scx project's schedulers all serve on the default
# path) is not taken over: exit 1, a message that says whose it is and what to do, the socket
# left to its owner.
foreign=$sdir/foreign
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8); time.sleep(60)' "$foreign" &
py=$!
for i in $(seq 100); do [[ -S $foreign ]] && break; sleep 0.1; done
out=$(timeout 20 "$bin" --observe --stats-socket "$foreign" 2>&1)
rc=$?
check_eq "--observe on a socket another program answers on: exit status" "$rc" 1
check_eq "... says whose it is and what to do" "$(grep -c "the stats socket $foreign answers, and it \
is another program's, not a scx_miami's. Serve ours elsewhere with --stats-socket PATH" <<<"$out")" 1
check_eq "... the socket left to its owner" \
	"$([[ -S $foreign ]] && kill -0 "$py" 2>/dev/null && echo yes || echo no)" yes
kill "$py" 2>/dev/null
wait_progs_gone miami_
check_eq "programs left at the end (10 s)" "$progs_left" 0
rm -rf "$sdir" "$log" "$log.a" "$log.b"
echo "$passed passed, $failed failed"
((failed == 0))
