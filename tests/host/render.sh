#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/vm/bench/render.py's split of scx_miami's figure over packing, probes and loader, and
# scheduling (issue 14 §5), and its struct_ops cost against scx_bpfland's per call and per
# second, on a made-up run whose ratios are worked out by hand below. The VM tier's t_bench
# renders real runs; this checks the arithmetic and the attribution.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# One line per run: scenario, scheduler, main figure (Gbit/s, or mix's ping-pong trans/s too).
row() { # scenario scheduler gbps [rr_trans_per_s]
	local rr=
	[[ -z ${4:-} ]] || rr=", \"rr_trans_per_s\": $4, \"rr_wait_us\": 100, \"rr_placement\": {\"core\": 1.0, \"cache\": 0.0, \"other\": 0.0}"
	echo "{\"scenario\": \"$1\", \"scheduler\": \"$2\", \"gbps_total\": $3, \"placement\": {\"core\": 0.5, \"cache\": 0.5, \"other\": 0.0}, \"queued_share\": 0.1$rr}"
}
{
	# a: 0.90x EEVDF, all of it packing (0.9/1.0); the other two parts 1.00x. Not scx_miami's.
	row a eevdf 1.0; row a eevdf-pin 0.9; row a eevdf-pin-obs 0.9; row a miami 0.9
	# b: scheduling 0.4/0.5 = 0.80x, the whole loss: scx_miami's own.
	row b eevdf 0.5; row b eevdf-pin 0.5; row b eevdf-pin-obs 0.5; row b miami 0.4
	# c: each part 0.97x, together 0.97^3 = 0.91x: below, but no one part is.
	row c eevdf 1.0; row c eevdf-pin 0.97; row c eevdf-pin-obs 0.9409; row c miami 0.912673
	# mix-1: Gbit/s even (1.00x); the ping-pongs 450/500 = 0.90x from the probes (450/500), the
	# scheduling 1.00x: scx_miami's own.
	row mix-1 eevdf 0.3 500; row mix-1 eevdf-pin 0.3 500; row mix-1 eevdf-pin-obs 0.3 450
	row mix-1 miami 0.3 450
	# d: no eevdf-pin-obs run, so no split row.
	row d eevdf 1.0; row d eevdf-pin 1.0; row d miami 0.5
	# e: the struct_ops cost, per call and per second. scx_miami: dispatch() 2,000 ns x 100 a
	# second and enqueue() 1,000 ns x 100 (0.2 + 0.1 = 0.3 ms/s over 200 calls: 1,500 ns per call);
	# its send probe (500 ns x 1,000) is no callback. scx_bpfland: dispatch() 1,000 ns x 200 and
	# runnable() 100 ns x 1,000 (0.2 + 0.1 = 0.3 ms/s over 1,200 calls: 250 ns). So 6.00x per call
	# and 1.00x per second.
	row e eevdf 1.0
	row e miami 1.0 | sed 's/}$/, "bpf_ns_per_op": 1500, "bpf_per_prog": {"miami_dispatch": [2000, 100], "miami_enqueue": [1000, 100], "miami_tcp_sendmsg": [500, 1000]}}/'
	row e bpfland 1.0 | sed 's/}$/, "bpf_ns_per_op": 250, "bpf_per_prog": {"bpfland_dispatch": [1000, 200], "bpfland_runnable": [100, 1000]}}/'
} >"$out/bench.jsonl"

# A run of a scratch build (scripts/bench.sh records MIAMI_BIN and a note says what it was).
echo '{"command": "scripts/bench.sh --only a", "note": "a scratch build", "scx_miami": "scx_miami 0.1.0-gabc", "miami_bin": "/tmp/scx_miami.x"}' >"$out/run.json"
python3 "$top/tests/vm/bench/render.py" "$out" >/dev/null 2>"$out/err" ||
	fail "render.py exited $?: $(tail -n 3 "$out/err")"
md=$out/results.md
check_eq "the run's note and MIAMI_BIN in the header" "$(grep -E '^- (note|miami_bin):' "$md")" \
	"- note: a scratch build
- miami_bin: /tmp/scx_miami.x"
expect() { # label, the row's cells after the figures
	local got
	got=$(grep -E "^\| $1 \| (Gbit/s|RR trans/s):" "$md" | sed 's/^| [^|]* | [^|]* | //')
	check_eq "split row $1" "$got" "$2"
}
expect a "0.90x | 1.00x | 1.00x | 0.90x | packing |"
expect b "1.00x | 1.00x | 0.80x | 0.80x | scheduling |"
expect c "0.97x | 0.97x | 0.97x | 0.91x | no one part below 0.95x |"
expect mix-1 "1.00x | 1.00x | 1.00x | 1.00x | - |"
expect "mix-1 ping-pongs" "1.00x | 0.90x | 1.00x | 0.90x | probes and loader |"
check_eq "figures of row b" "$(grep -E '^\| b \| Gbit/s' "$md" | cut -d'|' -f3 | xargs)" \
	"Gbit/s: 0.500 / 0.500 / 0.500 / 0.400"
check_eq "rows without an eevdf-pin-obs run" "$(grep -cE '^\| d \| Gbit/s:' "$md")" 0
check_eq "the goal line" "$(grep '^- Below 0.95x EEVDF:' "$md")" \
	"- Below 0.95x EEVDF: 4; of them with a part of scx_miami's own (probes and loader or scheduling) below 0.95x: 2 (b, mix-1 ping-pongs)."

check_eq "struct_ops per call and per second (e)" \
	"$(grep -E '^\| e \| ' "$md" | head -1 | awk -F' \\| ' '{ print $8 " | " $9 }')" \
	"1,500 / 250 = 6.00x | 0.3 / 0.3 = 1.00x"

# A run without eevdf-pin-obs has no split section at all.
grep -v eevdf-pin-obs "$out/bench.jsonl" >"$out/b2" && mv "$out/b2" "$out/bench.jsonl"
python3 "$top/tests/vm/bench/render.py" "$out" >/dev/null 2>&1
check_eq "split section without eevdf-pin-obs" "$(grep -c '^## Where scx_miami' "$md")" 0

# guest.sh --repeat's runs of one case make one row: each number the median over the runs, the
# placement that of the run with the median main figure, the main figure's range beside it.
# EEVDF: 1.0, 0.8, 0.9 Gbit/s, so 0.900 (0.800-1.000). scx_miami: 0.6, 0.9, 0.3 (median 0.6, the
# first run, whose core share is 70% where the others' are 20% and 100%), run-queue shares 0.1,
# 0.3, 0.2 (median 20%). Against EEVDF, run by run: 0.6/1.0, 0.9/0.8, 0.3/0.9 = 0.60, 1.125,
# 0.33, so 0.60x (the ratio of the medians would be 0.67x).
rep() { # scheduler rep gbps core queued
	echo "{\"scenario\": \"f\", \"scheduler\": \"$1\", \"rep\": $2, \"gbps_total\": $3, \"placement\": {\"core\": $4, \"cache\": $(python3 -c "print(round(1 - $4, 2))"), \"other\": 0.0}, \"queued_share\": $5}"
}
{
	rep eevdf 1 1.0 0.5 0.1; rep miami 1 0.6 0.7 0.1
	rep eevdf 2 0.8 0.5 0.1; rep miami 2 0.9 0.2 0.3
	rep eevdf 3 0.9 0.5 0.1; rep miami 3 0.3 1.0 0.2
} >"$out/bench.jsonl"
python3 "$top/tests/vm/bench/render.py" "$out" >/dev/null 2>&1
check_eq "--repeat: EEVDF's row" "$(grep -E '^\| eevdf \| ' "$md" | cut -d'|' -f3,4 | xargs)" "3 | 0.900 (0.800-1.000)"
check_eq "--repeat: scx_miami's row (runs, Gbit/s, core, queued)" \
	"$(grep -E '^\| miami \| ' "$md" | cut -d'|' -f3,4,5,8 | xargs)" "3 | 0.600 (0.300-0.900) | 70.0% | 20.0%"
check_eq "--repeat: the summary's ratio, the median of the runs' own" "$(grep -E '^\| f \| ' "$md" | cut -d'|' -f4 | xargs)" "0.60x"
# A run that failed among others is a problem for --check, named with its repetition.
echo '{"scenario": "f", "scheduler": "miami", "rep": 4, "failed": "exit 1: boom"}' >>"$out/bench.jsonl"
python3 "$top/tests/vm/bench/render.py" "$out" --check --want eevdf,miami >"$out/check" 2>&1
check_eq "--repeat: a failed run among them, --check's exit status" "$?" 1
check_eq "... and its line" "$(grep -c '^FAIL: f/miami: run 4: exit 1: boom$' "$out/check")" 1
# A run whose probe gave no placement (guest.sh writes null and what the probe said): the
# summary shows no share for it instead of render.py ending on a KeyError (t_bench in stop 58's
# make test), and --check names it with the probe's words.
{
	row g eevdf 1.0
	echo '{"scenario": "g", "scheduler": "miami", "gbps_total": 1.0, "placement": null, "queued_share": 0.1, "probe_said": "probe: no samples"}'
} >"$out/bench.jsonl"
python3 "$top/tests/vm/bench/render.py" "$out" --check --want eevdf,miami >"$out/check" 2>&1
check_eq "no placement: --check's exit status" "$?" 1
check_eq "... the summary row, scx_miami's share '-'" "$(grep -E '^\| g \| ' "$md" | cut -d'|' -f3 | xargs)" "- / 100.0% / -"
check_eq "... and its line" "$(grep -c '^FAIL: g/miami: placement shares None; the probe said: probe: no samples$' "$out/check")" 1

# guest.sh refuses a --scheds or --repeat it cannot run as asked, and exits before it touches the
# machine: an unknown name used to run as EEVDF, and an eevdf-pin before miami was skipped with a
# line in the log. Were a check gone, guest.sh would go on to set up the guest's network here: under
# unshare -n, so that nothing of the host's moves, and a namespace it made is taken back.
refused() { # what the message must say, guest.sh's arguments
	local msg rc had=0 want=$1
	shift
	[[ -e /run/netns/cli ]] && had=1
	msg=$(VM_OUT=$out unshare -n bash "$top/tests/vm/bench/guest.sh" "$@" --only none 2>&1 >/dev/null)
	rc=$?
	((had)) || [[ ! -e /run/netns/cli ]] || ip netns del cli
	check_eq "guest.sh $*: exit status" "$rc" 2
	check_eq "... says why ('$want')" "$(grep -cF -e "$want" <<<"$msg")" 1
}
refused "eevdf-pin pins the tasks where scx_miami ran them in the same scenario, so miami must come before it" \
	--scheds eevdf-pin,miami
refused "unknown scheduler 'eevfd'" --scheds miami,eevdf-pin-obs,eevdf,eevfd
MIAMI_BPFLAND=/nonexistent refused "bpfland needs MIAMI_BPFLAND" --scheds eevdf,bpfland
refused "--repeat 0: want a whole number of runs, 1 or more" --repeat 0

# tests/vm/bench/wakeups.py (MIAMI_BENCH_WAKE_TRACE) on a made-up trace of two CPUs, task 100
# measured, task 200 not: 100 sleeps on CPU 0 at 1.000000; a softirq on CPU 1 wakes it at 1.001000
# onto idle CPU 0, its previous CPU, where it runs at 1.001500 (500 us) until 1.002000 (run 500
# us); task 200 on CPU 1 wakes it at 1.003000 (slept 1,000 us) onto busy CPU 1, its waker's, where
# it runs at 1.005000 (2,000 us) until preempted at 1.005100 (run 100 us). So: 2 wakeups; half to
# the previous CPU, half to the waker's, half to an idle one, half from a softirq, none ran
# elsewhere; delays 500 and 2,000 us (mean 1,250, the upper one the median of two), runs 500 and
# 100 (mean 300), sleeps 1,000 and 1,000, one stay preempted.
sw() { echo "  $1-$2 [00$3] d..2. $4: sched_switch: prev_comm=$1 prev_pid=$2 prev_prio=120 prev_state=$5 ==> next_comm=n next_pid=$6 next_prio=120"; }
wk() { echo "  $1-$2 [00$3] d$4. $5: sched_$6: comm=c pid=100 prio=120 target_cpu=00$7"; }
{
	sw x 200 1 1.000000 R 200
	sw c 100 0 1.000000 S 0
	wk '<idle>' 0 1 .s2 1.001000 waking 0
	wk '<idle>' 0 1 .s2 1.001010 wakeup 0
	sw '<idle>' 0 0 1.001500 R 100
	sw c 100 0 1.002000 S 0
	wk x 200 1 ..2 1.003000 waking 0
	wk x 200 1 ..2 1.003010 wakeup 1
	sw x 200 1 1.005000 R 100
	sw c 100 1 1.005100 R+ 200
} >"$out/trace"
w=$(python3 "$top/tests/vm/bench/wakeups.py" "$out/trace" c=100 | python3 -c 'import json, sys
c = json.load(sys.stdin)["c"]
print(c["wakeups"], c["to_prev_cpu"], c["to_waker_cpu"], c["to_idle_cpu"], c["from_softirq"], c["ran_elsewhere"],
      *(c[k][f] for k in ("delay", "delay_idle_cpu", "delay_busy_cpu", "run", "sleep") for f in ("n", "p50_us", "mean_us")),
      c["preempted"])')
check_eq "wakeups.py: wakeups, to previous / waker's / idle CPU, from softirq, ran elsewhere" \
	"$(cut -d' ' -f1-6 <<<"$w")" "2 0.5 0.5 0.5 0.5 0.0"
check_eq "... delay n, p50, mean: all, to an idle CPU, to a busy one" "$(cut -d' ' -f7-15 <<<"$w")" \
	"2 2000.0 1250.0 1 500.0 500.0 1 2000.0 2000.0"
check_eq "... runs, sleeps (n, p50, mean), preempted" "$(cut -d' ' -f16-22 <<<"$w")" \
	"2 500.0 300.0 2 1000.0 1000.0 1"

echo "render: $passed passed, $failed failed"
((failed == 0))
