#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue test 1: one iperf3 receiver on NIC A (IRQ -> CPU 1), guest otherwise idle. Under
# scx_miami >= 90% of its runtime is on CPU 1 (tier core). EEVDF in the same run as baseline.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

net_default
receivers_run eevdf 1 0 8
sched_start
receivers_run miami 1 0 8
sched_stop || fail "sched_stop"

base=$(jget /tmp/eevdf.json "round(100 * d['total']['tiers']['core'], 1)")
got=$(jget /tmp/miami.json "round(100 * d['total']['tiers']['core'], 1)")
log "receiver on CPU 1: EEVDF $base%, scx_miami $got%"
check_ge "scx_miami receiver runtime ms" "$(jget /tmp/miami.json "d['total']['runtime_ns'] / 1e6")" 50
check_ge "scx_miami receiver core-tier % (EEVDF $base%)" "$got" 90
finish
