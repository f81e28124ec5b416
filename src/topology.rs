// SPDX-License-Identifier: GPL-2.0
//! CPU -> last-level-cache map that the BPF side gets in rodata. The BPF side builds the LLC
//! CPU masks (the "cache" tier) from it at init.

use anyhow::{bail, Result};
use scx_utils::Topology;

use crate::bpf_intf::miami_consts_MIAMI_MAX_CPUS as MAX_CPUS;
use crate::bpf_intf::miami_consts_MIAMI_MAX_LLCS as MAX_LLCS;

/// What `LlcMap::runs()` gives BPF: `cpus`, each LLC's CPUs one LLC after the other; `pos[cpu]`,
/// a CPU's place in its LLC's run; `first[llc]` and `nr[llc]`, where a run starts and how long
/// it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlcRuns {
    pub cpus: Vec<u32>,
    pub pos: Vec<u32>,
    pub first: Vec<u32>,
    pub nr: Vec<u32>,
}

/// `cpu_llc[cpu]` for CPUs 0..nr_cpu_ids; CPUs that are not present map to LLC 0 (they never
/// run anything, so their entry is never used for placement).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlcMap {
    pub cpu_llc: Vec<u32>,
}

impl LlcMap {
    /// Build from (cpu, llc) pairs.
    pub fn from_pairs(
        nr_cpu_ids: usize,
        pairs: impl IntoIterator<Item = (usize, usize)>,
    ) -> Result<Self> {
        if nr_cpu_ids == 0 || nr_cpu_ids > MAX_CPUS as usize {
            bail!("{nr_cpu_ids} possible CPUs; scx_miami supports 1..={MAX_CPUS}");
        }
        let mut cpu_llc = vec![0u32; nr_cpu_ids];
        for (cpu, llc) in pairs {
            if cpu >= nr_cpu_ids {
                bail!("CPU {cpu} is beyond nr_cpu_ids {nr_cpu_ids}");
            }
            if llc >= MAX_LLCS as usize {
                bail!("LLC id {llc} of CPU {cpu}: scx_miami supports at most {MAX_LLCS} LLCs");
            }
            cpu_llc[cpu] = llc as u32;
        }
        Ok(Self { cpu_llc })
    }

    pub fn from_topology(topo: &Topology) -> Result<Self> {
        Self::from_pairs(*scx_utils::NR_CPU_IDS, online_pairs(topo))
    }

    /// Whether BPF, loaded with this map, still places right on a host with @nr_cpu_ids
    /// possible CPUs whose present ones are @pairs (cpu, llc): as many possible CPUs, and every
    /// present CPU in the LLC this map gives it. A CPU missing from @pairs (offline) may map
    /// anywhere: it runs nothing, and when it comes back it is checked again.
    pub fn holds(
        &self,
        nr_cpu_ids: usize,
        pairs: impl IntoIterator<Item = (usize, usize)>,
    ) -> bool {
        nr_cpu_ids == self.cpu_llc.len()
            && pairs
                .into_iter()
                .all(|(cpu, llc)| self.cpu_llc.get(cpu) == Some(&(llc as u32)))
    }

    /// holds() for the host as @topo reads it now.
    pub fn holds_for(&self, topo: &Topology) -> bool {
        self.holds(*scx_utils::NR_CPU_IDS, online_pairs(topo))
    }

    /// LLC ids in use: one past the highest.
    fn nr_llcs(&self) -> usize {
        self.cpu_llc.iter().max().map_or(0, |&m| m as usize + 1)
    }

    /// The map by LLC, as BPF's dispatch() walks it (main.bpf.c llc_cpus and the arrays beside
    /// it): every CPU in ascending order within its LLC, LLC 0 first.
    pub fn runs(&self) -> LlcRuns {
        let nr_llcs = self.nr_llcs();
        let mut runs = LlcRuns {
            cpus: Vec::with_capacity(self.cpu_llc.len()),
            pos: vec![0; self.cpu_llc.len()],
            first: vec![0; nr_llcs],
            nr: vec![0; nr_llcs],
        };
        for llc in 0..nr_llcs {
            runs.first[llc] = runs.cpus.len() as u32;
            for cpu in (0..self.cpu_llc.len()).filter(|&c| self.cpu_llc[c] as usize == llc) {
                runs.pos[cpu] = runs.nr[llc];
                runs.nr[llc] += 1;
                runs.cpus.push(cpu as u32);
            }
        }
        runs
    }

    /// CPUs of each LLC, for logs: "0-3 | 4-7".
    pub fn describe(&self) -> String {
        (0..self.nr_llcs())
            .map(|l| {
                let cpus: Vec<usize> = (0..self.cpu_llc.len())
                    .filter(|&c| self.cpu_llc[c] as usize == l)
                    .collect();
                crate::cpulist::format_cpu_list(&cpus)
            })
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

/// The CPUs @topo lists: the online ones (scx_utils leaves offline CPUs out).
pub fn online_cpus(topo: &Topology) -> impl Iterator<Item = usize> + '_ {
    online_pairs(topo).map(|(cpu, _)| cpu)
}

/// (cpu, llc) of every CPU @topo lists.
fn online_pairs(topo: &Topology) -> impl Iterator<Item = (usize, usize)> + '_ {
    topo.all_llcs
        .values()
        .flat_map(|llc| llc.all_cpus.keys().map(move |&cpu| (cpu, llc.id)))
}
