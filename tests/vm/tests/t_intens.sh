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
# The reference is the sender's mean over its 5 s, which the windows' rows match only while the
# rate holds: a run whose busiest whole second had more than 1.5 times the calls of its quietest
# (pacer's calls per second) is measured again, up to three times, and the check then takes the
# last one. On a quiet host the seconds of one run differ by 1.1-1.65x under TCG (three runs of
# this test, 2026-11-28): 1.25 retried half the runs, to no gain. Seen in a
# `make test` while the host was busy with another job (before pacer printed its seconds): a
# bulk sender's rows rising from 7360 to 12987 (1 s windows), their trimmed mean 24.7% above
# its 5-second mean of 8027.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

net_default
bg ip netns exec cli "$PACER" sink 7002
sleep 0.5
for win in 100 1000; do
	sched_start --stats 1 --intens-window-ms "$win"
	for delay in 0 20 50; do
		for try in 1 2 3; do
			mark=$(wc -l <"$SCHED_LOG")
			"$PACER" send "$ADDR_A_CLI" 7002 "$delay" 5 >/tmp/pacer-$delay.out 2>/tmp/pacer-$delay.err
			sleep 1.1
			per_s=$(sed -n 's/^pacer: calls per second: //p' /tmp/pacer-$delay.err)
			steady=$(awk '{ lo = hi = $1; for (i = 2; i <= NF; i++) { if ($i < lo) lo = $i; if ($i > hi) hi = $i }
				print (NF && hi <= 1.5 * lo) ? 1 : 0 }' <<<"$per_s")
			((steady)) && break
			log "window $win ms, delay $delay us: calls per second $per_s, not steady (run $try of 3)"
		done
		read -r tid want < <(awk '{ print $3, $9 }' /tmp/pacer-$delay.out)
		# task-table rows: tid tgid comm intens class tier irq cpu nic age_ms. A row is the
		# sender's while written within the last two windows (at least 1 s): the monitor writes
		# it once per window, so with 1 s windows a row printed a second after the last write
		# still holds the sender's rate. Fresh meant 1 s at first, and a slow guest's loader then
		# printed one such row in a 5 s run (make test, 2026-11-29: rows = 1).
		fresh=$((win * 2 > 1000 ? win * 2 : 1000))
		tail -n +"$mark" "$SCHED_LOG" | awk -v t="$tid" -v f="$fresh" '$1 == t && $3 == "pacer" && $10 < f { print $4 }' \
			| sort -n >/tmp/intens-$delay
		# The mean of the rows without the lowest and the highest (rows are sorted): one row
		# of the sender's first second, before its windows filled, stays out. Not the median:
		# TCG's vCPU stalls skew single 100 ms windows, and the median of 6 rows once came out
		# 21.5% under the true rate while their mean was close.
		got=$(awk '{ v[NR] = $1 } END { lo = NR >= 4 ? 2 : 1; hi = NR >= 4 ? NR - 1 : NR
			for (i = lo; i <= hi; i++) s += v[i]; print NR ? int(s / (hi - lo + 1)) : 0 }' /tmp/intens-$delay)
		log "window $win ms, delay $delay us: measured $(cut -d' ' -f4-7 /tmp/pacer-$delay.out) (calls per second $per_s), scx_miami intens $got (trimmed mean of rows $(tr '\n' ' ' </tmp/intens-$delay))"
		check_ge "window $win ms, delay $delay: rows" "$(wc -l </tmp/intens-$delay)" 2
		# awk, not Python: a Python start took 0.85 s or more, six times per run. Python's
		# round(x, 1) and printf's %.1f both round the double's exact value (ties to even), so
		# the figure is the same; where Python printed nothing (want empty, not a number, or
		# 0), so does this.
		err=$(awk -v w="$want" -v g="$got" -v num="$_NUM" 'BEGIN {
			if (w ~ num && g ~ num && w != 0) printf "%.1f\n", 100 * (g > w ? g - w : w - g) / w }')
		check_le "window $win ms, delay $delay: intensiveness error % (want $want, got $got)" "$err" 20
	done
	sched_stop || fail "sched_stop"
done
finish
