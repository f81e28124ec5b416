#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #13 test 2 (CPU hotplug) under traffic: 2 iperf3 receivers (1 per NIC) run while CPU 5
# (NIC B's IRQ CPU; with MIAMI_HOTPLUG_SIBLING=1, as `make soak` runs it, first CPU 2, an LLC
# sibling of IRQ CPU 1) goes offline and comes back. The
# kernel ejects the scheduler with a restart request on each change; scx_miami's restart loop
# attaches the loaded BPF object again (Scheduler::reattach(): the topology of the online CPUs
# still holds). Pass:
#   - after each change sched_ext is back to "enabled" within 2 s (the issue's bound) of
#     leaving it, polled every 20 ms, and within 60 s of the write to
#     /sys/devices/system/cpu/cpuN/online (that includes the kernel's own hotplug work). The
#     next change waits for it. A full BPF load took 5.5 s in an idle TCG guest and 13-17 s
#     while the receivers stream, which is why a restart attaches again instead;
#   - the log says it restarted for each, each time by attaching again (no new load), and the
#     scheduler exits 0 at the end;
#   - first, the case where the topology does not hold: scx_miami starts while CPU 6 is
#     offline (its LLC unknown, LLC 0 in the loaded map), and CPU 6 comes back in LLC 1. That
#     restart loads anew (the log says the topology changed), enabled again within 60 s;
#   - while CPU 5 is offline its NIC's IRQ moved elsewhere, and the IRQ CPUs scx_miami reports
#     name where it went (the IRQ map is rebuilt), and after it is back online and re-pinned,
#     1,5 again;
#   - every receiver still streams at the end (no task lost).
# That the agent never targets an offline CPU is a host test (tests/it/policy.rs
# offline_cpus_are_never_targets_and_never_overloaded).
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami}
# Before net_default: taking a CPU offline after the IRQs are pinned moved them (0,2 seen).
echo 0 >/sys/devices/system/cpu/cpu6/online
net_default
sched_start --irq-refresh-ms 100
srv=() cl=()
for i in 0 1; do
	ip=$ADDR_A_SRV
	((i < 1)) || ip=$ADDR_B_SRV
	iperf_server $((5201 + i)) "$ip"
	srv+=("$IPERF_SERVER_PID")
done
for i in 0 1; do
	ip=$ADDR_A_SRV
	((i < 1)) || ip=$ADDR_B_SRV
	iperf_client_bg "/tmp/cl$i.out" cli "$ip" $((5201 + i)) 3600
	cl+=("$IPERF_CLIENT_PID")
done
wait_streaming "${srv[@]}"

irq_cpus_now() { timeout -s INT 3 "$bin" --monitor 0.5 2>/dev/null | awk '/^irq_cpus/ { print $2; exit }' || true; }
# $1 CPU, $2 0|1: flip it; into /tmp/hp-$1-$2 the ms from the write back to "enabled", and
# the ms from leaving "enabled" back to it.
flip() {
	python3 - "$1" "$2" >"/tmp/hp-$1-$2" <<'PY'
import sys, time
cpu, val = sys.argv[1], sys.argv[2]
def state():
    try:
        return open("/sys/kernel/sched_ext/state").read().strip()
    except OSError:
        return "?"
t0 = time.monotonic()
open(f"/sys/devices/system/cpu/cpu{cpu}/online", "w").write(val)
left = None
while time.monotonic() - t0 < 90:
    s = state()
    if left is None and s != "enabled":
        left = time.monotonic()
    if left is not None and s == "enabled":
        break
    time.sleep(0.02)
back = left is not None and state() == "enabled"
ms = lambda t: round(1000 * (time.monotonic() - t))
print(ms(t0) if back else 99999, ms(left) if back else 99999)
PY
	read -r total down <"/tmp/hp-$1-$2"
	log "cpu$1 online=$2: enabled again $total ms after the write, $down ms after leaving it"
}
# CPU 6 first: offline since before the start, so its return needs a new load.
flip 6 1
sleep 1
# CPU 2 (no IRQ CPU) too only in `make soak` (MIAMI_HOTPLUG_SIBLING=1): CPU 5's changes take
# the same restart path and the IRQ map's as well.
flips=(5-0 5-1)
if [[ ${MIAMI_HOTPLUG_SIBLING:-0} == 1 ]]; then
	flips=(2-0 2-1 5-0 5-1)
	flip 2 0
	sleep 1
	flip 2 1
	sleep 1
fi
flip 5 0
sleep 1.5
irq_off=$(irq_cpus_now)
eff_b=$(cat "/proc/irq/$IRQ_B/effective_affinity_list")
flip 5 1
pin_irq "$IRQ_B" 5
sleep 1.5
irq_on=$(irq_cpus_now)
streaming=0
for p in "${srv[@]}"; do t=("/proc/$p/task/"*); ((${#t[@]} >= 2)) && streaming=$((streaming + 1)); done
kill "${cl[@]}" 2>/dev/null || true
sched_stop && rc=0 || rc=1

grep -E 'restart|IRQ CPUs|attached|hotplug count' "$SCHED_LOG" | tail -n 16
for f in "${flips[@]}"; do
	read -r total down <"/tmp/hp-$f"
	check_le "cpu${f%-*} online=${f#*-}: enabled again after the write (ms)" "$total" 60000
	check_le "cpu${f%-*} online=${f#*-}: enabled again after leaving it (ms)" "$down" 2000
done
read -r total _ </tmp/hp-6-1
check_le "cpu6 online=1 (unknown at load): enabled again after the write (ms)" "$total" 60000
check_eq "restarts that loaded anew (CPU 6's LLC changed)" \
	"$(grep -c 'the CPU topology changed since the BPF load; loading again' "$SCHED_LOG")" 1
check_eq "restarts" "$(grep -c 'the kernel asked for a restart' "$SCHED_LOG")" $((${#flips[@]} + 1))
check_eq "restarts by attaching again (no new load)" "$(grep -c 'attached again in' "$SCHED_LOG")" "${#flips[@]}"
check_eq "scheduler exit status at the end" "$rc" 0
log "with CPU 5 offline NIC B's IRQ went to CPU $eff_b; scx_miami said IRQ CPUs $irq_off"
# As scx_miami prints CPU lists: ranges of 2 or more ("1-2").
want_off=$(python3 -c "
cpus = sorted({1, int('$eff_b'.split(',')[0].split('-')[0])})
print('-'.join(map(str, cpus)) if len(cpus) == 2 and cpus[1] == cpus[0] + 1 else ','.join(map(str, cpus)))")
check_eq "IRQ CPUs with CPU 5 offline" "$irq_off" "$want_off"
check_eq "IRQ CPUs with CPU 5 back and NIC B re-pinned" "$irq_on" "1,5"
check_eq "receivers still streaming" "$streaming" 2
finish
