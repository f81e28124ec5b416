#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue test 3, sender side: an iperf3 client in the root namespace sends to a server in ns cli
# over pair A, so its ACKs arrive on NIC A (IRQ -> CPU 1). Under scx_miami the sender runs
# >= 90% in the core+cache tier of CPU 1, and 20 points more than EEVDF on CPU 1 itself.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

net_default
ip netns exec cli iperf3 -s -p 5401 -B "$ADDR_A_CLI" -D --pidfile /tmp/cli-srv.pid
sleep 0.5
# The client sends for up to 60 s and is killed once the probe is done: the probe's Python can
# take seconds to start under TCG, and its window must not run past the end of the transfer
# (checked: the client is still running when the probe ends).
run() {
	iperf3 -c "$ADDR_A_CLI" -p 5401 -t 60 >"/tmp/$1-snd.out" 2>&1 &
	local pid=$!
	sleep 1.5
	$PROBE --pids "$pid" --irq-cpu 1 --duration 5 --hz 100 --probe-cpu "$PROBE_CPU" --json \
		>"/tmp/$1.json" 2>"/tmp/$1.txt" || true
	check_eq "$1: sender still sending when the probe ended" "$(kill -0 "$pid" 2>/dev/null && echo yes)" yes
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	echo "--- placement, $1:"; cat "/tmp/$1.txt"
}
run eevdf
sched_start
run miami
sched_stop || fail "sched_stop"

cc='round(100 * (d["total"]["tiers"]["core"] + d["total"]["tiers"]["cache"]), 1)'
log "sender core+cache share: EEVDF $(jget /tmp/eevdf.json "$cc")%, scx_miami $(jget /tmp/miami.json "$cc")%"
check_ge "scx_miami sender runtime ms" "$(jget /tmp/miami.json "d['total']['runtime_ns'] / 1e6")" 50
check_ge "scx_miami sender core+cache %" "$(jget /tmp/miami.json "$cc")" 90
# On an idle guest EEVDF keeps the sender in CPU 1's LLC too: the core tier itself is what
# scx_miami adds (the sender, class high, claims its IRQ CPU).
core='round(100 * d["total"]["tiers"]["core"], 1)'
check_ge "scx_miami sender core % (EEVDF $(jget /tmp/eevdf.json "$core")% + 20)" \
	"$(jget /tmp/miami.json "$core")" "$(python3 -c "print($(jget /tmp/eevdf.json "$core") + 20)")"
finish
