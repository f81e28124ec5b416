#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The whole test suite (`make test`, after the build). Steps, each counted:
#   1. cargo fmt --check                      (1 check)
#   2. cargo clippy -D warnings               (1 check)
#   3. host tests: cargo test                 (every test counts), and --observe on this host's
#      kernel (tests/host/observe.sh), and the short form of `make overhead`
#      (tests/host/overhead.sh), and the bench renderer's arithmetic (tests/host/render.sh), and
#      which guest deaths the VM scripts boot again for (tests/host/tcg.sh; all four: every
#      check counts)
#   4. VM suite: tests/vm/suite.sh            (every test x kernel counts; the BPF object is
#      loaded, i.e. verified, on every kernel of the matrix)
# Ends with one line "N passed, N failed" and exits non-zero if anything failed.
#   scripts/test.sh [--no-vm]
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
passed=0 failed=0
t0=$(date +%s)
step() { printf '\n=== %s (%ds)\n' "$1" $(($(date +%s) - t0)); }
count() { if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $*"; fi; }

step "cargo fmt --check"
count cargo fmt --all --check

step "cargo clippy"
count cargo clippy --release --workspace --all-targets -- -D warnings

step "host tests"
cargo test --release --workspace 2>&1 | tee /tmp/miami-host-tests.log
rc=${PIPESTATUS[0]}
p=$(awk '/^test result:/ { for (i = 1; i <= NF; i++) if ($(i+1) ~ /^passed/) s += $i } END { print s + 0 }' /tmp/miami-host-tests.log)
f=$(awk '/^test result:/ { for (i = 1; i <= NF; i++) if ($(i+1) ~ /^failed/) s += $i } END { print s + 0 }' /tmp/miami-host-tests.log)
passed=$((passed + p)) failed=$((failed + f))
((rc == 0 || f > 0)) || failed=$((failed + 1)) # a build error fails the step without a count

# A host script of PASS/FAIL lines: each line counts, and a failure without one counts one.
host_checks() {
	local log=/tmp/miami-$1.log p f rc
	"tests/host/$1.sh" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	p=$(grep -c '^PASS' "$log") f=$(grep -c '^FAIL' "$log")
	passed=$((passed + p)) failed=$((failed + f))
	((rc == 0 || f > 0)) || failed=$((failed + 1))
}

step "--observe on this host's kernel (BTF, no sched_ext; fentry or tracepoints)"
host_checks observe

step "the bench harness: its split of scx_miami's figure (render.py, a made-up run), its --scheds checks"
host_checks render

step "guests lost to the emulator (TCG's int3 trap, a hang in rcu_barrier()): the checks suite.sh and bench.sh boot again on"
host_checks tcg

step "make overhead, short form (one round of 1-second runs; the figures are make overhead's)"
host_checks overhead

if [[ ${1:-} != --no-vm ]]; then
	step "VM suite"
	tests/vm/suite.sh 2>&1 | tee /tmp/miami-vm-tests.log
	rc=${PIPESTATUS[0]}
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' /tmp/miami-vm-tests.log | tail -n1)
	p=$(awk '{ print $1 }' <<<"$line") f=$(awk '{ print $3 }' <<<"$line")
	passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0}))
	((rc == 0 || ${f:-0} > 0)) || failed=$((failed + 1))
fi

printf '\nwall time %ds\n' $(($(date +%s) - t0))
echo "$passed passed, $failed failed"
((failed == 0))
