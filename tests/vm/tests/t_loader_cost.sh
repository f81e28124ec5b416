#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #14 §5: what the loader (user space) costs, against scx_bpfland's, in one guest with two
# bulk receivers on NIC A. `make loader-cost`; not in `make test` (t_bench reports the default
# case's loader CPU there). For scx_miami at its defaults and with its two periodic jobs slowed
# one at a time and together (the agent round, --interval-ms, which runs in a BPF timer and no
# longer wakes the loader; the IRQ map refresh, --irq-refresh-ms, which since the map follows IRQ
# and interface events only spaces its re-reads and its backstop scan), and for scx_bpfland
# 1.1.4 at its defaults, over 15 s after a 3 s settle:
#   - CPU-s/s from utime+stime (/proc/PID/stat: ticks, what top shows),
#   - CPU-s/s from the threads' run time (/proc/PID/task/*/schedstat: ns, not sampled),
#   - wakeups per second (voluntary context switches of all threads).
# Under TCG each wakeup costs 1-2 ms of run time whatever the task then does (compare the
# `--interval-ms 10000 --irq-refresh-ms 60000` row, whose loop only wakes once a second to look
# at its flags, with scx_bpfland's), so here the loader's CPU follows its wakeups and system
# calls. Checks the wakeups per second against the periods (the loop sleeps until its next job,
# at most 1 s). Prints figures,
# and scx_miami's own view of its cost at the defaults (--monitor: the loader's CPU since start,
# the agent's rounds in BPF, the last IRQ map refresh's and full scan's); checks that every case was
# measured and that the stats' loader_cpu_ms is the kernel's run time of the loader's threads
# (read just before it: at least that, at most 20% + 100 ms more).
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

real=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami}
bpfland=${MIAMI_BPFLAND:-$VM_TOP/.cache/peers/bin/scx_bpfland}
secs=${MIAMI_LOADER_COST_SECS:-15}
tick=$(getconf CLK_TCK)
# utime+stime ticks, run time ns, voluntary switches: of all of $1's threads.
usage() {
	local p=$1
	echo "$(awk '{ print $14 + $15 }' "/proc/$p/stat")" \
		"$(schedstat_sum "$p" 1)" \
		"$(cat "/proc/$p"/task/*/status | awk '/^voluntary_ctxt_switches/ { s += $2 } END { printf "%.0f", s }')"
}
# scx_miami's own account of its cost (stats: loader_cpu_ms, agent_bpf_ms and the IRQ map
# refresh's), against the kernel's run time of its threads ($1, ns) read just before.
own_view() {
	timeout -s INT 2.5 "$real" --monitor 1 >/tmp/cost-monitor.txt 2>&1 || true
	grep -E 'last round|loader CPU' /tmp/cost-monitor.txt | tail -n 2 | sed 's/^/  own view: /'
	local ms
	ms=$(awk '/loader CPU since start/ { v = $5 } END { print v + 0 }' /tmp/cost-monitor.txt)
	check_ge "loader_cpu_ms against the kernel's run time of its threads, $(($1 / 1000000)) ms" "$ms" "$(($1 / 1000000))"
	check_le "loader_cpu_ms against the kernel's run time of its threads, $(($1 / 1000000)) ms" "$ms" "$(($1 * 12 / 10000000 + 100))"
}
measured=0
measure() { # label, then sched_start's arguments
	local label=$1 a b
	shift
	sched_start "$@" || { fail "$label: not started"; return; }
	sleep 3
	a=$(usage "$SCHED_PID")
	sleep "$secs"
	b=$(usage "$SCHED_PID")
	if [[ $label == "scx_miami (defaults)" ]]; then own_view "$(echo "$b" | awk '{ print $2 }')"; fi
	sched_stop || fail "$label: sched_stop"
	echo "$a $b" | awk -v l="$label" -v tk="$tick" -v s="$secs" '{
		printf "%-44s %8.4f %8.4f %6.1f\n", l, ($4 - $1) / tk / s, ($5 - $2) / 1e9 / s, ($6 - $3) / s }' >>/tmp/cost.txt
	measured=$((measured + 1))
}
net_default
for i in 0 1; do
	IPERF_WAIT=0 iperf_server $((5201 + i)) "$ADDR_A_SRV"
done
wait_listening 5201 5202
for i in 0 1; do
	iperf_client_bg "/tmp/cost-cl$i.out" cli "$ADDR_A_SRV" $((5201 + i)) 3600
done
printf '%-44s %8s %8s %6s\n' "loader (flags)" "ticks" "runtime" "wakes" >/tmp/cost.txt
measure "scx_miami (defaults)"
measure "scx_miami --irq-refresh-ms 60000" --irq-refresh-ms 60000
measure "scx_miami --interval-ms 1000" --interval-ms 1000
measure "scx_miami --interval-ms 10000 --irq-refresh-ms 60000" --interval-ms 10000 --irq-refresh-ms 60000
if [[ -x $bpfland ]]; then
	MIAMI_BIN=$bpfland SCHED_OPS_PREFIX=bpfland SCHED_ALL_NICS=1 measure "scx_bpfland $("$bpfland" --version | awk '{ print $2 }') (defaults)"
else
	fail "no $bpfland (scripts/deps.sh installs it)"
fi
echo "--- loader CPU-s per s (ticks: utime+stime; runtime: schedstat) and wakeups per s, ${secs} s each:"
cat /tmp/cost.txt
check_eq "cases measured" "$measured" 5
# The run loop sleeps until its next job, at most a second (src/scheduler.rs loop_sleep()); the
# agent's rounds, every 100 ms at the defaults, run in the BPF timer and wake it for none: about
# 1 wakeup a second in every row (10.6 at the defaults while the loop ran the rounds).
wakes() { awk -v l="$1 " 'substr($0, 1, length(l)) == l { print $NF }' /tmp/cost.txt; }
check_le "wakeups per s at the defaults (rounds in the BPF timer)" "$(wakes "scx_miami (defaults)")" 3
check_le "wakeups per s at --interval-ms 1000" "$(wakes "scx_miami --interval-ms 1000")" 3
check_le "wakeups per s at --interval-ms 10000 --irq-refresh-ms 60000" \
	"$(wakes "scx_miami --interval-ms 10000 --irq-refresh-ms 60000")" 3
finish
