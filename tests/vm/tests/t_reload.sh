#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #4, runtime changes: --config FILE is read at start and re-read on SIGHUP.
#   - a good file changes the running agent: the log names each change, and the live stats
#     (scx_miami --monitor) show the new cap and class boundaries;
#   - a bad file is refused with a message naming the option and the file, and the running
#     values stay; the scheduler keeps running through both;
#   - at start, a bad file is a usage error: exit 2, the option and the file named, nothing
#     attached.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami}
conf=/tmp/miami.conf
# $1 = what to print: the cap ("cap N") and the class line of one --monitor sample.
live() {
	timeout -s INT 3 "$bin" --monitor 1 2>/dev/null |
		awk '/^agent:/ && match($0, /\(cap [0-9]+\)/) { cap = substr($0, RSTART + 1, RLENGTH - 2) }
		     /^classes/ { cls = $0 }
		     cls && cap { print cap "; " cls; exit }' || true
}

printf '# agent tunables\nmax-migrations = 4\nclass-bounds = 100000,10000\n' >"$conf"
sched_start --config "$conf"
check_eq "live stats at start" "$(live)" "cap 4; classes high>=100000 middle>=10000"

printf 'interval-ms = 200\nmax-migrations = 1\nclass-bounds = 3000, 300\n' >"$conf"
kill -HUP "$SCHED_PID"
sleep 1
check_eq "log: what the SIGHUP changed" \
	"$(grep -o 'reconfigured: .*' "$SCHED_LOG" | tail -n 1)" \
	"reconfigured: interval-ms 100 -> 200, max-migrations 4 -> 1, class-bounds 100000,10000 -> 3000,300"
check_eq "live stats after the SIGHUP" "$(live)" "cap 1; classes high>=3000 middle>=300"

printf 'max-migrations = 2\nlow-load-pct = 95\n' >"$conf"
kill -HUP "$SCHED_PID"
sleep 1
check_eq "log: a bad file on SIGHUP is refused, naming option and file" \
	"$(grep -c "SIGHUP: invalid --low-load-pct: 95% must be below --high-load-pct (90%) (set in $conf); the running values stay" "$SCHED_LOG")" 1
check_eq "live stats after the bad SIGHUP (unchanged)" "$(live)" "cap 1; classes high>=3000 middle>=300"
check_eq "sched_ext state after two SIGHUPs" "$(sched_state)" enabled
sched_stop || fail "sched_stop"

printf 'max-migrations = 300\n' >"$conf"
rc=0
"$bin" --config "$conf" >/tmp/bad.out 2>&1 || rc=$?
cat /tmp/bad.out
check_eq "bad --config at start: exit code" "$rc" 2
check_eq "bad --config at start: message" "$(head -n 1 /tmp/bad.out)" \
	"scx_miami: invalid --max-migrations: 300 moves is outside 0..=256 (set in $conf)"
check_eq "bad --config at start: sched_ext state" "$(sched_state)" disabled
finish
