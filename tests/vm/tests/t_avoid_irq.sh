#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue test 6: non-network hogs avoid the IRQ CPUs (1 and 5) while other CPUs are idle. Four
# stress-ng workers on 8 CPUs: under scx_miami <= 10% of their runtime lands on CPUs 1 and 5.
# EEVDF as baseline (it has no reason to avoid them).
#
# Second case, "trapped": the workers start pinned to CPUs 1 and 5 and are then allowed
# everywhere. A hog never sleeps, so it never passes select_cpu(); it must still leave the IRQ
# CPU at a slice end (SCX_OPS_ENQ_LAST). Before that fix the two running hogs stayed on 1 and
# 5 for good (CI saw one hog at 100% on CPU 5 in the first case).
#
# Third case, "one LLC": both server NICs' IRQs on CPUs 1 and 2, in the first LLC (0-3), as in
# the bench's 2S configuration. The IRQ CPUs' LLC siblings are the network tasks' cache tier, so
# the hogs go to the other LLC (4-7) while a CPU there is idle: under scx_miami >= 90% of their
# runtime on CPUs 4-7, and at least 30 points above EEVDF's share there in the same boot (EEVDF
# balances them over both LLCs: 50.0% on 4-7 when this case was added, scx_miami 99.1%).
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

net_default
# run LABEL [CPUS]: 4 hogs (first pinned to CPUS, then allowed on every CPU), 4 s probe.
run() {
	local pin=()
	[[ -n ${2:-} ]] && pin=(taskset -c "$2")
	bg "${pin[@]}" stress-ng --cpu 4 --timeout 120 --quiet
	local hogs=$BG_PID w go=/tmp/$1.go probe
	# the workers exist a moment after the parent starts (slow under TCG)
	for i in $(seq 100); do (($(pgrep -c -P "$hogs") >= 4)) && break; sleep 0.1; done
	# The probe loads (1.4-3 s beside the hogs) during the settle below and opens its window on
	# the go file once that is over: loaded after the settle, it added its start to it.
	rm -f "$go" "$go.ready"
	$PROBE --pids "$(pgrep -d, -P "$hogs")" --duration 4 --hz 100 --probe-cpu "$PROBE_CPU" \
		--go-file "$go" --json >"/tmp/$1.json" 2>"/tmp/$1.txt" &
	probe=$!
	if [[ -n ${2:-} ]]; then
		sleep 1
		for w in $(pgrep -P "$hogs"); do taskset -p -c "0-$(($(nproc) - 1))" "$w" >/dev/null; done
	fi
	sleep 1
	wait_ready "$go.ready" "$probe" || true
	: >"$go"
	wait "$probe" || true
	kill "$hogs" 2>/dev/null || true
	wait "$hogs" 2>/dev/null || true
	echo "--- $1:"; cat "/tmp/$1.txt"
}
run eevdf
sched_start
run miami
run trapped 1,5
sched_stop || fail "sched_stop"

# One LLC: IRQs on 1 and 2. x86 moves a vector at its next interrupt, and scx_miami reads where
# the IRQ goes now (effective_affinity_list): a connection attempt over each NIC (to a closed
# port: the reset is the interrupt) moves them before it starts.
pin_irq "$IRQ_A" 1
pin_irq "$IRQ_B" 2
for i in $(seq 10); do
	timeout 1 bash -c "echo >/dev/tcp/$ADDR_A_CLI/9" 2>/dev/null || true
	timeout 1 bash -c "echo >/dev/tcp/$ADDR_B_CLI/9" 2>/dev/null || true
	[[ $(cat "/proc/irq/$IRQ_A/effective_affinity_list") == 1 &&
		$(cat "/proc/irq/$IRQ_B/effective_affinity_list") == 2 ]] && break
done
check_eq "IRQs effective on 1,2" "$(cat "/proc/irq/$IRQ_A/effective_affinity_list"),$(cat "/proc/irq/$IRQ_B/effective_affinity_list")" 1,2
run eevdf-llc
sched_start
run miami-llc
sched_stop || fail "sched_stop"

irq='round(100 * (d["total"]["cpu"].get("1", 0) + d["total"]["cpu"].get("5", 0)), 1)'
far='round(100 * sum(d["total"]["cpu"].get(str(c), 0) for c in (4, 5, 6, 7)), 1)'
rt='d["total"]["runtime_ns"] / 1e6'
# Every value in one Python start: 13 jget calls, a start each (0.85 s in the idle guest), took
# about 11 s. The last is miami-llc's share on 4-7 minus eevdf-llc's, read from its own file.
mapfile -t v < <(jpairs /tmp/eevdf.json "$irq" /tmp/miami.json "$irq" /tmp/trapped.json "$irq" \
	/tmp/eevdf-llc.json "$far" /tmp/miami-llc.json "$far" \
	/tmp/miami.json "$rt" /tmp/trapped.json "$rt" /tmp/miami-llc.json "$rt" \
	/tmp/miami-llc.json "$far - (lambda d: $far)(json.load(open('/tmp/eevdf-llc.json')))")
log "hog runtime on IRQ CPUs 1+5: EEVDF ${v[0]}%, scx_miami ${v[1]}%, started on them ${v[2]}%"
log "IRQs on 1 and 2, hog runtime on CPUs 4-7: EEVDF ${v[3]}%, scx_miami ${v[4]}%"
check_ge "miami: hog runtime ms" "${v[5]}" 4000
check_ge "trapped: hog runtime ms" "${v[6]}" 4000
check_ge "miami-llc: hog runtime ms" "${v[7]}" 4000
check_le "miami: hogs on IRQ CPUs %" "${v[1]}" 10
check_le "trapped: hogs on IRQ CPUs %" "${v[2]}" 10
check_ge "miami-llc: hogs on CPUs 4-7 %" "${v[4]}" 90
check_ge "miami-llc: hogs on CPUs 4-7, points above EEVDF" "${v[8]}" 30
finish
