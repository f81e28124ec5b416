#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #12 item 11 (overload from every side): `make bench`'s overload scenario, under EEVDF
# and scx_miami in one boot (tests/vm/bench/guest.sh --only overload: 4 iperf3 receivers, 2 per
# NIC, IRQ CPUs 1 and 5; 4 senders from the server to namespace cli over the same NICs, whose
# ACKs come in on CPUs 1 and 5 too; a CPU hog per CPU: more runnable work than CPUs). MiAMI
# sheds non-network and low-class work first (III-D step 3), and the receivers keep their LLC:
#   - receivers' runtime in core+cache (their own NIC's IRQ CPU and its LLC) >= 95%;
#   - their share on the IRQ CPU itself >= scx_bpfland's in the same shape: 42.0%, measured
#     once with `scripts/bench.sh --only overload` (scx_bpfland 1.1.4 from the crate registry,
#     7.3 guest, 10 s window, 2026-11-24; EEVDF read 2.2% core and 50.7% core+cache there);
#   - throughput (bytes the server NICs received over the window) against EEVDF's in the same
#     run: printed as a ratio, and at least $MIN_RATIO. Not 1.0: two runs of one case under
#     TCG spread by 10-25% (docs/results), so a strict "not below" would fail on noise alone;
#     this scenario read 0.96x in the bench and 1.09x and 1.07x here.
# The code of the issue's start (57ea61c, run here with MIAMI_BIN) failed all three: 90.4%
# core+cache, 37.1% on the IRQ CPU, 0.52x EEVDF's throughput.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

BPFLAND_CORE=42.0
MIN_RATIO=0.9
unset MIAMI_BPFLAND
out=/tmp/overload
mkdir -p "$out"
VM_OUT=$out "$(dirname "$0")/../bench/guest.sh" --only overload --scheds eevdf,miami --secs 8
row() { python3 -c 'import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["scheduler"] == sys.argv[2]:
        print(eval(sys.argv[3]))' "$out/bench.jsonl" "$1" "$2"; }
pl='"%.1f %.1f %.1f" % tuple(100 * (r["placement"] or {}).get(k, 0) for k in ("core", "cache", "other"))'
for s in eevdf miami; do
	log "$s: receivers core/cache/other % $(row "$s" "$pl"), $(row "$s" 'r.get("gbps_total")') Gbit/s"
done
read -r core cache _ <<<"$(row miami "$pl")"
read -r g_e <<<"$(row eevdf 'r.get("gbps_total") or 0')"
read -r g_m <<<"$(row miami 'r.get("gbps_total") or 0')"
check_ge "receivers core+cache % (EEVDF $(row eevdf "$pl" | awk '{ print $1 + $2 }'))" \
	"$(awk -v a="$core" -v b="$cache" 'BEGIN { print a + b }')" 95
check_ge "receivers on their IRQ CPU % (scx_bpfland $BPFLAND_CORE, measured once)" \
	"$core" "$BPFLAND_CORE"
check_ge "throughput vs EEVDF's ($g_m / $g_e Gbit/s)" \
	"$(awk -v a="$g_m" -v b="$g_e" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')" "$MIN_RATIO"
finish
