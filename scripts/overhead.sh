#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make overhead`: what the TCP probes cost on this host's real CPU (no VM). The host needs BTF
# and fentry, not sched_ext: scx_miami runs with --observe (the monitor and a context-switch
# probe; no scheduling). Alternating runs in one session, iperf3 over loopback with 1 and 8
# streams, without and with --observe attached:
#   - the throughput ratio (with / without), per stream count, over ROUNDS pairs of runs;
#   - ns per call of each probe (kernel.bpf_stats_enabled: run_time_ns / run_cnt of each
#     program, from /proc/PID/fdinfo of the loader).
# Prints figures and the goals beside them (<= 60 ns per call, <= 2% throughput loss); asserts
# nothing. Needs root and bpftool. Traffic stays on 127.0.0.1.
#   scripts/overhead.sh [SECS per run, default 5] [ROUNDS, default 3]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/target/release/scx_miami
secs=${1:-5} rounds=${2:-3}
[[ $(id -u) == 0 ]] || { echo "overhead: run as root" >&2; exit 1; }
[[ -x $bin ]] || { echo "overhead: no $bin (make build)" >&2; exit 1; }
[[ -e /sys/kernel/btf/vmlinux ]] || { echo "overhead: this kernel has no BTF" >&2; exit 1; }
if [[ $(bpftool feature probe kernel 2>/dev/null) == *"program_type tracing is NOT available"* ]]; then
	echo "overhead: this host's kernel refuses tracing (fentry) programs: nothing to measure here" >&2
	exit 1
fi
[[ -e /var/run/scx/root/stats ]] && { echo "overhead: a scx_miami runs here; stop it first" >&2; exit 1; }
port=5390
iperf3 -s -B 127.0.0.1 -p $port -D --pidfile /tmp/miami-overhead-iperf.pid
stats0=$(cat /proc/sys/kernel/bpf_stats_enabled)
obs=
cleanup() {
	[[ -n $obs ]] && kill -INT "$obs" 2>/dev/null && wait "$obs" 2>/dev/null
	kill "$(cat /tmp/miami-overhead-iperf.pid 2>/dev/null)" 2>/dev/null || true
	echo "$stats0" >/proc/sys/kernel/bpf_stats_enabled
}
trap cleanup EXIT
sleep 0.5
echo 1 >/proc/sys/kernel/bpf_stats_enabled
gbps() { python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9)'; }
declare -A sum
echo "overhead: $rounds rounds of ${secs}s runs, iperf3 over loopback, CPUs: $(nproc), $(uname -r)"
for ((r = 1; r <= rounds; r++)); do
	for p in 1 8; do
		for mode in off on; do
			if [[ $mode == on ]]; then
				"$bin" --observe >/tmp/miami-overhead.log 2>&1 &
				obs=$!
				for i in $(seq 100); do grep -q 'observing' /tmp/miami-overhead.log && break; sleep 0.1; done
				grep -q 'observing' /tmp/miami-overhead.log || { cat /tmp/miami-overhead.log; exit 1; }
			fi
			g=$(iperf3 -c 127.0.0.1 -p $port -t "$secs" -P "$p" -J | gbps)
			printf '  round %d, %d stream(s), observe %-3s %7.2f Gbit/s\n' "$r" "$p" "$mode" "$g"
			sum[$p-$mode]=$(python3 -c "print(${sum[$p-$mode]:-0} + $g)")
			if [[ $mode == on ]]; then
				bpftool prog show --json >"/tmp/miami-overhead-r$r-p$p.json"
				kill -INT "$obs"; wait "$obs" || true; obs=
			fi
		done
	done
done
echo
echo "throughput, with --observe / without (goal >= 0.98):"
for p in 1 8; do
	python3 -c "print(f'  $p stream(s): {${sum[$p-on]} / ${sum[$p-off]}:.3f}  ({${sum[$p-off]} / $rounds:.2f} -> {${sum[$p-on]} / $rounds:.2f} Gbit/s)')"
done
echo "ns per probe call (run_time_ns / run_cnt over all runs with --observe; goal <= 60):"
python3 - /tmp/miami-overhead-r*-p*.json <<'PY'
import json, sys
tot = {}
for f in sys.argv[1:]:
    for p in json.load(open(f)):
        name = p.get("name", "")
        if name.startswith("miami_") and p.get("run_cnt"):
            t = tot.setdefault(name, [0, 0])
            t[0] += p["run_time_ns"]
            t[1] += p["run_cnt"]
for name, (ns, cnt) in sorted(tot.items()):
    print(f"  {name:<18} {ns / cnt:7.1f} ns per call over {cnt} calls")
PY
