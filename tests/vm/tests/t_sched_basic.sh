#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest test, every kernel of the matrix: the BPF object passes the verifier and the scheduler
# goes enabled -> disabled cleanly; it finds the pinned IRQ CPUs; the TCP probes fire; a second
# instance is refused with a clear message; bad options exit 2 before touching the kernel.
# Without --nic it also counts the client NICs, which sit in network namespace cli: their
# receive IRQs (CPUs 7 and 3) make 1,3,5,7 the IRQ CPUs.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

net_default
bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami}

set +e
"$bin" --class-bounds 10,20 >/tmp/bad.out 2>&1; rc=$?
set -e
check_eq "bad --class-bounds exit code" "$rc" 2
grep -q -- "--class-bounds" /tmp/bad.out && pass "message names --class-bounds" || fail "message: $(cat /tmp/bad.out)"
check_eq "state after bad option" "$(sched_state)" disabled

# Right after pinning, a NIC that had no interrupt since may still show the CPU it left in
# effective_affinity_list (x86 moves a vector at its next interrupt); scx_miami must report the
# pinned CPUs whatever traffic the NICs have seen. Logged so the log tells which case ran.
for irq in "$IRQ_A" "$IRQ_B"; do
	log "IRQ $irq: smp_affinity_list $(cat /proc/irq/$irq/smp_affinity_list)," \
		"effective $(cat /proc/irq/$irq/effective_affinity_list 2>/dev/null || echo -)"
done
if sched_start --stats 1; then pass "enabled, ops $(sched_ops)"; else fail "scheduler did not start"; fi
iperf_server 5201 "$ADDR_A_SRV"
iperf_client cli "$ADDR_A_SRV" 5201 2 >/dev/null
grep -q "IRQ CPUs: 1,5" "$SCHED_LOG" && pass "IRQ CPUs 1,5 found" ||
	fail "IRQ CPUs: $(grep 'IRQ CPUs' "$SCHED_LOG" || echo none)"

set +e
"$bin" >/tmp/second.out 2>&1; rc=$?
set -e
check_eq "second instance exit code" "$rc" 1
grep -q "another sched_ext scheduler is already running: $(sched_ops) " /tmp/second.out &&
	pass "second instance names the scheduler that runs" || fail "second instance: $(tail -2 /tmp/second.out)"

sleep 1.2
if sched_stop; then pass "stopped with exit 0, state disabled"; else fail "sched_stop"; fi
grep -q "EXIT: unregistered from user space" "$SCHED_LOG" && pass "exit reason reported" ||
	fail "no exit reason in log"
check_ge "probe_recv calls" "$(stats_total probe_recv)" 10
check_ge "sockets tracked" "$(stats_total socks_tracked)" 1

# The client NICs' devices, as /proc/interrupts names them (virtioN-input.0).
dev_of() { awk -v i="$1:" '$1 == i { sub("-input.0$", "", $NF); print $NF }' /proc/interrupts; }
if SCHED_ALL_NICS=1 sched_start; then pass "enabled without --nic"; else fail "no start without --nic"; fi
grep -q "IRQ CPUs: 1,3,5,7" "$SCHED_LOG" && pass "IRQ CPUs 1,3,5,7 with the cli namespace's NICs" ||
	fail "IRQ CPUs: $(grep 'IRQ CPUs' "$SCHED_LOG" || echo none)"
for c in "$(dev_of "$IRQ_A_CLI") .*CPUs 7\$" "$(dev_of "$IRQ_B_CLI") .*CPUs 3\$"; do
	grep -q "NIC $c" <(grep "in another network namespace" "$SCHED_LOG") &&
		pass "logged: NIC $c" || fail "no 'NIC $c' line; log: $(grep '^.*NIC ' "$SCHED_LOG")"
done
if sched_stop; then pass "stopped"; else fail "sched_stop"; fi
finish
