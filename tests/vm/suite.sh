#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# VM test suite (what `make test` runs for the VM part).
#
#   tests/vm/suite.sh [--kernel 7.3|7.2|6.12] [--only NAME[,NAME...]] [--verbose]
#
# For every kernel of the matrix that is cached (scripts/kernels.sh list; absent ones are
# skipped with a message) it boots ONE VM (tests/vm/run.sh, default llc2 topology, 8 CPUs) and
# runs that kernel's tests in it through tests/vm/guest/runall.sh, which gives each test a fresh
# state. Output: one line per (test, kernel)
#   PASS  t_probe       7.3   12.3s
# a "console" FAIL line when the kernel log shows BUG:/WARNING:/stall/a sched_ext error exit,
# the boots retried after the emulator's own failures (TCG's int3 trap, a vCPU's dead timers:
# tests/vm/tcg.sh; at most 2 per kernel, counted), and a last line exactly "N passed, N
# failed". Exit 1 if anything failed.
# Logs: .cache/vm-logs/suite-<kernel>.log (full console).
#
# Adding a test = one line in TESTS below: "<script in tests/vm/tests/>  <kernels...>"
# where kernels are names from KERNELS, or "default" (the default kernel only), or "all", or
# "optin" (the default kernel, only when --only names it: tests behind their own make target).
# A test that needs another guest adds "| <run.sh options>" (e.g. "| --topo llc4 --nics 4"):
# the tests with the same options share a boot of their own, after the default boot.
set -euo pipefail

KERNELS=(7.3 7.2 6.12)
TESTS=(
	"t_topology.sh        default"
	"t_probe.sh           default"
	"t_sched_basic.sh     all"
	# 6.12 only: on the default kernel t_place_multi measures the same, and more.
	"t_place_single.sh    6.12"
	"t_place_multi.sh     default"
	"t_place_sender.sh    default"
	"t_place_hogs.sh      default"
	"t_release.sh         default"
	"t_avoid_irq.sh       default"
	"t_intens.sh          default"
	"t_stats.sh           default"
	"t_agent_cap.sh       default"
	"t_repin.sh           default"
	"t_tui.sh             default"
	"t_reload.sh          default"
	"t_two_nic.sh         default"
	"t_irqbalance.sh      default"
	"t_table3.sh          default"
	"t_short_conn.sh      default"
	"t_shapes.sh          default"
	"t_auto_bounds.sh     default"
	"t_restricted.sh      default"
	"t_many_threads.sh    default"
	"t_proc_threads.sh    default"
	"t_target.sh          default"
	"t_pair_stable.sh     default"
	"t_wake_kick.sh       default"
	"t_ops.sh             default"
	# The newest and the oldest kernel; `make soak` runs its long form on every kernel.
	"t_stress.sh          7.3 6.12"
	"t_starve.sh          7.3 6.12"
	"t_irq_pinned.sh      7.3 6.12"
	"t_hotplug.sh         default"
	"t_bad_input.sh       default"
	"t_error.sh           default"
	"t_churn.sh           default"
	"t_observe.sh         default"
	"t_overload.sh        default"
	"t_bench.sh           default"
	# Table II's 4S/4N path of the bench, in a guest with four LLCs and four NIC pairs.
	"t_bench_4nic.sh      default | --topo llc4 --nics 4"
	# Last: it removes a NIC's PCI function and rescans; once the next test found no client
	# NIC for 30 s after it.
	"t_nic_hotplug.sh     default"
	# make scxtop: needs scxtop built (ten minutes of compiling).
	"t_scxtop.sh          optin"
	# make loader-cost: a benchmark, figures only.
	"t_loader_cost.sh     optin"
	# make scale: cost per call with 8 to 4,096 connections, figures.
	"t_scale.sh           optin"
	# make soak: sched_ext enabled and disabled in a loop under load (the TCG int3 trap).
	"t_attach_loop.sh     optin"
)

top=$(cd "$(dirname "$0")/../.." && pwd)
only_kernel= only_test= verbose=()
while (($#)); do
	case $1 in
	--kernel) only_kernel=$2; shift 2 ;;
	--only) only_test=${2//.sh/}; shift 2 ;;
	--verbose|-v) verbose=(--verbose); shift ;;
	*) sed -n '4,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done

# tcg_int3, tcg_rcu_hang: the emulator's guest deaths a boot is retried for.
source "$top/tests/vm/tcg.sh"

default_dir=$("$top/scripts/kernels.sh" dir default 2>/dev/null || true)
passed=0 failed=0 recap=() retried=()
# Boot kernel $1 with run.sh options $2 (a string, may be empty) for the tests after them, print
# a line per test and count them; the log is $3.
boot_tests() {
	local k=$1 opts=$2 log=$3 todo logs=() attempt=0 alog rc left t name r res secs re why where
	local bopts
	shift 3
	read -ra bopts <<<"$opts"
	echo "--- kernel $k${opts:+ ($opts)}: $*" >&2
	# One boot for all tests; after the TCG int3 trap (at most twice) a new boot runs the tests
	# that have no result yet, the interrupted one among them.
	todo=("$@")
	while :; do
		alog=$log
		((attempt)) && alog=${log%.log}.retry$attempt.log
		logs+=("$alog")
		set +e
		# The VM gets 480 s per test; one test may use up to 720 s of that. t_place_hogs
		# (8 hogs on 8 vCPUs under TCG) took 288-514 s in earlier runs.
		"$top/tests/vm/run.sh" --kernel "$k" "${bopts[@]}" --log "$alog" "${verbose[@]}" \
			--timeout $((120 + 480 * ${#todo[@]})) -- "$top/tests/vm/guest/runall.sh" \
			--timeout 720 "${todo[@]}"
		rc=$?
		set -e
		left=()
		for t in "${todo[@]}"; do grep -qa "^vm-result: ${t%.sh} " "$alog" || left+=("$t"); done
		why=
		if ((${#left[@]} && attempt < 2)); then
			if tcg_int3 "$alog"; then
				why="died of TCG's int3 trap" where=$(tcg_rip "$alog")
			elif tcg_rcu_hang "$alog"; then
				why="hung in rcu_barrier() with no scheduler of ours (a vCPU's timers died)"
				where="a hang in ${left[0]%.sh}"
			fi
		fi
		if [[ -n $why ]]; then
			attempt=$((attempt + 1))
			retried+=("$k: after $where (${#left[@]} tests left; $alog)")
			echo "RETRY kernel $k: the guest $why (docs/operations.md); a new boot for the ${#left[@]} tests left" >&2
			todo=("${left[@]}")
			continue
		fi
		break
	done
	for t in "$@"; do
		name=${t%.sh}
		r=$(cat "${logs[@]}" | grep -a "^vm-result: $name " | tail -n1 || true)
		re='vm-result: [^ ]+ (PASS|FAIL) rc=([0-9]+) secs=([0-9.]+)'
		if [[ $r =~ $re ]]; then
			res=${BASH_REMATCH[1]} secs=${BASH_REMATCH[3]}s
		else
			res=FAIL secs="no result (vm rc $rc)"
		fi
		printf '%-5s %-24s %-5s %s\n' "$res" "$name" "$k" "$secs"
		if [[ $res == PASS ]]; then passed=$((passed + 1)); continue; fi
		failed=$((failed + 1))
		# CI shows only the output's tail: the recap at the end names every failed check.
		recap+=("$name ($k):")
		# No FAIL line (the script stopped on an error): its last lines instead.
		while IFS= read -r l; do recap+=("    $l"); done < <(
			cat "${logs[@]}" | sed -n "/^=== $name (/,/^vm-result: $name /p" | grep -a '^FAIL' |
				head -n 8 | grep -a . || cat "${logs[@]}" | sed -n "/^=== $name (/,/^vm-result: $name /p" |
				grep -av '^vm-result' | tail -n 6 | cut -c1-200)
	done
	if ((rc == 3 || rc == 124)); then
		printf '%-5s %-24s %-5s %s\n' FAIL "$([[ $rc == 3 ]] && echo console || echo timeout)" "$k" "see $log"
		failed=$((failed + 1))
	fi
}
for k in "${KERNELS[@]}"; do
	[[ -z $only_kernel || $only_kernel == "$k" ]] || continue
	if ! kdir=$("$top/scripts/kernels.sh" dir "$k" 2>/dev/null); then
		echo "SKIP  kernel $k: not cached (scripts/kernels.sh fetch)"
		continue
	fi
	# The tests of each boot, by "." and run.sh options ("." = the default guest, first): an
	# associative array takes no empty key.
	declare -A group=()
	order=("")
	for line in "${TESTS[@]}"; do
		opts=
		[[ $line != *"|"* ]] || { opts=$(xargs <<<"${line#*|}"); line=${line%%|*}; }
		read -r t ks <<<"$line"
		# MIAMI_EVERY_KERNEL=t_a,t_b: those run on every kernel (make soak's long forms).
		[[ ",${MIAMI_EVERY_KERNEL:-}," != *",${t%.sh},"* ]] || ks=all
		[[ -z $only_test || ",$only_test," == *",${t%.sh},"* ]] || continue
		for kk in $ks; do
			[[ $kk != optin || -n $only_test ]] || continue
			if [[ $kk == all || $kk == "$k" || ($kk == default || $kk == optin) && $kdir == "$default_dir" ]]; then
				[[ -v group[.$opts] ]] || { [[ -z $opts ]] || order+=("$opts"); }
				group[.$opts]+="$t "
				break
			fi
		done
	done
	n=0
	for opts in "${order[@]}"; do
		[[ -n ${group[.$opts]:-} ]] || continue
		n=$((n + 1))
		log=$top/.cache/vm-logs/suite-$k.log
		[[ -z $opts ]] || log=$top/.cache/vm-logs/suite-$k-$(tr -c 'a-z0-9\n' - <<<"${opts//--/}").log
		# shellcheck disable=SC2086
		boot_tests "$k" "$opts" "$log" ${group[.$opts]}
	done
	((n)) || echo "--- kernel $k: no tests selected" >&2
	unset group
done
if ((${#recap[@]})); then
	echo "--- failed:"
	printf '%s\n' "${recap[@]}"
fi
if ((${#retried[@]})); then
	echo "--- boots retried after the emulator's own failures: ${#retried[@]}"
	printf '    %s\n' "${retried[@]}"
fi
echo "$passed passed, $failed failed"
((failed == 0))
