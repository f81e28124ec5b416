#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/vm/tcg.sh on canned console logs: which guest deaths tests/vm/suite.sh and
# scripts/bench.sh boot again for (only the emulator's own, each by its exact signature: TCG's
# int3 trap, a vCPU's dead timers), and which scenarios a bench guest that died had left. The
# trap's lines are those of a 7.3 guest that died of it in a VM test run on 2026-11-29 (RIP as
# logged, the Code bytes cut to those around the one under RIP).
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

# A vCPU's dead timers after the guest started: the four-NIC 7.3 guest's report of 2026-11-29
# (stacks cut to the frames that matter), after test header $1 and kernel line $2 (a scheduler
# enabled, or anything else); $3 the blocked frame.
hang_log() {
	printf '%s\n' '[    4.391482] 9pnet: Installing 9P2000 support' '[   27.710283] virtme-ng-init: starting script' 'vm-result: t_two_nic PASS rc=0 secs=40.1' \
		'[   60.100000] sched_ext: BPF scheduler "miami_0.1.0" disabled (unregistered from user space)' \
		"$1" 'PASS: four LLCs = 0-1 2-3 4-5 6-7' "$2" \
		'[  248.210824] INFO: task kworker/u32:1:64 blocked for more than 123 seconds.' \
		'[  248.215183] Call Trace:' '[  248.216460]  __mutex_lock.constprop.0+0x56e/0xa30' \
		'[  248.216477]  addrconf_verify_work+0x12/0x30' \
		'[  248.218953] INFO: task ip:313 blocked for more than 123 seconds.' '[  248.219001] Call Trace:' \
		'[  248.219059]  __wait_for_common+0x97/0x1d0' "[  248.219080]  $3" \
		'[  248.219212]  __dev_change_net_namespace+0x289/0xc40' '[  248.220133] RIP: 0033:0x7f49777433a7'
}
hdr='=== t_bench_4nic (7.3.4+deb13-amd64) ==='
hang_log "$hdr" '[   70.0] virtio_net virtio9 enp0s11: renamed from eth0' rcu_barrier+0x208/0x320 >"$d/hang.log"
if tcg_rcu_hang "$d/hang.log"; then pass "a hang in rcu_barrier() with no scheduler since the test began is retried"; else fail "a hang in rcu_barrier() with no scheduler since the test began is not retried"; fi
hang_log "$hdr" '[   70.0] sched_ext: BPF scheduler "miami_0.1.0" enabled' rcu_barrier+0x208/0x320 >"$d/ours.log"
if tcg_rcu_hang "$d/ours.log"; then fail "a hang while a scheduler of ours ran is retried"; else pass "a hang while a scheduler of ours ran is not retried"; fi
hang_log "$hdr" '[   70.0] virtio_net virtio9 enp0s11: renamed from eth0' synchronize_rcu+0x30/0x60 >"$d/other.log"
if tcg_rcu_hang "$d/other.log"; then fail "a hang elsewhere than rcu_barrier() is retried"; else pass "a hang elsewhere than rcu_barrier() is not retried"; fi
hang_log "$hdr" '[   70.0] WARNING: CPU: 3 PID: 313 at net/core/dev.c:1 x+0x1/0x2' rcu_barrier+0x208/0x320 >"$d/warn.log"
if tcg_rcu_hang "$d/warn.log"; then fail "a hang after a WARNING is retried"; else pass "a hang after a WARNING is not retried (the WARNING is the first trouble)"; fi
hang_log 'PASS: (no test header)' '[   70.0] virtio_net virtio9 enp0s11: renamed from eth0' rcu_barrier+0x208/0x320 >"$d/nohdr.log"
if tcg_rcu_hang "$d/nohdr.log"; then fail "a hang outside any test is retried"; else pass "a hang outside any test is not retried"; fi
if tcg_rcu_hang "$d/trap.log"; then fail "the int3 trap is taken for a hang"; else pass "the int3 trap is not taken for a hang"; fi

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
