// SPDX-License-Identifier: GPL-2.0
//! The network-task table as the agent and the stats read it: miami_snapshot() (bpf/agent.bpf.c)
//! copies its live entries into .bss in one system call, and they are read from memory.

use anyhow::{bail, Result};
use libbpf_rs::ProgramInput;
use log::warn;

use super::{task_max_age_ms, Scheduler};
use crate::bpf_intf::{net_task, snapshot_arg};

/// Run syscall program @prog (BPF_PROG_TEST_RUN) on argument @arg; an error unless it returns 0.
/// Public for tests/snapshot.rs, which runs miami_snapshot() the way the scheduler does.
pub fn run_syscall_prog<T: Copy>(prog: &libbpf_rs::ProgramMut, mut arg: T) -> Result<()> {
    // SAFETY: T is Copy plain data (a bindgen struct) that outlives the call.
    let ctx = unsafe {
        std::slice::from_raw_parts_mut(&mut arg as *mut T as *mut u8, std::mem::size_of::<T>())
    };
    let out = prog.test_run(ProgramInput {
        context_in: Some(ctx),
        ..Default::default()
    })?;
    if out.return_value != 0 {
        bail!(
            "{} returned {}",
            prog.name().to_string_lossy(),
            out.return_value as i32
        );
    }
    Ok(())
}

impl Scheduler<'_> {
    /// Run miami_snapshot(): the live entries of `net_tasks` into .bss, in one system call
    /// (agent.bpf.c). It also deletes the entries that went stale.
    pub(super) fn bpf_snapshot(&self) -> Result<()> {
        let max_age_ms = task_max_age_ms(self.cfg.release_ns);
        // TaskRow::from_slot() drops an entry whose age in whole ms exceeds max_age_ms.
        let arg = snapshot_arg {
            stale_ns: (max_age_ms + 1) * 1_000_000,
        };
        run_syscall_prog(&self.skel.progs.miami_snapshot, arg)
    }

    /// Every live entry of the `net_tasks` table, from a fresh snapshot.
    pub(super) fn read_net_tasks(&self) -> Vec<net_task> {
        if let Err(e) = self.bpf_snapshot() {
            warn!("reading net_tasks: {e:#}");
            return Vec::new();
        }
        self.snap_tasks()
    }

    /// The `net_tasks` entries of the last snapshot.
    pub(super) fn snap_tasks(&self) -> Vec<net_task> {
        let bss = self.skel.maps.bss_data.as_ref().unwrap();
        let nr = (bss.snap_nr_tasks as usize).min(bss.snap_tasks.len());
        bss.snap_tasks[..nr]
            .iter()
            // SAFETY: the skeleton's net_task and bindgen's are both struct net_task of intf.h.
            .map(|t| unsafe { std::ptr::read_unaligned(t as *const _ as *const net_task) })
            .collect()
    }
}
