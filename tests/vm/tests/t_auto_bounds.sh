#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #12 item 6 (defaults that mean something): with default flags (--class-bounds auto), a
# bulk flow and a light paced flow land in different classes. One iperf3 bulk receiver on NIC A,
# and a light sender (pacer, 64 bytes every 200 ms: 5 calls/s, a heartbeat) over NIC B. Over 6 s
# of stats reports (every 0.5 s), the bulk receiver's stream thread is class high in at least
# 80% of them and the light sender in none. The automatic boundaries are a quarter and 1/64 of
# the most intensive task, so this holds as long as bulk makes 20 calls/s or more (200-1000
# here, by machine): a machine 10x slower still passes. The code before this issue had fixed
# defaults (100000,10000) and put both in class low.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

net_default
bg ip netns exec cli "$PACER" sink 7001
sched_start --stats 0.5
iperf_server 5201 "$ADDR_A_SRV"
srv=$IPERF_SERVER_PID
iperf_client_bg /tmp/bulk.out cli "$ADDR_A_SRV" 5201 3600
cl=$IPERF_CLIENT_PID
PACER_SLEEP=1 "$PACER" send "$ADDR_B_CLI" 7001 200000 3600 64 >/dev/null &
light=$!
wait_streaming "$srv"
sleep 2
mark=$(wc -l <"$SCHED_LOG")
sleep 6
kill "$cl" "$light" 2>/dev/null || true
sched_stop || fail "sched_stop"

# The rows of the last 6 s: tid tgid comm intens class tier irq cpu nic age_ms. The bulk
# receiver: the server's busiest thread (its stream thread) in each table.
tail -n +"$mark" "$SCHED_LOG" | awk -v s="$srv" -v l="$light" '
	/^--- stats/ { if (n) { tables++; if (bc == "high") bh++ } ; n = 1; best = -1; bc = "" }
	NF == 10 && $1 ~ /^[0-9]+$/ {
		if ($2 == s && $4 > best) { best = $4; bc = $5; bi = $4 }
		if ($2 == l) { lt++; if ($5 == "high") lh++; li = $4 }
	}
	END { printf "tables %d bulk_high %d light_rows %d light_high %d bulk_intens %d light_intens %d\n",
		tables, bh, lt, lh, bi, li }' >/tmp/classes.txt
cat /tmp/classes.txt
grep -E '^classes' "$SCHED_LOG" | tail -n 3
read -r _ tables _ bulk_high _ light_rows _ light_high _ _ _ _ </tmp/classes.txt
check_ge "stats reports in 6 s" "$tables" 6
check_ge "bulk receiver class high, % of reports" "$((100 * bulk_high / (tables ? tables : 1)))" 80
check_ge "light sender rows" "$light_rows" 3
check_eq "light sender rows of class high" "$light_high" 0
finish
