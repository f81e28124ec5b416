#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue #13 test 8 (bad input to a running scheduler; bad command lines are host tests in
# tests/it/cli.rs and tests/it/config.rs):
#   - the stats socket gets garbage, a request cut short, a 4 MiB line, a request sent one byte
#     a second, and 100 clients at once. Each garbage text line gets an error reply (errno != 0);
#     a line that is not UTF-8 has its connection closed (scx_stats reads lines as strings), and
#     the next client is served; the cut and slow ones are dropped or answered, every one of the 100 gets the stats object, and
#     meanwhile a normal client keeps being served (a read within 2 s while the slow client
#     trickles);
#   - the --config file gets garbage, then 8 MiB of it, then vanishes, with a SIGHUP after each:
#     each is logged as refused and the running values stay (--monitor shows them);
#   - through all of it the scheduler stays enabled and exits 0 at the end.
set -euo pipefail
source "$(dirname "$0")/../guest/lib.sh"

bin=${MIAMI_BIN:-$VM_TOP/target/release/scx_miami}
net_default
conf=/tmp/miami.conf
printf 'max-migrations = 3\n' >"$conf"
sched_start --config "$conf"

python3 - >/tmp/abuse.txt 2>&1 <<'PY'
import json, socket, threading, time
PATH = "/var/run/scx/root/stats"
def conn():
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(PATH)
    return s
def reply(s):
    buf = b""
    while not buf.endswith(b"\n"):
        b = s.recv(1 << 16)
        if not b:
            return None
        buf += b
    return json.loads(buf)
def ask(payload):
    s = conn()
    s.sendall(payload)
    try:
        return reply(s)
    finally:
        s.close()
STATS = b'{"req":"stats","args":{"target":"top"}}\n'
# 1. garbage lines
for g in (b"hello\n", b"{\n", b'{"req":42}\n', b'{"req":"nosuch"}\n', b"\x00\xff\xfe\n"):
    r = ask(g)
    print("garbage", g[:12], "errno", r and r["errno"], "next_ok", int(ask(STATS)["errno"] == 0))
# 2. cut short: half a request, then close
s = conn(); s.sendall(STATS[:10]); s.close()
print("cut sent")
# 3. a 4 MiB line
r = ask(b"x" * (4 << 20) + b"\n")
print("oversized errno", r and r["errno"])
# 4. a slow client (a byte a second) while a normal one is served
slow = conn()
def trickle():
    try:
        for b in STATS[:6]:
            slow.send(bytes([b])); time.sleep(1)
    except OSError:
        pass
t = threading.Thread(target=trickle); t.start()
time.sleep(1.5)
t0 = time.monotonic(); r = ask(STATS); dt = time.monotonic() - t0
print("served_during_slow", int(r is not None and r["errno"] == 0 and "irq_cpus" in json.dumps(r)), "secs", round(dt, 2))
t.join(); slow.close()
# 5. 100 clients at once
ok = [0]
slowest = [0.0]
lock = threading.Lock()
def one():
    t0 = time.monotonic()
    try:
        r = ask(STATS)
        if r and r["errno"] == 0:
            with lock:
                ok[0] += 1
                slowest[0] = max(slowest[0], time.monotonic() - t0)
    except OSError as e:
        print("client error", e, "after", round(time.monotonic() - t0, 2), "s")
t0 = time.monotonic()
ths = [threading.Thread(target=one) for _ in range(100)]
for th in ths: th.start()
for th in ths: th.join()
print("parallel_ok", ok[0], "slowest", round(slowest[0], 2), "all", round(time.monotonic() - t0, 2))
PY
cat /tmp/abuse.txt
check_eq "garbage text lines answered with an error" \
	"$(grep -c '^garbage .* errno [1-9]' /tmp/abuse.txt)" 4
check_eq "a line that is not UTF-8: connection closed" "$(grep -c '^garbage .* errno None' /tmp/abuse.txt)" 1
check_eq "after each garbage line the next client served" "$(grep -c '^garbage .* next_ok 1' /tmp/abuse.txt)" 5
check_eq "a 4 MiB line answered with an error" "$(awk '/^oversized/ { print ($3 > 0) }' /tmp/abuse.txt)" 1
check_eq "a normal client served while one trickles" "$(awk '/^served_during_slow/ { print $2 }' /tmp/abuse.txt)" 1
check_le "... within (s)" "$(awk '/^served_during_slow/ { print $4 }' /tmp/abuse.txt)" 2
check_eq "of 100 clients at once, served" "$(awk '/^parallel_ok/ { print $2 }' /tmp/abuse.txt)" 100
check_eq "state after the socket abuse" "$(sched_state)" enabled

live() { timeout -s INT 3 "$bin" --monitor 0.5 2>/dev/null | awk '/^agent:/ { for (i = 1; i <= NF; i++) if ($i == "(cap") { sub(/\),?/, "", $(i + 1)); print $(i + 1); exit } }' || true; }
check_eq "cap from the --config file" "$(live)" 3
printf 'max-migrations = 3\nthis is not a setting\n' >"$conf"
kill -HUP "$SCHED_PID"; sleep 1
head -c 8388608 /dev/urandom | base64 -w 100 >"$conf"
kill -HUP "$SCHED_PID"; sleep 2
rm -f "$conf"
kill -HUP "$SCHED_PID"; sleep 1
grep -E 'SIGHUP' "$SCHED_LOG" | cut -c1-160
check_eq "SIGHUPs refused and logged" "$(grep -c 'SIGHUP: .*the running values stay' "$SCHED_LOG")" 3
check_eq "a vanished file names the file" "$(grep -c "SIGHUP: invalid --config: cannot read $conf" "$SCHED_LOG")" 1
check_eq "cap after three bad SIGHUPs (unchanged)" "$(live)" 3
check_eq "state after the bad files" "$(sched_state)" enabled
sched_stop && pass "stopped with exit 0" || fail "sched_stop"
finish
