#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #4 test 2 (IRQ re-pin): 4 iperf3 receivers on NIC A, its IRQ on CPU 1. The IRQ is moved
# to CPU 2 while they run. Measured: the delay until every receiving thread's IRQ CPU in the
# scheduler's task table (scx_miami --monitor 0.05) is 2, which must be within 2 agent periods
# (--interval-ms 500, so 1000 ms; the table itself follows sk_incoming_cpu at the next packet,
# the rest is the monitor's report period under TCG); then where the receivers run over 4 s:
# CPU 2 (the new core tier) must carry >= 20% of their runtime (one of four holds the core),
# and the scheduler's IRQ CPU set must say 2. Class bounds scaled to TCG (--class-bounds 100,50):
# the receivers reach ~150 calls/s here, class high as a 10 Gb/s receiver would be on hardware;
# a low-class task has no pull to a busy IRQ CPU and would stay where it is.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami}
net_default
sched_start --interval-ms 500 --irq-refresh-ms 250 --class-bounds 100,50
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
# Every receiver has its stream thread (iperf3 >= 3.16: one thread per stream).
for i in $(seq 150); do
	up=0
	for p in "${pids[@]}"; do t=("/proc/$p/task/"*); ((${#t[@]} >= 2)) && up=$((up + 1)); done
	((up == 4)) && break
	sleep 0.2
done
log "$up of 4 receivers streaming"
sleep 1

# Poll the task table; move the IRQ after 1 s; report when all busy iperf3 rows show IRQ CPU 2.
python3 - "$bin" "$IRQ_A" >/tmp/repin.txt 2>&1 <<'PY' || true
import subprocess, sys, time
bin, irq = sys.argv[1], sys.argv[2]
mon = subprocess.Popen([bin, "--monitor", "0.05"], stdout=subprocess.PIPE, text=True)
t0 = None
start = time.monotonic()
rows = []
for line in mon.stdout:
    now = time.monotonic()
    if t0 is None and now - start > 1.0:
        with open(f"/proc/irq/{irq}/smp_affinity_list", "w") as f:
            f.write("2")
        t0 = time.monotonic()
    if line.startswith("--- stats"):
        busy = [r for r in rows if r[2] == "iperf3" and int(r[3]) >= 50 and int(r[9]) < 500]
        if t0 is not None and busy and all(r[6] == "2" for r in busy):
            print(f"delay_ms {1000 * (now - t0):.0f} rows {len(busy)}")
            break
        if t0 is not None and now - t0 > 10:
            print("delay_ms timeout", rows)
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

delay=$(awk '/^delay_ms/ { print $2 }' /tmp/repin.txt)
check_le "re-pin: delay until the task table shows IRQ CPU 2 (ms)" "${delay:-99999}" 1000
check_eq "scheduler's IRQ CPUs after the re-pin" "$irqs_now" 2,5
check_ge "after the re-pin: receivers' share on CPU 2 %" \
	"$(jget /tmp/after.json "round(100 * d['total']['tiers']['core'], 1)")" 20
finish
