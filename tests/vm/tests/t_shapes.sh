#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #12 items 2, 3, 8 and 10: connections and threads of shapes that one bulk flow per
# thread never has (tests/vm/tools/shapes.c), under one scheduler run whose stats are logged with
# timestamps (guest/monlog.py, every 0.25 s), with default flags and no --nic: item 10 counts
# the relay's feeder and the sink's reader, in namespace cli, as network tasks, which they are
# only while the client NICs count (with --nic naming the server NICs they have no IRQ CPU, and
# net_migrations read 0 against the kernel's 38).
#
# 1. A thread that finished a bulk transfer (over NIC A: IRQ CPU 1) and then makes one short
#    request a second over NIC B (IRQ CPU 5, an echo server in namespace cli). Its task row must
#    name IRQ CPU 5 (or be gone: released) soon after the end of the bulk transfer as the tool
#    stamped it. The first request comes at once and only lowers the majority the bulk calls
#    left on CPU 1 (VOTE_MAX, 8); the second, a second later, comes after a silence of more than
#    one window and starts a new vote, on CPU 5. So the bound is 1000 ms (the second request)
#    + 200 (its connect, send and echo under TCG) + 250 (one report) + 100 (the run loop answers
#    a stats request when it wakes, at most one agent period later) = 1550 ms; 1,069 and 1,426
#    in two runs. Its runs (probe.py --trace --runs) must be at least 80% in CPU 5's LLC.
#    Before this issue the closed bulk connection stayed its representative: every later call
#    refreshed the task, none had a rate, so it kept IRQ CPU 1 and was never released.
# 2. A relay reading a connection on NIC A and writing a connection on NIC B at one rate (200
#    packets a second from pacer, a rate the guest keeps steady: at 1000 it could not, and the
#    relay read in bursts): two equally intensive connections with IRQ CPUs in different LLCs.
#    Over a window of at least 6 s, at most 5 representative changes (rep_changes) and at most
#    5 migrations a second of the relay (/proc/PID/sched se.nr_migrations), EEVDF's figure
#    printed beside.
#    Before this issue the newer of two equal connections always won: hundreds of changes.
#    In the same window net_migrations (item 10: every migration of a network task, whatever
#    caused it) is held against the kernel's count for the network tasks (the relay, its feeder,
#    and the sink's reader): between a third of it minus 5 and twice it plus 10. Not closer: the
#    kernel counts every change of a task's CPU, also a wakeup queued on one CPU and pulled by
#    another before it ran (two); net_migrations counts a task running on another CPU than the
#    last time it ran, for every network task, over monitor reports of 0.25 s (18 against 30,
#    12 against 6 in two runs). The code before this issue had no such counter (0 against 156).
#    Those bounds are only as strong as the migrations a run happens to have (a passing run had
#    0), so the feeder is also moved by taskset between CPUs 2 and 6, 8 times 0.25 s apart,
#    during the window: net_migrations must count at least one per move.
#    The relay phase itself (start to t1, shell commands and the forced moves included) must
#    take at most 1.5x EEVDF's wall time plus 2 s: the feeder, class high without --nic, never
#    sleeps on its IRQ CPU, and its preemption kick at each of its slice ends once starved that
#    CPU's kworkers, which every fork and exec waited for (41.6 s against EEVDF's 11.5; 11.4
#    against 11.2 since).
# 3. A local pair over loopback (iperf3 on 127.0.0.1): no IRQ CPU in any of its rows (-1). The
#    "softirq CPU" of a loopback socket is the peer's own CPU; before this issue each end was
#    pulled toward the other's CPU as if it took the interrupts.
# 4. One socket shared by two threads (shapes duplex: one sends every 5 ms, the other receives
#    the echoes): each row of either thread while both run, after the first second, is divided
#    by the spec's rate over the calls the tool timed on that socket in the half second before
#    the row. The median of these is within 50% of 1 (from 0.89 to 1.04 in seven runs;
#    single rows from 0.49 to 1.47 of it), and at most 2 rows are 1 or 2 (one row of 52 at 1 was
#    seen with the fix in: a vCPU the host stopped for over a second gives a real window of 1).
#    The monitor read the clock before taking the storage, so a window another thread had just
#    moved ended with a negative elapsed time, read as a huge one: the mean interval clamped to
#    10^6 us and the rate to 1 for a whole window (a real window gives 1 only after a second of
#    silence, which these threads never have); and two threads could count one window twice (a
#    ratio of 2). Both are fixed (atomics, the clock after the lookup), but this check did not
#    catch them in one run of the old code: they are rare. Not against the rate over the whole
#    run: the host stops vCPUs for hundreds of ms, which lowers that rate while the rows hold
#    the rate before the stop (a CI run failed on a median row of 360 against 231).
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami}
SHAPES=$VM_TOP/target/tools/shapes
MONLOG="python3 $LIB_DIR/monlog.py"
up() { cut -d' ' -f1 /proc/uptime; }
# "UPTIME FIRST REST": se.nr_migrations summed over the threads of the first process given and
# of the others, read by one awk at UPTIME (the middle of the read). Spawning a reader per
# thread took seconds under TCG, and the kernel's counts then covered another span than the
# monitor's reports (a run read 44 from the reports against 15 from the kernel).
mig_sample() {
	local a b first=$1 p files=()
	for p in "$@"; do files+=(/proc/"$p"/task/*/sched); done
	read -r a _ </proc/uptime
	local counts
	counts=$(awk -v first="$first" '/^se.nr_migrations/ {
		split(FILENAME, f, "/"); if (f[3] == first) r += $3; else n += $3
	} END { print r + 0, n + 0 }' "${files[@]}" 2>/dev/null)
	read -r b _ </proc/uptime
	echo "$(awk "BEGIN { print ($a + $b) / 2 }") $counts"
}
net_default
bg ip netns exec cli "$PACER" sink 7001
bg ip netns exec cli "$SHAPES" echo 7002
bg ip netns exec cli "$PACER" sink 7011
sink=$BG_PID
sleep 0.5

# 2 (relay), once per scheduler: $1 = label. /tmp/$1-relay: "t0 t1 relay_migrations
# network_migrations" over 6 s, the network tasks being the relay, its feeder and the sink's
# child that reads the relay's output. The feeder runs until killed: EOF ends the relay.
relay_run() {
	local ts
	ts=$(up)
	"$SHAPES" relay 7010 "$ADDR_B_CLI" 7011 >"/tmp/$1-relay.out" &
	local r=$! f i t0 t1 m0 m1 n0 n1 net
	for ((i = 0; i < 50; i++)); do ss -ltn "sport = :7010" | grep -q LISTEN && break; sleep 0.1; done
	ip netns exec cli "$PACER" send "$ADDR_A_SRV" 7010 5000 600 1024 >"/tmp/$1-feed.out" &
	f=$!
	sleep 4
	net="$r $f $(pgrep -P "$sink" | tail -n 1)"
	read -r t0 m0 n0 < <(mig_sample $net)
	# Eight forced moves of the feeder, to CPU 2 and CPU 6 in turn, 0.25 s apart: each one makes
	# it run on another CPU than the last time at least once (it sends every 5 ms), so
	# net_migrations must count at least that many however few migrations the schedulers make
	# of their own (a passing run once had 0 of them, which left item 10's bounds empty). The
	# window ends at least 1.5 s after the last move, so that its report is inside, and lasts
	# at least 6 s.
	local moves=0 cpu=2
	for ((i = 0; i < 8; i++)); do
		sleep 0.25
		taskset -a -p -c "$cpu" "$f" >/dev/null && moves=$((moves + 1))
		cpu=$((8 - cpu))
	done
	sleep 1.5
	while [[ $(awk -v t0="$t0" '{ print ($1 < t0 + 6) }' /proc/uptime) == 1 ]]; do sleep 0.1; done
	read -r t1 m1 n1 < <(mig_sample $net)
	n0=$((m0 + n0)) n1=$((m1 + n1))
	kill "$f" 2>/dev/null || true
	wait "$f" "$r" || true
	echo "$t0 $t1 $((m1 - m0)) $((n1 - n0)) $moves $ts" >"/tmp/$1-relay"
	log "$1 relay (started at $ts): $(tail -n1 "/tmp/$1-relay.out"); migrations from $t0 to $t1: relay $((m1 - m0)), network tasks ($net) $((n1 - n0)), of which $moves forced moves of the feeder"
}

# 1 (bulk, then short requests), once per scheduler: $1 = label. /tmp/$1-bt: "tid bulk_end".
bulkthen_run() {
	"$SHAPES" bulkthen "$ADDR_A_CLI" 7001 4 "$ADDR_B_CLI" 7002 1000 14 >"/tmp/$1-bt.out" &
	local b=$! i seen
	for ((i = 0; i < 300; i++)); do grep -q bulk_end "/tmp/$1-bt.out" && break; sleep 0.05; done
	seen=$SECONDS
	$PROBE --pids "$b" --irq-cpu 5 --duration 8 --trace --runs --probe-cpu "$PROBE_CPU" --json \
		>"/tmp/$1-bt.json" 2>"/tmp/$1-bt.txt" || true
	# The requests go on for 13 s after the bulk end, about 4 s past the probe's window (started
	# after the end, 8 s): end them once it is over. Item 1's delay is decided within 1.55 s
	# of the end, so not before 3 s after the end was seen (a probe that failed at once would
	# otherwise end the thread, and its rows, inside that span).
	while ((SECONDS - seen < 4)); do sleep 0.5; done
	kill "$b" 2>/dev/null || true
	wait "$b" 2>/dev/null || true
	echo "--- $1: the thread's runs during its requests (core = CPU 5, NIC B)"; cat "/tmp/$1-bt.txt"
}

relay_run eevdf
bulkthen_run eevdf

SCHED_ALL_NICS=1 sched_start
bg $MONLOG "$bin" 0.25 /tmp/mon.jsonl
sleep 1
relay_run miami
bulkthen_run miami
# 3: a local pair over loopback
iperf_server 5301 127.0.0.1
lo_srv=$IPERF_SERVER_PID
iperf_client root 127.0.0.1 5301 5 >/tmp/lo-client.out &
lo_cl=$!
sleep 1
lo_t0=$(up)
wait "$lo_cl" || true
lo_t1=$(up)
kill "$lo_srv" 2>/dev/null || true
# 4: one socket, two threads
d_t0=$(up)
"$SHAPES" duplex "$ADDR_B_CLI" 7002 5000 8 /tmp/duplex.times >/tmp/duplex.out
d_t1=$(up)
sleep 0.5
sched_stop || fail "sched_stop"
kill "$BG_PID" 2>/dev/null || true
cat /tmp/duplex.out

cc='round(100 * (d["total"]["tiers"]["core"] + d["total"]["tiers"]["cache"]), 1)'
python3 - "$lo_t0" "$lo_t1" "$lo_srv" "$lo_cl" "$d_t0" "$d_t1" "$cc" >/tmp/verdict.txt <<'PY'
import ast, bisect, json, sys, traceback

# The checks' figures that are not the verdict's (the probe's shares, the relay's rates and
# spans), into /tmp/shapes-fig.txt as "KEY VALUE", or only "KEY" where one fails, as its own
# Python then printed nothing: they took a Python start each, 9 in all, 0.85 s apiece. Done
# first and one by one, so that nothing the verdict below fails on takes them along. The relay
# files' numbers are read as the Python literals the shell used to paste into the expressions
# (an integral one stays an int).
def fig(out, key, f):
    try:
        print(key, f(), file=out)
    except Exception:
        traceback.print_exc()
        print(key, file=out)

def relay(label):
    r = open(f"/tmp/{label}-relay").read().split()
    return dict(zip(("t0", "t1", "rmig", "nmig", "moves", "ts"), map(ast.literal_eval, r)))

with open("/tmp/shapes-fig.txt", "w") as out:
    for label in ("eevdf", "miami"):
        fig(out, f"{label}_bt_cc",
            lambda: eval(sys.argv[7], {"d": json.load(open(f"/tmp/{label}-bt.json"))}))
    ev, mi = (lambda: relay("eevdf")), (lambda: relay("miami"))
    fig(out, "mi_span", lambda: round(mi()["t1"] - mi()["t0"], 1))
    fig(out, "ev_rate", lambda: round(ev()["rmig"] / (ev()["t1"] - ev()["t0"]), 1))
    fig(out, "mi_rate", lambda: round(mi()["rmig"] / (mi()["t1"] - mi()["t0"]), 1))
    fig(out, "nmig_min", lambda: int(mi()["nmig"] / 3) - 5)
    fig(out, "ev_wall", lambda: round(ev()["t1"] - ev()["ts"], 1))
    fig(out, "mi_wall", lambda: round(mi()["t1"] - mi()["ts"], 1))
    fig(out, "wall_max", lambda: round(1.5 * (ev()["t1"] - ev()["ts"]) + 2, 1))

lo_t0, lo_t1 = float(sys.argv[1]), float(sys.argv[2])
d_t0, d_t1 = float(sys.argv[5]), float(sys.argv[6])
lo_pids = {int(sys.argv[3]), int(sys.argv[4])}
mon = [json.loads(l) for l in open("/tmp/mon.jsonl")]
def between(a, b):
    return [s for s in mon if a < s["t"] <= b]

# 1: bulkthen
# The end as the tool took it (CLOCK_MONOTONIC, which is CLOCK_BOOTTIME in a guest that never
# suspends), not when the script saw its line: polling the output under TCG can see it late,
# when rows already name CPU 5 (a run failed on that, its delay read 172 ms from the late mark).
bt = open("/tmp/miami-bt.out").read().split()
tid, end = int(bt[bt.index("tid") + 1]), float(bt[bt.index("bulk_end_mono_ms") + 1]) / 1000
before = [r for s in between(end - 2, end) for r in s["rows"] if r[0] == tid]
print("bulk_irq_before", before[-1][6] if before else "none")
delay = None
for s in between(end, end + 12):
    rows = [r for r in s["rows"] if r[0] == tid]
    if not rows or rows[0][6] != 1:
        delay = round(1000 * (s["t"] - end))
        print("bulk_after", rows[0] if rows else "gone")
        break
print("bulk_delay_ms", delay if delay is not None else "never")

# 2: relay
t0, t1, rmig, nmig, _, _ = open("/tmp/miami-relay").read().split()
w = between(float(t0), float(t1))
print("rep_changes", sum(s["c"].get("rep_changes", 0) for s in w))
print("net_migrations", sum(s["c"].get("net_migrations", 0) for s in w), "kernel", nmig)

# 3: loopback
lo = [r for s in between(lo_t0, lo_t1) for r in s["rows"] if r[1] in lo_pids]
print("loopback_rows", len(lo), "irq_cpus", sorted({r[6] for r in lo}))

# 4: duplex
d = open("/tmp/duplex.out").read().split()
send_tid, recv_tid = int(d[d.index("send_tid") + 1]), int(d[d.index("recv_tid") + 1])
rate = float(d[d.index("calls_per_s") + 1])
# Rows while both threads run, after the first second (the first windows start the average),
# each against the spec's rate over the calls the tool timed in the half second before the row:
# 10^6 / mean interval in us = (k - 1) / (last - first) over those k calls. Not against the
# rate over the whole run: a vCPU the host stops for a few hundred ms lowers that, while a row
# holds the rate of the calls before the stop (the spec's "recent" intervals): 360 against 231
# seen in one CI run, against 378 over the half second before it. Rows with fewer than 10
# calls in that half second (the end of such a stop) have no rate to compare.
times = sorted(float(x) for x in open("/tmp/duplex.times"))
vals, ratios = [], []
for s in between(d_t0 + 1.5, d_t1 - 0.5):
    lo, hi = bisect.bisect_right(times, s["t"] - 0.5), bisect.bisect_right(times, s["t"])
    for r in s["rows"]:
        if r[0] not in (send_tid, recv_tid) or r[9] >= 500:
            continue
        vals.append(r[3])
        if hi - lo >= 10:
            ratios.append(r[3] / ((hi - lo - 1) / (times[hi - 1] - times[lo])))
vals.sort()
ratios.sort()
med = ratios[len(ratios) // 2] if ratios else 0
print("duplex_rate", round(rate), "rows", len(vals), "compared", len(ratios),
      "median_ratio", round(med, 2), "off_pct", round(100 * abs(med - 1), 1),
      "min", vals[0] if vals else 0, "max", vals[-1] if vals else 0,
      "at_1_or_2", sum(v <= 2 for v in vals))
PY
cat /tmp/verdict.txt
v() { awk -v k="$1" '$1 == k { print $'"${2:-2}"' }' /tmp/verdict.txt; }
fig() { awk -v k="$1" '$1 == k { print $2 }' /tmp/shapes-fig.txt; }
read -r _ _ _ mi_nmig mi_moves _ </tmp/miami-relay

check_eq "1: IRQ CPU of the bulk sender before its end" "$(v bulk_irq_before)" 1
check_le "1: delay until it no longer follows IRQ CPU 1 (ms)" "$(v bulk_delay_ms)" 1550
check_ge "1: its runs in CPU 5's LLC, requests over NIC B % (EEVDF $(fig eevdf_bt_cc)%)" \
	"$(fig miami_bt_cc)" 80
check_le "2: representative changes in $(fig mi_span) s" "$(v rep_changes)" 5
check_le "2: relay migrations per second (EEVDF $(fig ev_rate))" "$(fig mi_rate)" 5
check_ge "10: net_migrations against the kernel's $mi_nmig" "$(v net_migrations)" \
	"$(fig nmig_min)"
check_le "10: net_migrations against the kernel's $mi_nmig" "$(v net_migrations)" "$((2 * mi_nmig + 10))"
check_le "2: the relay phase's wall time, s (EEVDF $(fig ev_wall))" "$(fig mi_wall)" "$(fig wall_max)"
check_ge "10: forced moves of the feeder" "$mi_moves" 8
check_ge "10: net_migrations against the $mi_moves forced moves" "$(v net_migrations)" "$mi_moves"
check_ge "3: loopback pair rows" "$(v loopback_rows)" 1
check_eq "3: loopback pair IRQ CPUs" "$(awk '$1 == "loopback_rows" { $1 = $2 = $3 = ""; print }' /tmp/verdict.txt | xargs)" "[-1]"
check_ge "4: shared socket rows compared with the calls timed before them" "$(v duplex_rate 6)" 5
check_le "4: shared socket median row against the timed rate, % off" "$(v duplex_rate 10)" 50
check_le "4: shared socket rows at 1 or 2 (the race's signature)" "$(v duplex_rate 16)" 2
finish
