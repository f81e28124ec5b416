// SPDX-License-Identifier: GPL-2.0
//! Per-CPU load for the agent: the busy share of each CPU over the last agent period, from
//! /proc/stat.
//!
//! Why /proc/stat and not the BPF running-time averages (cpu_ctx.load): the work MiAMI moves
//! tasks away from is largely protocol processing, which runs in hard and soft IRQ context on the
//! IRQ CPU and never shows up as a sched_ext task's running time. /proc/stat counts it (irq and
//! softirq columns), along with the time of tasks in other sched classes. The BPF averages stay
//! what placement uses per wakeup ("room" for one more network task); the agent's load
//! thresholds (--low-load-pct, --high-load-pct) are against /proc/stat.

use anyhow::{bail, Context, Result};

/// Busy and total jiffies of one CPU since boot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub busy: u64,
    pub total: u64,
}

/// Parse the `cpuN` lines of /proc/stat into times indexed by CPU id (missing CPUs, i.e. offline
/// ones: zero).
/// Busy is everything but idle and iowait: user, nice, system, irq, softirq, steal.
pub fn parse_proc_stat(text: &str) -> Result<Vec<CpuTimes>> {
    let mut out = Vec::new();
    for line in text.lines() {
        // "cpuN ..." only; the aggregate line is "cpu  ...".
        let Some(rest) = line
            .strip_prefix("cpu")
            .filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        else {
            continue;
        };
        let mut f = rest.split_whitespace();
        let Some(Ok(cpu)) = f.next().map(str::parse::<usize>) else {
            bail!("/proc/stat: bad CPU id in {line:?}");
        };
        let v: Vec<u64> = f
            .map(str::parse)
            .collect::<Result<_, _>>()
            .with_context(|| format!("/proc/stat: bad line {line:?}"))?;
        if v.len() < 4 {
            bail!("/proc/stat: too few columns in {line:?}");
        }
        // user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
        // already inside user/nice, so only the first 8 columns add up to the total.
        let total: u64 = v.iter().take(8).sum();
        let idle = v[3] + v.get(4).copied().unwrap_or(0);
        if out.len() <= cpu {
            out.resize(cpu + 1, CpuTimes::default());
        }
        out[cpu] = CpuTimes {
            busy: total - idle,
            total,
        };
    }
    if out.is_empty() {
        bail!("/proc/stat: no per-CPU lines");
    }
    Ok(out)
}

/// Busy percent of each CPU between two readings; 0 where no time passed; NaN for a CPU the
/// current reading lacks (offline: /proc/stat omits it), so that no comparison with a load
/// threshold holds for it: it is neither a CPU with room for a move nor an overloaded one.
pub fn busy_pct(prev: &[CpuTimes], cur: &[CpuTimes]) -> Vec<f64> {
    cur.iter()
        .enumerate()
        .map(|(cpu, c)| {
            if c.total == 0 {
                return f64::NAN;
            }
            let p = prev.get(cpu).copied().unwrap_or_default();
            let total = c.total.saturating_sub(p.total);
            if total == 0 {
                return 0.0;
            }
            (c.busy.saturating_sub(p.busy) as f64 * 100.0 / total as f64).min(100.0)
        })
        .collect()
}

/// Reads /proc/stat each period and keeps the previous reading for the deltas.
#[derive(Debug, Default)]
pub struct LoadReader {
    prev: Vec<CpuTimes>,
    /// /proc/stat, opened once: the agent reads it ten times a second, and a read from offset
    /// 0 makes the kernel generate it afresh, so open and close would be two system calls
    /// per round for nothing.
    file: Option<std::fs::File>,
    buf: Vec<u8>,
}

impl LoadReader {
    /// A reader whose first read starts with a buffer of @len bytes (tests: the regrowth).
    pub fn with_buffer_len(len: usize) -> Self {
        Self {
            buf: vec![0; len.max(1)],
            ..Self::default()
        }
    }

    /// Busy percent per CPU since the previous call (since boot on the first call).
    ///
    /// One `pread` at offset 0 into a buffer larger than the file, not a seek and reads until
    /// end of file (three system calls): under TCG a system call costs about as much as the
    /// kernel's work of generating the file. A read that fills the buffer may have been cut, so
    /// it is done again into one twice the size.
    pub fn read(&mut self) -> Result<Vec<f64>> {
        use std::os::unix::fs::FileExt;
        let file = match &mut self.file {
            Some(f) => f,
            None => self
                .file
                .insert(std::fs::File::open("/proc/stat").context("opening /proc/stat")?),
        };
        if self.buf.is_empty() {
            self.buf.resize(16 << 10, 0);
        }
        let n = loop {
            let n = file
                .read_at(&mut self.buf, 0)
                .context("reading /proc/stat")?;
            if n < self.buf.len() {
                break n;
            }
            let len = self.buf.len() * 2;
            self.buf.resize(len, 0);
        };
        let text = std::str::from_utf8(&self.buf[..n]).context("/proc/stat is not UTF-8")?;
        let cur = parse_proc_stat(text)?;
        Ok(self.advance(cur))
    }

    /// `read` on given /proc/stat text (tests).
    pub fn update(&mut self, text: &str) -> Result<Vec<f64>> {
        Ok(self.advance(parse_proc_stat(text)?))
    }

    fn advance(&mut self, cur: Vec<CpuTimes>) -> Vec<f64> {
        let pct = busy_pct(&self.prev, &cur);
        self.prev = cur;
        pct
    }
}
