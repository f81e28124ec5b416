// SPDX-License-Identifier: GPL-2.0
//! scx_miami: the MiAMI network-affinity policy (Jang & Jin) as a sched_ext scheduler.
//!
//! Everything that can be tested without root lives here: CLI and its validation, topology and
//! IRQ discovery, per-CPU loads, the agent's policy, the stats table, the TUI's state and
//! rendering. `scheduler` loads and runs the BPF side; the binary in scheds/scx_miami only wires
//! them together.

pub mod bpf_intf;
pub mod bpf_skel;
pub mod config;
pub mod irq;
pub mod load;
pub mod opts;
pub mod policy;
pub mod scheduler;
pub mod stats;
pub mod topology;
pub mod tui;

pub const SCHEDULER_NAME: &str = "scx_miami";
