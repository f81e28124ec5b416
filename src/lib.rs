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
pub mod cpulist;
pub mod irq;
pub mod load;
pub mod maps;
pub mod opts;
pub mod policy;
pub mod scheduler;
pub mod stats;
pub mod topology;
pub mod tui;

pub const SCHEDULER_NAME: &str = "scx_miami";

/// The version a bug report needs: the crate version, the git commit it was built from
/// (build.rs) and the target, as scx_utils' build id formats them.
pub fn version() -> &'static str {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    VERSION.get_or_init(|| {
        let sha = env!("MIAMI_GIT_SHA");
        let semver = match sha {
            "" => env!("CARGO_PKG_VERSION").to_string(),
            _ => format!("{}-g{sha}", env!("CARGO_PKG_VERSION")),
        };
        scx_utils::build_id::full_version(&semver)
    })
}
