#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make bench` (scripts/bench.sh boots the default guest and runs this): the papers'
# experiments, each under every scheduler in one boot, one JSON object per (scenario, scheduler)
# appended to $VM_OUT/bench.jsonl. Schedulers: eevdf, eevdf-rfs (RFS on: rps_sock_flow_entries
# 32768, rps_flow_cnt 4096 per receive queue), scx_bpfland (when MIAMI_BPFLAND names its binary),
# scx_miami (default flags), eevdf-pin: EEVDF with each measured task, and in mix each ping-pong
# client, pinned (taskset) to the CPU where it ran most under scx_miami in the run just before,
# which tells the emulator's share of a throughput loss from our own (issue 14 §5): under TCG, tasks
# packed on fewer vCPUs get less host CPU whoever packs them, while BPF, the loader and cross-CPU
# kicks cost only under scx_miami. In table3, whose processes start inside the run, each is pinned
# as its phase starts, to where it ran most in that phase under scx_miami. eevdf-pin-obs (only
# when asked for with --scheds): eevdf-pin with `scx_miami --observe --test-observe-no-switch`
# attached, its TCP probes and its agent's rounds without its scheduling (and without the
# context-switch probe of --observe, which scx_miami does not run: its ops do that bookkeeping
# and count as struct_ops; runs before stop 42 had it), so that eevdf-pin -> eevdf-pin-obs ->
# scx_miami splits a loss into the packing's, the probes' and loader's, and the rest (struct_ops,
# kicks, migrations: how scx_miami runs the tasks it placed).
#
#   guest.sh [--quick] [--only SCENARIO[,SCENARIO...]] [--scheds S[,S...]] [--secs N] [--repeat N]
#
# --scheds picks schedulers from those above (t_overload: eevdf,miami); --secs sets the window
# (default 10, 5 with --quick). --repeat N runs each scenario's schedulers N times in turn (A B C,
# A B C, ...: a drift of the machine over the scenario falls on all of them alike), each object
# with its "rep" (1..N); render.py shows the median of each figure and the range of the main ones.
# One run per case spreads by 10-25% under TCG, as much as some of the differences it measures.
#
# Scenarios (--quick, in `make test`: mix-1 alone, 5 s windows: bulk receivers and a
# ping-pong, so every metric below but requests/s; t_short_conn runs lighttpd under ab there):
#   micro-<irq>-<n>   MiAMI IV-A / Table II: n iperf3 receivers, half per NIC, with the NICs'
#                     receive IRQs on: 2n = CPUs 1 and 5 (two LLCs), 2s = 1 and 2 (one LLC),
#                     zero = both on CPU 0 (multiport study's ZERO), all = every CPU (its ALL:
#                     the kernel picks one of the mask), rr = CPUs 0 and 1 (its RR, port p on
#                     core p; with two ports this is also its MIN, the fewest cores that carry
#                     every IRQ, so MIN gets no run of its own), irqb = the irqbalance daemon
#                     decides (Table II's IrqB; started on the full mask with --interval 1,
#                     each receiver's core is its IRQ's CPU at each moment). n = 8, 16, 32.
#                     micro-2n-16 against micro-irqb-16 is the kirqd paper's question, pinned
#                     against balanced IRQs under saturating traffic.
#                     With four NICs (a quarter of the receivers on each): 4n = one IRQ CPU in
#                     each of four LLCs (0, 2, 4, 6), 4s = two pairs of IRQ CPUs, each pair
#                     sharing an LLC (0, 1 and 2, 3): Table II's 4N and 4S. scripts/bench.sh
#                     runs them, n = 16, in a guest of its own: four LLCs of two CPUs, four NIC
#                     pairs.
#   microtx-<irq>-<n> the same with the server sending (iperf3 -R): n senders, whose ACKs and
#                     transmit completions come in on their NIC's IRQ CPU; throughput is the
#                     server NICs' transmitted bytes.
#   mix-<j>           MiAMI IV-B / Figures 13-14: 2 bulk receivers plus j netperf TCP_RR
#                     ping-pongs (1-byte), j = 1, 4: their p50/p99 round trip and rates.
#   web               network-subsystem-scheduling paper: lighttpd under ab without keep-alive.
#   overload          issue 12 item 11, overload from every side: 4 receivers (2 per NIC), 4
#                     senders from the server side to namespace cli over the same NICs (their
#                     ACKs come in on CPUs 1 and 5 too), and a CPU hog per CPU: more runnable
#                     work than CPUs. The receivers' placement (core = their NIC's IRQ CPU)
#                     and throughput are the figures.
#   table3            MiAMI IV-C / Table III, the dynamic scenario as t_table3 scales it to TCG
#                     (its header says why): the server NICs' IRQs on CPU 0, 64-byte sends
#                     to a pacer sink on the client side; two A processes (sleeping 2500 us
#                     between sends) from t=0, two B (1000 us) from t~8 s, one bulk C from
#                     t~16 s. Per phase and process group: placement against CPU 0 and kbit/s
#                     acknowledged (ss); the row's placement and C kbit/s are C's in phase 3.
# On a real host (scripts/bench.sh --host, docs/benchmarks.md) the same runs use the NICs in
# MIAMI_BENCH_NICS (two, or four for 4s/4n; one receive IRQ each), the client side is the command in
# MIAMI_BENCH_PEER (for example "ssh root@peer"; here "ip netns exec cli") reaching this host at
# MIAMI_BENCH_PEER_ADDRS' addresses, the IRQ CPUs come from the host's LLCs (in the guest, the
# CPUs named below), the neutral probe runs on the last CPU (MIAMI_BENCH_PROBE_CPU), and the
# IRQ affinity, RFS and bpf_stats_enabled are put back at exit.
# Metrics per run: throughput (bytes received by the server NICs over the window, Gbit/s),
# requests/s and p99, round-trip p50/p99 (us) and the ping-pong clients' run-queue wait per run, CPU
# time, moves between CPUs and times put on a CPU (schedstat, se.nr_migrations: rr_wait_us,
# rr_cpu_ms_per_s, rr_migrations_per_s and per transaction, rr_runs_per_trans), their peers'
# (netserver) wait per run and CPU per transaction (rr_peer_wait_us, rr_peer_cpu_us_per_trans), and
# where they ran (rr_placement: their CPU sampled every 0.1 s, against NIC A's IRQ CPU, which
# carries their traffic), placement of the receivers or server (probe.py, shares of core/cache/other
# against their NIC's IRQ CPU), their migrations and run-queue wait (schedstat: the share of their
# runnable time spent queued), the guest's busy CPU per Gbit/s (/proc/stat), softirq share on the
# IRQ CPUs, context switches, rescheduling and function-call IPIs and IRQ work interrupts per
# second over all CPUs (ctxt_per_s, ipi_res_per_s, ipi_cal_per_s, iwi_per_s: /proc/stat,
# /proc/interrupts), BPF cost
# (kernel.bpf_stats_enabled: ns per call of the scheduler's struct_ops and tracing programs, ms of
# BPF per second, and per program its ns per call and calls per second:
# bpf_per_prog), the scheduler process's own CPU time, and for scx_miami the share of its dispatch()
# calls that moved a task, by source (dispatch_moves), and of its enqueue() calls that preempted
# (preempt_kick_share); with MIAMI_BENCH_TIME_DISPATCH=1 also the
# time of those calls, in us per call by outcome (dispatch_us: --test-time-dispatch, two clock reads
# more per call, so its BPF cost figures are not comparable with runs without).
# A run that fails is recorded ({"scenario", "scheduler", "failed": its last error lines}), what
# it left running is ended (after_failure()), and the next run goes on; the exit status is 1 if
# any failed. MIAMI_BENCH_FAIL=SCENARIO:SCHEDULER fails that run once its flows are up (t_bench).
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"
T_NAME=bench

quick=0 only= secs= only_scheds= repeat=1
while (($#)); do
	case $1 in
	--quick) quick=1; shift ;;
	--only) only=$2; shift 2 ;;
	--scheds) only_scheds=$2; shift 2 ;;
	--secs) secs=$2; shift 2 ;;
	--repeat) repeat=$2; shift 2 ;;
	*) echo "usage: guest.sh [--quick] [--only SCENARIO[,...]] [--scheds S[,...]] [--secs N] [--repeat N]" >&2; exit 2 ;;
	esac
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "guest.sh: --repeat $repeat: want a whole number of runs, 1 or more" >&2; exit 2; }
out=${VM_OUT:-/tmp}/bench.jsonl
: >"$out"
secs=${secs:-$((quick ? 5 : 10))}
scheds=(eevdf eevdf-rfs)
[[ -n ${MIAMI_BPFLAND:-} && -x ${MIAMI_BPFLAND:-} ]] && scheds+=(bpfland)
scheds+=(miami eevdf-pin)
[[ -z $only_scheds ]] || IFS=, read -ra scheds <<<"$only_scheds"
# An unknown name would have run as EEVDF, and an eevdf-pin before scx_miami's run of the same
# scenario is skipped with a line in the log: both are refused here, before anything starts.
# eevdf-pin without miami is not: it takes the pins an earlier run in this guest left in /tmp
# (t_bench), or skips.
# Every name start() knows; start() refuses any other, so a name added to one list and not the
# other fails at the first run instead of running as EEVDF.
known_scheds=(eevdf eevdf-rfs bpfland miami eevdf-pin eevdf-pin-obs)
for i in "${!scheds[@]}"; do
	[[ " ${known_scheds[*]} " == *" ${scheds[i]} "* ]] ||
		{ echo "guest.sh: --scheds: unknown scheduler '${scheds[i]}' ($(IFS=,; echo "${known_scheds[*]}" | sed 's/,/, /g'))" >&2; exit 2; }
	case ${scheds[i]} in
	bpfland) [[ -x ${MIAMI_BPFLAND:-} ]] ||
		{ echo "guest.sh: --scheds: bpfland needs MIAMI_BPFLAND, the scx_bpfland binary (scripts/bench.sh sets it)" >&2; exit 2; } ;;
	eevdf-pin | eevdf-pin-obs) [[ " ${scheds[*]:0:i} " == *" miami "* || " ${scheds[*]:i} " != *" miami "* ]] ||
		{ echo "guest.sh: --scheds $only_scheds: ${scheds[i]} pins the tasks where scx_miami ran them in the same scenario, so miami must come before it" >&2; exit 2; } ;;
	esac
done
# Four-NIC scenarios (micro-4s-*, micro-4n-*: Table II's 4S and 4N) run where there are four
# NIC pairs: a --nics 4 guest (scripts/bench.sh boots one, with four LLCs, for them alone) or a
# host given four NICs; the others use pairs A and B.
scenarios2=(micro-2n-8 micro-2s-8 micro-rr-8 micro-zero-8 micro-all-8 micro-2n-16 micro-irqb-16
	micro-2n-32 microtx-2n-8 mix-1 mix-4 web overload table3)
scenarios4=(micro-4s-16 micro-4n-16)
if ((quick)); then
	scenarios=(mix-1)
elif [[ -n ${MIAMI_BENCH_NICS:-} ]]; then
	scenarios=("${scenarios2[@]}")
	[[ $MIAMI_BENCH_NICS != *,*,*,* ]] || scenarios+=("${scenarios4[@]}")
elif [[ ${VM_NICS:-2} == 4 ]]; then
	scenarios=("${scenarios4[@]}")
else
	scenarios=("${scenarios2[@]}")
fi
[[ -z $only ]] || IFS=, read -ra scenarios <<<"$only"
# The K-th CPU (from 0) of the L-th LLC (from 0, by first CPU), or nothing.
llc_cpu() {
	local lists c
	lists=$(cat /sys/devices/system/cpu/cpu[0-9]*/cache/index3/shared_cpu_list 2>/dev/null | sort -u -t- -k1,1n)
	[[ -n $lists ]] || lists=0-$(($(nproc) - 1)) # no L3 reported: one LLC
	c=$(sed -n "$(($1 + 1))p" <<<"$lists" | tr , '\n' |
		awk -F- '{ for (i = $1; i <= ($2 == "" ? $1 : $2); i++) print i }' | sed -n "$(($2 + 1))p")
	echo "$c"
}
# A real host: the NICs, addresses and peer given, each NIC's one receive IRQ, and what this
# harness changes put back at exit.
host_net() {
	local bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami} n irq f i nics addrs said=()
	IFS=, read -ra nics <<<"$MIAMI_BENCH_NICS"
	IFS=, read -ra addrs <<<"${MIAMI_BENCH_PEER_ADDRS:-}"
	! pgrep -x irqbalance >/dev/null || {
		echo "guest.sh: irqbalance runs here and would move the IRQs these runs pin: stop it first (systemctl stop irqbalance); micro-irqb-* starts its own" >&2
		exit 2
	}
	read -ra CLI_EXEC <<<"${MIAMI_BENCH_PEER:-}"
	[[ (${#nics[@]} == 2 || ${#nics[@]} == 4) && ${#addrs[@]} == "${#nics[@]}" && ${#CLI_EXEC[@]} -gt 0 ]] || {
		echo "guest.sh: MIAMI_BENCH_NICS=A,B (or A,B,C,D for the 4S/4N runs), MIAMI_BENCH_PEER_ADDRS with the peer's address on each, and MIAMI_BENCH_PEER are all needed" >&2
		exit 2
	}
	PAIRS=(A B C D)
	PAIRS=("${PAIRS[@]:0:${#nics[@]}}")
	for i in "${!PAIRS[@]}"; do
		n=${PAIRS[i]}
		printf -v "NIC_$n" %s "${nics[i]}"
		printf -v "ADDR_${n}_CLI" %s "${addrs[i]}"
		local nic=NIC_$n
		irq=$("$bin" --list-nics --nic "${!nic}" | awk 'NR > 1 && $3 ~ /^rx/ { print $2 }') || exit 2
		[[ $(wc -w <<<"$irq") == 1 ]] || {
			echo "guest.sh: ${!nic} has $(wc -w <<<"$irq") receive IRQs ($(echo $irq)); the experiments pin one: ethtool -L ${!nic} combined 1" >&2
			exit 2
		}
		printf -v "IRQ_$n" %s "$irq"
		f=/proc/irq/$irq/smp_affinity_list
		on_exit "echo $(cat "$f") >$f"
		printf -v "ADDR_${n}_SRV" %s "$(ip -4 -o addr show dev "${!nic}" | awk '{ split($4, a, "/"); print a[1]; exit }')"
		f=ADDR_${n}_SRV
		[[ -n ${!f} ]] || { echo "guest.sh: ${!nic} has no IPv4 address" >&2; exit 2; }
		for f in /sys/class/net/"${!nic}"/queues/rx-*/rps_flow_cnt; do on_exit "echo $(cat "$f") >$f"; done
		local srv_addr=ADDR_${n}_SRV cli_addr=ADDR_${n}_CLI
		said+=("$n ${!nic}(${!srv_addr}, irq $irq) <- ${!cli_addr}")
	done
	f=/proc/sys/net/core/rps_sock_flow_entries
	on_exit "echo $(cat $f) >$f"
	on_exit "sysctl -q kernel.bpf_stats_enabled=$(sysctl -n kernel.bpf_stats_enabled)"
	PROBE_CPU=${MIAMI_BENCH_PROBE_CPU:-$(($(nproc) - 1))}
	printf -v f '%s; ' "${said[@]}"
	log "host: ${f%; }, via ${CLI_EXEC[*]}"
}
if [[ -n ${MIAMI_BENCH_NICS:-} ]]; then
	host_net
	on_exit "${CLI_EXEC[*]} pkill -x netserver"
else
	net_default
	PAIRS=(A B)
	# The four-LLC guest's CPU 6 takes an IRQ in 4n: the probe goes to the last CPU.
	[[ ${VM_NICS:-2} != 4 ]] || { PAIRS=(A B C D); PROBE_CPU=$(($(nproc) - 1)); }
fi
bg "${CLI_EXEC[@]}" netserver -L "$ADDR_A_CLI" -p 12865 -D
NETSERVER_PID=$BG_PID # netserver itself where the peer is this machine (ip netns exec execs it)
if [[ " ${scenarios[*]} " == *" table3 "* ]]; then
	"${CLI_EXEC[@]}" test -x "$PACER" || { echo "guest.sh: table3 needs $PACER on the client side too (make build writes it)" >&2; exit 2; }
	bg "${CLI_EXEC[@]}" "$PACER" sink 7001
fi
www=/tmp/www; mkdir -p "$www"; head -c 1024 /dev/zero | tr '\0' x >"$www/index.html"
printf 'server.document-root = "%s"\nserver.bind = "%s"\nserver.port = 80\nserver.errorlog = "/tmp/lt.err"\nindex-file.names = ( "index.html" )\n' \
	"$www" "$ADDR_A_SRV" >/tmp/lighttpd.conf
# MIAMI_BENCH_BPF_STATS=0 leaves the stats off (no BPF cost figures): the clock reads they add
# around every program call are not there, as on a host that runs without them. In stop 41's
# two boots of mix-4, table3 and micro-2n-32 (docs/results/bench.md) scx_miami's ratios to
# EEVDF did not move one way with them off: within the spread between two runs.
sysctl -q kernel.bpf_stats_enabled=${MIAMI_BENCH_BPF_STATS:-1}

rfs() { # on|off
	local v=0 q
	[[ $1 == on ]] && v=32768
	echo "$v" >/proc/sys/net/core/rps_sock_flow_entries
	for q in $(nic_files 'queues/rx-*/rps_flow_cnt'); do
		echo $((v ? 4096 : 0)) >"$q"
	done
}
# Start scheduler $1; SCHED_PID (empty for EEVDF).
start() {
	rfs off
	case $1 in
	eevdf) SCHED_PID= ;;
	eevdf-rfs) rfs on; SCHED_PID= ;;
	bpfland) MIAMI_BIN=$MIAMI_BPFLAND SCHED_OPS_PREFIX=bpfland SCHED_ALL_NICS=1 sched_start ;;
	miami) sched_start ${MIAMI_BENCH_TIME_DISPATCH:+--test-time-dispatch} ;;
	eevdf-pin) SCHED_PID= ;;
	eevdf-pin-obs) sched_start --observe --test-observe-no-switch ;; # the probes scx_miami runs, not --observe's own
	*) echo "guest.sh: start: '$1' is in known_scheds but has no start here" >&2; return 2 ;;
	esac
	echo "${SCHED_PID:-}" >/tmp/bench-sched.pid # for after_failure(): run() runs in a subshell
}
# eevdf-pin: pin measured task i (srv order) to the CPU it ran on most under scx_miami in this
# scenario (/tmp/pin-SC.txt, one CPU per line, written after scx_miami's run). The ping-pong
# clients of mix get theirs from /tmp/pin-rr-SC.txt (rr_pin()), table3's processes from
# /tmp/pin-table3-pN.txt as phase N starts (t3_pin()).
pin_like_miami() { # pin file, PIDs
	local f=$1 i=0 cpu p
	shift
	for p in "$@"; do
		i=$((i + 1))
		cpu=$(sed -n "${i}p" "$f")
		[[ -n $cpu ]] && taskset -a -p -c "$cpu" "$p" >/dev/null
	done
}
# table3_run's PIN_FN under eevdf-pin: phase $1's processes, A A B B C order (none pinned if
# scx_miami's probe of that phase gave nothing).
t3_pin() { [[ ! -s /tmp/pin-table3-p$1.txt ]] || pin_like_miami "/tmp/pin-table3-p$1.txt" "${@:2}"; }
# Each PID's most used CPU in probe.py's JSON $1, one per line ("" where it has none).
most_cpu() {
	python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))["pids"]
for pid in sys.argv[2:]:
    c = p.get(pid, {}).get("cpu") or {}
    print(max(c, key=c.get) if c else "")' "$@"
}
# The taskset prefix for ping-pong client $3 (from 0) of scenario $2 under scheduler $1, if that
# is eevdf-pin: the CPU it ran on most under scx_miami. Under scx_miami netperf, class high
# beside a bulk receiver, stays on NIC A's IRQ CPU (87-97% of the samples in mix-1,
# docs/results/bench.md), where EEVDF spreads it over the LLC: pinned there, EEVDF shows what
# that placement costs a ping-pong by itself, apart from how scx_miami runs it.
rr_pin() {
	local cpu
	[[ $1 == eevdf-pin* && -s /tmp/pin-rr-$2.txt ]] || return 0
	cpu=$(sed -n "$(($3 + 1))p" "/tmp/pin-rr-$2.txt")
	[[ -z $cpu ]] || echo "taskset -c $cpu"
}
# Until killed: every 0.1 s, "i cpu" into file $1 for each of PIDs $2... (i from 1): the CPU each
# last ran on (stat's field 39). Builtins only, and a read that times out on a FIFO nobody
# writes as its sleep: no fork per sample.
cpu_sampler() {
	local out=$1 fifo=/tmp/bench-sampler.fifo i p f
	shift
	: >"$out"
	rm -f "$fifo"; mkfifo "$fifo"
	exec 9<>"$fifo"
	while :; do
		i=0
		for p in "$@"; do
			i=$((i + 1))
			read -r -a f <"/proc/$p/stat" 2>/dev/null && echo "$i ${f[38]}" >>"$out"
		done
		read -r -t 0.1 -u 9 _ || true
	done
}
stop() { [[ -n ${SCHED_PID:-} ]] && { sched_stop >/dev/null || fail "$1: stop"; }; rfs off; }
# Pin the NICs' receive IRQs for configuration $1, by LLC: 2n = the second CPU of the first
# and of the second LLC (1 and 5 in the guest), 2s = the second and third of the first (1, 2),
# zero = the first CPU (0); with four NICs, 4n = the first CPU of each of four LLCs (0, 2, 4, 6
# in the four-LLC guest) and 4s = the first two CPUs of the first two LLCs (0, 1, 2, 3: two
# pairs sharing a cache, as Table II's SMP server had no four cores sharing one). USE: the
# pairs the configuration uses (A B, or A B C D). In the guest, the client NICs' IRQs of a
# four-NIC configuration go to the CPUs its server IRQs leave free.
# IRQ_CPU_<pair>: the CPU each one lands on, the pinned one, not
# effective_affinity_list read back at once: x86 moves a vector at its next interrupt, so until
# traffic flows that file names the old CPU. It once gave the probe CPUs 2 and 0 for IRQs
# pinned to 1 and 5: the receivers read 0.05% core and 64% other tier while the scheduler
# counted 80% core. "all" lets the kernel choose, so run() reads the file there once traffic
# flows. irqb starts irqbalance on the full mask (IRQB_PID; run() stops it): its IRQ CPUs
# change under the probe, which follows them (--irq-of). Returns 1 where the host lacks the
# CPUs (2n with one LLC).
irqs() {
	local p c v free
	IRQB_PID= USE=(A B)
	case $1 in
	2n) IRQ_CPU_A=$(llc_cpu 0 1) IRQ_CPU_B=$(llc_cpu 1 1) ;;
	2s) IRQ_CPU_A=$(llc_cpu 0 1) IRQ_CPU_B=$(llc_cpu 0 2) ;;
	rr) IRQ_CPU_A=$(llc_cpu 0 0) IRQ_CPU_B=$(llc_cpu 0 1) ;;
	zero) IRQ_CPU_A=$(llc_cpu 0 0) IRQ_CPU_B=$IRQ_CPU_A ;;
	all | irqb) IRQ_CPU_A=0-$(($(nproc) - 1)) IRQ_CPU_B=$IRQ_CPU_A ;;
	4n) USE=(A B C D) IRQ_CPU_A=$(llc_cpu 0 0) IRQ_CPU_B=$(llc_cpu 1 0) IRQ_CPU_C=$(llc_cpu 2 0) IRQ_CPU_D=$(llc_cpu 3 0) ;;
	4s) USE=(A B C D) IRQ_CPU_A=$(llc_cpu 0 0) IRQ_CPU_B=$(llc_cpu 0 1) IRQ_CPU_C=$(llc_cpu 1 0) IRQ_CPU_D=$(llc_cpu 1 1) ;;
	esac
	((${#USE[@]} <= ${#PAIRS[@]})) || return 1
	for p in "${USE[@]}"; do
		v=IRQ_CPU_$p
		[[ -n ${!v} ]] || return 1
	done
	for p in "${USE[@]}"; do
		v=IRQ_CPU_$p c=IRQ_$p
		pin_irq "${!c}" "${!v}"
	done
	if ((${#USE[@]} == 4)) && [[ -n ${IRQ_A_CLI:-} ]]; then
		free=($(for c in $(seq 0 $(($(nproc) - 1))); do
			[[ " $IRQ_CPU_A $IRQ_CPU_B $IRQ_CPU_C $IRQ_CPU_D " == *" $c "* ]] || echo "$c"; done))
		for p in A B C D; do
			v=IRQ_${p}_CLI
			pin_irq "${!v}" "${free[0]}"
			free=("${free[@]:1}" "${free[0]}")
		done
	fi
	if [[ $1 == irqb ]]; then
		mkdir -p /run/irqbalance
		bg irqbalance --foreground --interval 1 >/tmp/irqbalance.log 2>&1; IRQB_PID=$BG_PID
	fi
}
first_cpu() { cut -d, -f1 "/proc/irq/$1/effective_affinity_list" | cut -d- -f1; }
cpu_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }
# Context switches, rescheduling and function-call IPIs, and IRQ work interrupts so far, all
# CPUs: "ctxt res cal iwi". A sched_ext scheduler's kicks and its wakeups of an idle CPU are
# rescheduling IPIs; EEVDF wakes a task on another CPU mostly through that CPU's wake list, a
# function-call IPI. scx_bpf_kick_cpu() goes through an irq_work on the kicking CPU, so each kick
# is an IRQ work interrupt there (docs/design.md section 7).
kernel_events() {
	awk '$1 == "ctxt" { c = $2 } $1 == "RES:" || $1 == "CAL:" || $1 == "IWI:" { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n[$1] += $i }
		END { print c + 0, n["RES:"] + 0, n["CAL:"] + 0, n["IWI:"] + 0 }' /proc/stat /proc/interrupts
}
# The files at path $1 under each server NIC of PAIRS (all of them: RFS is set on every one).
nic_files() { local p n; for p in "${PAIRS[@]}"; do n=NIC_$p; echo /sys/class/net/"${!n}"/$1; done; }
# Bytes the server NICs of the pairs in USE received ($1 = rx) or sent (tx) so far.
nic_bytes() {
	local p n sum=0
	for p in "${USE[@]}"; do n=NIC_$p; sum=$((sum + $(cat "/sys/class/net/${!n}/statistics/$1_bytes"))); done
	echo $sum
}
irq_cpus_now() {
	local p n out=()
	for p in "${USE[@]}"; do n=IRQ_$p; out+=("$p:$(cat "/proc/irq/${!n}/effective_affinity_list")"); done
	echo "${out[*]}"
}
# The pair (of USE) of connection $1 of $2: the connections split evenly over the NICs, in order.
pair_of() { echo "${USE[$1 * ${#USE[@]} / $2]}"; }
# Softirq ticks so far on the CPUs given, each counted once (zero: both IRQs on one CPU).
softirq_on() { awk -v cpus=" $(printf '%s\n' "$@" | sort -u | xargs) " '/^cpu[0-9]/ && index(cpus, " " substr($1, 4) " ") { s += $8 } END { print s + 0 }' /proc/stat; }
# Each thread of processes $2... as "tid run_ns wait_ns runs migrations" into file $1:
# schedstat's run time, run-queue wait (time runnable but not running, CONFIG_SCHED_INFO) and
# number of times it ran, which every scheduler's tasks have, so the wait compares them where
# p99 figures exist only for the ping-pongs; and /proc's se.nr_migrations (0 if the kernel has
# no /proc/PID/sched). Builtins only: it runs beside the hogs in overload.
sched_waits() {
	local out=$1 pid f tid rt qw n k v mig
	shift
	: >"$out"
	for pid in "$@"; do
		for f in /proc/"$pid"/task/*/schedstat; do
			read -r rt qw n 2>/dev/null <"$f" || continue
			tid=${f%/schedstat} tid=${tid##*/} mig=0
			while read -r k _ v; do
				[[ $k == se.nr_migrations ]] && { mig=$v; break; }
			done 2>/dev/null <"${f%schedstat}sched" || true
			echo "$tid $rt $qw $n $mig" >>"$out"
		done
	done
}
# MIAMI_BENCH_WAKE_TRACE=SECS (a diagnostic, off by default): in the mix-*, micro-* and
# microtx-* scenarios, record sched_waking, sched_wakeup and sched_switch on every CPU for the
# window's first SECS seconds into a private tracefs instance, and append where the wakeups of
# the ping-pongs (mix) or of the iperf3 servers (micro) went and how long they waited
# (wakeups.py) to $VM_OUT/wakeups.jsonl. The tracing costs every scheduler alike, so a traced
# run's throughput does not compare with an untraced one's.
wake_trace() { # secs, output file
	local i=/sys/kernel/tracing/instances/miami-bench-wake e
	rmdir "$i" 2>/dev/null || true
	mkdir "$i"
	echo 8192 >"$i/buffer_size_kb"
	for e in sched_waking sched_wakeup sched_switch; do echo 1 >"$i/events/sched/$e/enable"; done
	sleep "$1"
	echo 0 >"$i/tracing_on"
	cat "$i/trace" >"$2"
	rmdir "$i"
}
# The TIDs of processes $@ (those still there), comma-separated.
tids_of() { local p t=(); for p in "$@"; do t+=($(ls /proc/"$p"/task 2>/dev/null || true)); done; (IFS=,; echo "${t[*]}"); }

# The scheduler process's own CPU time so far, in s.
proc_cpu_s() { [[ -n ${SCHED_PID:-} ]] && awk '{ print ($14 + $15) / 100 }' "/proc/$SCHED_PID/stat" || echo 0; }

# Until none of PIDs runs, 10 s at most (status 1 then). The iperf3 servers are daemons (-D),
# not children that `wait` could reap.
wait_gone() {
	local i p left
	for ((i = 0; i < 100; i++)); do
		left=0
		for p in "$@"; do kill -0 "$p" 2>/dev/null && left=1; done
		((left)) || return 0
		sleep 0.1
	done
	return 1
}

# Run scenario $1 under scheduler $2; append its JSON object.
run() {
	local sc=$1 s=$2 t0 c0 c1 b0 b1 cpu0 cpu1 sirq0 sirq1 ev0 ev1 n irq srv=() cl=() irqof=() i
	local dir=rx rev=() irq_cpus=
	case $sc in
	micro-* | microtx-*) irq=${sc#*-}; n=${irq#*-}; irq=${irq%-*} ;;
	overload) irq=2n; n=4 ;;
	table3) irq=zero; n=0 ;;
	*) irq=2n; n=2 ;;
	esac
	[[ $sc != microtx-* ]] || { dir=tx; rev=(-R); }
	local pins=/tmp/pin-$sc.txt # table3: phase 3's, where C runs (t3_pin() takes each phase's)
	[[ $sc != table3 ]] || pins=/tmp/pin-table3-p3.txt
	[[ $s != eevdf-pin* || -s $pins ]] || { log "$sc: no eevdf-pin run, no scx_miami placement to copy"; return 0; }
	irqs "$irq" || { log "$sc: skipped, no NICs or CPUs for IRQ configuration $irq here"; return 0; }
	start "$s"
	[[ $sc == web ]] && n=0
	for ((i = 0; i < n; i++)); do
		local ip=ADDR_$(pair_of $i $n)_SRV
		iperf_server $((5201 + i)) "${!ip}"
		srv+=("$IPERF_SERVER_PID")
	done
	local web=
	if [[ $sc == web ]]; then
		lighttpd -D -f /tmp/lighttpd.conf & web=$!
		sleep 0.5
		srv=("$web")
	fi
	# Each measured task's IRQ CPU for the probe: the pinned one; with the kernel's choice
	# (all) or irqbalance's (irqb), the IRQ itself, followed through the window.
	local p
	for ((i = 0; i < n; i++)); do
		p=$(pair_of $i $n)
		if [[ $irq == all || $irq == irqb ]]; then
			local q=IRQ_$p
			irqof+=(--irq-of "${srv[i]}=${!q}")
		else
			local c=IRQ_CPU_$p
			irqof+=(--irq-cpu-of "${srv[i]}=${!c}")
		fi
	done
	[[ -z $web ]] || irqof=(--irq-cpu-of "$web=$IRQ_CPU_A")
	# The probe loads now, before the clients connect and the load below starts, and its
	# window opens on the go file (probe.py --go-file). Started after the hogs, as it used to
	# be, its Python took 27-38 s to start under them in the 7.3 guest (MIAMI_TRACE=1,
	# 2026-11-25), and each overload run took 80-110 s for an 8-second window; after the
	# streams, 6-21 s. Not table3, which runs its own probes.
	# Not --trace alone: with kernel.bpf_stats_enabled=1 (on for the BPF cost) the 7.3 guest
	# emitted no sched_stat_runtime events at all (671 in 2 s with it off, 0 with it on), and
	# every placement came out empty. Sampling /proc instead; switch-ins (--runs) for the web
	# server, whose runs are too short to sample.
	# The go file is this run's own (its subshell's PID), and the probe's files are new ones: a
	# probe a failed run left behind, had after_failure() missed it, would otherwise open its
	# window on this run's go file and write into the same /tmp/probe.json, which a failed run
	# does not remove. Stop 58: a run right after a failed one, 2 times in 16, had a probe
	# output naming no live PID (no comm, no thread) while its servers ran. A stale probe is
	# one way to get that, not a confirmed one: none was logged below in 8 runs after the change.
	local probe_opts=(--hz 100) probe= go=/tmp/bench.go.$BASHPID old
	rm -f /tmp/bench.go.* /tmp/probe.json /tmp/probe.err
	old=$(pgrep -f "$PROBE" | xargs || true)
	[[ -z $old ]] || log "$sc: probes still running from before: $old"
	[[ $sc == web ]] && probe_opts=(--trace --runs)
	if [[ $sc != table3 ]]; then
		$PROBE --pids "$(IFS=,; echo "${srv[*]}")" "${irqof[@]}" --duration $((secs - 3)) \
			"${probe_opts[@]}" --probe-cpu "$PROBE_CPU" --go-file "$go" --json \
			>/tmp/probe.json 2>/tmp/probe.err &
		probe=$!
	fi
	for ((i = 0; i < n; i++)); do
		local ip=ADDR_$(pair_of $i $n)_SRV
		# Clients run until killed below: under TCG with hogs, the commands before the
		# window (bpftool, Python) took longer than a fixed run, and every flow had ended
		# before the probe started. Throughput is the server NICs' received bytes over
		# the window.
		iperf_client_bg "/tmp/b-$i.out" cli "${!ip}" $((5201 + i)) 3600 "${rev[@]}"
		cl+=("$IPERF_CLIENT_PID")
	done
	((n)) && wait_streaming "${srv[@]}"
	# The failure of a run half-way, for t_bench: the scheduler and the flows are up.
	[[ ${MIAMI_BENCH_FAIL:-} != "$sc:$s" ]] || { echo "guest.sh: MIAMI_BENCH_FAIL=$sc:$s: failing this run" >&2; return 1; }
	[[ $s != eevdf-pin* ]] || pin_like_miami "/tmp/pin-$sc.txt" "${srv[@]}"
	# IRQ CPU per pair, for the softirq share: the pinned one, or where the kernel put it
	# (all, irqb) now that traffic flows.
	local -A on=()
	for p in "${USE[@]}"; do
		local c=IRQ_CPU_$p q=IRQ_$p
		on[$p]=${!c}
		[[ $irq != all && $irq != irqb ]] || on[$p]=$(first_cpu "${!q}")
	done
	[[ $irq != all && $irq != irqb ]] || irq_cpus=$(irq_cpus_now)
	[[ -z $probe ]] || wait_ready "$go.ready" "$probe" || true
	if [[ $sc == web ]]; then
		# The CSV is written on the client side (the peer's /tmp on a real host) and
		# fetched below under another name (here both sides share /tmp).
		"${CLI_EXEC[@]}" ab -q -t "$secs" -n 10000000 -c 4 -e /tmp/ab-peer.csv "http://$ADDR_A_SRV/index.html" >/tmp/ab.out 2>&1 &
		cl+=($!)
	fi
	local rr=() hogs=
	if [[ $sc == overload ]]; then
		for ((i = 0; i < 4; i++)); do
			local ip=$ADDR_A_CLI
			((i < 2)) || ip=$ADDR_B_CLI
			"${CLI_EXEC[@]}" iperf3 -s -1 -B "$ip" -p $((5301 + i)) >/dev/null 2>&1 &
			cl+=($!)
		done
		sleep 0.5
		for ((i = 0; i < 4; i++)); do
			local ip=$ADDR_A_CLI
			((i < 2)) || ip=$ADDR_B_CLI
			iperf3 -c "$ip" -p $((5301 + i)) -t 3600 >/dev/null 2>&1 &
			cl+=($!)
		done
		local ncpu kids=() k
		ncpu=$(nproc)
		stress-ng --cpu "$ncpu" --timeout 0 --quiet & hogs=$!
		# The window measures the overload, not its start: stress-ng forks its workers one
		# by one (a fork took about a second here under TCG), and while some CPUs still idle
		# both EEVDF and the agent rightly move receivers onto them, out of their LLC too.
		# A window that opened 1 s after the start read 88.4% core+cache for EEVDF and 93.2%
		# for scx_miami in CI (2026-11-25), where 25-40 s of settling read 95-100% for both.
		# Wait for every worker (counted with a builtin), then 2 s: 20 agent rounds.
		for ((k = 0; k < 100; k++)); do
			# (no newline at its end: read fills kids and still returns 1)
			kids=(); read -r -a kids <"/proc/$hogs/task/$hogs/children" 2>/dev/null || true
			((${#kids[@]} < ncpu)) || break
			sleep 0.2
		done
		sleep 2
	fi
	if [[ $sc == mix-* ]]; then
		for ((i = 0; i < ${sc#mix-}; i++)); do
			# Twice the window's length and 5 s more: still running at the window's end, where
			# their schedstat is read, on a machine twice as slow too (the readings before the
			# window took 2-3 s under TCG here, and with 3 s to spare one run of mix-4 had no
			# ping-pong left to read).
			$(rr_pin "$s" "$sc" "$i") netperf -H "$ADDR_A_CLI" -p 12865 -t TCP_RR -l $((2 * secs + 5)) -- -r 1,1 \
				-o P50_LATENCY,P99_LATENCY,TRANSACTION_RATE >"/tmp/rr-$i.out" 2>&1 &
			rr+=($!)
		done
	fi
	sleep 1
	# The readings on each side of the window run beside the hogs in overload, where every
	# fork costs about a second under TCG: builtins where they can (the clock), no Python.
	read -r b0 c0 <<<"$(cpu_busy)"; sirq0=$(softirq_on "${on[@]}"); ev0=$(kernel_events)
	cpu0=$(proc_cpu_s); t0=$EPOCHREALTIME; rx0=$(nic_bytes $dir)
	bpf_cost >/tmp/bpf0.txt
	sched_waits /tmp/wait0.txt "${srv[@]}"
	# The ping-pongs' readings right at the window's edges, with their own clock (rr_el).
	local rt0=$EPOCHREALTIME rr_el sampler= peers=() kids=()
	sched_waits /tmp/rwait0.txt "${rr[@]}"
	# Their peers: our netserver (the daemon and its child per connection) where it runs on this
	# machine, as in the guest's client namespace, whose scheduler is then the one measured; on
	# real hosts (ssh) it is another machine's, and none is read. Their wait is part of every
	# round trip.
	if ((${#rr[@]})) && [[ $(cat "/proc/$NETSERVER_PID/comm" 2>/dev/null) == netserver ]]; then
		peers=("$NETSERVER_PID")
		read -r -a kids <"/proc/$NETSERVER_PID/task/$NETSERVER_PID/children" || true # no newline: read returns 1
		peers+=("${kids[@]}")
	fi
	sched_waits /tmp/pwait0.txt "${peers[@]}"
	if ((${#rr[@]})); then
		cpu_sampler /tmp/rr-cpus.txt "${rr[@]}" & sampler=$!
		echo "$sampler" >/tmp/bench-sampler.pid # for after_failure()
	fi
	local tracer=
	if [[ -n ${MIAMI_BENCH_WAKE_TRACE:-} && $sc == @(mix|micro|microtx)-* ]]; then
		wake_trace "$MIAMI_BENCH_WAKE_TRACE" /tmp/wake-trace.txt & tracer=$!
	fi
	if [[ $sc == table3 ]]; then
		table3_run t3 "$IRQ_CPU_A" "$([[ $s != eevdf-pin* ]] || echo t3_pin)"
	else
		: >"$go"
		wait "$probe" || true
	fi
	sched_waits /tmp/rwait1.txt "${rr[@]}"
	sched_waits /tmp/pwait1.txt "${peers[@]}"
	[[ -z $sampler ]] || { kill "$sampler"; wait "$sampler" 2>/dev/null || true; }
	rr_el=$((${EPOCHREALTIME/./} - ${rt0/./}))
	rr_el=$((rr_el / 1000000)).$(printf %06d $((rr_el % 1000000)))
	read -r b1 c1 <<<"$(cpu_busy)"; sirq1=$(softirq_on "${on[@]}"); ev1=$(kernel_events)
	cpu1=$(proc_cpu_s); rx1=$(nic_bytes $dir)
	local el=$((${EPOCHREALTIME/./} - ${t0/./}))
	el=$((el / 1000000)).$(printf %06d $((el % 1000000)))
	bpf_cost >/tmp/bpf1.txt
	sched_waits /tmp/wait1.txt "${srv[@]}"
	# The trace's analysis after every reading of the window: it takes seconds under TCG.
	if [[ -n $tracer ]]; then
		wait "$tracer"
		local groups=("servers=$(tids_of "${srv[@]}")")
		[[ $sc != mix-* ]] || groups=("clients=$(tids_of "${rr[@]}")" "servers=$(tids_of "${peers[@]}")")
		python3 "$LIB_DIR/../bench/wakeups.py" /tmp/wake-trace.txt "${groups[@]}" | python3 -c 'import json, sys
r = {"scenario": sys.argv[1], "scheduler": sys.argv[2], "rep": int(sys.argv[3])}
r.update(json.load(sys.stdin))
print(json.dumps(r))' "$sc" "$s" "${BENCH_REP:-0}" >>"${VM_OUT:-/tmp}/wakeups.jsonl" ||
			log "$sc: MIAMI_BENCH_WAKE_TRACE: no wakeups figures for $s (wakeups.py failed)"
	fi
	# The window is over: the hogs go first, so that what follows runs on an idle guest.
	[[ -z $hogs ]] || { kill "$hogs" 2>/dev/null; wait "$hogs" 2>/dev/null; pkill -x stress-ng || true; }
	if [[ $s == miami ]]; then # for eevdf-pin: each task's most used CPU
		if [[ $sc == table3 ]]; then # per phase, its processes in A A B B C order
			local t3=($(</tmp/t3-pids)) ph nr=(0 2 4 5)
			for ph in 1 2 3; do
				most_cpu "/tmp/t3-p$ph.json" "${t3[@]:0:${nr[ph]}}" >"/tmp/pin-table3-p$ph.txt" 2>/dev/null ||
					rm -f "/tmp/pin-table3-p$ph.txt"
			done
		else
			most_cpu /tmp/probe.json "${srv[@]}" >"/tmp/pin-$sc.txt" 2>/dev/null || rm -f "/tmp/pin-$sc.txt"
		fi
		# The ping-pong clients' most sampled CPU each, one per line in rr order.
		[[ ! -s /tmp/rr-cpus.txt ]] || awk '{ n[$1 " " $2]++ } END { for (k in n) print k, n[k] }' /tmp/rr-cpus.txt |
			sort -k1,1n -k3,3nr | awk '!seen[$1]++ { print $2 }' >"/tmp/pin-rr-$sc.txt"
	fi
	[[ -z $irq_cpus ]] || irq_cpus="$irq_cpus -> $(irq_cpus_now)"
	[[ -z $IRQB_PID ]] || { kill "$IRQB_PID"; wait "$IRQB_PID" 2>/dev/null || true; }
	if [[ $sc != web ]]; then # ab ends by itself (-t) and prints its report then
		kill "${srv[@]}" "${cl[@]}" 2>/dev/null || true
		pkill -f 'iperf3 -c' 2>/dev/null || true
		"${CLI_EXEC[@]}" pkill -f 'iperf3 -c' 2>/dev/null || true
	fi
	# Not a bare `wait` (table3 has neither): that would wait for netserver and the sink too.
	((${#cl[@]} + ${#rr[@]} == 0)) || wait "${cl[@]}" "${rr[@]}" 2>/dev/null || true
	[[ $sc != web ]] || "${CLI_EXEC[@]}" cat /tmp/ab-peer.csv >/tmp/ab.csv 2>/dev/null || true
	[[ -n $web ]] && kill "$web"
	kill "${srv[@]}" 2>/dev/null || true
	# Wait until the iperf3 servers are gone, so that the next run's servers find their ports
	# free. Once, a server of the next run wrote no pid file in time (micro-irqb-16 under
	# scx_bpfland), and the whole bench stopped at run 33 of 70. lighttpd is a child: reaped
	# first, or its zombie would answer kill -0.
	# A server still there after 10 s gets SIGKILL: once, eevdf-pin's 32 receivers of
	# micro-2n-32 were not all gone, and the next run's server found its port taken.
	[[ -z $web ]] || wait "$web" 2>/dev/null || true
	wait_gone "${srv[@]}" || { log "$sc: servers left after SIGTERM, killing"; kill -KILL "${srv[@]}" 2>/dev/null; wait_gone "${srv[@]}" || true; }
	stop "$s"
	BENCH_SCHED_LOG=$SCHED_LOG BENCH_RR_IRQ_CPU=$IRQ_CPU_A BENCH_LIB_DIR=$LIB_DIR \
	python3 - "$sc" "$s" "$n" "$el" "$b0" "$b1" "$c0" "$c1" "$sirq0" "$sirq1" "$cpu0" "$cpu1" "$rx0" "$rx1" "$irq_cpus" "$rr_el" "$ev0" "$ev1" >>"$out" <<'PY'
import glob, json, os, re, sys
sc, s, n, el, b0, b1, c0, c1, q0, q1, p0, p1, rx0, rx1, irq_cpus, rr_el, ev0, ev1 = sys.argv[1:]
n, el = int(n), float(el)
r = {"scenario": sc, "scheduler": s, "window_s": round(el, 2)}
if int(os.environ.get("BENCH_REP") or 0):
    r["rep"] = int(os.environ["BENCH_REP"])
if irq_cpus:  # where the kernel or irqbalance put the IRQs: at the window's start -> end
    r["irq_cpus"] = irq_cpus
gbps = (int(rx1) - int(rx0)) * 8 / el / 1e9  # both server NICs (received, or sent: microtx)
if n:
    r["gbps_total"] = round(gbps, 4)
busy = (float(b1) - float(b0)) / max(float(c1) - float(c0), 1)
r["guest_busy_pct"] = round(100 * busy, 1)
if n and gbps:
    # busy CPUs (of the guest's) per Gbit/s through the server NICs
    import os
    r["busy_cpus_per_gbps"] = round(busy * os.cpu_count() / gbps, 3)
r["softirq_irq_cpus_s"] = round((int(q1) - int(q0)) / 100, 2)
for k, e0, e1 in zip(("ctxt_per_s", "ipi_res_per_s", "ipi_cal_per_s", "iwi_per_s"), ev0.split(), ev1.split()):
    r[k] = round((int(e1) - int(e0)) / el)
try:  # table3: its phase 3, all five processes (the row's placement is C's, set below)
    p = json.load(open("/tmp/t3-p3.json" if sc == "table3" else "/tmp/probe.json"))
    t = p["total"]["tiers"]
    r["placement"] = {k: round(v, 4) for k, v in t.items()}
    r["migrations"] = p["total"]["migrations"]
    r["probe_method"] = p["method"]
except (ValueError, KeyError, OSError, TypeError):
    r["placement"] = None
if not sum((r["placement"] or {}).values()):
    # No placement: what the probe said (its summary, or its error).
    r["probe_said"] = open("/tmp/t3-p3.txt" if sc == "table3" else "/tmp/probe.err").read()[-400:]
if sc == "table3":
    # Per phase, per group (A, B, C): runtime-weighted tiers and kbit/s acknowledged.
    pids = open("/tmp/t3-pids").read().split()
    groups = {"A": pids[0:2], "B": pids[2:4], "C": pids[4:5]}
    def acked(f):
        return {a: int(b) for a, b in (l.split() for l in open(f) if l.strip())}
    phases = []
    for ph, present in ((1, "A"), (2, "AB"), (3, "ABC")):
        row = {"phase": ph}
        try:
            p = json.load(open(f"/tmp/t3-p{ph}.json"))["pids"]
        except (ValueError, KeyError, OSError):
            p = {}
        a0, a1 = acked(f"/tmp/t3-a{ph}.txt"), acked(f"/tmp/t3-b{ph}.txt")
        dt = float(open(f"/tmp/t3-dt{ph}").read())
        for g in present:
            rt = sum(p[x]["runtime_ns"] for x in groups[g] if x in p)
            t = {k: round(sum(p[x]["tiers"][k] * p[x]["runtime_ns"] for x in groups[g] if x in p) / rt, 4)
                 if rt else None for k in ("core", "cache", "other")}
            t["kbps"] = round(sum(a1.get(x, 0) - a0.get(x, 0) for x in groups[g]) * 8 / dt / 1e3, 1)
            row[g] = t
        phases.append(row)
    r["phases"] = phases
    c3 = phases[2]["C"]
    r["placement"] = {k: c3[k] for k in ("core", "cache", "other")} if c3["core"] is not None else None
    r["c_kbps"] = c3["kbps"]
# The measured tasks' run-queue wait over the window, as a share of their runnable time (run +
# wait), per thread between the two readings (a thread born in the window counts from zero, one
# that ended in it is left out): the latency a scheduler adds by leaving a runnable task queued.
def waits(f):  # tid -> (run_ns, wait_ns, runs, migrations)
    return {p[0]: tuple(map(int, p[1:])) for p in (l.split() for l in open(f)) if len(p) == 5}
try:
    w0, w1 = waits("/tmp/wait0.txt"), waits("/tmp/wait1.txt")
    run = sum(v[0] - w0.get(t, (0, 0, 0, 0))[0] for t, v in w1.items())
    qw = sum(v[1] - w0.get(t, (0, 0, 0, 0))[1] for t, v in w1.items())
    if run + qw > 0:
        r["queued_share"] = round(qw / (run + qw), 4)
        r["queued_ms_per_s"] = round(qw / 1e6 / el, 1)
except (OSError, ValueError):
    pass
if sc.startswith("mix-"):
    lat = []
    for f in sorted(glob.glob("/tmp/rr-*.out")):
        for line in open(f):
            m = re.match(r"^\s*([\d.]+),([\d.]+),([\d.]+)\s*$", line)
            if m:
                lat.append([float(x) for x in m.groups()])
    if lat:
        r["rr_p50_us"] = round(sum(l[0] for l in lat) / len(lat), 1)
        r["rr_p99_us"] = round(max(l[1] for l in lat), 1)
        r["rr_trans_per_s"] = round(sum(l[2] for l in lat), 1)
    # The ping-pong clients over the window, from schedstat (threads alive at both readings):
    # their mean run-queue wait each time they were woken to run, and their CPU time per
    # second, which on a CPU that takes softirq work also holds what that work's interrupts
    # took while they ran (no IRQ time accounting in Debian's kernels); and their moves between
    # CPUs per second and per transaction.
    def window(name):  # (run_ns, wait_ns, runs, migrations) over the window, summed over threads
        v0, v1 = waits(f"/tmp/{name}0.txt"), waits(f"/tmp/{name}1.txt")
        return [sum(c) for c in zip((0, 0, 0, 0), *(tuple(x - y for x, y in zip(v1[t], v0[t])) for t in v1 if t in v0))]
    try:
        rt, qw, runs, mig = window("rwait")
        if runs:
            r["rr_wait_us"] = round(qw / 1e3 / runs, 1)
            r["rr_cpu_ms_per_s"] = round(rt / 1e6 / float(rr_el), 1)
            r["rr_migrations_per_s"] = round(mig / float(rr_el), 1)
            if r.get("rr_trans_per_s"):
                r["rr_migrations_per_trans"] = round(r["rr_migrations_per_s"] / r["rr_trans_per_s"], 3)
                # Times they were put on a CPU per transaction: a client that blocks once per
                # round trip runs about once; more is preemption or a wakeup that ran nothing.
                r["rr_runs_per_trans"] = round(runs / float(rr_el) / r["rr_trans_per_s"], 3)
        # The same of their peers (netserver): run-queue wait per run, CPU per transaction.
        rt, qw, runs, _ = window("pwait")
        if runs and r.get("rr_trans_per_s"):
            r["rr_peer_wait_us"] = round(qw / 1e3 / runs, 1)
            r["rr_peer_cpu_us_per_trans"] = round(rt / 1e3 / float(rr_el) / r["rr_trans_per_s"], 1)
    except (OSError, ValueError):
        pass
    # Where they ran (cpu_sampler): shares of the samples on NIC A's IRQ CPU (core), elsewhere
    # in its LLC (cache), and on other CPUs, by probe.py's own tiers.
    try:
        sys.path.insert(0, os.environ["BENCH_LIB_DIR"])
        from probe import sys_llcs, tiers
        from collections import Counter
        samples = Counter(int(f[1]) for f in (l.split() for l in open("/tmp/rr-cpus.txt")) if len(f) == 2)
        if samples:
            t = tiers(samples, int(os.environ["BENCH_RR_IRQ_CPU"]), sys_llcs())
            r["rr_placement"] = {k: round(v, 4) for k, v in t.items()}
    except (OSError, ValueError, KeyError, ImportError):
        pass
if sc == "web":
    txt = open("/tmp/ab.out").read()
    m = re.search(r"Requests per second:\s+([\d.]+)", txt)
    r["requests_per_s"] = float(m.group(1)) if m else 0.0
    try:
        pct = {int(float(a)): float(b) for a, b in (l.strip().split(",") for l in open("/tmp/ab.csv").readlines()[1:])}
        r["p99_ms"] = pct.get(99)
    except (OSError, ValueError):
        r["p99_ms"] = None
def cost(f):
    d = {}
    for line in open(f):
        t, name, ns, cnt = line.split()
        d[(t, name)] = (int(ns), int(cnt))
    return d
if s in ("miami", "bpfland", "eevdf-pin-obs"):
    a, b = cost("/tmp/bpf0.txt"), cost("/tmp/bpf1.txt")
    ops = {}
    for k, (ns, cnt) in b.items():
        ns0, cnt0 = a.get(k, (0, 0))
        if cnt - cnt0 > 0:
            ops[k] = (ns - ns0, cnt - cnt0)
    so = [v for k, v in ops.items() if k[0] == "struct_ops"]
    tr = [v for k, v in ops.items() if k[0] == "tracing"]
    r["bpf_ns_per_op"] = round(sum(v[0] for v in so) / sum(v[1] for v in so), 1) if so else None
    r["bpf_ns_per_probe"] = round(sum(v[0] for v in tr) / max(sum(v[1] for v in tr), 1), 1) if tr else None
    r["bpf_ms_per_s"] = round(sum(v[0] for v in ops.values()) / 1e6 / el, 2)
    # Each program's ns per call and calls per s: which callback the per-op figure is made of.
    r["bpf_per_prog"] = {k[1]: [round(ns / cnt), round(cnt / el)] for k, (ns, cnt) in sorted(ops.items())}
    r["sched_cpu_s_per_s"] = round((float(p1) - float(p0)) / el, 4)
# scx_miami's dispatch() calls that moved a task, by where it came from (its own DSQ, the shared
# one, an LLC sibling's, another LLC's), as shares of all its dispatch() calls: the counters of
# the totals it logs on exit over the calls bpf_stats counted since the load, at the window's
# end (the few moves of the teardown in between count too). What the per-call cost is made of.
if s == "miami":
    calls = b.get(("struct_ops", "miami_dispatch"), (0, 0))[1]
    try:
        part = open(os.environ["BENCH_SCHED_LOG"]).read().split("totals since start:")[-1]
    except (OSError, KeyError):
        part = ""
    def total(k):
        m = re.search(rf"^{k}\s+(\d+)", part, re.M)
        return int(m.group(1)) if m else None
    moves, n, us = {}, {}, {}
    for k in ("dsp_cpu", "dsp_shared", "dsp_steal_llc", "dsp_steal_far"):
        n[k] = total(k)
        if n[k] is not None and calls:
            moves[k] = round(n[k] / calls, 3)
    r["dispatch_moves"] = moves or None
    # The agent's rounds in the BPF timer (policy.bpf.c), which bpf_stats does not count (a
    # timer callback is no program run): their time per round from the exit log, times the
    # rounds a second at the default --interval-ms 100. CPU time outside the loader's.
    m = re.search(r"agent: (\d+) rounds, ([\d.]+) ms in BPF", part)
    if m and int(m.group(1)):
        r["agent_round_us"] = round(float(m.group(2)) * 1e3 / int(m.group(1)), 1)
        r["agent_bpf_ms_per_s"] = round(r["agent_round_us"] * 10 / 1e3, 3)
    # The share of its enqueue() calls that preempted the task's IRQ CPU for it (preempt_kicks),
    # the same way: SCX_ENQ_PREEMPT on the CPU the task woke onto, or a kick from another CPU,
    # which is an IRQ work interrupt (iwi_per_s) on the CPU that sent it.
    enq = b.get(("struct_ops", "miami_enqueue"), (0, 0))[1]
    kicks = total("preempt_kicks")
    r["preempt_kick_share"] = round(kicks / enq, 3) if kicks is not None and enq else None
    # us per call by outcome, from the exit totals: the calls that moved nothing are all the
    # calls bpf_stats counted less the moves (the teardown's few moves make it a bit low).
    if os.environ.get("MIAMI_BENCH_TIME_DISPATCH") and calls and None not in n.values():
        n["dsp_none"] = max(calls - sum(n.values()), 0)
        for k, cnt in n.items():
            ns = total(k + "_ns")
            if ns is not None and cnt:
                us[k] = [round(ns / cnt / 1e3, 1), cnt]
        r["dispatch_us"] = us or None
print(json.dumps(r))
PY
	rm -f /tmp/b-*.out /tmp/rr-*.out /tmp/rr-cpus.txt /tmp/ab.csv /tmp/t3-* /tmp/probe.json /tmp/{,r,p}wait[01].txt
}

# After a run that failed half-way (run() in a subshell, below): end what it may have left
# running, so that the next run starts as every run does: the servers by their pid files, the
# clients and the rest by their command lines, as on a real host other iperf3 runs are not ours
# to end. irqbalance is ours because host_net() refuses to start while one runs; netperf and
# stress-ng go by name, as run() ends stress-ng too.
after_failure() {
	local f pid left=()
	pid=$(cat /tmp/bench-sched.pid 2>/dev/null || true)
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
		SCHED_PID=$pid
		sched_stop >/dev/null || true
	fi
	for f in /tmp/iperf-s-*.pid; do [[ -s $f ]] && left+=("$(tr -d '\0' <"$f")"); done
	mapfile -t -O "${#left[@]}" left < <(
		pgrep -f "iperf3 -c|$PROBE|$PACER send|lighttpd -D -f /tmp/lighttpd.conf|ab -q -t [0-9]+ -n 10000000"
		for n in netperf stress-ng irqbalance; do pgrep -x "$n"; done # one name each: pgrep warns at 16+ characters
	)
	pid=$(cat /tmp/bench-sampler.pid 2>/dev/null || true)
	[[ -z $pid ]] || left+=("$pid")
	((${#left[@]} == 0)) || kill "${left[@]}" 2>/dev/null || true
	"${CLI_EXEC[@]}" pkill -f 'iperf3 -c|iperf3 -s -1|ab -q -t [0-9]+ -n 10000000' 2>/dev/null || true
	# Gone before the next run starts: its servers bind the same ports, its probe writes the
	# same /tmp/probe.json (10 s at most).
	wait_gone "${left[@]}" || true
	rfs off
}

# Each run in a subshell with set -e of its own, so that one that fails (a server that did not
# start, a scheduler that did not attach) is recorded and the bench goes on: a full run takes
# most of an hour, and one failure at run 33 of 70 used to lose everything. The exit status says
# a run failed; bench.jsonl has a "failed" object for it (render.py shows it and --check fails).
total=$((${#scenarios[@]} * ${#scheds[@]} * repeat)) i=0 start_t=$SECONDS failed=()
# For scripts/bench.sh, which boots again for the scenarios not done when a guest dies of TCG's
# int3 trap: the plan, then each scenario as all its runs are recorded (failed ones too).
log "scenarios: $(IFS=,; echo "${scenarios[*]}")"
for sc in "${scenarios[@]}"; do
	for ((rep = 1; rep <= repeat; rep++)); do
		export BENCH_REP=$((repeat > 1 ? rep : 0)) # run()'s JSON names the repetition when there are several
		for s in "${scheds[@]}"; do
			i=$((i + 1))
			el=$((SECONDS - start_t))
			eta=$((i > 1 ? el * (total - i + 1) / (i - 1) : 0))
			log "run $i of $total: $sc under $s$( ((repeat == 1)) || echo ", $rep of $repeat") (elapsed ${el}s, about ${eta}s left)"
			rm -f /tmp/bench-sched.pid /tmp/bench-sampler.pid
			set +e
			(
				set -e
				run "$sc" "$s"
			) 2>/tmp/bench-run.err
			rc=$?
			set -e
			cat /tmp/bench-run.err >&2
			((rc)) || continue
			failed+=("$sc under $s$( ((repeat == 1)) || echo " ($rep)")")
			[[ $s != miami ]] || rm -f "/tmp/pin-$sc.txt" "/tmp/pin-rr-$sc.txt" "/tmp/pin-$sc-p"[123].txt # no eevdf-pin from an earlier run's pins
			log "run $i of $total failed (exit $rc): $sc under $s; $(tail -n 3 /tmp/bench-run.err | tr '\n' ' ')"
			after_failure
			python3 -c 'import json, sys
r = {"scenario": sys.argv[1], "scheduler": sys.argv[2],
     "failed": "exit %s: %s" % (sys.argv[3], " ".join(open(sys.argv[4]).read().split()[-60:]))}
if int(sys.argv[5]):
    r["rep"] = int(sys.argv[5])
print(json.dumps(r))' \
				"$sc" "$s" "$rc" /tmp/bench-run.err "$BENCH_REP" >>"$out"
		done
	done
	log "scenario done: $sc"
done
log "done: $total runs in $((SECONDS - start_t)) s, $out"
if ((${#failed[@]})); then
	printf -v el '%s; ' "${failed[@]}"
	log "${#failed[@]} of $total runs failed: ${el%; }"
	exit 1
fi
