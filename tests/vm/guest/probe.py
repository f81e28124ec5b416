#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Neutral placement probe: where did the threads of some processes run, relative to an IRQ CPU?

Independent of the scheduler under test (reads only /proc, never the scheduler's counters), so
it judges EEVDF, scx_miami and peer schedulers alike.

Usage:
  probe.py (--pids PID[,PID...] | --comm NAME) --duration SEC [--hz 200] [--irq-cpu N]
           [--irq-cpu-of PID=CPU ...] [--irq-of PID=IRQ ...] [--llc "0-3,4-7"]
           [--probe-cpu N] [--trace [--runs] [--trace-buf-kb KB]] [--go-file F] [--json]
           [--out FILE]

Method:
  Every 1/hz s each thread of each PID (/proc/PID/task/TID, thread list refreshed every
  0.25 s, files kept open and re-read with pread to keep the probe cheap under TCG) is read:
    - run time: /proc/.../schedstat field 1 (sum_exec_runtime, ns; CONFIG_SCHED_INFO), falling
      back to utime+stime from stat (fields 14+15, clock ticks) when schedstat is missing;
    - CPU: stat field 39 ("processor", the CPU the thread last ran on / runs on).
  The run time a thread gained since the previous sample is attributed to the CPU seen now.
  When the CPU changed between the two samples the delta is split half/half between the old
  and the new CPU (the migration happened somewhere inside the interval). The error is bounded
  by one sample interval per migration, so keep hz high compared to the migration rate.
  Runtime shares (not sample counts) are reported, so sleeping threads weigh nothing and an
  irregular sample period (TCG timers are coarse, ~1 ms overshoot) biases nothing; the loop
  sleeps to time.monotonic() deadlines, skipping missed ones, and spins only the last
  --spin-us (default 0) before a deadline. Pin the probe away from the measured CPUs with
  --probe-cpu so it perturbs less.
  Migrations: the number of times consecutive samples of one thread saw different CPUs
  (a lower bound on real migrations).

Method with --trace (more exact; needs tracefs, fixed IRQ CPUs and --pids):
  The sched_stat_runtime event, filtered to the threads of the PIDs (threads started later are
  added within 0.25 s), is recorded into a private tracefs instance for the whole duration and
  added up afterwards, so the probe costs nothing while it measures. Each event is a run time
  delta the scheduler core charged to the running thread on the CPU that emitted it, so the
  shares are exact, not sampled (see replay()). "samples" is then the number of events and
  "lost_events" the ring buffer's overruns, which a test should require to be 0.
  --runs weighs runs instead of run time: the sched_switch events that switch a thread in, on
  the CPU they happen on ("runtime_ns" then counts runs). For a thread that runs in short
  bursts, such as a server handling one request per wakeup, where each burst runs is what
  placement decides, and a few runs that were charged a long time (a vCPU the host did not run
  for a while, under TCG) must not outweigh hundreds of short ones.

Tiers relative to a process's IRQ CPU c (--irq-cpu, or --irq-cpu-of PID=CPU per process):
  core  = c itself; cache = the other CPUs sharing c's LLC; other = all remaining CPUs.
  --irq-of PID=IRQ follows a moving IRQ instead (irqbalance): c is the first CPU of
  /proc/irq/IRQ/effective_affinity_list (smp_affinity_list if absent), re-read with the thread
  list, and each runtime delta is put in a tier against the c of that moment. The JSON then
  gives "irq_cpu" as the last c and "irq_cpus_seen" as every c in order.
  LLC groups: --llc "0-3,4-7", default read from /sys/devices/system/cpu/cpu*/cache/index3.

Output: a human table (stdout, or stderr with --json) and with --json one JSON object:
  {"duration": s, "samples": n, "hz": achieved, "method": "sample"|"trace",
   "lost_events": n (null when sampling), "llc": [[0,1,2,3],[4,5,6,7]],
   "pids": {"PID": {"comm", "irq_cpu", "threads", "runtime_ns", "cpu": {"CPU": share},
                    "tiers": {"core", "cache", "other"} (shares 0..1, null without irq cpu),
                    "migrations"}},
   "total": {same fields, tiers of each process taken against its own irq cpu}}
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time


def parse_cpulist(s):
    cpus = []
    for part in s.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-")
            cpus.extend(range(int(a), int(b) + 1))
        else:
            cpus.append(int(part))
    return cpus


def sys_llcs():
    groups = set()
    for f in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cache/index3/shared_cpu_list"):
        with open(f) as fh:
            groups.add(tuple(parse_cpulist(fh.read())))
    if not groups:
        return [list(range(os.cpu_count()))]
    return [list(g) for g in sorted(groups)]


def parse_llc_arg(s):
    # "0-3,4-7" -> groups are separated by "," unless a group holds a list: then use ";" or " "
    sep = ";" if ";" in s else (" " if " " in s.strip() else ",")
    return [parse_cpulist(g.replace("+", ",")) for g in s.split(sep) if g.strip()]


_fds = {}  # (pid, tid) -> (stat fd, schedstat fd or None); /proc files re-read with pread(0)


def _open(path):
    try:
        return os.open(path, os.O_RDONLY)
    except OSError:
        return None


def forget(key):
    for fd in _fds.pop(key, ()):
        if fd is not None:
            os.close(fd)


def read_thread(pid, tid):
    """(runtime_ns, cpu) of one thread, or None when it is gone."""
    key = (pid, tid)
    if key not in _fds:
        base = f"/proc/{pid}/task/{tid}"
        st = _open(base + "/stat")
        if st is None:
            return None
        _fds[key] = (st, _open(base + "/schedstat"))
    stfd, ssfd = _fds[key]
    try:
        st = os.pread(stfd, 1024, 0).decode()
        ss = os.pread(ssfd, 128, 0).decode() if ssfd is not None else ""
    except OSError:  # the thread exited
        forget(key)
        return None
    if not st:
        forget(key)
        return None
    rest = st[st.rindex(")") + 2:].split()  # rest[0] is field 3 (state)
    cpu = int(rest[39 - 3])
    try:
        rt = int(ss.split()[0])
    except (ValueError, IndexError):
        rt = (int(rest[14 - 3]) + int(rest[15 - 3])) * (10 ** 9 // os.sysconf("SC_CLK_TCK"))
    return rt, cpu


def comm_of(pid):
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return "?"


def find_comm(name):
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit() and d != str(os.getpid()) and comm_of(d) == name:
            pids.append(int(d))
    return pids


def irq_first_cpu(irq):
    for f in ("effective_affinity_list", "smp_affinity_list"):
        try:
            with open(f"/proc/irq/{irq}/{f}") as fh:
                return parse_cpulist(fh.read().strip())[0]
        except (OSError, IndexError, ValueError):
            continue
    return None


def tier_of(cpu, irq_cpu, llcs):
    llc = next((g for g in llcs if irq_cpu in g), [irq_cpu])
    return "core" if cpu == irq_cpu else "cache" if cpu in llc else "other"


class Acc:
    def __init__(self):
        self.cpu = {}
        self.migrations = 0
        self.threads = set()
        # With --irq-of: runtime per tier against the IRQ CPU of the moment, and every such CPU.
        self.tier = None
        self.irq_seen = []
        self.by_tid = {}  # tid -> {cpu: ns}, for --threads

    def add(self, cpu, ns, irq_cpu=None, llcs=None, tid=None):
        self.cpu[cpu] = self.cpu.get(cpu, 0) + ns
        if tid is not None:
            t = self.by_tid.setdefault(tid, {})
            t[cpu] = t.get(cpu, 0) + ns
        if irq_cpu is not None:
            self.tier = self.tier or {"core": 0, "cache": 0, "other": 0}
            self.tier[tier_of(cpu, irq_cpu, llcs)] += ns


def tiers(cpu_ns, irq_cpu, llcs):
    if irq_cpu is None:
        return None
    t = {"core": 0, "cache": 0, "other": 0}
    for c, ns in cpu_ns.items():
        t[tier_of(c, irq_cpu, llcs)] += ns
    tot = sum(t.values())
    return {k: (v / tot if tot else 0.0) for k, v in t.items()}


def summary(acc, irq_cpu, llcs, comm):
    tot = sum(acc.cpu.values())
    if acc.irq_seen:
        t = acc.tier or {"core": 0, "cache": 0, "other": 0}
        tt = sum(t.values())
        return {
            "comm": comm,
            "irq_cpu": acc.irq_seen[-1],
            "irq_cpus_seen": acc.irq_seen,
            "threads": len(acc.threads),
            "runtime_ns": tot,
            "cpu": {str(c): (ns / tot if tot else 0.0) for c, ns in sorted(acc.cpu.items())},
            "tiers": {k: (v / tt if tt else 0.0) for k, v in t.items()},
            "migrations": acc.migrations,
        }
    return {
        "comm": comm,
        "irq_cpu": irq_cpu,
        "threads": len(acc.threads),
        "runtime_ns": tot,
        "cpu": {str(c): (ns / tot if tot else 0.0) for c, ns in sorted(acc.cpu.items())},
        "tiers": tiers(acc.cpu, irq_cpu, llcs),
        "migrations": acc.migrations,
    }


TRACEFS = "/sys/kernel/tracing"
EVENT = re.compile(r"-(\d+)\s+\[(\d+)\]\s+(?:\S+\s+)?\d+\.\d+: (\w+): (.*)$")
RUNTIME = re.compile(r"pid=(\d+) runtime=(\d+)")
NEXT = re.compile(r"next_pid=(\d+)")


def tids_of(pid):
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def wr(path, val):
    with open(path, "w") as fh:
        fh.write(val)


def trace(a, pids):
    """Record sched_stat_runtime for the threads of PIDS for --duration s in a private tracefs
    instance, then add it up. Returns (accs, events, elapsed s, events lost)."""
    if not os.path.isdir(TRACEFS + "/instances"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], check=False)
    inst = f"{TRACEFS}/instances/miami-probe-{os.getpid()}"
    try:
        os.mkdir(inst)
    except OSError as e:
        sys.exit(f"probe: --trace needs tracefs at {TRACEFS}: {e}")
    ev = inst + "/events/sched/" + ("sched_switch/" if a.runs else "sched_stat_runtime/")
    key = "next_pid" if a.runs else "pid"
    tgid = {}  # tid -> pid

    def watch():
        """Add threads started since the last call to the event filter."""
        new = False
        for pid in pids:
            for t in tids_of(pid):
                if t not in tgid:
                    tgid[t], new = pid, True
        if new:
            wr(ev + "filter", " || ".join(f"{key} == {t}" for t in tgid))

    try:
        wr(inst + "/buffer_size_kb", str(a.trace_buf_kb))
        watch()
        wait_go(a)
        watch()
        wr(ev + "enable", "1")
        wr(inst + "/trace_marker", "miami-probe start")
        t0 = time.monotonic()
        WINDOW_UPTIME.append(time.clock_gettime(time.CLOCK_BOOTTIME))
        end = t0 + a.duration
        while time.monotonic() < end:
            time.sleep(min(0.25, max(0.0, end - time.monotonic())))
            watch()
        wr(inst + "/trace_marker", "miami-probe end")
        wr(inst + "/tracing_on", "0")
        WINDOW_UPTIME.append(time.clock_gettime(time.CLOCK_BOOTTIME))
        elapsed = time.monotonic() - t0
        lost = 0
        for f in glob.glob(inst + "/per_cpu/cpu*/stats"):
            with open(f) as fh:
                for line in fh:
                    k, _, v = line.partition(":")
                    if k in ("overrun", "dropped events"):
                        lost += int(v.split()[0])
        accs, events = replay(inst + "/trace", tgid, pids, a.runs)
    finally:
        try:
            wr(ev + "enable", "0")
        except OSError:
            pass
        os.rmdir(inst)
    return accs, events, elapsed, lost


def replay(path, tgid, pids, runs=False):
    """Add up the runtime events (with @runs: the switch-ins, one each) between the start and end
    markers per thread and CPU. The
    scheduler core emits one for the running task at every tick and whenever it stops running
    (update_curr()), so their sum is the thread's sum_exec_runtime, and the CPU that emits one
    is the thread's CPU. Except when another task reads a running thread's CPU time
    (getrusage(), /proc: task_sched_runtime() updates the remote runqueue): that event comes
    from the reader's CPU, so its runtime waits for the thread's next own event, which is on
    the CPU it ran on meanwhile (leaving it takes a switch, which emits one). Returns
    (accs, events)."""
    accs = {pid: Acc() for pid in pids}
    last_cpu = {}  # tid -> CPU of its previous event, for migrations
    remote = {}  # tid -> runtime reported from another task's CPU, not yet placed
    started = ended = False
    events = 0
    with open(path) as fh:
        for line in fh:
            m = EVENT.search(line)
            if not m:
                continue
            if m[3] == "tracing_mark_write":
                started = started or m[4].startswith("miami-probe start")
                if m[4].startswith("miami-probe end"):
                    ended = True
                    break
                continue
            if runs:
                r = NEXT.search(m[4]) if started and m[3] == "sched_switch" else None
                if not r or int(r[1]) not in tgid:
                    continue
                events += 1
                tid, cpu = int(r[1]), int(m[2])
                acc = accs[tgid[tid]]
                acc.threads.add(tid)
                acc.add(cpu, 1, tid=tid)
                if last_cpu.get(tid, cpu) != cpu:
                    acc.migrations += 1
                last_cpu[tid] = cpu
                continue
            r = RUNTIME.search(m[4]) if started and m[3] == "sched_stat_runtime" else None
            if not r or int(r[1]) not in tgid:
                continue
            events += 1
            tid, cpu = int(r[1]), int(m[2])
            if int(m[1]) != tid:
                remote[tid] = remote.get(tid, 0) + int(r[2])
                continue
            acc = accs[tgid[tid]]
            acc.threads.add(tid)
            acc.add(cpu, int(r[2]) + remote.pop(tid, 0), tid=tid)
            if last_cpu.get(tid, cpu) != cpu:
                acc.migrations += 1
            last_cpu[tid] = cpu
    if not (started and ended):
        sys.exit("probe: the trace lost its start or end marker (raise --trace-buf-kb)")
    return accs, events


def wait_go(a):
    """With --go-file F: say ready (create F.ready), then wait until F exists. The window
    starts then, with the probe long loaded: a Python start took 13-20 s in a TCG guest with a
    hog on every CPU, even as a real-time task."""
    global GO_WAITED
    if not a.go_file:
        return
    open(a.go_file + ".ready", "w").close()
    t0 = time.monotonic()
    while not os.path.exists(a.go_file):
        if time.monotonic() > t0 + 300:
            sys.exit(f"probe: {a.go_file} did not appear within 300 s")
        time.sleep(0.02)
    GO_WAITED = time.monotonic() - t0


# --trace: the window's start and end on /proc/uptime's clock (CLOCK_BOOTTIME), for callers
# that compare it with other readings of the same seconds ("window_uptime" in the JSON).
WINDOW_UPTIME = []
GO_WAITED = 0.0  # s spent in wait_go(): no overhead of the probe's


def sample(a, pids, llcs, live):
    """Poll /proc at --hz for --duration s. Returns (accs, samples, elapsed s)."""
    wait_go(a)
    live_cpu = {}
    accs = {}
    last = {}  # (pid, tid) -> (runtime, cpu)
    period = 1.0 / a.hz
    spin = a.spin_us / 1e6
    start = time.monotonic()
    end = start + a.duration
    next_t = start
    next_scan = start + 0.5
    samples = 0
    threads = {}  # pid -> its thread ids, refreshed every 0.25 s
    next_tscan = start
    while True:
        now = time.monotonic()
        if a.comm and now >= next_scan:
            pids = sorted(set(pids) | set(find_comm(a.comm)))
            next_scan = now + 0.5
        if now >= next_tscan:  # new threads are picked up within 0.25 s
            for pid in pids:
                threads[pid] = tids_of(pid)
            for pid, irq in live.items():
                c = irq_first_cpu(irq)
                live_cpu[pid] = c
                acc = accs.setdefault(pid, Acc())
                if c is not None and (not acc.irq_seen or acc.irq_seen[-1] != c):
                    acc.irq_seen.append(c)
            next_tscan = now + 0.25
        for pid in pids:
            tids = threads.get(pid, [])
            acc = accs.setdefault(pid, Acc())
            ic = live_cpu.get(pid)
            for tid in tids:
                r = read_thread(pid, tid)
                if r is None:
                    continue
                key = (pid, tid)
                acc.threads.add(tid)
                prev = last.get(key)
                last[key] = r
                if prev is None:
                    continue
                d = r[0] - prev[0]
                if d < 0:
                    continue
                if r[1] != prev[1]:
                    acc.migrations += 1
                    acc.add(prev[1], d // 2, ic, llcs, tid)
                    acc.add(r[1], d - d // 2, ic, llcs, tid)
                elif d:
                    acc.add(r[1], d, ic, llcs, tid)
        samples += 1
        if now >= end:
            break
        next_t += period
        now = time.monotonic()
        if next_t < now:  # missed deadlines: skip them
            next_t = now + period - ((now - next_t) % period)
        next_t = min(next_t, end)
        if next_t - now > spin:
            time.sleep(next_t - now - spin)
        while time.monotonic() < next_t:
            pass
    return accs, samples, time.monotonic() - start


def started_s_ago():
    """Seconds since this process was forked: how long Python took to get to main()."""
    try:
        start_ticks = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
        up = float(open("/proc/uptime").read().split()[0])
        return round(up - start_ticks / os.sysconf("SC_CLK_TCK"), 2)
    except (OSError, ValueError, IndexError):
        return None


def main():
    startup = started_s_ago()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--pids", help="comma separated PIDs")
    g.add_argument("--comm", help="all processes with this comm (rescanned every 0.5 s)")
    ap.add_argument("--duration", type=float, required=True)
    ap.add_argument("--hz", type=float, default=200)
    ap.add_argument("--irq-cpu", type=int)
    ap.add_argument("--irq-cpu-of", action="append", default=[], metavar="PID=CPU")
    ap.add_argument("--irq-of", action="append", default=[], metavar="PID=IRQ",
                    help="follow IRQ's current CPU as PID's IRQ CPU")
    ap.add_argument("--llc", help='LLC groups, e.g. "0-3,4-7" (default: from sysfs)')
    ap.add_argument("--probe-cpu", help="pin the probe itself to these CPUs (cpulist)")
    ap.add_argument("--spin-us", type=float, default=0)
    ap.add_argument("--trace", action="store_true",
                    help="record sched_stat_runtime in a tracefs instance instead of polling /proc"
                         " (none come while kernel.bpf_stats_enabled=1: seen on 7.3)")
    ap.add_argument("--runs", action="store_true",
                    help="with --trace: weigh each run (switch-in) instead of run time")
    # 1 MB per CPU holds 6,000+ events (the busiest window seen recorded 2,940 in 6 s over
    # 8 CPUs). 8 MB cost 8-13 s per probe in a TCG guest, allocating and freeing 64 MB of
    # ring buffer pages around every window.
    ap.add_argument("--trace-buf-kb", type=int, default=1024,
                    help="per-CPU trace buffer with --trace (default 1024; lost events are "
                         "reported)")
    ap.add_argument("--go-file", metavar="F",
                    help="set up, create F.ready, and start the window once F exists")
    ap.add_argument("--threads", action="store_true",
                    help="print each thread's run time per CPU under its process")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", help="write the JSON here too")
    a = ap.parse_args()
    if a.trace and (a.irq_of or a.comm):
        ap.error("--trace takes --pids and fixed IRQ CPUs (--irq-cpu, --irq-cpu-of)")
    if a.runs and not a.trace:
        ap.error("--runs needs --trace")

    if a.probe_cpu is not None:
        os.sched_setaffinity(0, parse_cpulist(a.probe_cpu))
    llcs = parse_llc_arg(a.llc) if a.llc else sys_llcs()
    irq_of = {}
    for spec in a.irq_cpu_of:
        p, c = spec.split("=")
        irq_of[int(p)] = int(c)
    live = {}  # pid -> IRQ number
    for spec in a.irq_of:
        p, n = spec.split("=")
        live[int(p)] = int(n)

    pids = [int(p) for p in a.pids.split(",")] if a.pids else find_comm(a.comm)
    t_in = time.monotonic()
    if a.trace:
        accs, samples, elapsed, lost = trace(a, pids)
    else:
        accs, samples, elapsed = sample(a, pids, llcs, live)
        lost = None

    # Where a probe's wall time goes besides its window (slow starts under TCG load).
    overhead = {"start_s": startup,
                "around_window_s": round(time.monotonic() - t_in - elapsed - GO_WAITED, 2)}
    res = {"duration": round(elapsed, 3), "samples": samples, "lost_events": lost,
           "overhead": overhead, "window_uptime": [round(t, 3) for t in WINDOW_UPTIME] or None,
           "method": ("trace-runs" if a.runs else "trace") if a.trace else "sample",
           "hz": round(samples / elapsed, 1) if elapsed else 0, "llc": llcs, "pids": {}}
    total = Acc()
    total_t = {"core": 0.0, "cache": 0.0, "other": 0.0}
    have_t = False
    for pid, acc in sorted(accs.items()):
        irq = irq_of.get(pid, a.irq_cpu)
        s = summary(acc, irq, llcs, comm_of(pid))
        res["pids"][str(pid)] = s
        for c, ns in acc.cpu.items():
            total.add(c, ns)
        total.migrations += acc.migrations
        total.threads |= {(pid, t) for t in acc.threads}
        if s["tiers"] is not None:
            have_t = True
            for k in total_t:
                total_t[k] += s["tiers"][k] * s["runtime_ns"]
    tsum = sum(total.cpu.values())
    res["total"] = summary(total, None, llcs, "*")
    res["total"]["tiers"] = ({k: (v / tsum if tsum else 0.0) for k, v in total_t.items()}
                             if have_t else None)

    out = sys.stderr if a.json else sys.stdout
    if a.trace:
        what = "switch-ins (shares of runs, 'run ms' counts runs)" if a.runs else "runtime events"
        print(f"probe: {res['duration']} s, {samples} {what}, {lost} lost, llc {llcs}", file=out)
    else:
        print(f"probe: {res['duration']} s, {samples} samples ({res['hz']} Hz), llc {llcs}",
              file=out)
    print(f"probe: started in {overhead['start_s']} s, {overhead['around_window_s']} s around "
          "the window", file=out)
    print(f"{'pid':>8} {'comm':<15} {'irq':>3} {'thr':>3} {'run ms':>9} {'core':>6} {'cache':>6}"
          f" {'other':>6} {'migr':>5}  cpus", file=out)
    accs_s = {str(p): acc for p, acc in accs.items()}
    for pid, s in list(res["pids"].items()) + [("total", res["total"])]:
        t = s["tiers"] or {}
        f = lambda k: f"{100 * t[k]:5.1f}%" if k in t else "     -"
        cpus = " ".join(f"{c}:{100 * v:.0f}%" for c, v in s["cpu"].items() if v >= 0.005)
        irq = "-" if s["irq_cpu"] is None else s["irq_cpu"]
        print(f"{pid:>8} {s['comm'][:15]:<15} {irq:>3} {s['threads']:>3} "
              f"{s['runtime_ns'] / 1e6:9.1f} {f('core')} {f('cache')} {f('other')} "
              f"{s['migrations']:>5}  {cpus}", file=out)
        if a.threads and pid in accs_s:
            for tid, cpu_ns in sorted(accs_s[pid].by_tid.items()):
                ms = " ".join(f"{c}:{ns / 1e6:.1f}" for c, ns in sorted(cpu_ns.items()))
                print(f"{'':>8} tid {tid:<11} ms per cpu  {ms}", file=out)
    if a.json:
        print(json.dumps(res))
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(res, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
