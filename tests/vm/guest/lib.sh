# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Guest-side helpers for the VM tests; `source` it from a guest script (runs as root inside the
# VM booted by tests/vm/run.sh). Nothing here touches the host: all of it acts on the guest.
#
# Network (NICs from run.sh, found by MAC):
#   net_setup            pair A: server NIC_A 198.18.1.1/24 (root ns) <-> 198.18.1.2/24 (ns cli)
#                        pair B: server NIC_B 198.18.2.1/24 (root ns) <-> 198.18.2.2/24 (ns cli)
#                        sets NIC_A NIC_B (server ifaces), CLI_A CLI_B (client ifaces, in ns cli),
#                        IRQ_A IRQ_B (the server NICs' virtioN-input.0 IRQs, i.e. the receive
#                        IRQ of the root-ns side), IRQ_A_CLI IRQ_B_CLI (the client NICs');
#                        also written to /tmp/miami-net.env. Idempotent. In a --nics 4 guest
#                        (VM_NICS=4) also pairs C (198.18.3.0/24) and D (198.18.4.0/24), with
#                        the same variables for C and D (net_pairs lists the guest's pairs).
#   net_teardown         delete ns cli (client NICs return to the root ns)
#   pin_irq IRQ CPU      /proc/irq/IRQ/smp_affinity_list = CPU (or a list)
#   irq_count IRQ [CPU]  count of IRQ in /proc/interrupts on CPU, or summed over all CPUs
#   irq_counts IRQ       the per-CPU counts, space separated (index = CPU)
#
# Traffic (iperf3; default direction client -> server, so the root-ns server RECEIVES):
#   iperf_server PORT [BIND_IP] [extra iperf3 args]   daemon in the root ns; IPERF_SERVER_PID
#   iperf_client NS SERVER_IP PORT SECONDS [extra]    foreground, in ns NS ("root" = root ns);
#                        add -R to make the root-ns server the SENDER, -J for JSON
#   iperf_client_bg OUTFILE NS SERVER_IP PORT SECONDS [extra]   same in the background; sets
#                        IPERF_CLIENT_PID (wait on it)
#
# Scheduler:
#   sched_start [args]   start ${MIAMI_BIN:-$VM_TOP/target/release/scx_miami} in the background,
#                        output in $SCHED_LOG (default /tmp/sched.log), wait up to
#                        ${SCHED_START_TIMEOUT:-20} s for sched_ext state "enabled" with ops
#                        "miami*" (${SCHED_OPS_PREFIX:-miami}), or with --observe among the args
#                        for "observing" in its log; SCHED_PID. Returns 1 + prints the log.
#   sched_stop           SIGINT, wait up to 10 s; requires exit status 0 and state "disabled";
#                        returns 1 + prints the log tail otherwise.
#   sched_state / sched_ops   the current state / ops name ("" when none)
#   progs_left           scx_miami's BPF programs still loaded, after waiting up to 10 s for the
#                        kernel, which frees them in deferred work after the last fd closes
#                        (under TCG a check right after exit still listed some); logs the wait
#
# Assertions (never abort the script, so `set -e` is safe):
#   pass MSG | fail MSG | check_ge NAME VALUE MIN | check_le NAME VALUE MAX | check_eq NAME A B
#   finish               prints "N passed, N failed"; returns 1 if any failed (or none passed)
#
# Other: bg CMD...  start CMD in the background and kill it at exit (BG_PID);
#        on_exit CMD  run CMD at exit; vm_reset  (used by runall.sh) back to a fresh state.
# Numbers: decimals allowed in check_*. Temp files go to /tmp (guest tmpfs overlay).

set -o pipefail
# MIAMI_TRACE=1 (passed into the guest like every MIAMI_* variable): every command of the test
# with a wall-clock stamp, to see where a test spends its time.
[[ -z ${MIAMI_TRACE:-} ]] || { PS4='+ ${EPOCHREALTIME} '; set -x; }
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
VM_TOP=${VM_TOP:-/work/main}
LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Python without the site module (-S): the guest's scripts use the standard library only, and
# on the build host 20 starts took 3.2 s against 6.6 s (a loaded TCG guest started one in 1-4 s,
# many times per test; in an idle guest the two were not told apart, 0.8-1.1 s each).
# A function, so that every `python3` of a test script gets it.
python3() { command python3 -S "$@"; }
PROBE="python3 $LIB_DIR/probe.py"
IP=/usr/bin/ip
SCHED_LOG=${SCHED_LOG:-/tmp/sched.log}
NET_ENV=/tmp/miami-net.env
# The guest's root file system is read-only; tools like stress-ng need a writable cwd.
cd /tmp

MAC_A_SRV=52:54:00:00:0a:01 MAC_A_CLI=52:54:00:00:0a:02
MAC_B_SRV=52:54:00:00:0b:01 MAC_B_CLI=52:54:00:00:0b:02
ADDR_A_SRV=198.18.1.1 ADDR_A_CLI=198.18.1.2
ADDR_B_SRV=198.18.2.1 ADDR_B_CLI=198.18.2.2
MAC_C_SRV=52:54:00:00:0c:01 MAC_C_CLI=52:54:00:00:0c:02
MAC_D_SRV=52:54:00:00:0d:01 MAC_D_CLI=52:54:00:00:0d:02
ADDR_C_SRV=198.18.3.1 ADDR_C_CLI=198.18.3.2
ADDR_D_SRV=198.18.4.1 ADDR_D_CLI=198.18.4.2

T_PASSED=0 T_FAILED=0
T_NAME=$(basename "${0%.sh}")

log() { printf '%s: %s\n' "$T_NAME" "$*"; }

# --- assertions -----------------------------------------------------------------------------
pass() { T_PASSED=$((T_PASSED + 1)); printf 'PASS: %s\n' "$*"; }
fail() { T_FAILED=$((T_FAILED + 1)); printf 'FAIL: %s\n' "$*"; }
# awk, not Python: a Python start took 0.3 s to seconds in a loaded TCG guest, for every check.
# Anything but two numbers fails the comparison ("none" compared as a string would not).
_NUM='^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$'
_cmp() { [[ $2 =~ $_NUM && $3 =~ $_NUM ]] && awk -v a="$2" -v b="$3" "BEGIN { exit !($1) }"; }
check_ge() { if _cmp 'a>=b' "$2" "$3"; then pass "$1 = $2 >= $3"; else fail "$1 = $2, want >= $3"; fi; }
check_le() { if _cmp 'a<=b' "$2" "$3"; then pass "$1 = $2 <= $3"; else fail "$1 = $2, want <= $3"; fi; }
check_eq() { if [[ $2 == "$3" ]]; then pass "$1 = $2"; else fail "$1 = $2, want $3"; fi; }
finish() {
	printf '%s: %d passed, %d failed\n' "$T_NAME" "$T_PASSED" "$T_FAILED" >&2
	printf '%d passed, %d failed\n' "$T_PASSED" "$T_FAILED"
	((T_FAILED == 0 && T_PASSED > 0))
}

# --- cleanup at exit ------------------------------------------------------------------------
_EXIT_CMDS=()
_BG_PIDS=()
on_exit() { _EXIT_CMDS+=("$*"); }
bg() { "$@" & BG_PID=$!; _BG_PIDS+=("$BG_PID"); } # note: SIGINT is ignored in it; use kill (TERM)
# Pinned CPU hogs, one `stress-ng --cpu 1` per CPU given (a CPU given twice gets two), their
# PIDs in HOGS: returns once every hog's worker runs (stress-ng forks it, and a fork takes a
# second or more under TCG, more on a slow host; a window that opens while the hogs still start
# weighs two schedulers' runs differently), 30 s at most, and logs how many run. hogs_stop ends
# them. Start them after sched_start and stop them before sched_stop where the test allows:
# with four hogs running, a start took 12 s and a stop 4 s, against 4 s and 1.6 s idle.
hogs_start() {
	local c h i up kids
	HOGS=()
	for c in "$@"; do
		bg taskset -c "$c" stress-ng --cpu 1 --timeout 1200 --quiet
		HOGS+=("$BG_PID")
	done
	for ((i = 0; i < 300; i++)); do
		up=0
		for h in "${HOGS[@]}"; do
			# A builtin read, no fork per look (no newline at the end: read returns 1).
			kids=
			read -r kids <"/proc/$h/task/$h/children" 2>/dev/null || true
			[[ -z $kids ]] || up=$((up + 1))
		done
		((up < ${#HOGS[@]})) || break
		sleep 0.1
	done
	log "$up of ${#HOGS[@]} pinned hogs running"
}
hogs_stop() {
	((${#HOGS[@]})) || return 0
	kill "${HOGS[@]}" 2>/dev/null || true
	wait "${HOGS[@]}" 2>/dev/null || true
	HOGS=()
}
_lib_exit() {
	local rc=$? c p
	for c in "${_EXIT_CMDS[@]}"; do eval "$c" || true; done
	[[ -n ${SCHED_PID:-} ]] && kill -0 "$SCHED_PID" 2>/dev/null && { sched_stop >/dev/null 2>&1 || true; }
	for p in "${_BG_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	# Not on a real host (the bench harness there): its iperf3 runs are not ours to end.
	[[ -n ${MIAMI_BENCH_NICS:-} ]] || pkill -x iperf3 2>/dev/null || true
	exit "$rc"
}
trap _lib_exit EXIT

# --- network --------------------------------------------------------------------------------
_iface_by_mac() {
	local d
	for d in /sys/class/net/*; do
		[[ $(cat "$d/address" 2>/dev/null) == "$1" ]] && { basename "$d"; return 0; }
	done
	return 1
}
# The receive IRQ of a virtio-net iface: /proc/interrupts names it virtioN-input.0, where virtioN
# is the iface's device; cross-checked against the PCI function's msi_irqs.
_input_irq() {
	local vdev irq
	vdev=$(basename "$(readlink -f "/sys/class/net/$1/device")")
	irq=$(awk -v n="$vdev-input.0" '$NF == n { sub(":", "", $1); print $1 }' /proc/interrupts)
	[[ -n $irq && -e /sys/class/net/$1/device/../msi_irqs/$irq ]] || return 1
	echo "$irq"
}
ping1() { # ping1 [NS] ADDR: one ping (iputils if present, else busybox)
	local ns=() p
	(($# == 2)) && { ns=($IP netns exec "$1"); shift; }
	if command -v ping >/dev/null; then p=(ping); else p=(busybox ping); fi
	"${ns[@]}" "${p[@]}" -c 1 -W 2 "$1" >/dev/null 2>&1
}
# The NIC pairs of this guest: A and B, and C and D in a --nics 4 guest (VM_NICS).
net_pairs() { if [[ ${VM_NICS:-2} == 4 ]]; then echo A B C D; else echo A B; fi; }
_net_log() { # PAIR [SUFFIX]
	local nic=NIC_$1 addr=ADDR_$1_SRV irq=IRQ_$1 cli=CLI_$1
	log "net: $1 ${!nic}(${!addr}, irq ${!irq}) <- cli ${!cli}${2:-}"
}
net_setup() {
	local p
	if [[ -f $NET_ENV ]] && $IP netns list 2>/dev/null | grep -qw cli; then
		# shellcheck disable=SC1090
		source "$NET_ENV"
		for p in $(net_pairs); do _net_log "$p" " (kept)"; done
		return 0
	fi
	$IP netns list 2>/dev/null | grep -qw cli || $IP netns add cli
	$IP link set lo up
	$IP -n cli link set lo up
	: >"$NET_ENV"
	for p in $(net_pairs); do
		_net_pair "$p" || { rm -f "$NET_ENV"; return 1; }
	done
}
# Pair $1 (A to D): its server NIC stays in the root namespace, its client NIC goes to namespace
# cli, each gets its address, and the names and receive IRQs are added to $NET_ENV.
_net_pair() {
	local p=$1 mac_s=MAC_$1_SRV mac_c=MAC_$1_CLI addr_s=ADDR_$1_SRV addr_c=ADDR_$1_CLI i nic= cli= irq irq_c
	for i in $(seq 100); do # NICs come up via udev (virtio_net is a module on Debian)
		nic=$(_iface_by_mac "${!mac_s}") && cli=$(_iface_by_mac "${!mac_c}") && break
		sleep 0.2
	done
	[[ -n $cli ]] || { echo "net_setup: pair $p's NICs not found by MAC" >&2; $IP -br link >&2; return 1; }
	irq=$(_input_irq "$nic") && irq_c=$(_input_irq "$cli") ||
		{ echo "net_setup: pair $p's input IRQs not found" >&2; return 1; }
	$IP link set "$cli" netns cli
	$IP addr add "${!addr_s}/24" dev "$nic"
	$IP -n cli addr add "${!addr_c}/24" dev "$cli"
	$IP link set "$nic" up
	$IP -n cli link set "$cli" up
	printf -v "NIC_$p" %s "$nic"; printf -v "CLI_$p" %s "$cli"
	printf -v "IRQ_$p" %s "$irq"; printf -v "IRQ_${p}_CLI" %s "$irq_c"
	printf 'NIC_%s=%s CLI_%s=%s IRQ_%s=%s IRQ_%s_CLI=%s\n' "$p" "$nic" "$p" "$cli" "$p" "$irq" "$p" "$irq_c" >>"$NET_ENV"
	for i in $(seq 50); do
		ping1 cli "${!addr_s}" && break
		sleep 0.2
	done
	ping1 cli "${!addr_s}" || { echo "net_setup: ping of pair $p from ns cli failed" >&2; return 1; }
	_net_log "$p"
}
# True when the network of $NET_ENV is still whole: each pair's server NIC with the same receive
# IRQ, its client NIC in namespace cli, and a ping through it answered.
net_intact() {
	[[ -f $NET_ENV ]] || return 1
	(
		# shellcheck disable=SC1090
		source "$NET_ENV"
		for p in $(net_pairs); do
			nic=NIC_$p irq=IRQ_$p cli=CLI_$p addr=ADDR_${p}_SRV
			[[ $(_input_irq "${!nic}") == "${!irq}" ]] &&
				$IP -n cli link show "${!cli}" >/dev/null 2>&1 && ping1 cli "${!addr}" || exit 1
		done
	)
}

net_teardown() {
	rm -f "$NET_ENV"
	$IP netns list 2>/dev/null | grep -qw cli || return 0
	# A process left in the namespace keeps it, and the client NICs in it, alive after the
	# del: once (after t_nic_hotplug) the next test found no client NIC for 30 s.
	$IP netns pids cli 2>/dev/null | xargs -r kill -9 2>/dev/null || true
	$IP netns del cli
	local i p mac d ok
	for i in $(seq 100); do # physical NICs return to the root ns asynchronously
		ok=1
		for p in $(net_pairs); do mac=MAC_${p}_CLI; _iface_by_mac "${!mac}" >/dev/null || ok=; done
		[[ -n $ok ]] && break
		sleep 0.1
	done
	for p in $(net_pairs); do
		for mac in MAC_${p}_SRV MAC_${p}_CLI; do
			d=$(_iface_by_mac "${!mac}") && { $IP addr flush dev "$d"; $IP link set "$d" down; }
		done
	done
	return 0
}

pin_irq() { echo "$2" >"/proc/irq/$1/smp_affinity_list"; }
irq_counts() { awk -v irq="$1:" -v n="$(nproc)" '$1 == irq { for (i = 2; i <= n + 1; i++) printf "%s%s", $i, (i <= n ? " " : "\n") }' /proc/interrupts; }
irq_count() {
	local c
	read -r -a c <<<"$(irq_counts "$1")"
	if (($# > 1)); then echo "${c[$2]}"; else
		local s=0 x; for x in "${c[@]}"; do s=$((s + x)); done; echo $s
	fi
}

# --- traffic --------------------------------------------------------------------------------
# CLI_EXEC: how to run a command on the client side ("cli"): namespace cli here; the bench
# harness on a real host sets the peer's command (tests/vm/bench/guest.sh, docs/benchmarks.md).
CLI_EXEC=("$IP" netns exec cli)
_nsexec() {
	case $1 in
	root | -) shift; "$@" ;;
	cli) shift; "${CLI_EXEC[@]}" "$@" ;;
	*) local ns=$1; shift; $IP netns exec "$ns" "$@" ;;
	esac
}
iperf_server() {
	local port=$1 bind=${2:-}; shift; (($#)) && shift
	local pidf=/tmp/iperf-s-$port.pid i
	rm -f "$pidf"
	iperf3 -s -p "$port" ${bind:+-B "$bind"} -D --pidfile "$pidf" "$@"
	for i in $(seq 50); do [[ -s $pidf ]] && break; sleep 0.1; done
	# Say why, where the read below would fail under set -e with only tr's "No such file".
	[[ -s $pidf ]] || {
		echo "iperf_server: iperf3 -s -p $port${bind:+ -B $bind} wrote no pid file in 5 s; port $port: $(ss -Hltnp "sport = :$port" 2>/dev/null | awk '{ print $NF }' | head -n 1 | grep . || echo "no listener")" >&2
		return 1
	}
	IPERF_SERVER_PID=$(tr -d '\0' <"$pidf")
	# give it a moment to listen (IPERF_WAIT=0: the caller waits for all at once)
	[[ ${IPERF_WAIT:-1} == 0 ]] || wait_listening "$port"
}
# wait_listening PORT...: until a TCP socket listens on every PORT (5 s at most). One `ss` per
# round for all of them: started one by one with a wait each, 16 servers took 30 s under TCG.
wait_listening() {
	local i p n
	for ((i = 0; i < 50; i++)); do
		local up
		up=$(ss -Hltn 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }')
		n=0
		for p in "$@"; do grep -qx "$p" <<<"$up" && n=$((n + 1)); done
		((n == $#)) && return 0
		sleep 0.1
	done
	return 1
}
iperf_client() {
	local ns=$1 ip=$2 port=$3 secs=$4; shift 4
	_nsexec "$ns" iperf3 -c "$ip" -p "$port" -t "$secs" "$@"
}
iperf_client_bg() {
	local out=$1; shift
	iperf_client "$@" >"$out" 2>&1 &
	IPERF_CLIENT_PID=$!
	_BG_PIDS+=("$IPERF_CLIENT_PID")
}

# One iperf3 receiver on NIC A, fed from namespace cli for far longer than any window, until
# receiver_a_stop: sets RECV_A_PID once it streams. $1 = the client's output file.
receiver_a_start() {
	iperf_server 5201 "$ADDR_A_SRV"
	RECV_A_PID=$IPERF_SERVER_PID
	iperf_client_bg "$1" cli "$ADDR_A_SRV" 5201 600
	wait_streaming "$RECV_A_PID"
}
receiver_a_stop() {
	kill "$IPERF_CLIENT_PID" "$RECV_A_PID" 2>/dev/null || true
	wait "$IPERF_CLIENT_PID" 2>/dev/null || true
}

# --- scheduler ------------------------------------------------------------------------------
sched_state() { cat /sys/kernel/sched_ext/state 2>/dev/null || echo none; }
progs_left() {
	local i n
	for i in $(seq 0 100); do
		n=$(bpftool prog show 2>/dev/null | grep -c 'name miami_' || true)
		((n == 0)) && break
		sleep 0.1
	done
	log "BPF programs left: $n, after $((i / 10)).$((i % 10)) s" >&2
	echo "$n"
}
sched_ops() {
	local f
	for f in /sys/kernel/sched_ext/root/ops /sys/kernel/sched_ext/*/ops; do
		[[ -r $f ]] && { cat "$f"; return; }
	done
	echo ""
}
sched_start() {
	local bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami} i
	local prefix=${SCHED_OPS_PREFIX:-miami} limit=${SCHED_START_TIMEOUT:-20}
	[[ -x $bin ]] || { echo "sched_start: no $bin" >&2; return 1; }
	[[ $(sched_state) == disabled ]] || { echo "sched_start: sched_ext state is $(sched_state)" >&2; return 1; }
	# The client NICs (ns cli) stand for the paper's separate client machines. scx_miami
	# counts the IRQs of interfaces in other namespaces too, so unless a test passes --nic
	# itself or sets SCHED_ALL_NICS=1, it is told to use the server NICs only: all of them
	# (four in a --nics 4 guest), since only the chosen NICs' traffic pulls a task.
	local args=("$@") nics=() n v ready observe=0
	[[ " $* " != *" --observe "* ]] || observe=1
	for n in A B C D; do v=NIC_$n; [[ -z ${!v:-} ]] || nics+=("${!v}"); done
	if ((${#nics[@]})) && [[ ${SCHED_ALL_NICS:-0} != 1 && " $* " != *" --nic"* ]]; then
		args+=(--nic "$(IFS=,; echo "${nics[*]}")")
	fi
	# Background jobs of a non-interactive shell start with SIGINT ignored: undo that.
	local t0=$EPOCHREALTIME
	env --default-signal=INT "$bin" "${args[@]}" >"$SCHED_LOG" 2>&1 &
	SCHED_PID=$!
	for ((i = 0; i < limit * 10; i++)); do
		ready=
		if ((observe)); then
			! grep -q observing "$SCHED_LOG" || ready=observing
		elif [[ $(sched_state) == enabled && $(sched_ops) == "$prefix"* ]]; then
			ready="scheduler $(sched_ops) enabled"
		fi
		if [[ -n $ready ]]; then
			# Wall time: the polls themselves take far longer than their 0.1 s sleeps
			# under TCG (counted polls said 2 s where the loader logged 6.6 s).
			log "$ready (pid $SCHED_PID, $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s)"
			return 0
		fi
		kill -0 "$SCHED_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "sched_start: not enabled (state $(sched_state), ops '$(sched_ops)'); log:" >&2
	sed 's/^/  | /' "$SCHED_LOG" >&2
	kill -INT "$SCHED_PID" 2>/dev/null || true
	for i in $(seq 30); do kill -0 "$SCHED_PID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$SCHED_PID" 2>/dev/null || true
	wait "$SCHED_PID" 2>/dev/null || true
	SCHED_PID=
	return 1
}
# sched_start with the processes whose name matches $1 (pgrep's pattern, e.g. '^iperf3$' or
# '^stress-ng') stopped (SIGSTOP) while the scheduler loads and attaches, and continued after.
# Under TCG a start beside two to four streams or hogs took 16-24 s (the verifier and the
# attach share 2 host cores with 8 busy vCPUs), idle 4 s. The tasks are taken over stopped and
# wake under the new scheduler as from a sleep; a test measures after its own settle anyway.
# Not where the agent's moves are what is measured: t_pair_stable's pair, stopped over the start,
# drew 16 upgrades and 0.67 moves a second in its window, against 0.06-0.21 started beside them.
sched_start_paused() {
	local pat=$1 pids rc=0
	shift
	pids=$(pgrep -d' ' "$pat" || true)
	# shellcheck disable=SC2086 # a list of PIDs
	[[ -z $pids ]] || kill -STOP $pids 2>/dev/null || true
	sched_start "$@" || rc=$?
	# shellcheck disable=SC2086
	[[ -z $pids ]] || kill -CONT $pids 2>/dev/null || true
	return $rc
}
sched_stop() {
	[[ -n ${SCHED_PID:-} ]] || { echo "sched_stop: not started" >&2; return 1; }
	local i rc=0 t0=$EPOCHREALTIME child=0
	# Only this shell's own child has an exit status to wait for. bench's after_failure()
	# stops a scheduler that a subshell started (run()), which is gone: there `wait` failed
	# with "not a child of this shell" (127) and the stop was reported as failed.
	[[ $(awk '{ print $4 }' "/proc/$SCHED_PID/stat" 2>/dev/null) != "$BASHPID" ]] || child=1
	kill -INT "$SCHED_PID" 2>/dev/null || true
	for i in $(seq 100); do kill -0 "$SCHED_PID" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$SCHED_PID" 2>/dev/null; then
		echo "sched_stop: still running after 10 s, killing" >&2
		kill -KILL "$SCHED_PID" 2>/dev/null || true; rc=1
	fi
	((!child)) || wait "$SCHED_PID" || rc=$?
	for i in $(seq 50); do [[ $(sched_state) == disabled ]] && break; sleep 0.1; done
	[[ $(sched_state) == disabled ]] || { echo "sched_stop: state $(sched_state)" >&2; rc=1; }
	if ((rc)); then
		echo "sched_stop: exit status $rc; log tail:" >&2
		tail -n 30 "$SCHED_LOG" | sed 's/^/  | /' >&2
	fi
	dmesg 2>/dev/null | grep -a 'sched_ext:' | tail -n 2 | sed "s/^/$T_NAME: /"
	log "scheduler stopped in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
	SCHED_PID=
	return $rc
}

# peer_start / peer_stop: another sched_ext scheduler, tests/vm/tools/peer.bpf.c (peer_fifo),
# registered by bpftool with its link pinned under $PEER_PIN; unpinning it detaches it.
PEER_PIN=/sys/fs/bpf/miami_peer
peer_start() {
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
	mkdir -p "$PEER_PIN"
	bpftool struct_ops register "$VM_TOP/target/tools/peer.bpf.o" "$PEER_PIN" >/dev/null
	[[ $(sched_state) == enabled && $(sched_ops) == peer_fifo ]] ||
		{ echo "peer_start: state $(sched_state), ops '$(sched_ops)'" >&2; return 1; }
}
peer_stop() {
	local i
	[[ -d $PEER_PIN ]] || return 0
	rm -rf "$PEER_PIN"
	for i in $(seq 50); do [[ $(sched_state) == disabled ]] && break; sleep 0.1; done
}

# --- fresh state between tests (runall.sh) ----------------------------------------------------
vm_reset() {
	local i irq all
	pkill -INT -x scx_miami 2>/dev/null || true
	peer_stop
	for i in $(seq 100); do [[ $(sched_state) != enabled ]] && break; sleep 0.1; done
	# Every workload a test may start in the root namespace: a server left running (they
	# daemonize, out of reach of runall's process-group kill) is a network task in the next
	# test's totals (t_observe counts every network task).
	pkill -x 'iperf3|lighttpd|pacer|shapes|netserver|netperf|ab|stress-ng|irqbalance' 2>/dev/null || true
	# The test network stays from one test to the next while it is as net_setup left it: a
	# teardown and a new setup took about 15 s per test under TCG (deleting the namespace
	# hands the client NICs back asynchronously), 7 to 8 minutes of the suite. What a test
	# started in namespace cli goes; a test that changed the network (t_nic_hotplug re-plugs
	# a NIC) gets a new one.
	if net_intact; then
		$IP netns pids cli 2>/dev/null | xargs -r kill -9 2>/dev/null || true
	else
		net_teardown
	fi
	# A hotplug test that failed half-way must not leave the next test a CPU short.
	for i in /sys/devices/system/cpu/cpu[0-9]*/online; do
		[[ $(cat "$i") == 1 ]] || echo 1 >"$i" 2>/dev/null || true
	done
	all=0-$(($(nproc) - 1))
	for irq in /proc/irq/[0-9]*; do echo "$all" >"$irq/smp_affinity_list" 2>/dev/null || true; done
	rm -f /tmp/iperf-*.pid "$SCHED_LOG" /tmp/*.json /tmp/*.jsonl /tmp/*.txt /tmp/*.out
}

# Wait (at most 60 s) until file $1 exists: a probe.py --go-file F says F.ready once loaded, and
# then waits for F to open its window. Fails, saying why, when process $2 ends first or the time
# is up (the caller's probe output then says more).
wait_ready() {
	local i
	for ((i = 0; i < 600; i++)); do
		[[ -e $1 ]] && return 0
		kill -0 "$2" 2>/dev/null || { log "process $2 ended before it made $1"; return 1; }
		sleep 0.1
	done
	log "no $1 after 60 s"
	return 1
}
# --- placement workloads (scheduler tests) -------------------------------------------------
# net_default            net_setup, then the default guest's IRQ pinning: receive IRQ of NIC A
#                        -> CPU 1, NIC B -> CPU 5 (the "IRQ CPUs"); the clients' NICs -> 7 and 3
# jget FILE EXPR         evaluate EXPR on the JSON in FILE (bound to d), print it
# receivers_run LABEL N_A N_B SECS [client args]
#                        N_A iperf3 receivers on pair A and N_B on pair B (servers in the root
#                        ns, clients in ns cli); once all are streaming, probes them for SECS-2 s,
#                        each against its own NIC's IRQ CPU: /tmp/LABEL.json. RECEIVER_OPTS:
#                        extra iperf3 -s options (e.g. "-i 0"); RECEIVERS_READY: a command run
#                        with LABEL once they stream, before the probe (t_place_hogs: the hogs)
# stats_total NAME       NAME in the totals that scx_miami logs when it stops ($SCHED_LOG)
# table3_run LABEL IRQ_CPU [PIN_FN]
#                        the paper's Table III phases (t_table3 says how they are scaled to TCG),
#                        64-byte sends to the pacer sink on $ADDR_A_CLI:7001 (started by the
#                        caller): two A processes (sleeping 2500 us between sends) from t=0, two B
#                        (1000 us) from t~8 s, one bulk C from t~16 s. Per phase N: the traced
#                        probe of that phase's processes against IRQ_CPU for 4, 4, 6 s
#                        (/tmp/LABEL-pN.json, its summary in /tmp/LABEL-pN.txt), acknowledged
#                        bytes per PID before and after it (/tmp/LABEL-aN.txt, -bN.txt: "PID
#                        BYTES" lines) and its span in s (/tmp/LABEL-dtN); the PIDs A A B B C in
#                        /tmp/LABEL-pids. PIN_FN, if given, is called as PIN_FN N PID... with
#                        phase N's processes once they run, before the probe (the bench's
#                        eevdf-pin pins them there)
# wait_streaming PID...  wait (at most 30 s) until every iperf3 server PID has its stream
#                        thread (iperf3 >= 3.16: one thread per stream); logs how many do
PACER=$VM_TOP/target/tools/pacer
PROBE_CPU=${PROBE_CPU:-6}
net_default() {
	net_setup
	pin_irq "$IRQ_A" 1
	pin_irq "$IRQ_B" 5
	pin_irq "$IRQ_A_CLI" 7
	pin_irq "$IRQ_B_CLI" 3
}
wait_streaming() {
	local p t up=0 i
	for ((i = 0; i < 150; i++)); do
		up=0
		for p in "$@"; do t=("/proc/$p/task/"*); ((${#t[@]} >= 2)) && up=$((up + 1)); done
		((up == $#)) && break
		sleep 0.2
	done
	log "$up of $# receivers streaming"
}
jget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
# Several values in one Python start (0.8 s each in an idle guest, 3-15 s under load): for each
# pair FILE EXPR, EXPR over FILE's JSON as d (as jget), one line each, for
# `mapfile -t v < <(jpairs F1 E1 F2 E2)`. A pair that fails prints an empty line (its traceback
# on stderr), so only its own check fails, as with one jget per value.
jpairs() {
	python3 -c 'import json, sys, traceback
files = {}
for f, e in zip(sys.argv[1::2], sys.argv[2::2]):
    try:
        if f not in files:
            files[f] = json.load(open(f))
        d = files[f]
        print(eval(e))
    except Exception:
        traceback.print_exc()
        print()' "$@"
}
# jpairs over one file: jgets FILE EXPR...
jgets() {
	local f=$1 e a=()
	shift
	for e; do a+=("$f" "$e"); done
	jpairs "${a[@]}"
}
receivers_run() {
	local label=$1 na=$2 nb=$3 secs=$4 i
	shift 4
	local srv=() irqof=() cl=() sopts popts
	read -ra sopts <<<"${RECEIVER_OPTS:-}" # extra iperf3 -s options
	read -ra popts <<<"${PROBE_OPTS:-}"   # extra probe.py options, e.g. --trace
	for ((i = 0; i < na + nb; i++)); do
		if ((i < na)); then
			IPERF_WAIT=0 iperf_server $((5201 + i)) "$ADDR_A_SRV" "${sopts[@]}"
			irqof+=(--irq-cpu-of "$IPERF_SERVER_PID=1")
		else
			IPERF_WAIT=0 iperf_server $((5201 + i)) "$ADDR_B_SRV" "${sopts[@]}"
			irqof+=(--irq-cpu-of "$IPERF_SERVER_PID=5")
		fi
		srv+=("$IPERF_SERVER_PID")
	done
	wait_listening $(seq 5201 $((5200 + na + nb)))
	for ((i = 0; i < na + nb; i++)); do
		local ip=$ADDR_A_SRV
		((i < na)) || ip=$ADDR_B_SRV
		# Clients run much longer than SECS, and are killed below: under TCG they connect
		# seconds apart, and with a hog on every CPU the probe's Python once took over 30 s
		# to start, after every stream had ended (t_place_hogs measured nothing). An hour, so
		# that no machine is slow enough to see them end.
		iperf_client_bg "/tmp/$label-cl$i.out" cli "$ip" $((5201 + i)) 3600 "$@"
		cl+=("$IPERF_CLIENT_PID")
	done
	# Measure only once every receiver has its stream thread (iperf3 >= 3.16: one per stream).
	# Builtins only (no forks: under TCG with 16 clients starting, a fork costs tens of ms).
	local p up=0 t0=$SECONDS tasks
	while ((up < na + nb && SECONDS - t0 < 60)); do
		up=0
		for p in "${srv[@]}"; do
			tasks=("/proc/$p/task/"*)
			((${#tasks[@]} >= 2)) && up=$((up + 1))
		done
		((up < na + nb)) && sleep 0.2
	done
	log "$label: $up of $((na + nb)) receivers streaming after $((SECONDS - t0)) s"
	local go=/tmp/$label.go probe
	rm -f "$go" "$go.ready"
	$PROBE --pids "$(IFS=,; echo "${srv[*]}")" "${irqof[@]}" --duration $((secs - 2)) --hz 100 \
		--probe-cpu "$PROBE_CPU" "${popts[@]}" --go-file "$go" --json \
		>"/tmp/$label.json" 2>"/tmp/$label.txt" &
	probe=$!
	# The hook (t_place_hogs: a hog per CPU) runs once the probe is loaded, and the window
	# starts a second after it.
	wait_ready "$go.ready" "$probe" || true
	[[ -z ${RECEIVERS_READY:-} ]] || "$RECEIVERS_READY" "$label"
	sleep 1
	: >"$go"
	wait "$probe" || true
	kill "${cl[@]}" 2>/dev/null || true
	wait "${cl[@]}" 2>/dev/null || true
	kill "${srv[@]}" 2>/dev/null || true
	echo "--- placement, $label (share of runtime; core = own NIC's IRQ CPU):"
	cat "/tmp/$label.txt"
}
# BPF run time and calls of the running scheduler's programs (kernel.bpf_stats_enabled=1):
# "type name ns calls" lines, struct_ops and tracing. Nothing while no scheduler of ours runs.
# awk on bpftool's plain output ("ID: TYPE  name NAME  tag ... run_time_ns NS run_cnt N", the
# last two only once the program ran), not Python on its JSON: bench's overload scenario reads
# this beside a hog on every CPU, where a Python start took 10-12 s under TCG.
bpf_cost() {
	[[ -n ${SCHED_PID:-} ]] || return 0
	bpftool prog show 2>/dev/null | awk '$2 == "struct_ops" || $2 == "tracing" {
		name = "?"; ns = cnt = 0
		for (i = 3; i < NF; i++) {
			if ($i == "name") name = $(i + 1)
			else if ($i == "run_time_ns") ns = $(i + 1)
			else if ($i == "run_cnt") cnt = $(i + 1)
		}
		if (cnt) print $2, name, ns, cnt
	}'
}
# Field $2 of /proc/PID/task/*/schedstat summed over every thread of process $1: 1 = ns run,
# 2 = ns runnable but not running, 3 = switch-ins.
schedstat_sum() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk -v f="$2" '{ s += $f } END { printf "%.0f\n", s }'
}
stats_total() {
	awk -v n="$1" '/totals since start/ { t = 1 } t && $1 == n { v = $2 } END { print v + 0 }' "$SCHED_LOG"
}
# The running scheduler's agent loads, one OpenMetrics scrape (--monitor): "CPU PERCENT" lines,
# by CPU, into file $1.
agent_loads() {
	timeout -s INT 2 "${MIAMI_BIN:-$VM_TOP/target/release/scx_miami}" --monitor 1 \
		--format openmetrics >"$1.om" 2>&1 || true
	awk -F'[{}" ]+' '/^miami_cpu_load\{/ { load[$3] = $NF } END { for (c in load) print c, load[c] }' \
		"$1.om" | sort -n >"$1"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# Acknowledged bytes per process on port 7001 so far: "PID BYTES" lines (table3_run).
acked_by_pid() {
	ss -tinpH 'dport = :7001' | awk '/users:/ { match($0, /pid=[0-9]+/); pid = substr($0, RSTART + 4, RLENGTH - 4) }
		/bytes_acked:/ { match($0, /bytes_acked:[0-9]+/); print pid, substr($0, RSTART + 12, RLENGTH - 12) }'
}
# The probe loads while the phase settles (3 s) and opens its window on a go file: its Python
# start, seconds under TCG, used to come on top of every phase.
_table3_phase() { # label, phase, its PIDs, probe seconds, IRQ CPU
	local t0 go=/tmp/$1-p$2.go probe
	rm -f "$go" "$go.ready"
	$PROBE --pids "$3" --irq-cpu "$5" --duration "$4" --hz 100 --probe-cpu "$PROBE_CPU" \
		--trace --go-file "$go" --json >"/tmp/$1-p$2.json" 2>"/tmp/$1-p$2.txt" &
	probe=$!
	sleep 3
	wait_ready "$go.ready" "$probe" || true
	acked_by_pid >"/tmp/$1-a$2.txt"; t0=$EPOCHREALTIME
	: >"$go"
	wait "$probe" || true
	acked_by_pid >"/tmp/$1-b$2.txt"
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }' >"/tmp/$1-dt$2"
	sleep 1
}
table3_run() {
	local label=$1 irq_cpu=$2 pin=${3:-:} a1 a2 b1 b2 c
	# bg: killed at exit also when a run fails half-way (on a real host too).
	bg env PACER_SLEEP=1 "$PACER" send "$ADDR_A_CLI" 7001 2500 3600 64 >/dev/null; a1=$BG_PID
	bg env PACER_SLEEP=1 "$PACER" send "$ADDR_A_CLI" 7001 2500 3600 64 >/dev/null; a2=$BG_PID
	"$pin" 1 "$a1" "$a2"
	_table3_phase "$label" 1 "$a1,$a2" 4 "$irq_cpu"
	bg env PACER_SLEEP=1 "$PACER" send "$ADDR_A_CLI" 7001 1000 3600 64 >/dev/null; b1=$BG_PID
	bg env PACER_SLEEP=1 "$PACER" send "$ADDR_A_CLI" 7001 1000 3600 64 >/dev/null; b2=$BG_PID
	"$pin" 2 "$a1" "$a2" "$b1" "$b2"
	_table3_phase "$label" 2 "$a1,$a2,$b1,$b2" 4 "$irq_cpu"
	bg "$PACER" send "$ADDR_A_CLI" 7001 0 3600 64 >/dev/null; c=$BG_PID
	"$pin" 3 "$a1" "$a2" "$b1" "$b2" "$c"
	_table3_phase "$label" 3 "$a1,$a2,$b1,$b2,$c" 6 "$irq_cpu"
	kill "$a1" "$a2" "$b1" "$b2" "$c" 2>/dev/null || true
	wait "$a1" "$a2" "$b1" "$b2" "$c" 2>/dev/null || true
	echo "$a1 $a2 $b1 $b2 $c" >"/tmp/$label-pids"
}
