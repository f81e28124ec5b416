#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`: the papers' experiments in the default test guest, under EEVDF, EEVDF with RFS,
# scx_bpfland and scx_miami in one boot (tests/vm/bench/guest.sh says what runs and what is
# measured), then a table and plots:
#   .cache/bench/<stamp>/bench.jsonl    one JSON object per (scenario, scheduler)
#   .cache/bench/<stamp>/run.json       kernel, topology, versions, command, date
#   .cache/bench/<stamp>/results.md     the tables, ratios against EEVDF
#   .cache/bench/<stamp>/<scenario>.png one plot per scenario (gnuplot)
#   scripts/bench.sh [--quick] [--only SCENARIO[,SCENARIO...]] [--kernel NAME] [--out DIR]
# scx_bpfland comes from the crate registry, pinned in scripts/deps.sh, built once into
# .cache/peers. TCG models no caches: throughput and CPU per Gbit/s here are mostly the
# emulator; placement, migrations and BPF cost are the findings (results.md says so).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
quick= only=() kernel=default out=
while (($#)); do
	case $1 in
	--quick) quick=--quick; shift ;;
	--only) only=(--only "$2"); shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) sed -n '4,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
peers=$top/.cache/peers
[[ -x $peers/bin/scx_bpfland ]] || scripts/deps.sh --no-kernels --peers
BPFLAND_VERSION=$("$peers/bin/scx_bpfland" --version 2>/dev/null | awk '{ print $2 }')
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=${out:-$top/.cache/bench/$stamp}
mkdir -p "$out"
t0=$SECONDS
MIAMI_BPFLAND=$peers/bin/scx_bpfland tests/vm/run.sh --kernel "$kernel" --timeout 5400 \
	--log "$out/console.log" -- tests/vm/bench/guest.sh $quick "${only[@]}"
cp "$top/.cache/vm-out/$kernel/bench.jsonl" "$out/"
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
    "kernel_version": sh("scripts/kernels.sh", "path", kernel),
    "guest": "8 vCPUs, LLCs 0-3 / 4-7, 2 virtio-net pairs, qemu TCG",
    "host": f"{os.cpu_count()} CPUs, {platform.release()}",
    "scx_miami": sh("target/release/scx_miami", "--version"),
    "scx_bpfland": bpfland, "secs": int(secs),
}
json.dump(meta, open(f"{out}/run.json", "w"), indent=1)
PY
python3 tests/vm/bench/render.py "$out"
echo "bench: $out/results.md ($((SECONDS - t0)) s)"
