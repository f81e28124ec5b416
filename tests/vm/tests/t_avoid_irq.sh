#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue test 6: non-network hogs avoid the IRQ CPUs (1 and 5) while other CPUs are idle. Four
# stress-ng workers on 8 CPUs: under scx_miami <= 10% of their runtime lands on CPUs 1 and 5.
# EEVDF as baseline (it has no reason to avoid them).
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

net_default
run() {
	bg stress-ng --cpu 4 --timeout 120 --quiet
	local hogs=$BG_PID
	# the workers exist a moment after the parent starts (slow under TCG)
	for i in $(seq 100); do (($(pgrep -c -P "$hogs") >= 4)) && break; sleep 0.1; done
	sleep 1
	$PROBE --pids "$(pgrep -d, -P "$hogs")" --duration 4 --hz 100 --probe-cpu "$PROBE_CPU" \
		--json >"/tmp/$1.json" 2>"/tmp/$1.txt" || true
	kill "$hogs" 2>/dev/null || true
	wait "$hogs" 2>/dev/null || true
	echo "--- $1:"; cat "/tmp/$1.txt"
}
run eevdf
sched_start
run miami
sched_stop || fail "sched_stop"

irq='round(100 * (d["total"]["cpu"].get("1", 0) + d["total"]["cpu"].get("5", 0)), 1)'
log "hog runtime on IRQ CPUs 1+5: EEVDF $(jget /tmp/eevdf.json "$irq")%, scx_miami $(jget /tmp/miami.json "$irq")%"
check_ge "scx_miami hog runtime ms" "$(jget /tmp/miami.json "d['total']['runtime_ns'] / 1e6")" 4000
check_le "scx_miami hogs on IRQ CPUs %" "$(jget /tmp/miami.json "$irq")" 10
finish
