#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Log a running scx_miami's live stats with timestamps, for tests that need to know when a task's
row or a counter changed.

Usage: monlog.py BIN SECS OUT [--until FILE]
  Runs `BIN --monitor SECS` and appends one JSON object per report to OUT:
    {"t": CLOCK_BOOTTIME s (the clock of /proc/uptime), "c": {counter: increase over the
     report}, "f": {other "name value" lines}, "rows": [[tid, tgid, comm, intens, class, tier,
     irq_cpu, cpu, nic, age_ms], ...]}
  Stops when the monitor ends, on SIGTERM, or when FILE exists (--until).
A guest script marks a moment with `cut -d' ' -f1 /proc/uptime`, on the same clock.
"""
import json
import os
import signal
import subprocess
import sys
import time


def now():
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def main():
    if len(sys.argv) not in (4, 6):
        sys.exit(__doc__)
    binary, secs, out = sys.argv[1:4]
    until = sys.argv[5] if len(sys.argv) == 6 else None
    mon = subprocess.Popen([binary, "--monitor", secs], stdout=subprocess.PIPE, text=True)
    signal.signal(signal.SIGTERM, lambda *_: (mon.terminate(), sys.exit(0)))
    cur = None
    with open(out, "a") as fh:
        def flush():
            if cur is not None:
                fh.write(json.dumps(cur) + "\n")
                fh.flush()
        for line in mon.stdout:
            if line.startswith("--- stats"):
                flush()
                cur = {"t": now(), "c": {}, "f": {}, "rows": []}
                if until and os.path.exists(until):
                    break
                continue
            if cur is None:
                continue
            f = line.split()
            if len(f) == 2 and f[1].isdigit():
                cur["c"][f[0]] = int(f[1])
            elif len(f) == 10 and f[0].isdigit():
                cur["rows"].append([int(f[0]), int(f[1]), f[2], int(f[3]), f[4], f[5],
                                    int(f[6]), int(f[7]), f[8], int(f[9])])
            elif len(f) >= 2:
                cur["f"][f[0]] = " ".join(f[1:])
        flush()
    mon.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
