#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Live stats against a running scheduler under traffic: the scx_stats socket exists and is
# root-only (0600), `--monitor` prints the counter report and the task table with the receiver
# and the sender, each with its NIC (the sender's in the client namespace, named as such),
# `--monitor --format openmetrics` prints counters and ends each scrape with "# EOF", and after
# the scheduler stops the socket is gone and --monitor exits 1 with a clear message.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami}
sock=/var/run/scx/root/stats
net_default
sched_start
check_eq "socket mode" "$(stat -c %a "$sock" 2>/dev/null || echo missing)" 600
iperf_server 5201 "$ADDR_A_SRV"
iperf_client_bg /tmp/cl.out cli "$ADDR_A_SRV" 5201 8
sleep 2
timeout -s INT 4 "$bin" --monitor 1 >/tmp/monitor.txt 2>&1 || true
timeout -s INT 3 "$bin" --monitor 1 --format openmetrics >/tmp/om.txt 2>&1 || true
wait "$IPERF_CLIENT_PID" || true
grep -q '^probe_recv' /tmp/monitor.txt && pass "monitor prints counters" || fail "monitor: $(head -5 /tmp/monitor.txt)"
grep -q ' iperf3 ' /tmp/monitor.txt && pass "monitor task table lists iperf3" || fail "no iperf3 row"
# The NIC column (9th): the server's rows name its NIC; the client's, in namespace cli, give
# the ifindex there and the namespace, not whichever root interface has that index.
nics=$(awk '$3 == "iperf3" { print $9 }' /tmp/monitor.txt | sort -u | tr '\n' ' ')
cli_a="if$($IP netns exec cli cat "/sys/class/net/$CLI_A/ifindex")@cli"
[[ " $nics" == *" $NIC_A "* ]] && pass "server rows name $NIC_A" || fail "server NIC: iperf3 rows show '$nics'"
[[ " $nics" == *" $cli_a "* ]] && pass "client rows name $cli_a" || fail "client NIC: iperf3 rows show '$nics', want $cli_a"
grep -q '^# EOF' /tmp/om.txt && pass "openmetrics scrape ends with # EOF" || fail "openmetrics: $(head -5 /tmp/om.txt)"
# A real OpenMetrics parser (prometheus_client, installed by scripts/deps.sh) accepts the
# first scrape, and sees the counters and the per-CPU gauges.
awk '{ print } /^# EOF/ { exit }' /tmp/om.txt >/tmp/om1.txt
if "$VM_TOP/.venv/bin/python3" - /tmp/om1.txt >/tmp/om-parse.txt 2>&1 <<'PY'; then
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
assert fams["miami_probe_recv"].type == "counter", fams["miami_probe_recv"].type
assert fams["miami_cpu_load"].type == "gauge"
assert len(fams["miami_cpu_load"].samples) == 8, fams["miami_cpu_load"].samples
print(f"parsed {len(fams)} metric families")
PY
	pass "openmetrics parses: $(cat /tmp/om-parse.txt)"
else
	fail "openmetrics parser: $(tail -3 /tmp/om-parse.txt)"
fi
check_ge "openmetrics probe_recv total" "$(awk '$1 == "miami_probe_recv_total" { v = $2 } END { print v + 0 }' /tmp/om.txt)" 1
sched_stop || fail "sched_stop"
[[ -e $sock ]] && fail "socket left behind" || pass "socket removed on exit"
set +e
"$bin" --monitor 1 >/tmp/nomon.txt 2>&1; rc=$?
set -e
check_eq "monitor without scheduler exit code" "$rc" 1
grep -q "no scx_miami is running" /tmp/nomon.txt && pass "monitor says no scheduler" || fail "$(cat /tmp/nomon.txt)"
finish
