#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`: the papers' experiments in the default test guest, under EEVDF, EEVDF with RFS,
# scx_bpfland and scx_miami in one boot (tests/vm/bench/guest.sh says what runs and what is
# measured), Table II's four-NIC configurations (micro-4s-*, micro-4n-*) in a second guest with
# four LLCs of two CPUs and four NIC pairs, then a table and plots:
#   .cache/bench/<stamp>/bench.jsonl    one JSON object per (scenario, scheduler)
#   .cache/bench/<stamp>/run.json       kernel, topology, versions, command, date
#   .cache/bench/<stamp>/results.md     a summary of scx_miami against EEVDF, eevdf-pin and
#                                       scx_bpfland with the goals each scenario meets, then
#                                       one table per scenario, ratios against EEVDF
#   .cache/bench/<stamp>/<scenario>.png one plot per scenario (gnuplot)
#   scripts/bench.sh [--quick] [--only SCENARIO[,...]] [--scheds S[,...]] [--repeat N] [--kernel NAME] [--out DIR]
#   scripts/bench.sh --host [--quick] [--only ...] [--scheds ...] [--repeat N] [--out DIR]
# --repeat N: each case N times, the schedulers in turn; results.md gives medians and ranges.
# scx_bpfland comes from the crate registry, pinned in scripts/deps.sh, built once into
# .cache/peers. TCG models no caches: throughput and CPU per Gbit/s here are mostly the
# emulator; placement, migrations and BPF cost are the findings (results.md says so). A guest
# that dies of TCG's int3 trap (docs/operations.md) boots again for the scenarios it had not
# finished, at most twice (run.json's "retried").
# --host runs the same harness on this machine instead of a guest, over real NICs to a peer:
# root, sched_ext, and MIAMI_BENCH_NICS, MIAMI_BENCH_PEER, MIAMI_BENCH_PEER_ADDRS set
# (docs/benchmarks.md).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
quick= only=() scheds=() repeat=() kernel=default out= host= scenarios=
while (($#)); do
	case $1 in
	--host) host=1; shift ;;
	--quick) quick=--quick; shift ;;
	--only) scenarios=$2; shift 2 ;;
	--scheds) scheds=(--scheds "$2"); shift 2 ;;
	--repeat) repeat=(--repeat "$2"); shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) sed -n '4,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
# Which boots: the default guest (two NICs) and the four-NIC one, each with its scenarios of
# --only, or its own defaults without --only (--quick: the default guest only).
only2=() only4=() boots=(2)
[[ -n $quick ]] || boots=(2 4)
if [[ -n $scenarios ]]; then
	IFS=, read -ra names <<<"$scenarios"
	s2= s4=
	for n in "${names[@]}"; do
		if [[ $n =~ ^micro(tx)?-4[sn]-[0-9]+$ ]]; then s4+=${s4:+,}$n; else s2+=${s2:+,}$n; fi
	done
	only=(--only "$scenarios") boots=()
	[[ -z $s2 ]] || { only2=(--only "$s2"); boots+=(2); }
	[[ -z $s4 ]] || { only4=(--only "$s4"); boots+=(4); }
fi
# guest.sh checks it too; here before a guest boots for it.
[[ -z ${repeat[*]} || ${repeat[1]} =~ ^[1-9][0-9]*$ ]] ||
	{ echo "bench: --repeat ${repeat[1]}: want a whole number of runs, 1 or more" >&2; exit 2; }
only+=("${scheds[@]}" "${repeat[@]}")
peers=$top/.cache/peers
[[ -x $peers/bin/scx_bpfland ]] || scripts/deps.sh --no-kernels --peers
BPFLAND_VERSION=$("$peers/bin/scx_bpfland" --version 2>/dev/null | awk '{ print $2 }')
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=${out:-$top/.cache/bench/$stamp}
mkdir -p "$out"
t0=$SECONDS
# A guest (or the host run) that failed: what it measured is still rendered, and the exit
# status says it failed. guest.sh records a failed run and goes on to the next one.
rc=0 retried=()
# tcg_int3, bench_left, keep_rows: a guest lost to the emulator, what it had done.
source tests/vm/tcg.sh
if [[ -n $host ]]; then
	die() { echo "bench: $*" >&2; exit 2; }
	[[ $(id -u) == 0 ]] || die "--host: run as root"
	[[ -e /sys/kernel/sched_ext/state ]] || die "--host: this kernel has no sched_ext (6.12+ with CONFIG_SCHED_CLASS_EXT)"
	[[ $(cat /sys/kernel/sched_ext/state) == disabled ]] || die "--host: a sched_ext scheduler runs here; stop it first"
	[[ -n ${MIAMI_BENCH_NICS:-} && -n ${MIAMI_BENCH_PEER:-} && -n ${MIAMI_BENCH_PEER_ADDRS:-} ]] ||
		die "--host: set MIAMI_BENCH_NICS=A,B (this host's NICs), MIAMI_BENCH_PEER (e.g. 'ssh root@peer') and MIAMI_BENCH_PEER_ADDRS=A,B (the peer's address on each link); docs/benchmarks.md"
	kernel=host
	VM_TOP=$top VM_OUT=$out MIAMI_BPFLAND=$peers/bin/scx_bpfland tests/vm/bench/guest.sh $quick "${only[@]}" |
		tee "$out/console.log" || rc=$?
else
	: >"$out/bench.jsonl"
	vm_out=$top/.cache/vm-out/$kernel
	for nics in "${boots[@]}"; do
		if ((nics == 4)); then
			topo=(--topo llc4 --nics 4) sel=("${only4[@]}") log=console-4nic.log
		else
			topo=() sel=("${only2[@]}") log=console.log
		fi
		# A guest that dies of TCG's int3 trap (tests/vm/tcg.sh) boots again, at most twice,
		# for the scenarios it had not finished; its finished ones' rows are kept. A full run
		# is most of an hour, and the trap killed one bench boot in stop 50.
		attempt=0
		while :; do
			alog=$out/$log
			((attempt == 0)) || alog=$out/${log%.log}.retry$attempt.log
			rm -f "$vm_out/bench.jsonl" "$vm_out/wakeups.jsonl"
			brc=0
			MIAMI_BPFLAND=$peers/bin/scx_bpfland tests/vm/run.sh --kernel "$kernel" "${topo[@]}" \
				--timeout 5400 --log "$alog" -- tests/vm/bench/guest.sh $quick "${sel[@]}" "${scheds[@]}" "${repeat[@]}" ||
				brc=$?
			left=
			if ((brc && attempt < 2)) && tcg_int3 "$alog"; then
				# Nothing planned in the log: it died before the first run, all of it is left.
				left=$(bench_left "$alog") || left=${sel[1]:-all}
				[[ -n $left ]] || { brc=0; echo "bench: the $nics-NIC guest died of TCG's int3 trap after its last scenario: nothing lost" >&2; }
			fi
			if [[ -z $left ]]; then
				((brc == 0)) || { rc=$brc; echo "bench: the $nics-NIC guest exited $brc; its log: $alog" >&2; }
				keep_rows "" "$vm_out/bench.jsonl" "$out/bench.jsonl"
				# MIAMI_BENCH_WAKE_TRACE's figures (tests/vm/bench/guest.sh), where it was set
				keep_rows "" "$vm_out/wakeups.jsonl" "$out/wakeups.jsonl"
				break
			fi
			attempt=$((attempt + 1))
			retried+=("$nics-NIC guest: after $(tcg_rip "$alog"), scenarios left: $left ($alog)")
			echo "RETRY bench: the $nics-NIC guest died of TCG's int3 trap (docs/operations.md); a new boot for: $left" >&2
			keep_rows "$left" "$vm_out/bench.jsonl" "$out/bench.jsonl"
			keep_rows "$left" "$vm_out/wakeups.jsonl" "$out/wakeups.jsonl"
			[[ $left == all ]] || sel=(--only "$left")
		done
	done
fi
BENCH_RETRIED=$(printf '%s\n' "${retried[@]}") \
	python3 - "$out" "$kernel" "$quick" "$((SECONDS - t0))" "$BPFLAND_VERSION" "${only[@]}" <<'PY'
import json, os, platform, subprocess, sys, datetime
out, kernel, quick, secs, bpfland = sys.argv[1:6]
def sh(*a):
    try:
        return subprocess.run(a, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""
meta = {
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "command": " ".join(["scripts/bench.sh", quick] + sys.argv[6:]).replace("  ", " "), "kernel": kernel,
    # The guest kernel's version is the name of its directory in the kernel cache.
    "kernel_version": platform.release() if kernel == "host" else os.path.basename(os.path.dirname(sh("scripts/kernels.sh", "path", kernel))),
    "guest": (f"none: this host, NICs {os.environ.get('MIAMI_BENCH_NICS')} to {os.environ.get('MIAMI_BENCH_PEER')}"
              if kernel == "host" else "8 vCPUs, LLCs 0-3 / 4-7, 2 virtio-net pairs, qemu TCG; micro-4*: 8 vCPUs, LLCs 0-1 / 2-3 / 4-5 / 6-7, 4 virtio-net pairs"),
    "host": f"{os.cpu_count()} CPUs, {platform.release()}",
    # What ran as scx_miami: MIAMI_BIN (a scratch build the guest runs instead) if set.
    "scx_miami": sh(os.environ.get("MIAMI_BIN") or "target/release/scx_miami", "--version"),
    "scx_bpfland": bpfland, "secs": int(secs),
}
if os.environ.get("MIAMI_BIN"):
    meta["miami_bin"] = os.environ["MIAMI_BIN"]
if os.environ.get("BENCH_RETRIED"):
    meta["retried"] = os.environ["BENCH_RETRIED"].split("\n")
json.dump(meta, open(f"{out}/run.json", "w"), indent=1)
PY
python3 tests/vm/bench/render.py "$out"
echo "bench: $out/results.md ($((SECONDS - t0)) s)"
((${#retried[@]} == 0)) || printf 'bench: boots retried after TCG'"'"'s int3 trap: %s\n' "${retried[@]}" >&2
((rc == 0)) || echo "bench: not every run completed (exit $rc): see the failed rows in results.md and the console logs in $out" >&2
exit "$rc"
