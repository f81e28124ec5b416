// SPDX-License-Identifier: GPL-2.0
//! Per-CPU load: the busy share of each CPU between two readings of its busy and idle time. The
//! agent's readings come from BPF where the kernel allows it (miami_snapshot_cpus() copies the
//! kernel's counters, the ones /proc/stat sums, without printing them;
//! `kernel_cpu_times_refused`), else from /proc/stat; the TUI, a client without BPF, reads
//! /proc/stat.
//!
//! Why these counters and not the BPF running-time averages (cpu_ctx.load): the work MiAMI moves
//! tasks away from is largely protocol processing, which runs in hard and soft IRQ context on the
//! IRQ CPU and never shows up as a sched_ext task's running time. The kernel's CPU time counters
//! count it (irq and softirq), along with the time of tasks in other sched classes. The BPF
//! averages stay what placement uses per wakeup ("room" for one more network task); the agent's
//! load thresholds (--low-load-pct, --high-load-pct) are against these counters.

use std::io::BufRead;

use anyhow::{bail, Context, Result};
use libbpf_rs::AsRawLibbpf;

/// Busy and total time of one CPU since boot, in any one unit (jiffies from /proc/stat, ns from
/// BPF); total zero for an offline CPU.
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
/// current reading lacks or has offline (total 0), so that no comparison with a load
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

/// Reads /proc/stat each period (or takes times from BPF, `advance`) and keeps the previous
/// reading for the deltas.
#[derive(Debug, Default)]
pub struct LoadReader {
    prev: Vec<CpuTimes>,
    /// /proc/stat, opened once: the TUI reads it at every refresh, and a read from offset 0
    /// makes the kernel generate it afresh, so open and close would be two system calls per
    /// refresh for nothing.
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

    /// Busy percent per CPU since the previous reading, from times read elsewhere (the agent's:
    /// `cpu_times()` of BPF's snapshot).
    pub fn advance(&mut self, cur: Vec<CpuTimes>) -> Vec<f64> {
        let pct = busy_pct(&self.prev, &cur);
        self.prev = cur;
        pct
    }
}

/// The busy and total times of CPUs 0..@busy_ns.len() as BPF's snapshot gives them: busy and
/// idle (iowait included) ns since boot, online or not. The total is their sum, as /proc/stat's
/// is: not the wall clock, which a CPU's tick-sampled busy time falls behind when its ticks are
/// late (a vCPU under TCG). An offline CPU has total 0, so that `busy_pct` gives it NaN.
pub fn cpu_times(busy_ns: &[u64], idle_ns: &[u64], online: &[u8]) -> Vec<CpuTimes> {
    busy_ns
        .iter()
        .zip(idle_ns)
        .zip(online)
        .map(|((&busy, &idle), &on)| match on {
            0 => CpuTimes::default(),
            _ => CpuTimes {
                busy,
                total: busy + idle,
            },
        })
        .collect()
}

/// The per-CPU variables miami_snapshot_cpus() (bpf/agent.bpf.c) reads: busy and idle times,
/// the online flag, and 6.12's nohz idle time (every kernel has the last; the program refers to
/// it on all of them).
pub const CPU_TIME_SYMS: [&str; 3] = ["kernel_cpustat", "runqueues", "tick_cpu_sched"];

/// Does kallsyms text @r (/proc/kallsyms) list every symbol in @names? The verifier finds a BPF
/// program's per-CPU variables there, and kallsyms lists data symbols only with
/// CONFIG_KALLSYMS_ALL: Debian's kernels have it, some cloud kernels do not, and there
/// miami_snapshot_cpus() does not load. The scan stops at the last one found.
pub fn kallsyms_has(r: impl BufRead, names: &[&str]) -> bool {
    let mut left = names.to_vec();
    for line in r.lines() {
        let Ok(line) = line else {
            return false;
        };
        if let Some(name) = line.split_whitespace().nth(2) {
            left.retain(|n| *n != name);
            if left.is_empty() {
                return true;
            }
        }
    }
    false
}

/// Does the running kernel's BTF describe every variable in @names? libbpf resolves a BPF
/// program's kernel variables there, and pahole may leave them out.
pub fn btf_has_vars(names: &[&str]) -> bool {
    let Ok(btf) = libbpf_rs::btf::Btf::from_vmlinux() else {
        return false;
    };
    names.iter().all(|n| {
        let name = std::ffi::CString::new(*n).expect("no NUL in a symbol name");
        // By name and kind: a struct of the same name (kernel_cpustat) comes first by name alone,
        // which is why not scx_utils::compat::ksym_exists().
        // SAFETY: a valid btf object for as long as @btf lives, and a NUL-terminated name.
        unsafe {
            libbpf_sys::btf__find_by_name_kind(
                btf.as_libbpf_object().as_ptr(),
                name.as_ptr(),
                libbpf_sys::BTF_KIND_VAR,
            ) >= 0
        }
    })
}

/// Why miami_snapshot_cpus() cannot load on this kernel, None where it can. The verifier finds
/// its per-CPU variables through kallsyms (`kallsyms_has` on /proc/kallsyms) and libbpf through
/// the kernel's BTF, where pahole may leave variables out. Read once per process, not at every
/// restart after a CPU hotplug: the kernel prints the whole of kallsyms, and on Debian's 7.3
/// (x86-64 per-CPU symbols sit at their real addresses, after the text) the three symbols are at
/// lines 202,498 to 202,765 of 230,514, which took 0.5 s of CPU under TCG.
pub fn kernel_cpu_times_refused() -> Option<&'static str> {
    static WHY: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    *WHY.get_or_init(|| {
        let listed = std::fs::File::open("/proc/kallsyms")
            .map(|f| kallsyms_has(std::io::BufReader::new(f), &CPU_TIME_SYMS))
            .unwrap_or(false);
        if !listed {
            return Some("kallsyms lists no per-CPU variables for BPF: CONFIG_KALLSYMS_ALL is off");
        }
        if !btf_has_vars(&CPU_TIME_SYMS) {
            return Some("the kernel's BTF lacks its per-CPU variables");
        }
        None
    })
}
