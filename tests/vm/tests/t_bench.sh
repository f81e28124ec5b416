#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #14: `make bench --quick` in the suite's own boot. The harness (tests/vm/bench/guest.sh
# --quick: the bulk+ping-pong mix, under EEVDF, EEVDF+RFS and scx_miami; 352 s in CI with the
# micro-benchmark too) must work end to end and its numbers must be sane
# (tests/vm/bench/render.py --check): every scheduler present in every scenario, no zero
# throughput, request or transaction rate, placement shares summing to 1. It asserts no
# performance: that is `make bench`'s to print. Without scx_bpfland, which `make bench` adds:
# building it took 4m41s of a cold `make test` and its run 38 s of this test, for a path of the
# harness (start, stop and BPF cost of an external scheduler) that scx_miami's run takes too.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

unset MIAMI_BPFLAND
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
check_eq "runs (1 scenario, 3 schedulers)" "$(wc -l <"$out/bench.jsonl")" 3
finish
