#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue test 5 (MiAMI step 1, release): a bulk sender on pair A (ACKs -> CPU 1) runs in the
# core+cache tier while it sends; then it stops sending but keeps working and waking up. After
# --release-after-ms (300) it is released: the counter says so, and its placements are normal
# again, which in scx_miami means away from the IRQ CPUs (it leaves CPU 1).
# Class bounds scaled to TCG (--class-bounds 200,100): the bulk sender achieves ~3000 calls/s
# in the guest (t_intens), which makes it class high as it would be on real hardware, with room
# for a machine 10x slower.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

net_default
bg ip netns exec cli "$PACER" sink 7001
sleep 0.5
sched_start --release-after-ms 300 --stats 1 --class-bounds 200,100
# The probe's window must lie inside the sending phase, and the probe's Python can take seconds
# to start in a loaded TCG guest: so the probe starts first, on a subshell that sleeps 3 s (no
# run time) and then becomes the pacer (exec keeps the pid), which sends for 20 s (the probe was
# seen to end 12 s after it was started, for a 6 s window). Checked
# below: the pacer had not finished sending (printed its summary) when the probe ended.
( sleep 3; exec "$PACER" send "$ADDR_A_CLI" 7001 0 20 1024 30 >/tmp/pacer.out ) &
pid=$!
t0=$(date +%s.%N)
$PROBE --pids "$pid" --irq-cpu 1 --duration 6 --hz 100 --probe-cpu "$PROBE_CPU" --json \
	>/tmp/sending.json 2>/tmp/sending.txt || true
log "sending probe ended $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s after the pacer was started"
check_eq "probe window inside the sending phase" "$([[ -s /tmp/pacer.out ]] && echo no || echo yes)" yes
# The pacer prints its summary when it stops sending; released 0.3 s later.
for i in $(seq 300); do [[ -s /tmp/pacer.out ]] && break; sleep 0.1; done
check_eq "pacer still running after sending" "$(kill -0 "$pid" && echo yes)" yes
sleep 1
$PROBE --pids "$pid" --irq-cpu 1 --duration 3 --hz 100 --probe-cpu "$PROBE_CPU" --json \
	>/tmp/quiet.json 2>/tmp/quiet.txt || true
kill "$pid"
sched_stop || fail "sched_stop"
echo "--- sending:"; cat /tmp/sending.txt; echo "--- quiet:"; cat /tmp/quiet.txt

cc='round(100 * (d["total"]["tiers"]["core"] + d["total"]["tiers"]["cache"]), 1)'
check_ge "while sending: core+cache %" "$(jget /tmp/sending.json "$cc")" 80
check_ge "releases counter" "$(stats_total releases)" 1
check_ge "quiet phase runtime ms" "$(jget /tmp/quiet.json "d['total']['runtime_ns'] / 1e6")" 300
check_le "released: share on IRQ CPU 1 %" "$(jget /tmp/quiet.json "round(100 * d['total']['tiers']['core'], 1)")" 20
finish
