#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #14: `make bench --quick` in the suite's own boot. The harness (tests/vm/bench/guest.sh
# --quick: the bulk+ping-pong mix, under EEVDF, scx_miami and EEVDF with the
# receivers and the ping-pong pinned where scx_miami ran them; 352 s in CI with the
# micro-benchmark too) must work end to end and its numbers must be sane
# (tests/vm/bench/render.py --check): every scheduler present in every scenario, no zero
# throughput, request or transaction rate, placement shares summing to 1. It asserts no
# performance: that is `make bench`'s to print. Without scx_bpfland, which `make bench` adds:
# building it took 4m41s of a cold `make test` and its run 38 s of this test, for a path of the
# harness (start, stop and BPF cost of an external scheduler) that scx_miami's run takes too.
# Nor EEVDF+RFS (--scheds), since stop 57: 23 s of the run for a row this test asserts nothing
# of; RFS is still set to odd values first and must come back (guest.sh turns it off at every
# run's start, so the restore is exercised without it).
#
# It runs the harness as `scripts/bench.sh --host` does on a real host (docs/benchmarks.md):
# the server NICs, the peer's addresses and the peer's command ("ip netns exec cli" standing
# for "ssh root@peer") given in MIAMI_BENCH_*; t_overload runs the guest's own path. So it
# also holds what host mode must do: each NIC's receive IRQ found by `scx_miami --list-nics`
# (the same IRQ lib.sh finds from the virtio vector's name), and the IRQ affinity, RFS and
# kernel.bpf_stats_enabled as they were before the run (set to odd values here first).
# Then a run that fails half-way (MIAMI_BENCH_FAIL): recorded as failed, the scheduler detached
# and its servers gone, and the bench goes on; a scenario of the second part follows it.
# Last, table3 under scx_miami and then eevdf-pin-obs with that run's pins: each process
# pinned as its phase starts, and `scx_miami --observe` beside it.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

unset MIAMI_BPFLAND
net_default
out=/tmp/bench-quick
mkdir -p "$out"
pin_irq "$IRQ_A" 3
pin_irq "$IRQ_B" 6
on_exit "echo 0 >/proc/sys/net/core/rps_sock_flow_entries; echo 0 >/sys/class/net/$NIC_A/queues/rx-0/rps_flow_cnt"
echo 2048 >/proc/sys/net/core/rps_sock_flow_entries
echo 16 >"/sys/class/net/$NIC_A/queues/rx-0/rps_flow_cnt"
sysctl -q kernel.bpf_stats_enabled=0
MIAMI_BENCH_NICS=$NIC_A,$NIC_B MIAMI_BENCH_PEER="$IP netns exec cli" \
	MIAMI_BENCH_PEER_ADDRS=$ADDR_A_CLI,$ADDR_B_CLI VM_OUT=$out \
	"$(dirname "$0")/../bench/guest.sh" --quick --scheds eevdf,miami,eevdf-pin | tee /tmp/bench-quick.log
check_eq "host mode: NICs and receive IRQs found" \
	"$(grep -c "host: A $NIC_A($ADDR_A_SRV, irq $IRQ_A) <- $ADDR_A_CLI; B $NIC_B($ADDR_B_SRV, irq $IRQ_B)" /tmp/bench-quick.log)" 1
check_eq "host mode: IRQ affinity put back" \
	"$(cat /proc/irq/$IRQ_A/smp_affinity_list),$(cat /proc/irq/$IRQ_B/smp_affinity_list)" 3,6
check_eq "host mode: RFS put back" \
	"$(cat /proc/sys/net/core/rps_sock_flow_entries),$(cat /sys/class/net/$NIC_A/queues/rx-0/rps_flow_cnt)" 2048,16
check_eq "host mode: kernel.bpf_stats_enabled put back" "$(sysctl -n kernel.bpf_stats_enabled)" 0
echo '{"command": "t_bench (guest.sh --quick --scheds eevdf,miami,eevdf-pin)"}' >"$out/run.json"
if python3 "$(dirname "$0")/../bench/render.py" "$out" --check --want eevdf,miami,eevdf-pin >/tmp/bench-check.txt 2>&1; then
	pass "bench --quick: sane"
else
	fail "bench --quick: $(grep -c '^FAIL' /tmp/bench-check.txt) problems"
fi
grep -E '^(## |\| |FAIL|bench check)' /tmp/bench-check.txt
check_eq "runs (1 scenario, 3 schedulers)" "$(wc -l <"$out/bench.jsonl")" 3
# Context switches (/proc/stat) are never 0 in a window with traffic; the IPI counts are read
# with them (/proc/interrupts), so a missing or unparsed file shows here.
check_eq "every run: context switches and IPIs counted" "$(python3 -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(sum(r.get("ctxt_per_s", 0) > 0 and r.get("ipi_res_per_s", 0) + r.get("ipi_cal_per_s", 0) > 0 for r in rows))' "$out/bench.jsonl")" 3
# eevdf-pin pins each receiver to the CPU where it ran most under scx_miami (/tmp/pin-mix-1.txt,
# in receiver order; their IRQ CPUs are 1 and 5 here). Pinned, each one's runtime falls in the
# tier of that CPU alone: core if it is the receiver's IRQ CPU, cache if it shares its LLC
# (0-3 or 4-7), else other. The expected shares are half per receiver (a hand derivation from
# the pins, not from the run); the measured ones must be within 0.1 each.
check_eq "eevdf-pin: placement of the pinned receivers as their pins imply" "$(python3 -c 'import json, sys
pins = [int(l) for l in open("/tmp/pin-mix-1.txt")]
want = {"core": 0.0, "cache": 0.0, "other": 0.0}
for cpu, irq in zip(pins, (1, 5)):
    want["core" if cpu == irq else "cache" if cpu // 4 == irq // 4 else "other"] += 0.5
r = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["scheduler"] == "eevdf-pin"][0]
got = r["placement"]
print("ok" if all(abs(got[k] - want[k]) <= 0.1 for k in want) else f"pins {pins}: want {want}, got {got}")' "$out/bench.jsonl")" ok
# eevdf-pin pins the ping-pong client too, to the CPU where it ran most under scx_miami
# (/tmp/pin-rr-mix-1.txt), which its run must then read as the one tier of that CPU against NIC
# A's IRQ CPU (1): every sample of a pinned task is on its CPU, so the share is 1, less at most
# 0.05 for a sample taken before the pin (taskset pins before netperf starts, so none should be).
check_eq "eevdf-pin: the ping-pong where scx_miami ran it most" "$(python3 -c 'import json, sys
pin = int(open("/tmp/pin-rr-mix-1.txt").readline())
tier = "core" if pin == 1 else "cache" if pin // 4 == 0 else "other"
r = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["scheduler"] == "eevdf-pin"][0]
got = r.get("rr_placement") or {}
print("ok" if got.get(tier, 0) >= 0.95 else f"pin {pin} ({tier}): got {got}")' "$out/bench.jsonl")" ok
# scx_miami's dispatch_moves: its own counters of dispatch() calls that moved a task, over the
# calls bpf_stats counted. Every source reported, and the moves a share of the calls: above 0
# (the mix moves tasks) and at most 1, plus 0.1 for the moves of the teardown that the exit
# totals count after the calls were read.
check_eq "miami: dispatch() moves by source, a share of its calls" "$(python3 -c 'import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["scheduler"] == "miami"][0]
m = r.get("dispatch_moves") or {}
keys = {"dsp_cpu", "dsp_shared", "dsp_steal_llc", "dsp_steal_far"}
tot = sum(m.values())
print("ok" if set(m) == keys and 0 < tot <= 1.1 else f"got {m}")' "$out/bench.jsonl")" ok
# The agent's rounds in the BPF timer, from the exit log: timed, and each shorter than the
# period it runs at (100 ms), or the timer could not keep it.
check_eq "miami: the agent's rounds timed, each within its 100 ms period" "$(python3 -c 'import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["scheduler"] == "miami"][0]
us = r.get("agent_round_us")
print("ok" if us and 0 < us < 100000 else f"got {us}")' "$out/bench.jsonl")" ok

# The paths of the harness the mix does not take, under scx_miami alone, 5 s windows, two
# receivers each (the scenario's name gives the count; with eight, as `make bench` runs them,
# the two runs took 122 s of this test's 407 in stop 57's make test, their receivers' forks
# most of it): the IRQs where irqbalance puts them and the server sending (iperf3 -R); and
# dispatch() timed by outcome (MIAMI_BENCH_TIME_DISPATCH). Second, a run that fails half-way
# (MIAMI_BENCH_FAIL: the scheduler attached, the flows up): it is recorded, what it left running
# is ended, and the run after it, which needs the scheduler gone and the same ports, goes on.
# Not first: micro-irqb-8 right after it came out with no placement in 2 of 5 runs (the probe's
# per-CPU lines were there, its tiers were not; cause not found), where first it never did.
out2=/tmp/bench-paths
mkdir -p "$out2"
rc=0
MIAMI_BENCH_FAIL=mix-1:miami MIAMI_BENCH_TIME_DISPATCH=1 VM_OUT=$out2 "$(dirname "$0")/../bench/guest.sh" \
	--only micro-irqb-2,mix-1,microtx-2n-2 --scheds miami --secs 5 | tee /tmp/bench-paths.log || rc=$?
check_eq "a failed run: the harness's exit status" "$rc" 1
check_eq "a failed run: named at the end" "$(grep -c 'bench: 1 of 3 runs failed: mix-1 under miami$' /tmp/bench-paths.log)" 1
check_eq "a failed run: recorded, with its reason" "$(python3 -c 'import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
print([(x["scenario"], "MIAMI_BENCH_FAIL=mix-1:miami" in x.get("failed", "")) for x in r])' "$out2/bench.jsonl")" \
	"[('micro-irqb-2', False), ('mix-1', True), ('microtx-2n-2', False)]"
check_eq "after the failed run: scheduler detached" "$(sched_state)" disabled
echo '{"command": "t_bench (guest.sh --only micro-irqb-2,mix-1,microtx-2n-2)"}' >"$out2/run.json"
python3 "$(dirname "$0")/../bench/render.py" "$out2" --check --want miami >/tmp/bench-check2.txt 2>&1 || true
# Indented: the expected FAIL line of render.py is not one of this test's. A crash of render.py
# shows here too (its last lines) and fails the check below, not the script.
{ grep -E '^(## |\| |FAIL|bench check)' /tmp/bench-check2.txt ||
	tail -n 5 /tmp/bench-check2.txt; } | sed 's/^/  render: /'
check_eq "bench irqb, tx: sane; the failed run the one problem" \
	"$(grep -c '^FAIL' /tmp/bench-check2.txt) $(grep -c '^FAIL: mix-1/miami: the run failed: exit 1: ' /tmp/bench-check2.txt)" "1 1"
check_eq "results.md: the failed run's row" "$(grep -c '^| miami | .*| failed (exit 1: ' "$out2/results.md")" 1
# The rows into /tmp's top level, which runall.sh keeps for the host (.cache/vm-out): stop 58's
# make test once had a run of this part without placement (render.py then ended on a KeyError,
# fixed since; --check now names the run and what its probe said). In 8 repetitions of this
# part in two boots it came back once, in microtx-2n-2 right after the failed run: the probe
# found neither server PID (no comm, no thread) over its window. Cause not found yet.
cp "$out2/bench.jsonl" /tmp/bench-paths.json
j=$out2/bench.jsonl
check_eq "irqb: where irqbalance left the IRQs, start -> end" \
	"$(python3 -c 'import json, re, sys
r = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["scenario"] == "micro-irqb-2"][0]
print(bool(re.fullmatch(r"A:[0-9]+ B:[0-9]+ -> A:[0-9]+ B:[0-9]+", r.get("irq_cpus", ""))))' "$j")" True
# Table III under scx_miami and then eevdf-pin-obs (eevdf-pin's pins, and scx_miami --observe
# attached), from the pins the scx_miami run leaves (/tmp/pin-table3-pN.txt, phase N's
# processes in A A B B C order). Under scx_miami, phase 1 has the A processes only, phase 2 A
# and B, phase 3 all three, each sending (kbit/s > 0) and placed (its shares summing to 1).
# Under eevdf-pin-obs each process is pinned as its phase starts, so a group whose pins all fall
# in one tier against the IRQ CPU (0 in table3: core if the pin is 0, cache if it is in 0-3,
# else other) reads that tier in at least 0.95 of its phase's runtime (a hand derivation from
# the pins). EEVDF left alone ran C on CPU 0 4.4% of the time (bench-20261127b), scx_miami
# nearly always: the check fails if the pins are not applied. eevdf-pin shares the pinning;
# what eevdf-pin-obs adds is checked after: the probes' cost read, and no struct_ops program
# nor --observe's context-switch probe, which scx_miami does not run (--test-observe-no-switch).
out3=/tmp/bench-t3pin
mkdir -p "$out3"
VM_OUT=$out3 "$(dirname "$0")/../bench/guest.sh" --only table3 --scheds miami,eevdf-pin-obs --secs 5
echo '{"command": "t_bench (guest.sh --only table3 --scheds miami,eevdf-pin-obs)"}' >"$out3/run.json"
if python3 "$(dirname "$0")/../bench/render.py" "$out3" --check --want miami,eevdf-pin-obs >/tmp/bench-check3.txt 2>&1; then
	pass "bench table3: sane"
else
	fail "bench table3: $(grep -c '^FAIL' /tmp/bench-check3.txt) problems"
fi
grep -E '^(\| (miami|eevdf-pin-obs) |FAIL|bench check)' /tmp/bench-check3.txt
check_eq "table3 under miami: groups per phase, each sending and placed" "$(python3 -c 'import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["scheduler"] == "miami"][0]
out = []
for ph in r["phases"]:
    g = [k for k in "ABC" if k in ph]
    ok = all(ph[k]["kbps"] > 0 and abs(ph[k]["core"] + ph[k]["cache"] + ph[k]["other"] - 1) < 0.01 for k in g)
    out.append("".join(g) + ("" if ok else "!"))
print(",".join(out))' "$out3/bench.jsonl")" "A,AB,ABC"
check_eq "table3 under eevdf-pin-obs: each group where its phase's pins imply" "$(python3 -c 'import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["scheduler"] == "eevdf-pin-obs"][0]
tier = lambda c: "core" if c == 0 else "cache" if c < 4 else "other"
groups = {"A": (0, 1), "B": (2, 3), "C": (4,)}
out = []
for ph in r["phases"]:
    pins = [int(l) for l in open("/tmp/pin-table3-p%d.txt" % ph["phase"])]
    for g in (g for g in "ABC" if g in ph):
        t = {tier(pins[i]) for i in groups[g]}
        if len(t) == 1 and (ph[g][next(iter(t))] or 0) < 0.95:
            out.append("phase %d %s: pins %s, got %s" % (ph["phase"], g, [pins[i] for i in groups[g]], ph[g]))
print(" ".join(out) or "ok")' "$out3/bench.jsonl")" ok
check_eq "eevdf-pin-obs: probes timed, no struct_ops nor context-switch probe, the loader's CPU read" "$(python3 -c 'import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["scheduler"] == "eevdf-pin-obs"][0]
p = r.get("bpf_per_prog") or {}
ok = (r.get("bpf_ns_per_probe") or 0) > 0 and r.get("bpf_ns_per_op") is None and "miami_tcp_sendmsg" in p \
    and not any(k in p for k in ("miami_dispatch", "miami_enqueue", "miami_observe_switch")) \
    and r.get("sched_cpu_s_per_s", -1) >= 0
print("ok" if ok else "got %s" % {k: r.get(k) for k in ("bpf_ns_per_probe", "bpf_ns_per_op", "bpf_per_prog", "sched_cpu_s_per_s")})' "$out3/bench.jsonl")" ok
# dispatch() by outcome: the calls that moved nothing and those that took from the CPU's own DSQ
# (both happen in every shape) timed, and the mean over all outcomes, weighted by their calls,
# against bpf_stats' ns per call of dispatch() over the window. The timed part is a subset of
# each call (not the prologue, the epilogue and the counter's update), so the ratio is at most 1
# over one span; the two spans differ (load to exit against the window), hence 0.3 to 1.5.
check_eq "dispatch() timed by outcome, against bpf_stats" "$(python3 -c 'import json, sys
out = []
for r in (json.loads(l) for l in open(sys.argv[1])):
    if r["scenario"] == "mix-1":
        continue
    us = r.get("dispatch_us") or {}
    ns, _ = (r.get("bpf_per_prog") or {}).get("miami_dispatch", (0, 0))
    n = sum(c for _, c in us.values())
    mean = sum(u * c for u, c in us.values()) / n * 1e3 if n else 0
    ok = {"dsp_none", "dsp_cpu"} <= set(us) and ns and 0.3 <= mean / ns <= 1.5
    out.append("ok" if ok else "%s: %s, bpf_stats %s ns" % (r["scenario"], us, ns))
print(" ".join(out))' "$j")" "ok ok"
finish
