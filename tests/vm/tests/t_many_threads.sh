#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #12 item 9 (thousands of network threads): a thread-per-connection server (shapes tpc)
# on NIC A with 2,000 connections from namespace cli (shapes fanout): every 64th connection busy
# (64 bytes every 5 ms: 32 busy threads), the others idle (1 byte every 500 ms, so all 2,000
# server threads stay network tasks: the release time is 1 s). With default flags:
#   - the agent sees every network task: its last round counted at least 1,900 (nr_net_tasks);
#     the table before this issue had 256 slots (tid % 256) and showed a churning subset;
#   - the 16 most intensive rows of the task table are all busy threads (at least 10 times an
#     idle thread's 2 calls/s);
#   - the agent's round cost (agent_cost_us) is printed with a handful of tasks and with 2,000
#     (a figure, not a bound: the TCG guest's speed is not a host's).
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

SHAPES=$VM_TOP/target/tools/shapes
net_default
sched_start --stats 1
bg "$SHAPES" tpc 7100
sleep 2
cost_idle=$(awk '/^agent: most moves/ { for (i = 1; i <= NF; i++) if ($i == "round") v = $(i + 1) } END { print v + 0 }' "$SCHED_LOG")
ip netns exec cli "$SHAPES" fanout "$ADDR_A_SRV" 7100 2000 64 5000 500 3600 >/tmp/fanout.out 2>&1 &
fan=$!
for ((i = 0; i < 900; i++)); do grep -q connected /tmp/fanout.out && break; sleep 0.1; done
cat /tmp/fanout.out
sleep 4
mark=$(wc -l <"$SCHED_LOG")
sleep 3
kill "$fan" 2>/dev/null || true
sched_stop || fail "sched_stop"

# The last full report before the stop: its agent line and its task table.
tail -n +"$mark" "$SCHED_LOG" | awk '
	/^--- stats/ { if (rows) { lr = rows; ln = n; lc = c; lmin = min } ; rows = 0; min = -1 }
	/^agent: most moves/ { for (i = 1; i <= NF; i++) { if ($(i + 1) == "network") n = $i; if ($i == "round") c = $(i + 1) } }
	NF == 10 && $1 ~ /^[0-9]+$/ { rows++; if (min < 0 || $4 < min) min = $4 }
	END { printf "nr_net_tasks %d round_us %d top_rows %d top_min_intens %d\n", ln, lc, lr, lmin }' \
	>/tmp/many.txt
cat /tmp/many.txt
read -r _ nr _ cost _ rows _ minint </tmp/many.txt
log "agent round: $cost_idle us with a few tasks, $cost us with $nr"
check_ge "connections up" "$(awk '/connected/ { print $4 }' /tmp/fanout.out)" 2000
check_ge "network tasks the agent saw in its last round" "$nr" 1900
check_eq "rows in the task table" "$rows" 16
check_ge "least intensive of the 16 top rows (idle threads: 2)" "$minint" 20
finish
