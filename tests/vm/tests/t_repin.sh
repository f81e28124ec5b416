#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #4 test 2 (IRQ re-pin) and issue #12 item 4 (the share holds after a move): 4 iperf3
# receivers on NIC A, its IRQ on CPU 1, beside 4 CPU hogs (stress-ng --cpu 4, any CPU). The
# IRQ moves to CPU 6, in the other LLC, while they run. Default class bounds, as an operator
# runs it.
# Under scx_miami, from its live stats (scx_miami --monitor 0.05):
#   - the delay until its IRQ CPU set says 5-6 (the IRQ map is re-read every --irq-refresh-ms,
#     250 ms here): within 2 agent periods (2000 ms at --interval-ms 1000). The monitor's own
#     sampling under TCG is in the figure;
#   - the delay until the IRQ CPU of every recently active thread of the receivers (by pid) in
#     the task table is 6. That one follows the softirq itself (sk_incoming_cpu), which the
#     kernel moves only when the NIC's NAPI instance re-arms its interrupt: under sustained
#     traffic 0.3 s in one run and 3.9 s in another, so it is only checked to happen in 10 s.
# Placement, by the neutral probe against the IRQ's CPU of each moment (--irq-of), 6 s before
# the move and 10 s from the move on, EEVDF's in the same shape printed beside:
#   - after the move, core+cache >= 95% and no more than 3 points below the share before it;
#   - CPU 6, the new core tier, >= 12.5% of the receivers' runtime: one receiver of four holds
#     the core (25%), less the softirq's lag of up to 4 s in 10 s, rounded down to half. This
#     holds scx_miami's failure mode below (0.6%), not a lead: EEVDF, printed beside, read
#     33.9-40.5% once the probe left CPU 6 (three runs, one on a slowed host; scx_miami
#     43.0-47.6%). The lead over EEVDF is the core+cache share.
# The issue saw 0.73-0.96 core+cache in the 12 s after such a move (8 runs; scx_bpfland
# 0.92-0.95). The code of the issue's start (57ea61c), run here twice, held core+cache after the
# move (99.1%, 98.8%), but left the new IRQ CPU to others: 0.6% of the receivers' runtime on
# CPU 6 under the default bounds, where every receiver was class low and gave way (item 6's
# boundaries fixed that), and 78.1% core+cache before the move with bounds 20,10.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami}
net_default

# $1 = label. Receivers and hogs, a probe before the move and one after it:
# /tmp/$1-{before,after}.json.
# Under scx_miami the monitor (below) moves the IRQ and times what follows.
# The probes and the monitor start before the hogs and wait on go files (probe.py --go-file):
# started beside the 4 hogs, their Python took most of the test (each scheduler's run took 50-60
# s for 16 s of windows on a slow machine, 2026-11-25).
run() {
	local label=$1 pids=() cl=() irqof=() hogs p mon= pb pa
	pin_irq "$IRQ_A" 1
	for p in 5201 5202 5203 5204; do
		iperf_server "$p" "$ADDR_A_SRV"
		pids+=("$IPERF_SERVER_PID")
		irqof+=(--irq-of "$IPERF_SERVER_PID=$IRQ_A")
	done
	for p in 5201 5202 5203 5204; do
		# Longer than needed (TCG start-up is slow); killed below.
		iperf_client_bg "/tmp/$label-cl-$p.out" cli "$ADDR_A_SRV" "$p" 600
		cl+=("$IPERF_CLIENT_PID")
	done
	wait_streaming "${pids[@]}"
	# $3: the probe's own CPU, out of the receivers' LLC of its window. Not the new IRQ CPU 6
	# (lib.sh's PROBE_CPU) after the move: there the probe (100 Hz asked, 2.5-6.5 Hz got)
	# filled what ksoftirqd (40-46%) left of CPU 6 on a slow host. With the after-probe on
	# CPU 6, CI read 10.2% of the receivers' runtime there, and this machine under a host load
	# that halves the guest's speed (stress-ng --cpu 2 on the host) 7.5%, 6.8% (stop 55's
	# build) and 3.2%, where CPU 1 held 51% before the move; EEVDF 0.3-4.9%. With it on CPU 2,
	# 47.6% (EEVDF 34.8%) slowed and 45.0% (EEVDF 40.5%) not.
	probe_to() {
		$PROBE --pids "$(IFS=,; echo "${pids[*]}")" "${irqof[@]}" --duration "$2" --hz 100 \
			--probe-cpu "$3" --go-file "/tmp/$label-$1.go" --json \
			>"/tmp/$label-$1.json" 2>"/tmp/$label-$1.txt" || true
	}
	rm -f /tmp/"$label"-{before,after}.go{,.ready}
	probe_to before 6 6 & pb=$!
	probe_to after 10 2 & pa=$!
	rm -f /tmp/moved /tmp/repin.go /tmp/repin.go.ready
	if [[ $label == miami ]]; then
		monitor "$(IFS=,; echo "${pids[*]}")" >/tmp/repin.txt 2>&1 & mon=$!
		wait_ready /tmp/repin.go.ready "$mon" || true
	fi
	wait_ready "/tmp/$label-before.go.ready" "$pb" || true
	wait_ready "/tmp/$label-after.go.ready" "$pa" || true
	stress-ng --cpu 4 --timeout 0 --quiet & hogs=$!
	sleep 2
	: >"/tmp/$label-before.go"
	wait "$pb"
	if [[ $label == miami ]]; then
		: >/tmp/repin.go
		wait_ready /tmp/moved "$mon" || true
	else
		pin_irq "$IRQ_A" 6
	fi
	: >"/tmp/$label-after.go"
	wait "$pa"
	[[ -z $mon ]] || wait "$mon" || true
	kill "$hogs" "${cl[@]}" "${pids[@]}" 2>/dev/null || true
	pkill -x stress-ng || true
	wait "$hogs" "${cl[@]}" 2>/dev/null || true
	echo "--- $label, 6 s before the move (core = CPU 1):"; cat "/tmp/$label-before.txt"
	echo "--- $label, 10 s from the move on (core = CPU 6):"; cat "/tmp/$label-after.txt"
}

# $1 = receivers' pids. Polls the task table; says ready (/tmp/repin.go.ready) once it reads
# it, moves the IRQ 1 s after /tmp/repin.go appears (touching /tmp/moved); reports when the
# IRQ CPU set says 5-6 and when all busy receiver rows show IRQ CPU 6.
monitor() {
	python3 - "$bin" "$IRQ_A" "$1" <<'PY'
import os, subprocess, sys, time
bin, irq = sys.argv[1], sys.argv[2]
receivers = set(sys.argv[3].split(","))
mon = subprocess.Popen([bin, "--monitor", "0.05"], stdout=subprocess.PIPE, text=True)
t0 = t_set = t_tasks = start = None
rows = []
for line in mon.stdout:
    now = time.monotonic()
    if start is None:
        if not os.path.exists("/tmp/repin.go.ready"):
            open("/tmp/repin.go.ready", "w").close()
        if os.path.exists("/tmp/repin.go"):
            start = now
    if t0 is None and start is not None and now - start > 1.0:
        with open(f"/proc/irq/{irq}/smp_affinity_list", "w") as f:
            f.write("6")
        t0 = time.monotonic()
        open("/tmp/moved", "w").close()
    # scx_miami prints CPU lists with ranges: CPUs 5 and 6 are "5-6".
    if t0 is not None and t_set is None and line.split()[:2] == ["irq_cpus", "5-6"]:
        t_set = now
        print(f"irqset_ms {1000 * (now - t0):.0f}", flush=True)
    if line.startswith("--- stats"):
        # The receivers' threads by process id, recently active. Not by a rate threshold: on
        # a fast machine the client-side senders (namespace cli, IRQ CPU 7) pass any such
        # threshold too, and they never move.
        busy = [r for r in rows if r[1] in receivers and int(r[9]) < 500]
        if t0 is not None and t_tasks is None and busy and all(r[6] == "6" for r in busy):
            t_tasks = now
            print(f"tasks_ms {1000 * (now - t0):.0f} rows {len(busy)}", flush=True)
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
}

run eevdf
sched_start --interval-ms 1000 --irq-refresh-ms 250
run miami
irqs_now=$(timeout -s INT 2 "$bin" --monitor 1 2>/dev/null | awk '/^irq_cpus/ { print $2; exit }' || true)
sched_stop || fail "sched_stop"
cat /tmp/repin.txt

cc='round(100 * (d["total"]["tiers"]["core"] + d["total"]["tiers"]["cache"]), 1)'
core='round(100 * d["total"]["tiers"]["core"], 1)'
before=$(jget /tmp/miami-before.json "$cc")
check_le "re-pin: delay until the scheduler's IRQ CPU set says 5-6 (ms)" \
	"$(awk '/^irqset_ms/ { print $2 }' /tmp/repin.txt)" 2000
check_le "re-pin: delay until the receivers' IRQ CPU is 6 (ms; follows the softirq)" \
	"$(awk '/^tasks_ms/ { print $2 }' /tmp/repin.txt)" 10000
check_eq "scheduler's IRQ CPUs after the re-pin" "$irqs_now" 5-6
log "core+cache before the move: scx_miami $before%, EEVDF $(jget /tmp/eevdf-before.json "$cc")%"
check_ge "after the move: receivers core+cache % (EEVDF $(jget /tmp/eevdf-after.json "$cc"))" \
	"$(jget /tmp/miami-after.json "$cc")" 95
check_ge "after the move: core+cache % against before it ($before) - 3" \
	"$(jget /tmp/miami-after.json "$cc")" "$(awk -v b="$before" 'BEGIN { print b - 3 }')"
check_ge "after the move: receivers' share on CPU 6 % (EEVDF $(jget /tmp/eevdf-after.json "$core"))" \
	"$(jget /tmp/miami-after.json "$core")" 12.5
finish
