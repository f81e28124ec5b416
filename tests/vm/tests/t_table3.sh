#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #4 test 1: the paper's Table III dynamic scenario, scaled to TCG. The server NICs' IRQs
# on CPU 0 (the client NICs', standing for the remote hosts, on CPU 7); pair A in use. Senders in
# the root ns, sinks in ns cli, 64-byte sends:
#   t=0:  two A processes, sleeping 2500 us between sends
#   t~8:  two B processes, sleeping 1000 us
#   t~16: one C process, bulk (0 us); the run ends ~10 s later.
# Once under EEVDF, once under scx_miami (agent every 100 ms). Per phase, the neutral probe
# reports each process's placement against CPU 0; the task table gives their rates. In the
# last phase under scx_miami, C must hold the core tier (>= 80% of its runtime on CPU 0) and
# A/B must sit mostly on the cache tier (CPUs 1-3, >= 50% of their runtime). The classes the
# agent assigned are printed from the scheduler's task table.
#
# Why not the paper's 50 us and 20 us: a send costs hundreds of us under TCG, so busy-waiting
# 50 or 20 us between sends makes A and B as CPU-bound as C. Then every rate is set by how much
# CPU a process gets, not by its pacing: in one run A reached 2506 calls/s, B 1459 and C, sharing
# CPU 0 with the softirq, 1246, and C fell to class low. A and B therefore sleep between sends
# (PACER_SLEEP=1), which leaves most of the CPU to the bulk process. TCG stretches those sleeps
# to ~10 ms: A and B reached 74-107 calls/s in one run, C 1858. The default boundaries
# (--class-bounds auto: a quarter and 1/64 of the most intensive task) make C class high and A
# and B a lower class on any machine. Fixed ones do not hold: C made 1,932-2,700 calls/s at the
# end of runs on slow (or slowed) machines and 7,000-14,000 on a fast one, and read as low as
# 693 in one table of a full suite run (2026-11-28): class middle under the 800,150 this test
# used to pass. The test prints C's class in every task table that lists it and asserts it is
# high in most. In the next CI run it was high in 22 of 22 and still held the core tier only
# 37.9%. The agent could shed C, class high, in place of a paced sender whose repeated shed its
# repeat filter held back (tests/it/policy.rs reproduces that round; the build before the fix shed
# C once in a local run of this test), and the shed's hold keeps a task off the CPU for up to
# 5 s. So the test also asserts, from the --verbose log, that the agent never sheds C while C
# is class high.
# Each process sends until it is killed at the end: the phases are timed by the script, whose
# probes take seconds to start under TCG.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

net_setup
pin_irq "$IRQ_A" 0
pin_irq "$IRQ_B" 0
pin_irq "$IRQ_A_CLI" 7
pin_irq "$IRQ_B_CLI" 7
bg ip netns exec cli "$PACER" sink 7001
sleep 0.5

# The probe records runtime events (probe.py --trace). Its sampler got 18 Hz here, and splits
# each interval in which a thread moved half/half: C's ~20 migrations in phase 3 could put about
# a tenth of its runtime on the wrong CPU. One sampled run gave 76.4% (earlier 94.4-99.4%); the
# first traced one 96.9%.
# $1 = label. Runs the three phases (lib.sh's table3_run, which the bench's table3 runs too);
# probes 4 s of phases 1 and 2 and 6 s of phase 3.
scenario() {
	table3_run "$1" 0
	for p in 1 2 3; do echo "--- $1, phase $p:"; cat "/tmp/$1-p$p.txt"; done
}

scenario eevdf
sched_start --verbose --stats 1
scenario miami
sched_stop || fail "sched_stop"

read -r a1 a2 b1 b2 c </tmp/miami-pids
echo "--- classes the agent assigned (last task table while all five ran):"
awk -v pids=" $a1 $a2 $b1 $b2 $c " '/^--- stats/ { n = 0 } index(pids, " " $1 " ") && $3 == "pacer" { row[$1] = $0 } END { for (p in row) print row[p] }' "$SCHED_LOG"
grep -E '^classes' "$SCHED_LOG" | sort | uniq -c | sort -rn | head -3
# C's class in each task table that lists it (C runs in phase 3 only); its first table may
# precede its first measured rate.
read -r c_tables c_high c_min <<<"$(awk -v c="$c" 'NF == 10 && $1 == c && $3 == "pacer" {
	n++; if ($5 == "high") h++; if (n == 1 || $4 < m) m = $4 } END { print n + 0, h + 0, m + 0 }' "$SCHED_LOG")"
echo "C in $c_tables task tables: class high in $c_high, lowest intensiveness $c_min"
# The agent's moves of the five (--verbose): step 3 sheds the pacers, not C while it is class
# high. The pacers contend with it on CPU 0 in a lower class: they give way first, and when one
# cannot, C does not go in its place (see the header). C's rate can dip when the host is slow
# (to 43 calls/s in one table of a run beside 12 host hogs, the sink starved), and a C of a
# lower class than a pacer is rightly shed first; so the count is of sheds the agent decided
# with C in class high (the log line's class).
echo "--- the agent's moves of A, B and C:"
grep -E "agent: (Upgrade|Shed) tid ($a1|$a2|$b1|$b2|$c) " "$SCHED_LOG" || echo "(none)"
c_sheds=$(grep -c "agent: Shed tid $c .*, class high," "$SCHED_LOG" || true)

read -r ea1 ea2 eb1 eb2 ec </tmp/eevdf-pids
# One Python start for the four (jpairs): 0.85 s each in the idle guest.
mapfile -t v < <(jpairs /tmp/miami-p3.json "round(100 * d['pids']['$c']['tiers']['core'], 1)" \
	/tmp/miami-p3.json "round(100 * sum(d['pids'][p]['tiers']['cache'] * d['pids'][p]['runtime_ns'] for p in '$a1 $a2 $b1 $b2'.split()) / max(1, sum(d['pids'][p]['runtime_ns'] for p in '$a1 $a2 $b1 $b2'.split())), 1)" \
	/tmp/eevdf-p3.json "round(100 * d['pids']['$ec']['tiers']['core'], 1)" \
	/tmp/miami-p3.json 'd["lost_events"]')
core_c=${v[0]} cache_ab=${v[1]} base_c=${v[2]}
check_eq "probe events lost" "${v[3]}" 0
check_eq "agent sheds of C in class high" "$c_sheds" 0
check_ge "phase 3: C class high, % of its task tables" "$((100 * c_high / (c_tables ? c_tables : 1)))" 80
check_ge "phase 3: C core tier % (EEVDF $base_c%)" "$core_c" 80
check_ge "phase 3: A/B cache tier %" "$cache_ab" 50
finish
