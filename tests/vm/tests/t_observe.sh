#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #14 part 2 (`scx_miami --observe`), in the guest: the kernel's own EEVDF schedules, and
# scx_miami only watches. 2 iperf3 receivers on NIC A (IRQ CPU 1) for 8 s:
#   - sched_ext stays disabled the whole time (no struct_ops is loaded), the log says
#     "observing", and the task table lists the receivers with IRQ CPU 1;
#   - the tier shares it reports (core+cache of every network task with an IRQ CPU, from its
#     context-switch probe) agree with the neutral probe's (probe.py --trace, receivers against
#     IRQ CPU 1) over the same seconds within 15 points: what it shows is where the tasks
#     really ran under EEVDF;
#   - the clients, in namespace cli behind NICs that --nic leaves out (their IRQ on CPU 7),
#     are in its task table with no IRQ CPU (-1): only the chosen NICs' traffic pulls a task
#     (netmon.bpf.c, section 2). Before that rule they had IRQ CPU 7;
#   - SIGINT ends it with exit 0 and nothing of ours stays loaded;
#   - beside another sched_ext scheduler (peer_fifo) whose stats socket answers on the default
#     path, it refuses that socket (exit 1, whose it is), and with --stats-socket it observes
#     there while peer_fifo schedules; on exit peer_fifo and the other socket stay.
# The host tier runs the same on the build machine's kernel where it allows tracing programs
# (tests/host/observe.sh).
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami}
net_default
"$bin" --observe --nic "$NIC_A,$NIC_B" --stats 1 >"$SCHED_LOG" 2>&1 &
obs=$!
for i in $(seq 100); do grep -q 'observing' "$SCHED_LOG" && break; sleep 0.1; done
srv=() irqof=()
for i in 0 1; do
	iperf_server $((5201 + i)) "$ADDR_A_SRV"
	srv+=("$IPERF_SERVER_PID"); irqof+=(--irq-cpu-of "$IPERF_SERVER_PID=1")
done
for i in 0 1; do iperf_client_bg "/tmp/cl$i.out" cli "$ADDR_A_SRV" $((5201 + i)) 3600; done
wait_streaming "${srv[@]}"
cli=()
for p in $(pgrep -f "iperf3 -c $ADDR_A_SRV" || true); do cli+=("$p"); done
log "receivers ${srv[*]}, clients ${cli[*]}"
sleep 1
states=$(sched_state)
python3 "$LIB_DIR/monlog.py" "$bin" 1 /tmp/mon.jsonl &
mon=$!
sleep 1.5
t0=$(cut -d' ' -f1 /proc/uptime)
$PROBE --pids "$(IFS=,; echo "${srv[*]}")" "${irqof[@]}" --duration 6 --trace \
	--probe-cpu "$PROBE_CPU" --json >/tmp/probe.json 2>/tmp/probe.txt || true
t1=$(cut -d' ' -f1 /proc/uptime)
states="$states $(sched_state)"
kill "$mon" 2>/dev/null || true
pkill -x iperf3 2>/dev/null || true
kill -INT "$obs"
rc=0
wait "$obs" || rc=$?
cat /tmp/probe.txt
# The probe's own window when it gives one: it may start seconds after t0 in a loaded guest
# (2.7 s once, when the reports of those seconds made an 18-point gap).
read -r w0 w1 < <(jget /tmp/probe.json '" ".join(map(str, d["window_uptime"] or []))' || true)
[[ -n ${w1:-} ]] && t0=$w0 t1=$w1
log "window $t0..$t1 (uptime)"
# Tier shares of every network task in the reports of the probe's window (the receivers: the
# clients have no IRQ CPU, so no tier).
python3 - "$t0" "$t1" "${#srv[@]}" "${srv[@]}" "${cli[@]}" >/tmp/obs.txt <<'PY'
import json, sys
t0, t1, n = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
srv = {int(p) for p in sys.argv[4:4 + n]}
cli = {int(p) for p in sys.argv[4 + n:]}
ns = {"core": 0, "cache": 0, "other": 0}
rows = []
try:
    lines = open("/tmp/mon.jsonl").readlines()
except OSError:
    lines = []
for line in lines:
    try:
        s = json.loads(line)
    except ValueError:  # the last line, cut by the kill
        continue
    if t0 < s["t"] <= t1 + 1:
        for k in ns:
            ns[k] += s["c"].get(f"run_{k}_ns", 0)
        rows += s["rows"]
tot = sum(ns.values()) or 1
print("observed_core_cache", round(100 * (ns["core"] + ns["cache"]) / tot, 1))
# Which network tasks its totals cover, and the IRQ CPU it gave each: rows of the window.
seen = {}
for r in rows:
    seen.setdefault((r[1], r[2]), set()).add(r[6])
for (tgid, comm), irqs in sorted(seen.items()):
    print("row", tgid, comm, "irq_cpus", ",".join(str(c) for c in sorted(irqs)))
for name, pids in (("receiver", srv), ("client", cli)):
    print(f"{name}_irq_cpus", ",".join(sorted({str(r[6]) for r in rows if r[1] in pids})) or "none")
PY
cat /tmp/obs.txt
probe_cc=$(jget /tmp/probe.json 'round(100 * (d["total"]["tiers"]["core"] + d["total"]["tiers"]["cache"]), 1)' || echo none)
obs_cc=$(awk '/^observed_core_cache/ { print $2 }' /tmp/obs.txt)
log "reports in /tmp/mon.jsonl: $(wc -l </tmp/mon.jsonl 2>/dev/null || echo 0)"
check_eq "says it is observing" "$(grep -c 'observing (no scheduling)' "$SCHED_LOG")" 1
check_eq "sched_ext state before and after the window" "$states" "disabled disabled"
check_eq "receivers' IRQ CPUs in its task table" "$(awk '/^receiver_irq_cpus/ { print $2 }' /tmp/obs.txt)" 1
check_eq "clients' IRQ CPUs (NICs outside --nic) in its task table" "$(awk '/^client_irq_cpus/ { print $2 }' /tmp/obs.txt)" -1
check_le "observed core+cache $obs_cc% against the neutral probe's $probe_cc%, points apart" \
	"$(python3 -c "print(abs($obs_cc - $probe_cc))" 2>/dev/null || echo none)" 15
check_eq "exit status on SIGINT" "$rc" 0
check_eq "programs left (10 s)" "$(progs_left)" 0

# Beside another sched_ext scheduler (peer_fifo), which, like the scx project's schedulers, has
# a stats server on /var/run/scx/root/stats (a listener stands in for it): --observe refuses to
# take that socket over and says whose it is; with a socket of its own it observes while
# peer_fifo schedules, --monitor reads it there, and on exit both peer_fifo and its socket stay.
peer_start || fail "peer_fifo did not load"
mkdir -p /var/run/scx/root
python3 -c 'import socket, time
s = socket.socket(socket.AF_UNIX); s.bind("/var/run/scx/root/stats"); s.listen(8); time.sleep(600)' &
py=$!
for i in $(seq 100); do [[ -S /var/run/scx/root/stats ]] && break; sleep 0.1; done
rc=0
"$bin" --observe >/tmp/beside.out 2>&1 || rc=$?
tail -n 1 /tmp/beside.out
check_eq "--observe beside peer_fifo and its stats socket: exit status" "$rc" 1
check_eq "... says whose the socket is" "$(grep -c "the stats socket /var/run/scx/root/stats \
answers, and it is the running sched_ext scheduler's (peer_fifo), not a scx_miami's" /tmp/beside.out)" 1
sock=/run/scx_miami/stats
env --default-signal=INT "$bin" --observe --stats-socket "$sock" >"$SCHED_LOG" 2>&1 &
obs=$!
for i in $(seq 300); do [[ -S $sock ]] && break; kill -0 "$obs" 2>/dev/null || break; sleep 0.1; done
timeout -s INT 3.5 "$bin" --monitor 1 --stats-socket "$sock" >/tmp/beside-mon.txt 2>&1 || true
check_ge "... with --stats-socket: --monitor reads it there" "$(grep -c '^probe_send' /tmp/beside-mon.txt || true)" 1
check_eq "... peer_fifo schedules meanwhile" "$(sched_state) $(sched_ops)" "enabled peer_fifo"
kill -INT "$obs"
rc=0
wait "$obs" || rc=$?
check_eq "... exit status on SIGINT" "$rc" 0
check_eq "... after it: peer_fifo, its socket's listener, ours" \
	"$(sched_ops) $(kill -0 "$py" 2>/dev/null && [[ -S /var/run/scx/root/stats ]] && echo served) $([[ -e $sock ]] && echo left || echo gone)" \
	"peer_fifo served gone"
kill "$py" 2>/dev/null || true
rm -f /var/run/scx/root/stats
peer_stop
finish
