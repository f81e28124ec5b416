#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #13 test 9 (the error path itself), with the hidden --test-inject-error option:
#   - error@2: 2 s after attaching, dispatch() calls scx_bpf_error(). The kernel ejects the
#     scheduler (every task back to the fair class); scx_miami prints the exit info with our
#     message, exits 1, and leaves nothing attached (no program of ours, no stats socket).
#     The runner lets this one "disabled (runtime error)" through: its next kernel lines say
#     "test error injected"; any other still fails the run;
#   - restart@2: dispatch() exits with a restart request; the restart loop loads the scheduler
#     again (the log says so, the state is enabled again within 5 s, once: the injection is once
#     per process), and SIGINT then ends it with exit 0.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami}
net_default
sched_start --test-inject-error error@2
rc=0
for i in $(seq 100); do kill -0 "$SCHED_PID" 2>/dev/null || break; sleep 0.1; done
wait "$SCHED_PID" || rc=$?
SCHED_PID=
grep -E 'EXIT|injected|error' "$SCHED_LOG" | head -n 8
check_eq "exit status after a BPF error" "$rc" 1
check_eq "sched_ext state" "$(sched_state)" disabled
check_ge "exit info names our message" "$(grep -c 'test error injected' "$SCHED_LOG")" 1
check_eq "programs left (10 s)" "$(progs_left)" 0
check_eq "stats socket left" "$([[ -e /var/run/scx/root/stats ]] && echo yes || echo no)" no

sched_start --test-inject-error restart@2
t0=$SECONDS
for i in $(seq 100); do grep -q 'the kernel asked for a restart' "$SCHED_LOG" && break; sleep 0.1; done
for i in $(seq 50); do [[ $(sched_state) == enabled ]] && break; sleep 0.1; done
state=$(sched_state)
sleep 3 # no second injection: it stays enabled
check_eq "restarts logged" "$(grep -c 'the kernel asked for a restart' "$SCHED_LOG")" 1
check_eq "state after the restart" "$state $(sched_state)" "enabled enabled"
check_eq "loader still running" "$(kill -0 "$SCHED_PID" 2>/dev/null && echo yes)" yes
sched_stop >/dev/null && pass "stopped with exit 0 after a restart" || fail "sched_stop"
finish
