#!/usr/bin/env python3
"""Where the wakeups of some tasks go, and how long they wait to run, from a sched trace.

Input: the text of a tracefs instance that recorded sched_waking, sched_wakeup and
sched_switch on every CPU (guest.sh's wake_trace, MIAMI_BENCH_WAKE_TRACE). For every wakeup
of a thread of the named groups it pairs:
  - sched_waking: when, on which CPU the waker ran, from what context (task, softirq, hardirq);
    its target_cpu is still the task's previous CPU there;
  - sched_wakeup: the CPU the scheduler chose;
  - the next sched_switch onto that thread: where and when it ran.
and keeps what each CPU ran (its last sched_switch), so that it knows whether the chosen CPU
was idle when the wakeup came.

Output: one JSON object per group: wakeups, the shares that went to the previous CPU, to the
waker's CPU, to an idle CPU, and the delay from waking to running (median, 90th percentile,
mean, in us), all of them and split by an idle or a busy chosen CPU; the length of each stay
on a CPU (run) and of each sleep, and how many stays ended runnable (preempted).

Usage: wakeups.py TRACE NAME=TID,TID... [NAME=...]
       wakeups.py --table wakeups.jsonl   (the objects guest.sh wrote, as a markdown table)
"""

import json
import re
import statistics
import sys

# "<comm>-<pid> [cpu] flags timestamp: event: fields"; comm may hold spaces and dashes.
LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+):\s+(\w+):\s+(.*)$")
FIELD = re.compile(r"(\w+)=(\S+)")


def context(flags):
    """The waker's context from the trace's irq-info flags (e.g. "d.s2."): the third
    character is 's' in a softirq, 'h' or 'H' in a hard IRQ."""
    c = flags[2:3]
    return "hardirq" if c in ("h", "H") else "softirq" if c == "s" else "task"


def pct(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def summary(delays):
    return {
        "n": len(delays),
        "p50_us": round(pct(delays, 0.5), 1) if delays else None,
        "p90_us": round(pct(delays, 0.9), 1) if delays else None,
        "mean_us": round(statistics.fmean(delays), 1) if delays else None,
    }


def analyze(lines, groups):
    group_of = {tid: g for g, tids in groups.items() for tid in tids}
    current = {}  # CPU -> pid it runs (0: idle)
    pending = {}  # tid -> the wakeup waiting for its switch-in
    out = {g: [] for g in groups}
    since, asleep = {}, {}  # tid -> when it last went on a CPU / to sleep
    runs = {g: [] for g in groups}  # us from a switch-in to the next switch-out
    sleeps = {g: [] for g in groups}  # us from going to sleep to the next wakeup
    preempted = {g: 0 for g in groups}  # switch-outs while still runnable
    for line in lines:
        m = LINE.match(line)
        if not m:
            continue
        _, _, cpu, flags, ts, ev, rest = m.groups()
        cpu, ts = int(cpu), float(ts)
        f = dict(FIELD.findall(rest))
        if ev == "sched_switch":
            prev, nxt = int(f.get("prev_pid", -1)), int(f.get("next_pid", -1))
            if prev in group_of:
                g = group_of[prev]
                if prev in since:  # not the stay the trace began in
                    runs[g].append((ts - since.pop(prev)) * 1e6)
                if f.get("prev_state", "R")[0] in "SD":
                    asleep[prev] = ts
                else:
                    preempted[g] += 1
            if nxt in group_of:
                since[nxt] = ts
            current[cpu] = nxt
            w = pending.pop(nxt, None)
            if w and "chosen" in w:
                w["ran_on"] = cpu
                w["delay_us"] = (ts - w["t"]) * 1e6
                out[group_of[nxt]].append(w)
        elif ev == "sched_waking":
            tid = int(f.get("pid", -1))
            if tid in group_of:
                if tid in asleep:
                    sleeps[group_of[tid]].append((ts - asleep.pop(tid)) * 1e6)
                pending[tid] = {"t": ts, "waker_cpu": cpu, "prev_cpu": int(f.get("target_cpu", -1)),
                                "ctx": context(flags)}
        elif ev == "sched_wakeup":
            tid = int(f.get("pid", -1))
            w = pending.get(tid)
            if w is not None and "chosen" not in w:
                c = int(f.get("target_cpu", -1))
                if current.get(c) == tid:  # woken while still on its CPU: no switch-in follows
                    del pending[tid]
                    continue
                w["chosen"] = c
                w["chosen_idle"] = current.get(c)  # None: not known yet
    res = {}
    for g, ws in out.items():
        ws = [w for w in ws if w["chosen_idle"] is not None]
        n = len(ws)
        idle = [w for w in ws if w["chosen_idle"] == 0]
        busy = [w for w in ws if w["chosen_idle"] != 0]
        share = lambda k: round(sum(1 for w in ws if k(w)) / n, 3) if n else None
        res[g] = {
            "wakeups": n,
            "to_prev_cpu": share(lambda w: w["chosen"] == w["prev_cpu"]),
            "to_waker_cpu": share(lambda w: w["chosen"] == w["waker_cpu"]),
            "to_idle_cpu": share(lambda w: w["chosen_idle"] == 0),
            "ran_elsewhere": share(lambda w: w["ran_on"] != w["chosen"]),
            "from_softirq": share(lambda w: w["ctx"] != "task"),
            "delay": summary([w["delay_us"] for w in ws]),
            "delay_idle_cpu": summary([w["delay_us"] for w in idle]),
            "delay_busy_cpu": summary([w["delay_us"] for w in busy]),
            "run": summary(runs[g]),
            "sleep": summary(sleeps[g]),
            "preempted": preempted[g],
        }
    return res


def table(path):
    """A markdown table of the objects guest.sh appended to wakeups.jsonl."""
    cols = ("scenario, scheduler", "rep", "tasks", "wakeups", "to previous / waker's / an idle CPU",
            "ran elsewhere", "waking to running, us: p50 / p90 / mean", "run, us: p50 / mean",
            "sleep, us: p50 / mean", "preempted")
    print("| " + " | ".join(cols) + " |")
    print("|" + " --- |" * len(cols))
    fmt = lambda d, *ks: " / ".join("-" if d.get(k) is None else f"{d[k]:,.0f}" for k in ks)
    share = lambda x: "-" if x is None else f"{100 * x:.0f}%"
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            for g in sorted(k for k, v in r.items() if isinstance(v, dict)):
                x = r[g]
                print(f"| {r['scenario']} {r['scheduler']} | {r['rep']} | {g} | {x['wakeups']} | "
                      f"{share(x['to_prev_cpu'])} / {share(x['to_waker_cpu'])} / {share(x['to_idle_cpu'])} | "
                      f"{share(x['ran_elsewhere'])} | {fmt(x['delay'], 'p50_us', 'p90_us', 'mean_us')} | "
                      f"{fmt(x.get('run', {}), 'p50_us', 'mean_us')} | {fmt(x.get('sleep', {}), 'p50_us', 'mean_us')} | "
                      f"{x.get('preempted', '-')} |")


def main(argv):
    if len(argv) == 3 and argv[1] == "--table":
        return table(argv[2])
    if len(argv) < 3:
        sys.exit("usage: wakeups.py TRACE NAME=TID,TID... [NAME=...]\n       wakeups.py --table wakeups.jsonl")
    groups = {}
    for a in argv[2:]:
        name, _, tids = a.partition("=")
        try:
            groups[name] = {int(t) for t in tids.split(",") if t}
        except ValueError:
            sys.exit(f"wakeups.py: {a!r}: want NAME=TID,TID...")
    with open(argv[1], errors="replace") as f:
        print(json.dumps(analyze(f, groups)))


if __name__ == "__main__":
    main(sys.argv)
