#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue test 4: CPU hogs on every CPU (stress-ng --cpu 8) plus 8 receivers (4 per NIC). No stall
# (the runner fails on any stall in the console), receivers still >= 80% in core+cache, and
# every hog gets CPU time (>= 10% of a CPU each: 8 hogs + 8 receivers + 8 clients share 8 CPUs).
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

net_default
hog_ms() { # total runtime (ms) of each stress-ng worker, one per line
	local p
	for p in $(pgrep -f 'stress-ng-cpu' || true); do
		awk '{ printf "%d\n", $1 / 1e6 }' "/proc/$p/schedstat" 2>/dev/null || true
	done | sort -n
}
run() {
	bg stress-ng --cpu 8 --timeout 14 --quiet
	local hogs=$BG_PID
	sleep 1
	hog_ms >"/tmp/$1-hog0"
	receivers_run "$1" 4 4 10
	hog_ms >"/tmp/$1-hog1"
	wait "$hogs" 2>/dev/null || true
	# the least-served hog's CPU time over the receivers' 10 s, in ms
	paste "/tmp/$1-hog0" "/tmp/$1-hog1" | awk 'NR == 1 || $2 - $1 < m { m = $2 - $1 } END { print m + 0 }' >"/tmp/$1-hogmin"
}
run eevdf
sched_start
run miami
sched_stop || fail "sched_stop"

cc='round(100 * (d["total"]["tiers"]["core"] + d["total"]["tiers"]["cache"]), 1)'
log "receivers core+cache: EEVDF $(jget /tmp/eevdf.json "$cc")%, scx_miami $(jget /tmp/miami.json "$cc")%"
log "least-served hog, ms in 10 s: EEVDF $(cat /tmp/eevdf-hogmin), scx_miami $(cat /tmp/miami-hogmin)"
check_eq "hogs seen" "$(wc -l </tmp/miami-hog1)" 8
check_ge "scx_miami receivers core+cache %" "$(jget /tmp/miami.json "$cc")" 80
check_ge "scx_miami least-served hog ms (of 10000)" "$(cat /tmp/miami-hogmin)" 1000
finish
