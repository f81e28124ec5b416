# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the scripts that boot test guests (tests/vm/suite.sh, scripts/bench.sh): the
# emulator's own guest deaths they boot again for, and what a lost bench guest had finished.
# Checked on canned logs by tests/host/tcg.sh.

# The emulator's own trap (issue 13 item 10, docs/operations.md): multi-threaded TCG can run a
# stale translation of kernel text that the kernel's text patching held as an int3 for a moment
# (static keys flip when sched_ext is enabled or disabled). The guest dies with "Oops: int3" at
# an address whose byte is no int3 any more ("Code: ... <90> ...": the patch is done), then
# "Kernel panic - not syncing: Fatal exception". True when that is the first kernel trouble in
# console log $1; only then is a boot retried, never on any other oops.
tcg_int3() {
	local first code
	first=$(grep -naE '\[ *[0-9]+\.[0-9]+\] .*(BUG:|WARNING:|Oops|Kernel panic)' "$1" | head -n 1)
	[[ $first == *"Oops: int3"* ]] || return 1
	code=$(tail -n "+${first%%:*}" "$1" | grep -am 1 'Code: ' || true)
	[[ $code =~ \<([0-9a-f]{2})\> && ${BASH_REMATCH[1]} != cc ]] &&
		grep -qa 'Kernel panic - not syncing: Fatal exception' "$1"
}

# The emulator's other one, most likely: a vCPU whose timers died (tests/vm/run.sh retries a
# boot that hangs so before its guest starts). After the start it showed as tasks blocked in
# rcu_barrier(), whose callbacks some CPU never ran, with no RCU stall report; the guest sat
# until the suite's timeout. Seen once (2026-11-29, the four-NIC 7.3 guest): `ip link set ...
# netns` in the test's network set-up, before any scheduler ran, blocked 368 s. True when console log $1's first
# kernel trouble is a hung-task report with rcu_barrier() in its stack, and no sched_ext
# scheduler was enabled since the last test began (runall.sh's "=== t_NAME" line): nothing of
# ours was scheduling. Any other hang fails the suite.
tcg_rcu_hang() {
	local first hdr
	first=$(grep -naE '\[ *[0-9]+\.[0-9]+\] .*(BUG:|WARNING:|Oops|Kernel panic|(^|[^[:alpha:]])[Ss]tall(ed|s)?([^[:alpha:]]|$)|blocked for more than)' "$1" | head -n 1)
	[[ $first == *"blocked for more than"* ]] || return 1
	hdr=$(grep -naE '^=== t_' "$1" | tail -n 1 | cut -d: -f1)
	[[ -n $hdr ]] && ((hdr < ${first%%:*})) || return 1
	! tail -n "+$hdr" "$1" | grep -qaE 'sched_ext: BPF scheduler ".*" enabled' || return 1
	tail -n "+${first%%:*}" "$1" | head -n 120 | grep -qaE '\] +rcu_barrier\+'
}

# Where a retry says the guest died: the first RIP of console log $1.
tcg_rip() {
	grep -am 1 -oE 'RIP: [^ ]+' "$1" || echo 'RIP ?'
}

# The scenarios guest.sh planned (its "bench: scenarios:" line) in console log $1 and did not
# finish ("bench: scenario done:"), comma-separated; status 1 if the log has no plan.
bench_left() {
	tr -d '\r' <"$1" | awk '
		/^bench: scenarios: / { n = split($3, plan, ","); next }
		/^bench: scenario done: / { done[$4] = 1 }
		END {
			if (!n)
				exit 1
			for (i = 1; i <= n; i++)
				if (!(plan[i] in done))
					left = left (left == "" ? "" : ",") plan[i]
			print left
		}'
}

# Append the rows of JSON lines file $2 to $3, but those of scenarios in the comma-separated
# list $1 (a dead guest's unfinished ones; "all": none). No file $2: nothing.
keep_rows() {
	[[ -s $2 ]] || return 0
	python3 -c 'import json, sys
left = set(sys.argv[1].split(","))
for line in open(sys.argv[2]):
    if line.strip() and "all" not in left and json.loads(line).get("scenario") not in left:
        sys.stdout.write(line)' "$1" "$2" >>"$3"
}
