#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make bench` (scripts/bench.sh boots the default guest and runs this): the
# papers' experiments, each under every scheduler in one boot, one JSON object per (scenario,
# scheduler) appended to $VM_OUT/bench.jsonl. Schedulers: eevdf, eevdf-rfs (RFS on:
# rps_sock_flow_entries 32768, rps_flow_cnt 4096 per receive queue), scx_bpfland (when
# MIAMI_BPFLAND names its binary), scx_miami (default flags).
#
#   guest.sh [--quick] [--only SCENARIO[,SCENARIO...]] [--scheds S[,S...]] [--secs N]
#
# --scheds picks schedulers from those above (t_overload: eevdf,miami); --secs sets the window
# (default 10, 5 with --quick).
#
# Scenarios (--quick, in `make test`: mix-1 alone, 5 s windows: bulk receivers and a
# ping-pong, so every metric below but requests/s; t_short_conn runs lighttpd under ab there):
#   micro-<irq>-<n>   MiAMI IV-A / Table II: n iperf3 receivers, half per NIC, with the NICs'
#                     receive IRQs on: 2n = CPUs 1 and 5 (two LLCs), 2s = 1 and 2 (one LLC),
#                     zero = both on CPU 0 (multiport study's ZERO), all = every CPU (its ALL:
#                     the kernel picks one of the mask). n = 8, 16.
#   mix-<j>           MiAMI IV-B / Figures 13-14: 2 bulk receivers plus j netperf TCP_RR
#                     ping-pongs (1-byte), j = 1, 4: their p50/p99 round trip and rates.
#   web               network-subsystem-scheduling paper: lighttpd under ab without keep-alive.
#   overload          issue 12 item 11, overload from every side: 4 receivers (2 per NIC), 4
#                     senders from the server side to namespace cli over the same NICs (their
#                     ACKs come in on CPUs 1 and 5 too), and a CPU hog per CPU: more runnable
#                     work than CPUs. The receivers' placement (core = their NIC's IRQ CPU)
#                     and throughput are the figures.
# On a real host (scripts/bench.sh --host, docs/benchmarks.md) the same runs use the NICs in
# MIAMI_BENCH_NICS (two, one receive IRQ each), the client side is the command in
# MIAMI_BENCH_PEER (for example "ssh root@peer"; here "ip netns exec cli") reaching this host at
# MIAMI_BENCH_PEER_ADDRS' addresses, the IRQ CPUs come from the host's LLCs (in the guest, the
# CPUs named below), the neutral probe runs on the last CPU (MIAMI_BENCH_PROBE_CPU), and the
# IRQ affinity, RFS and bpf_stats_enabled are put back at exit.
# Metrics per run: throughput (bytes received by the server NICs over the window, Gbit/s),
# requests/s and p99,
# round-trip p50/p99 (us), placement of the receivers or server (probe.py, shares of
# core/cache/other against their NIC's IRQ CPU), their migrations, the guest's busy CPU per
# Gbit/s (/proc/stat), softirq share on the IRQ CPUs, BPF cost (kernel.bpf_stats_enabled:
# ns per call of the scheduler's struct_ops and tracing programs, ms of BPF per second) and the
# scheduler process's own CPU time.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"
T_NAME=bench

quick=0 only= secs= only_scheds=
while (($#)); do
	case $1 in
	--quick) quick=1; shift ;;
	--only) only=$2; shift 2 ;;
	--scheds) only_scheds=$2; shift 2 ;;
	--secs) secs=$2; shift 2 ;;
	*) echo "usage: guest.sh [--quick] [--only SCENARIO[,...]] [--scheds S[,...]] [--secs N]" >&2; exit 2 ;;
	esac
done
out=${VM_OUT:-/tmp}/bench.jsonl
: >"$out"
secs=${secs:-$((quick ? 5 : 10))}
scheds=(eevdf eevdf-rfs)
[[ -n ${MIAMI_BPFLAND:-} && -x ${MIAMI_BPFLAND:-} ]] && scheds+=(bpfland)
scheds+=(miami)
[[ -z $only_scheds ]] || IFS=, read -ra scheds <<<"$only_scheds"
if ((quick)); then
	scenarios=(mix-1)
else
	scenarios=(micro-2n-8 micro-2s-8 micro-zero-8 micro-all-8 micro-2n-16 mix-1 mix-4 web overload)
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
	local bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami} n irq f
	IFS=, read -r NIC_A NIC_B <<<"$MIAMI_BENCH_NICS"
	IFS=, read -r ADDR_A_CLI ADDR_B_CLI <<<"${MIAMI_BENCH_PEER_ADDRS:-}"
	read -ra CLI_EXEC <<<"${MIAMI_BENCH_PEER:-}"
	[[ -n $NIC_B && -n $ADDR_B_CLI && ${#CLI_EXEC[@]} -gt 0 ]] || {
		echo "guest.sh: MIAMI_BENCH_NICS=A,B, MIAMI_BENCH_PEER_ADDRS=A,B and MIAMI_BENCH_PEER are all needed" >&2
		exit 2
	}
	for n in A B; do
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
	done
	f=/proc/sys/net/core/rps_sock_flow_entries
	on_exit "echo $(cat $f) >$f"
	on_exit "sysctl -q kernel.bpf_stats_enabled=$(sysctl -n kernel.bpf_stats_enabled)"
	PROBE_CPU=${MIAMI_BENCH_PROBE_CPU:-$(($(nproc) - 1))}
	log "host: A $NIC_A($ADDR_A_SRV, irq $IRQ_A) <- $ADDR_A_CLI; B $NIC_B($ADDR_B_SRV, irq $IRQ_B) <- $ADDR_B_CLI, via ${CLI_EXEC[*]}"
}
if [[ -n ${MIAMI_BENCH_NICS:-} ]]; then
	host_net
	on_exit "${CLI_EXEC[*]} pkill -x netserver"
else
	net_default
fi
bg "${CLI_EXEC[@]}" netserver -L "$ADDR_A_CLI" -p 12865 -D
www=/tmp/www; mkdir -p "$www"; head -c 1024 /dev/zero | tr '\0' x >"$www/index.html"
printf 'server.document-root = "%s"\nserver.bind = "%s"\nserver.port = 80\nserver.errorlog = "/tmp/lt.err"\nindex-file.names = ( "index.html" )\n' \
	"$www" "$ADDR_A_SRV" >/tmp/lighttpd.conf
sysctl -q kernel.bpf_stats_enabled=1

rfs() { # on|off
	local v=0 q
	[[ $1 == on ]] && v=32768
	echo "$v" >/proc/sys/net/core/rps_sock_flow_entries
	for q in /sys/class/net/{"$NIC_A","$NIC_B"}/queues/rx-*/rps_flow_cnt; do
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
	miami) sched_start ;;
	esac
}
stop() { [[ -n ${SCHED_PID:-} ]] && { sched_stop >/dev/null || fail "$1: stop"; }; rfs off; }
# Pin the NICs' receive IRQs for configuration $1, by LLC: 2n = the second CPU of the first
# and of the second LLC (1 and 5 in the guest), 2s = the second and third of the first (1, 2),
# zero = the first CPU (0). IRQ_CPU_A/IRQ_CPU_B: the CPU each one lands on, the pinned one, not
# effective_affinity_list read back at once: x86 moves a vector at its next interrupt, so until
# traffic flows that file names the old CPU. It once gave the probe CPUs 2 and 0 for IRQs
# pinned to 1 and 5: the receivers read 0.05% core and 64% other tier while the scheduler
# counted 80% core. "all" lets the kernel choose, so run() reads the file there once traffic
# flows. Returns 1 where the host lacks the CPUs (2n with one LLC).
irqs() {
	case $1 in
	2n) IRQ_CPU_A=$(llc_cpu 0 1) IRQ_CPU_B=$(llc_cpu 1 1) ;;
	2s) IRQ_CPU_A=$(llc_cpu 0 1) IRQ_CPU_B=$(llc_cpu 0 2) ;;
	zero) IRQ_CPU_A=$(llc_cpu 0 0) IRQ_CPU_B=$IRQ_CPU_A ;;
	all) IRQ_CPU_A=0-$(($(nproc) - 1)) IRQ_CPU_B=$IRQ_CPU_A ;;
	esac
	[[ -n $IRQ_CPU_A && -n $IRQ_CPU_B ]] || return 1
	pin_irq "$IRQ_A" "$IRQ_CPU_A"; pin_irq "$IRQ_B" "$IRQ_CPU_B"
}
first_cpu() { cut -d, -f1 "/proc/irq/$1/effective_affinity_list" | cut -d- -f1; }
cpu_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }
rx_bytes() { echo $(($(cat "/sys/class/net/$NIC_A/statistics/rx_bytes") + $(cat "/sys/class/net/$NIC_B/statistics/rx_bytes"))); }
softirq_on() { awk -v c="$1" '/^cpu[0-9]/ && $1 == "cpu" c { print $8 }' /proc/stat; }
# The scheduler process's own CPU time so far, in s.
proc_cpu_s() { [[ -n ${SCHED_PID:-} ]] && awk '{ print ($14 + $15) / 100 }' "/proc/$SCHED_PID/stat" || echo 0; }

# Run scenario $1 under scheduler $2; append its JSON object.
run() {
	local sc=$1 s=$2 t0 c0 c1 b0 b1 cpu0 cpu1 sirq0 sirq1 extra='{}' n irq srv=() cl=() irqof=() i
	case $sc in
	micro-*) irq=${sc#micro-}; n=${irq#*-}; irq=${irq%-*} ;;
	overload) irq=2n; n=4 ;;
	*) irq=2n; n=2 ;;
	esac
	irqs "$irq" || { log "$sc: skipped, no CPUs for IRQ configuration $irq here"; return 0; }
	start "$s"
	[[ $sc == web ]] && n=0
	for ((i = 0; i < n; i++)); do
		local ip=$ADDR_A_SRV
		((i < n / 2)) || ip=$ADDR_B_SRV
		iperf_server $((5201 + i)) "$ip"
		srv+=("$IPERF_SERVER_PID")
	done
	for ((i = 0; i < n; i++)); do
		local ip=$ADDR_A_SRV
		((i < n / 2)) || ip=$ADDR_B_SRV
		# Clients run until killed below: under TCG with hogs, the commands before the
		# window (bpftool, Python) took longer than a fixed run, and every flow had ended
		# before the probe started. Throughput is the server NICs' received bytes over
		# the window.
		iperf_client_bg "/tmp/b-$i.out" cli "$ip" $((5201 + i)) 3600
		cl+=("$IPERF_CLIENT_PID")
	done
	((n)) && wait_streaming "${srv[@]}"
	local ca=$IRQ_CPU_A cb=$IRQ_CPU_B
	[[ $irq != all ]] || { ca=$(first_cpu "$IRQ_A"); cb=$(first_cpu "$IRQ_B"); }
	for ((i = 0; i < n; i++)); do
		irqof+=(--irq-cpu-of "${srv[i]}=$( ((i < n / 2)) && echo "$ca" || echo "$cb")")
	done
	local web=
	if [[ $sc == web ]]; then
		lighttpd -D -f /tmp/lighttpd.conf & web=$!
		sleep 0.5
		srv=("$web"); irqof=(--irq-cpu-of "$web=$ca")
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
		stress-ng --cpu "$(nproc)" --timeout 0 --quiet & hogs=$!
	fi
	if [[ $sc == mix-* ]]; then
		for ((i = 0; i < ${sc#mix-}; i++)); do
			netperf -H "$ADDR_A_CLI" -p 12865 -t TCP_RR -l "$secs" -- -r 1,1 \
				-o P50_LATENCY,P99_LATENCY,TRANSACTION_RATE >"/tmp/rr-$i.out" 2>&1 &
			rr+=($!)
		done
	fi
	sleep 1
	read -r b0 c0 <<<"$(cpu_busy)"; sirq0=$(($(softirq_on "$ca") + $(softirq_on "$cb")))
	cpu0=$(proc_cpu_s); t0=$(date +%s.%N); rx0=$(rx_bytes)
	bpf_cost >/tmp/bpf0.txt
	# Not --trace alone: with kernel.bpf_stats_enabled=1 (on for the BPF cost) the 7.3 guest
	# emitted no sched_stat_runtime events at all (671 in 2 s with it off, 0 with it on), and
	# every placement came out empty. Sampling /proc instead; switch-ins (--runs) for the web
	# server, whose runs are too short to sample.
	local probe_opts=(--hz 100)
	[[ $sc == web ]] && probe_opts=(--trace --runs)
	$PROBE --pids "$(IFS=,; echo "${srv[*]}")" "${irqof[@]}" --duration $((secs - 3)) \
		"${probe_opts[@]}" --probe-cpu "$PROBE_CPU" --json >/tmp/probe.json 2>/tmp/probe.err || true
	read -r b1 c1 <<<"$(cpu_busy)"; sirq1=$(($(softirq_on "$ca") + $(softirq_on "$cb")))
	cpu1=$(proc_cpu_s); rx1=$(rx_bytes)
	local el; el=$(python3 -c "import time; print(time.time() - $t0)")
	bpf_cost >/tmp/bpf1.txt
	if [[ $sc != web ]]; then # ab ends by itself (-t) and prints its report then
		kill "${srv[@]}" "${cl[@]}" 2>/dev/null || true
		pkill -f 'iperf3 -c' 2>/dev/null || true
		"${CLI_EXEC[@]}" pkill -f 'iperf3 -c' 2>/dev/null || true
	fi
	wait "${cl[@]}" "${rr[@]}" 2>/dev/null || true
	[[ $sc != web ]] || "${CLI_EXEC[@]}" cat /tmp/ab-peer.csv >/tmp/ab.csv 2>/dev/null || true
	[[ -z $hogs ]] || { kill "$hogs" 2>/dev/null; wait "$hogs" 2>/dev/null; pkill -x stress-ng || true; }
	[[ -n $web ]] && kill "$web"
	kill "${srv[@]}" 2>/dev/null || true
	stop "$s"
	python3 - "$sc" "$s" "$n" "$el" "$b0" "$b1" "$c0" "$c1" "$sirq0" "$sirq1" "$cpu0" "$cpu1" "$rx0" "$rx1" >>"$out" <<'PY'
import glob, json, re, sys
sc, s, n, el, b0, b1, c0, c1, q0, q1, p0, p1, rx0, rx1 = sys.argv[1:]
n, el = int(n), float(el)
r = {"scenario": sc, "scheduler": s, "window_s": round(el, 2)}
gbps = (int(rx1) - int(rx0)) * 8 / el / 1e9  # both server NICs, over the window
if n:
    r["gbps_total"] = round(gbps, 4)
busy = (float(b1) - float(b0)) / max(float(c1) - float(c0), 1)
r["guest_busy_pct"] = round(100 * busy, 1)
if n and gbps:
    # busy CPUs (of the guest's) per Gbit/s received
    import os
    r["busy_cpus_per_gbps"] = round(busy * os.cpu_count() / gbps, 3)
r["softirq_irq_cpus_s"] = round((int(q1) - int(q0)) / 100, 2)
try:
    p = json.load(open("/tmp/probe.json"))
    t = p["total"]["tiers"]
    r["placement"] = {k: round(v, 4) for k, v in t.items()}
    r["migrations"] = p["total"]["migrations"]
    r["probe_method"] = p["method"]
except (ValueError, KeyError, OSError, TypeError):
    r["placement"] = None
if not sum((r["placement"] or {}).values()):
    # No placement: what the probe said (its summary, or its error).
    r["probe_said"] = open("/tmp/probe.err").read()[-400:]
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
if s in ("miami", "bpfland"):
    a, b = cost("/tmp/bpf0.txt"), cost("/tmp/bpf1.txt")
    ops = {}
    for k, (ns, cnt) in b.items():
        ns0, cnt0 = a.get(k, (0, 0))
        if cnt - cnt0 > 0:
            ops[k] = (ns - ns0, cnt - cnt0)
    so = [v for k, v in ops.items() if k[0] == "struct_ops"]
    tr = [v for k, v in ops.items() if k[0] == "tracing"]
    r["bpf_ns_per_op"] = round(sum(v[0] for v in so) / max(sum(v[1] for v in so), 1), 1)
    r["bpf_ns_per_probe"] = round(sum(v[0] for v in tr) / max(sum(v[1] for v in tr), 1), 1) if tr else None
    r["bpf_ms_per_s"] = round(sum(v[0] for v in ops.values()) / 1e6 / el, 2)
    r["sched_cpu_s_per_s"] = round((float(p1) - float(p0)) / el, 4)
print(json.dumps(r))
PY
	rm -f /tmp/b-*.out /tmp/rr-*.out /tmp/ab.csv
}

total=$((${#scenarios[@]} * ${#scheds[@]})) i=0 start_t=$SECONDS
for sc in "${scenarios[@]}"; do
	for s in "${scheds[@]}"; do
		i=$((i + 1))
		el=$((SECONDS - start_t))
		eta=$((i > 1 ? el * (total - i + 1) / (i - 1) : 0))
		log "run $i of $total: $sc under $s (elapsed ${el}s, about ${eta}s left)"
		run "$sc" "$s"
	done
done
log "done: $total runs in $((SECONDS - start_t)) s, $out"
