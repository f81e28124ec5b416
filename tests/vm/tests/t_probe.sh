#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest test (EEVDF, no scheduler): probe.py attributes run time to the right tiers.
# Two CPU-bound loops, pinned to CPU 1 and CPU 6; probe with --irq-cpu 1 (LLCs 0-3/4-7):
# the first must show >= 90% core tier, the second >= 90% other tier, both with run time.
# Twice: sampling /proc, and recording the scheduler's runtime events (--trace).
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

bg taskset -c 1 sh -c 'while :; do :; done'; p1=$BG_PID
bg taskset -c 6 sh -c 'while :; do :; done'; p2=$BG_PID
sleep 0.5
get() { python3 -c 'import json,sys; d=json.load(open("/tmp/probe.json")); print(eval(sys.argv[1]))' "$1"; }
for mode in sample trace; do
	opt=()
	[[ $mode == trace ]] && opt=(--trace)
	$PROBE --pids "$p1,$p2" --duration 3 --hz 200 --irq-cpu 1 --probe-cpu 3 "${opt[@]}" \
		--json >/tmp/probe.json
	check_eq "$mode: method" "$(get "d['method']")" "$mode"
	check_ge "$mode: samples (hz $(get "d['hz']"))" "$(get "d['samples']")" 30
	check_ge "$mode: pinned to 1: run ms" "$(get "d['pids']['$p1']['runtime_ns'] / 1e6")" 1500
	check_ge "$mode: pinned to 1: core tier %" "$(get "100 * d['pids']['$p1']['tiers']['core']")" 90
	check_ge "$mode: pinned to 6: other tier %" "$(get "100 * d['pids']['$p2']['tiers']['other']")" 90
	check_eq "$mode: pinned to 1: migrations" "$(get "d['pids']['$p1']['migrations']")" 0
done
check_eq "trace: events lost" "$(get "d['lost_events']")" 0
check_eq "trace: tracefs instance removed" "$(ls /sys/kernel/tracing/instances | grep -c miami-probe || true)" 0
finish
