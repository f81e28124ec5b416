#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue test 7, intensiveness sanity: a sender with a fixed delay between send() calls (pacer,
# busy-wait paced) for the paper's Table III delays 0 (bulk), 20 and 50 us. The intensiveness
# scx_miami reports for it (trimmed mean of its task-table rows, printed every second) is within 20%
# of 10^6 / the mean interval the sender really achieved (TCG makes that longer than asked).
# Twice: with the product's default window (100 ms; rates are averaged over windows, halving
# weights, see docs/design.md) and with 1 s windows (--intens-window-ms 1000). Before windows
# were averaged, the TCG guest's vCPU stalls of tens of ms made single 100 ms windows swing by
# 2x (seen: 1754..8333 for a 3242 sender), so this test ran 1 s windows only.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

net_default
bg ip netns exec cli "$PACER" sink 7002
sleep 0.5
for win in 100 1000; do
	sched_start --stats 1 --intens-window-ms "$win"
	for delay in 0 20 50; do
		mark=$(wc -l <"$SCHED_LOG")
		"$PACER" send "$ADDR_A_CLI" 7002 "$delay" 5 >/tmp/pacer-$delay.out
		sleep 1.1
		read -r tid want < <(awk '{ print $3, $9 }' /tmp/pacer-$delay.out)
		# task-table rows: tid tgid comm intens class tier irq cpu nic age_ms
		tail -n +"$mark" "$SCHED_LOG" | awk -v t="$tid" '$1 == t && $3 == "pacer" && $10 < 1000 { print $4 }' \
			| sort -n >/tmp/intens-$delay
		# The mean of the rows without the lowest and the highest (rows are sorted): one row
		# of the sender's first second, before its windows filled, stays out. Not the median:
		# TCG's vCPU stalls skew single 100 ms windows, and the median of 6 rows once came out
		# 21.5% under the true rate while their mean was close.
		got=$(awk '{ v[NR] = $1 } END { lo = NR >= 4 ? 2 : 1; hi = NR >= 4 ? NR - 1 : NR
			for (i = lo; i <= hi; i++) s += v[i]; print NR ? int(s / (hi - lo + 1)) : 0 }' /tmp/intens-$delay)
		log "window $win ms, delay $delay us: measured $(cut -d' ' -f4-7 /tmp/pacer-$delay.out), scx_miami intens $got (trimmed mean of rows $(tr '\n' ' ' </tmp/intens-$delay))"
		check_ge "window $win ms, delay $delay: rows" "$(wc -l </tmp/intens-$delay)" 2
		err=$(python3 -c "import sys; w, g = float(sys.argv[1]), float(sys.argv[2]); print(round(100 * abs(g - w) / w, 1))" "$want" "$got")
		check_le "window $win ms, delay $delay: intensiveness error % (want $want, got $got)" "$err" 20
	done
	sched_stop || fail "sched_stop"
done
finish
