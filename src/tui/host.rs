// SPDX-License-Identifier: GPL-2.0
//! What the TUI reads from the host it runs on, next to the stats socket: the LLC of each CPU
//! (the stats carry no topology), the NICs whose receive IRQs target each CPU (the stats name
//! the IRQ CPUs, not their NICs), and per-CPU busy time from /proc/stat for the load bars when
//! the scheduler's CPU rows carry no load field. The TUI is a client on the same host as the
//! scheduler (the socket is a local Unix socket), so these are the scheduler's CPUs and NICs.
//!
//! Parsing is pure (tests feed text); the reads are the `read_*` functions.

use std::collections::BTreeMap;

use crate::irq::{self, Roots};
use crate::load::LoadReader;
use crate::topology::LlcMap;

/// Host facts the views need besides the stats.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostInfo {
    /// LLC id of each CPU (index = CPU), as the scheduler numbers them; empty if unknown.
    pub cpu_llc: Vec<u32>,
    /// CPU -> names of the NICs whose receive IRQs target it.
    pub nic_cpus: BTreeMap<usize, Vec<String>>,
    /// CPU -> busy percent over the last refresh, from /proc/stat.
    pub busy_pct: BTreeMap<usize, f64>,
}

impl HostInfo {
    /// The LLC of @cpu, if known.
    pub fn llc_of(&self, cpu: usize) -> Option<u32> {
        self.cpu_llc.get(cpu).copied()
    }
}

/// CPU -> NIC names from discovered NICs (each NIC under every CPU its receive IRQs target).
pub fn nic_cpus(nics: &[irq::Nic]) -> BTreeMap<usize, Vec<String>> {
    let mut map: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for nic in nics {
        for cpu in nic.rx_cpus() {
            let names = map.entry(cpu).or_default();
            if !names.contains(&nic.name) {
                names.push(nic.name.clone());
            }
        }
    }
    map
}

/// The LLC map as the scheduler builds it (scx_utils::Topology); empty if it cannot be read.
pub fn read_cpu_llc() -> Vec<u32> {
    scx_utils::Topology::new()
        .and_then(|t| LlcMap::from_topology(&t))
        .map(|m| m.cpu_llc)
        .unwrap_or_default()
}

/// NIC names per CPU from /sys and /proc; empty if they cannot be read.
pub fn read_nic_cpus() -> BTreeMap<usize, Vec<String>> {
    irq::discover(&Roots::default(), &[])
        .map(|nics| nic_cpus(&nics))
        .unwrap_or_default()
}

/// Busy percent per CPU since @reader's previous read (src/load.rs, the agent's parser);
/// empty if /proc/stat is unreadable.
pub fn read_busy_pct(reader: &mut LoadReader) -> BTreeMap<usize, f64> {
    reader
        .read()
        .map(|v| v.into_iter().enumerate().collect())
        .unwrap_or_default()
}
