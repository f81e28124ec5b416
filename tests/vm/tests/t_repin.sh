#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #4 test 2 (IRQ re-pin): 4 iperf3 receivers on NIC A, its IRQ on CPU 1. The IRQ is moved
# to CPU 2 while they run. Two delays are measured from the scheduler's live stats
# (scx_miami --monitor 0.05):
#   - until its IRQ CPU set says 2 (the loader re-reads the IRQ map every --irq-refresh-ms, here
#     250 ms, a quarter of an agent period): must be within 2 agent periods (2000 ms at
#     --interval-ms 1000). The monitor's own sampling under TCG is in the figure: with a 500 ms
#     agent period (bound 1000 ms) runs measured 724, 787 and 897 ms, too close to the bound;
#   - until the IRQ CPU of every recently active thread of the 4 receiver processes (by pid) in
#     the task table is 2. That one follows the softirq itself (sk_incoming_cpu), which the
#     kernel moves only when the NIC's NAPI instance re-arms its interrupt: under sustained
#     traffic that took 0.5 s in one run and 3.9 s in another, so it is printed and only
#     checked to happen within 10 s.
# Then, over 4 s, CPU 2 (the new core tier) must carry >= 20% of the receivers' runtime (one of
# four holds the core). Class bounds scaled to TCG (--class-bounds 20,10): the receivers reach
# ~150 calls/s here, class high as a 10 Gb/s receiver would be on hardware, with room for a
# machine 7x slower; a low-class task has no pull to a busy IRQ CPU and would stay where it is.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami}
net_default
sched_start --interval-ms 1000 --irq-refresh-ms 250 --class-bounds 20,10
pids=() cl=()
for p in 5201 5202 5203 5204; do
	iperf_server "$p" "$ADDR_A_SRV"
	pids+=("$IPERF_SERVER_PID")
done
for p in 5201 5202 5203 5204; do
	# Longer than needed (TCG start-up is slow); killed below.
	iperf_client_bg "/tmp/cl-$p.out" cli "$ADDR_A_SRV" "$p" 90
	cl+=("$IPERF_CLIENT_PID")
done
wait_streaming "${pids[@]}"
sleep 1

# Poll the task table; move the IRQ after 1 s; report when all busy iperf3 rows show IRQ CPU 2.
python3 - "$bin" "$IRQ_A" "$(IFS=,; echo "${pids[*]}")" >/tmp/repin.txt 2>&1 <<'PY' || true
import subprocess, sys, time
bin, irq = sys.argv[1], sys.argv[2]
receivers = set(sys.argv[3].split(","))
mon = subprocess.Popen([bin, "--monitor", "0.05"], stdout=subprocess.PIPE, text=True)
t0 = t_set = t_tasks = None
start = time.monotonic()
rows = []
for line in mon.stdout:
    now = time.monotonic()
    if t0 is None and now - start > 1.0:
        with open(f"/proc/irq/{irq}/smp_affinity_list", "w") as f:
            f.write("2")
        t0 = time.monotonic()
    if t0 is not None and t_set is None and line.startswith("irq_cpus 2,5"):
        t_set = now
        print(f"irqset_ms {1000 * (now - t0):.0f}")
    if line.startswith("--- stats"):
        # The receivers' threads by process id, recently active. Not by a rate threshold: on
        # a fast machine the client-side senders (namespace cli, IRQ CPU 7) pass any such
        # threshold too, and they never move to CPU 2.
        busy = [r for r in rows if r[1] in receivers and int(r[9]) < 500]
        if t0 is not None and t_tasks is None and busy and all(r[6] == "2" for r in busy):
            t_tasks = now
            print(f"tasks_ms {1000 * (now - t0):.0f} rows {len(busy)}")
        if t_set is not None and t_tasks is not None:
            break
        if t0 is not None and now - t0 > 10:
            print("timeout", rows)
            break
        rows = []
        continue
    f = line.split()
    if len(f) >= 10 and f[0].isdigit():
        rows.append(f)
mon.terminate()
PY
cat /tmp/repin.txt
$PROBE --pids "$(IFS=,; echo "${pids[*]}")" --irq-cpu 2 --duration 4 --hz 100 \
	--probe-cpu "$PROBE_CPU" --json >/tmp/after.json 2>/tmp/after.txt || true
irqs_now=$(timeout -s INT 2 "$bin" --monitor 1 2>/dev/null | awk '/^irq_cpus/ { print $2; exit }' || true)
kill "${cl[@]}" 2>/dev/null || true
sched_stop || fail "sched_stop"
echo "--- after the re-pin (core = CPU 2):"; cat /tmp/after.txt

check_le "re-pin: delay until the scheduler's IRQ CPU set says 2 (ms)" \
	"$(awk '/^irqset_ms/ { print $2 }' /tmp/repin.txt)" 2000
check_le "re-pin: delay until the receivers' IRQ CPU is 2 (ms; follows the softirq)" \
	"$(awk '/^tasks_ms/ { print $2 }' /tmp/repin.txt)" 10000
check_eq "scheduler's IRQ CPUs after the re-pin" "$irqs_now" 2,5
check_ge "after the re-pin: receivers' share on CPU 2 %" \
	"$(jget /tmp/after.json "round(100 * d['total']['tiers']['core'], 1)")" 20
finish
