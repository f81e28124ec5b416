#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #15 (packaging, bpftool) and #13 item 7 (exit paths), as an operator meets them:
#   - the Debian package (`make deb`, target/debian/*.deb) installs with dpkg -i into a scratch
#     root (the guest's / is the host's, read-only) and holds the binary, the unit, the flags
#     file and the docs; the unit's ExecStart, with the flags file's SCX_MIAMI_FLAGS, starts the
#     installed binary (systemd itself does not run in these guests: virtme-ng is PID 1), and
#     the unit's KillSignal (SIGINT) stops it with exit 0. The unit conflicts with scx.service;
#   - while it runs, bpftool (Debian's) names our struct_ops, our maps and the TCP probes, dumps
#     nic_cpus, and with kernel.bpf_stats_enabled shows run time on the probes;
#   - after SIGTERM (the other signal a service manager sends), sched_ext is disabled, every
#     task that existed before is alive, and neither bpftool nor the stats socket shows
#     anything of ours;
#   - after kill -9 of the loader the kernel has detached it (state disabled, no program of
#     ours), and a new instance starts over the stale socket file and serves stats;
#   - with another sched_ext scheduler loaded (tests/vm/tools/peer.bpf.c, registered with
#     bpftool) it refuses before loading anything: exit 1, the other one named and untouched.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

net_default
deb=$(ls "$VM_TOP"/target/debian/scx-miami_*.deb 2>/dev/null | tail -n 1)
[[ -n $deb ]] || { fail "no target/debian/*.deb (make deb)"; finish; }
root=/tmp/debroot
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
: >"$root/var/lib/dpkg/status"
# The scratch root's dpkg database knows no other package: dependencies are the host's.
dpkg --root="$root" --force-depends --force-not-root -i "$deb" >/tmp/dpkg.out 2>&1 ||
	{ cat /tmp/dpkg.out; fail "dpkg -i"; }
check_eq "dpkg says installed" "$(dpkg --root="$root" -s scx-miami 2>/dev/null | awk '/^Status:/ { print $4 }')" installed
for f in usr/bin/scx_miami lib/systemd/system/scx_miami.service etc/default/scx_miami \
	usr/share/doc/scx-miami/design.md usr/share/doc/scx-miami/operations.md; do
	[[ -e $root/$f ]] && pass "installed /$f" || fail "missing /$f"
done
unit=$root/lib/systemd/system/scx_miami.service
check_eq "unit conflicts with scx.service" "$(awk -F= '/^Conflicts=/ { print $2 }' "$unit")" scx.service
check_eq "unit stops with" "$(awk -F= '/^KillSignal=/ { print $2 }' "$unit")" SIGINT

# ExecStart as systemd would run it: the binary under the scratch root, $SCX_MIAMI_FLAGS from the
# installed flags file, plus the test guest's --nic (see lib.sh sched_start).
exec_start=$(awk -F= '/^ExecStart=/ { sub(/^ExecStart=/, ""); print }' "$unit")
check_eq "ExecStart" "$exec_start" '/usr/bin/scx_miami $SCX_MIAMI_FLAGS'
SCX_MIAMI_FLAGS=
# shellcheck disable=SC1090,SC1091
source "$root/etc/default/scx_miami"
# User processes (a command line; kernel threads come and go by themselves) alive now, but the
# lister and its parent (a pipeline's subshell; the sort beside it is not its parent, so the
# output goes to a file first): each must still be alive after the scheduler has come and gone.
procs() {
	python3 -c 'import os
skip = {os.getpid(), os.getppid()}
for d in os.listdir("/proc"):
    if d.isdigit() and int(d) not in skip:
        try:
            if open(f"/proc/{d}/cmdline", "rb").read():
                print(d, open(f"/proc/{d}/comm").read().strip())
        except OSError:
            pass'
}
# Twice, a second apart, keeping those in both: a process that ends by itself right then (one
# left from the boot, when this test runs first in a guest: "320" once) is no task we lost.
procs >/tmp/procs-raw && sort /tmp/procs-raw >/tmp/procs-1
sleep 1
procs >/tmp/procs-raw && sort /tmp/procs-raw | comm -12 /tmp/procs-1 - >/tmp/procs-before
sysctl -q kernel.bpf_stats_enabled=1
# shellcheck disable=SC2086
MIAMI_BIN=$root/usr/bin/scx_miami sched_start $SCX_MIAMI_FLAGS
iperf_server 5201 "$ADDR_A_SRV"
iperf_client cli "$ADDR_A_SRV" 5201 2 >/dev/null

bpftool struct_ops show >/tmp/bt-so.txt 2>&1 || true
bpftool map show >/tmp/bt-maps.txt 2>&1 || true
bpftool prog show >/tmp/bt-progs.txt 2>&1 || true
bpftool map dump name nic_cpus >/tmp/bt-nic.txt 2>&1 || true
check_eq "bpftool struct_ops: miami_ops" "$(grep -c 'miami_ops' /tmp/bt-so.txt)" 1
for m in sock_ctx_stor task_ctx_stor net_tasks nic_cpus policy_moves cpu_ctx_stor stats; do
	grep -q "name $m " /tmp/bt-maps.txt && pass "bpftool map: $m" || fail "bpftool map: no $m"
done
check_ge "bpftool map dump nic_cpus: entries" "$(grep -c '"key"\|^key' /tmp/bt-nic.txt)" 2
for p in miami_tcp_send miami_tcp_recv miami_tcp_rcv_e miami_tcp_close; do
	line=$(grep -A2 "name $p" /tmp/bt-progs.txt | tr '\n' ' ')
	[[ $line == *run_time_ns* ]] && pass "bpftool prog: $p with run time" || fail "bpftool prog: $p: $line"
done

# Stop with SIGTERM: the run loop detaches and reports, like SIGINT.
kill -TERM "$SCHED_PID"
rc=0
for i in $(seq 100); do kill -0 "$SCHED_PID" 2>/dev/null || break; sleep 0.1; done
wait "$SCHED_PID" || rc=$?
SCHED_PID=
check_eq "exit status after SIGTERM" "$rc" 0
check_eq "sched_ext state" "$(sched_state)" disabled
sysctl -q kernel.bpf_stats_enabled=0
procs >/tmp/procs-raw && sort /tmp/procs-raw >/tmp/procs-after
log "user processes before the scheduler: $(wc -l </tmp/procs-before), after: $(wc -l </tmp/procs-after)"
# By PID; named by the comm they had before.
check_eq "processes from before the scheduler that are gone" \
	"$(awk 'NR == FNR { alive[$1] = 1; next } !($1 in alive) { print $1 "(" $2 ")" }' \
		/tmp/procs-after /tmp/procs-before | paste -sd, -)" ""
check_eq "bpftool: struct_ops left" "$(bpftool struct_ops show 2>/dev/null | grep -c miami || true)" 0
check_eq "bpftool: programs left (10 s)" "$(progs_left)" 0
check_eq "stats socket left" "$([[ -e /var/run/scx/root/stats ]] && echo yes || echo no)" no

# kill -9 of the loader: nothing runs its exit path; the kernel detaches the scheduler when the
# loader's file descriptors close. A new instance then starts over the stale socket file.
MIAMI_BIN=$root/usr/bin/scx_miami sched_start
kill -KILL "$SCHED_PID"
wait "$SCHED_PID" 2>/dev/null || true
SCHED_PID=
for i in $(seq 50); do [[ $(sched_state) == disabled ]] && break; sleep 0.1; done
check_eq "after kill -9: sched_ext state" "$(sched_state)" disabled
# The kernel frees the programs after the last reference goes, in deferred work: under TCG a
# check right after "disabled" still listed all 8.
check_eq "after kill -9: programs left (10 s)" "$(progs_left)" 0
check_eq "after kill -9: the stats socket file stays (nothing removed it)" \
	"$([[ -S /var/run/scx/root/stats ]] && echo yes || echo no)" yes
if MIAMI_BIN=$root/usr/bin/scx_miami sched_start; then pass "a new instance starts after kill -9"; else fail "no restart after kill -9"; fi
check_ge "it serves stats on the socket" \
	"$(timeout -s INT 3 "$root/usr/bin/scx_miami" --monitor 0.5 2>/dev/null | grep -c '^irq_cpus' || true)" 1
sched_stop && pass "stopped with exit 0" || fail "sched_stop"

# Another sched_ext scheduler loaded (peer_fifo: a name and no callbacks, registered by bpftool
# with its link pinned under /sys/fs/bpf/miami_peer; vm_reset removes it if this test does not):
# scx_miami refuses as it does a second instance of itself (t_sched_basic): exit 1, the other
# scheduler named and left running.
peer_start || fail "peer_fifo did not load"
rc=0
"$root/usr/bin/scx_miami" >/tmp/other.out 2>&1 || rc=$?
tail -n 2 /tmp/other.out
check_eq "with peer_fifo loaded: exit code" "$rc" 1
check_ge "... the message names it" \
	"$(grep -c 'another sched_ext scheduler is already running: peer_fifo ' /tmp/other.out || true)" 1
check_eq "... peer_fifo still loaded" "$(sched_state) $(sched_ops)" "enabled peer_fifo"
peer_stop
check_eq "... and gone once its link is unpinned" "$(sched_state)" disabled
finish
