#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #14: `make bench --quick` in the suite's own boot. The harness (tests/vm/bench/guest.sh
# --quick: the bulk+ping-pong mix, under EEVDF, EEVDF+RFS, scx_bpfland and scx_miami; 352 s
# in CI with the micro-benchmark too) must work end to end and its numbers must be sane
# (tests/vm/bench/render.py --check): every scheduler present in every scenario, no zero
# throughput, request or transaction rate, placement shares summing to 1. It asserts no
# performance: that is `make bench`'s to print.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

export MIAMI_BPFLAND=${MIAMI_BPFLAND:-$VM_TOP/.cache/peers/bin/scx_bpfland}
[[ -x $MIAMI_BPFLAND ]] || fail "no scx_bpfland at $MIAMI_BPFLAND (scripts/deps.sh builds it)"
out=/tmp/bench-quick
mkdir -p "$out"
VM_OUT=$out "$(dirname "$0")/../bench/guest.sh" --quick
echo '{"command": "t_bench (guest.sh --quick)"}' >"$out/run.json"
if python3 "$(dirname "$0")/../bench/render.py" "$out" --check >/tmp/bench-check.txt 2>&1; then
	pass "bench --quick: sane"
else
	fail "bench --quick: $(grep -c '^FAIL' /tmp/bench-check.txt) problems"
fi
grep -E '^(## |\| |FAIL|bench check)' /tmp/bench-check.txt
check_eq "runs (1 scenario, 4 schedulers)" "$(wc -l <"$out/bench.jsonl")" 4
finish
