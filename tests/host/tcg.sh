#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/vm/tcg.sh on canned console logs: which guest deaths tests/vm/suite.sh and
# scripts/bench.sh boot again for (only TCG's int3 trap, by its exact signature), and which
# scenarios a bench guest that died had left. The trap's lines are those of a 7.3 guest that
# died of it in a VM test run on 2026-11-29 (RIP and the Code bytes around it as logged).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
source "$top/tests/vm/tcg.sh"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT

# A console log: the bench guest's lines, then the kernel's report with the byte under RIP $1
# (the trap: the patch is done, anything but cc), then $2 (the panic line, or nothing).
oops_log() {
	printf '%s\r\n' '[    3.100000] virtio_net virtio1 eth1: renamed from eth0' \
		'bench: scenarios: micro-2n-8,mix-1,table3' 'bench: run 1 of 6: micro-2n-8 under eevdf'
	printf '%s\n' 'bench: scenario done: micro-2n-8' 'bench: run 3 of 6: mix-1 under eevdf' \
		'[  295.263307] Oops: int3: 0000 [#1] SMP PTI' \
		'[  295.263901] RIP: 0010:sched_tick+0xd6/0x2a0' \
		"[  295.268139] Code: 89 ee 48 89 df 48 8b 80 88 00 00 00 e8 7d cc e0 00 0f 1f 44 00 00 45 31 f6 0f <$1> 44 00 00 4c 89 ef" \
		"$2"
}
panic='[  295.285602] Kernel panic - not syncing: Fatal exception in interrupt'

oops_log 1f "$panic" >"$d/trap.log"
if tcg_int3 "$d/trap.log"; then pass "the trap's signature is retried"; else fail "the trap's signature is not retried"; fi
check_eq "the retry's RIP" "$(tcg_rip "$d/trap.log")" "RIP: 0010:sched_tick+0xd6/0x2a0"
oops_log cc "$panic" >"$d/int3.log"
if tcg_int3 "$d/int3.log"; then fail "a real int3 (cc under RIP) is retried"; else pass "a real int3 (cc under RIP) is not retried"; fi
oops_log 1f "" >"$d/nopanic.log"
if tcg_int3 "$d/nopanic.log"; then fail "an int3 oops without the panic is retried"; else pass "an int3 oops without the panic is not retried"; fi
{ echo '[  120.000001] BUG: scheduling while atomic: iperf3/512/0x00000002'; cat "$d/trap.log"; } >"$d/bug.log"
if tcg_int3 "$d/bug.log"; then fail "a trap after a BUG is retried"; else pass "a trap after a BUG is not retried (the BUG is the first trouble)"; fi

# Planned micro-2n-8,mix-1,table3, done micro-2n-8 (the first line ends in \r, as a serial
# console's may): mix-1 and table3 are left.
check_eq "scenarios left" "$(bench_left "$d/trap.log")" "mix-1,table3"
{ cat "$d/trap.log"; printf '%s\n' 'bench: scenario done: mix-1' 'bench: scenario done: table3'; } >"$d/all.log"
check_eq "scenarios left when all were done" "$(bench_left "$d/all.log")" ""
printf '%s\n' '[    1.0] Linux version 7.3' >"$d/early.log"
bench_left "$d/early.log" >/dev/null
check_eq "bench_left's status when it died before its plan" "$?" 1

# The dead guest's rows: micro-2n-8's two are kept, mix-1's one (an unfinished scenario) not.
printf '%s\n' '{"scenario": "micro-2n-8", "scheduler": "eevdf"}' '{"scenario": "micro-2n-8", "scheduler": "miami"}' \
	'{"scenario": "mix-1", "scheduler": "eevdf"}' >"$d/rows.jsonl"
: >"$d/kept.jsonl"
keep_rows "mix-1,table3" "$d/rows.jsonl" "$d/kept.jsonl"
check_eq "rows kept" "$(cut -d'"' -f4 "$d/kept.jsonl" | paste -sd,)" "micro-2n-8,micro-2n-8"
: >"$d/kept.jsonl"
keep_rows all "$d/rows.jsonl" "$d/kept.jsonl"
check_eq "rows kept when all was left" "$(wc -l <"$d/kept.jsonl")" 0
keep_rows "" "$d/rows.jsonl" "$d/kept.jsonl"
check_eq "rows kept when nothing was left" "$(wc -l <"$d/kept.jsonl")" 3

echo "tcg: $passed passed, $failed failed"
((failed == 0))
