#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #15: scxtop, the scx project's observability tool (1.1.4 from the crate registry, built
# by `make scxtop` into .cache/scxtop: ten minutes of compiling, so not part of `make test`),
# against a running scx_miami with one bulk flow. Its MCP server, in one-shot mode, answers
# JSON-RPC requests on stdin: what it shows an operator, read without a terminal.
#   - scheduler://current (from /sys/kernel/sched_ext): active, and named after our ops;
#   - stats://scheduler/raw (our stats socket, scx_stats protocol): the metadata names our
#     `miami` object, and the stats carry our counters and the receiver's task row;
#   - bpf://programs: our struct_ops and TCP probe programs are listed;
#   - the TUI, in a tmux terminal: its first screen (process table and CPU bars, no scheduler
#     name) is printed; then `s`, its scheduler view (keymap.rs: SetState(Scheduler)), must
#     name our ops in its title (render/scheduler.rs), and `q` must end it within 30 s (it
#     detaches its own BPF programs first: it had not quit 2 s after q in the first run).
# docs/operations.md (scxtop) says what the TUI shows of the same.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

scxtop=$VM_TOP/.cache/scxtop/bin/scxtop
[[ -x $scxtop ]] || { fail "no $scxtop: make scxtop builds it"; finish; }
net_default
iperf_server 5201 "$ADDR_A_SRV"
srv=$IPERF_SERVER_PID
iperf_client_bg /tmp/scxtop-cl.out cli "$ADDR_A_SRV" 5201 3600
cl=$IPERF_CLIENT_PID
wait_streaming "$srv"
sched_start
sleep 3
req() { printf '{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"%s"}}\n' "$1" "$2"; }
{
	printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t_scxtop","version":"0"}}}'
	req 1 scheduler://current
	req 2 stats://scheduler/raw
	req 3 bpf://programs
} | timeout 60 "$scxtop" mcp >/tmp/scxtop.out 2>/tmp/scxtop.err || log "scxtop mcp exit $?"
ops=$(sched_ops)
# The TUI in a real terminal (tmux): its screen after it has loaded its own BPF programs
# (the first screen is printed; see the header).
export TERM=xterm-256color
on_exit "tmux kill-server 2>/dev/null"
tmux new-session -d -s scxtop -x 200 -y 50 "$scxtop"
# Under TCG it takes over 15 s to load its BPF programs and draw (a key sent before that is
# echoed by the terminal, not read by scxtop): wait for a first screen, then for the name.
screen() { tmux capture-pane -p -t scxtop >"$1" 2>/dev/null || true; }
t0=$SECONDS
until screen /tmp/scxtop-screen.txt; grep -q '[^[:space:]]' /tmp/scxtop-screen.txt || ((SECONDS - t0 >= 90)); do sleep 1; done
start_s=$((SECONDS - t0))
sleep 2
tmux send-keys -t scxtop s
t0=$SECONDS
until screen /tmp/scxtop-sched.txt; grep -qF "$ops" /tmp/scxtop-sched.txt || ((SECONDS - t0 >= 20)); do sleep 1; done
tmux send-keys -t scxtop q
t0=$SECONDS
while tmux has-session -t scxtop 2>/dev/null && ((SECONDS - t0 < 30)); do sleep 0.5; done
quit_s=$((SECONDS - t0))
tmux has-session -t scxtop 2>/dev/null && quit_s=never
python3 - "$srv" /tmp/scxtop.out >/tmp/scxtop.txt 2>&1 <<'PY' || true
import json, os, sys
srv, path = sys.argv[1], sys.argv[2]
res = {}
for line in open(path):
    d = json.loads(line)
    if "contents" in d.get("result", {}):
        res[d["id"]] = json.loads(d["result"]["contents"][0]["text"])
cur = res.get(1, {})
print("current", cur.get("active"), cur.get("name"))
raw = res.get(2, {})
meta, stats = raw.get("stats_meta", {}), raw.get("stats", {})
print("meta", " ".join(sorted(meta)) if isinstance(meta, dict) else "none")
print("probe_recv", stats.get("probe_recv", "none"))
mine = set(int(t) for t in os.listdir(f"/proc/{srv}/task")) if os.path.isdir(f"/proc/{srv}/task") else set()
print("receiver_rows", sum(1 for t in stats.get("tasks", []) if t.get("tid") in mine))
# bpftool-style names: BPF keeps the first 15 characters of a program's name.
names = json.dumps(res.get(3, {}))
for p in ("miami_enqueue", "miami_select_cp", "miami_tcp_recvm", "miami_tcp_sendm"):
    print("prog", p, names.count(p))
PY
kill "$cl" "$srv" 2>/dev/null || true
sed 's/^/  | /' /tmp/scxtop.txt
sed 's/^/  ! /' /tmp/scxtop.err | tail -n 5
echo "--- scxtop's screen, first 20 lines (drawn ${start_s} s after start):"
head -n 20 /tmp/scxtop-screen.txt | sed 's/^/  > /'
echo "--- after s (scheduler view), first 10 lines; q ended it after ${quit_s} s:"
head -n 10 /tmp/scxtop-sched.txt | sed 's/^/  > /'
sched_stop || fail "sched_stop"
val() { awk -v k="$1" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }' /tmp/scxtop.txt; }
check_eq "scxtop scheduler://current (active, name)" "$(val current)" "True $ops"
check_eq "scxtop stats://scheduler/raw metadata" "$(val meta)" "miami miami_cpu miami_task"
check_ge "scxtop stats: probe_recv since start" "$(val probe_recv)" 1
check_ge "scxtop stats: task rows of the receiver" "$(val receiver_rows)" 1
for p in miami_enqueue miami_select_cp miami_tcp_recvm miami_tcp_sendm; do
	check_ge "scxtop bpf://programs lists $p" "$(awk -v p="$p" '$1 == "prog" && $2 == p { print $3 }' /tmp/scxtop.txt)" 1
done
check_ge "scxtop TUI after s: lines naming $ops" "$(grep -cF "$ops" /tmp/scxtop-sched.txt || true)" 1
check_le "scxtop TUI: seconds from q to its end" "$quit_s" 30
finish
