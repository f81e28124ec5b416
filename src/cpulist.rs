// SPDX-License-Identifier: GPL-2.0
//! CPU lists in the kernel's format ("0-3,8,10-11"), as sysfs, procfs and our stats write them.
//!
//! Why not scx_utils' `read_cpulist` and `Cpumask::to_cpulist`: `read_cpulist` takes "3-1" as
//! no CPU at all and refuses an empty list, which sysfs writes for an IRQ without an effective
//! affinity; `Cpumask` is as wide as the running host's CPU count and prints "none" for an empty
//! mask, while these lists describe the CPUs of a fixture tree, or of the machine behind a stats
//! socket that the TUI reads. A bad list here is an error that names it.

use anyhow::{bail, Context, Result};

/// Parse a kernel CPU list ("0-3,8,10-11"). Empty input is an empty list.
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let bad = || format!("bad CPU range '{part}'");
                let (a, b): (usize, usize) =
                    (a.parse().with_context(bad)?, b.parse().with_context(bad)?);
                if a > b {
                    bail!("bad CPU range '{part}'");
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().with_context(|| format!("bad CPU '{part}'"))?),
        }
    }
    Ok(cpus)
}

/// The inverse of `parse_cpu_list`, with ranges ("0-3,8").
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    out.join(",")
}
