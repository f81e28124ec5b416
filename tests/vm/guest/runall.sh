#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest-side driver used by tests/vm/suite.sh: runs several guest test scripts in ONE booted VM
# (a TCG boot costs 15-45 s), each in its own bash process, each from a fresh state
# (leftover processes of the test's process group killed; lib.sh vm_reset before every test:
# scx_miami stopped, iperf3 killed, netns cli deleted so the
# NICs return to the root ns, all IRQ affinities back to all CPUs, /tmp/sched.log removed).
#
#   runall.sh [--timeout SEC] TEST.sh [TEST.sh...]     (paths relative to tests/vm/tests/ or
#                                                       absolute)
#
# Per test it prints (parsed by suite.sh):
#   vm-result: NAME PASS|FAIL rc=N secs=T
# and exits non-zero if any test failed. A test also fails when sched_ext is left enabled.
# --timeout (default ${MIAMI_TEST_TIMEOUT:-480}) is per test.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tdir=$(cd "$here/../tests" && pwd)
source "$here/lib.sh"
T_NAME=runall
limit=${MIAMI_TEST_TIMEOUT:-480}
[[ ${1:-} == --timeout ]] && { limit=$2; shift 2; }

bad=0
for t in "$@"; do
	[[ $t == /* ]] || t=$tdir/$t
	name=$(basename "${t%.sh}")
	vm_reset
	echo "=== $name ($(uname -r)) ==="
	start=$EPOCHREALTIME
	if [[ -x $t ]]; then
		# timeout puts the test in its own process group: kill what it leaves behind.
		timeout -k 5 "$limit" "$t" &
		tpid=$!
		wait "$tpid"
		rc=$?
		kill -TERM -- -"$tpid" 2>/dev/null
	else
		echo "runall: no executable $t"
		rc=127
	fi
	secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	((rc == 124)) && echo "runall: $name timed out after ${limit}s"
	if [[ $(sched_state) == enabled ]]; then
		echo "runall: $name left sched_ext enabled ($(sched_ops))"
		((rc == 0)) && rc=99
	fi
	# Keep what the test left in /tmp (scheduler log, probe JSON) for the host: .cache/vm-out/.
	if [[ -n ${VM_OUT:-} ]]; then
		mkdir -p "$VM_OUT/$name"
		find /tmp -maxdepth 1 -type f \( -name '*.log' -o -name '*.json' -o -name '*.txt' -o -name '*.out' \) \
			-exec cp -t "$VM_OUT/$name/" {} + 2>/dev/null
	fi
	res=PASS; ((rc)) && { res=FAIL; bad=1; }
	echo "vm-result: $name $res rc=$rc secs=$secs"
done
vm_reset
exit $bad
