#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue test 2: 16 iperf3 receivers, 8 per NIC (A -> CPU 1, B -> CPU 5). Under scx_miami each
# receiver runs >= 95% in the core+cache tier of its own NIC's IRQ CPU. EEVDF as baseline.
# The 16 clients run in the same 8-vCPU guest (the paper had separate client machines), so each
# is paced (iperf3 -b): unpaced, 32 TCG-slow network tasks overload both LLCs and spilling to
# the other LLC is what the design asks for; we measure placement, not throughput.
# What was tried (worst receiver / all receivers, core+cache, scx_miami vs EEVDF in one run):
#   -b 5M:                       43.1% / 85.5%  vs 41.4% / 77.5%  (both LLCs busy)
#   -b 1M:                       89.4% / 95.1%  vs 64.3% / 93.4%
#   -b 1M, servers -i 0:         90.9% / 98.4%  vs 100%  / 100%
#   -b 1M -l 16K, servers -i 0:  31.5% / 90.8%  vs 92.0% / 99.6%  (16x the calls: busy again)
#   -b 1M -l 64K, servers -i 0:  93.0% / 99.5%  vs 0.0%  / 77.8%  (15 of 16 at 100%; this one)
#                                98.1% / 99.9%  vs 1.7%  / 92.7%  (PASS)
#                                100%  / 100%   vs 28.0% / 92.7%  (PASS)
#   -b 2M -l 64K, servers -i 0:  33.9% / 90.3%  vs 51.4% / 76.2%, 21.6% / 80.8% vs 53.3% / 88.3%
# So it passes 2 runs in 3, and falls apart as soon as the LLCs get busy: not yet in the suite.
# -i 0 stops the server's once-a-second report, work of the main thread that is not network
# work, which scx_miami places normally (anywhere). At 1 Mbit/s with the default 128 KB writes
# the client writes one block a second, so a receiver is silent for about the release threshold
# (1 s) and is sometimes placed normally too; 64 KB writes halve that gap.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

worst='min(100 * (v["tiers"]["core"] + v["tiers"]["cache"]) for v in d["pids"].values() if v["runtime_ns"] > 0)'
mean='100 * (d["total"]["tiers"]["core"] + d["total"]["tiers"]["cache"])'
net_default
RECEIVER_OPTS='-i 0' receivers_run eevdf 8 8 10 -b 1M -l 64K
sched_start
RECEIVER_OPTS='-i 0' receivers_run miami 8 8 10 -b 1M -l 64K
sched_stop || fail "sched_stop"

log "core+cache share, worst receiver: EEVDF $(jget /tmp/eevdf.json "round($worst, 1)")%," \
	"scx_miami $(jget /tmp/miami.json "round($worst, 1)")%"
log "core+cache share, all receivers: EEVDF $(jget /tmp/eevdf.json "round($mean, 1)")%," \
	"scx_miami $(jget /tmp/miami.json "round($mean, 1)")%"
check_eq "receivers with runtime" "$(jget /tmp/miami.json 'sum(1 for v in d["pids"].values() if v["runtime_ns"] > 0)')" 16
check_ge "scx_miami worst receiver core+cache %" "$(jget /tmp/miami.json "$worst")" 95
finish
