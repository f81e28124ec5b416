// SPDX-License-Identifier: GPL-2.0
//! The network-task table and the CPUs' busy times as the agent and the stats read them:
//! miami_snapshot_cpus() (bpf/agent.bpf.c) copies both into .bss in one system call, and they
//! are read from memory (miami_snapshot(), the table alone, where that one cannot load).

use anyhow::{bail, Result};
use libbpf_rs::ProgramInput;
use log::warn;

use super::{task_max_age_ms, Scheduler};
use crate::bpf_intf::{net_task, snapshot_arg};
use crate::load::{cpu_times, CpuTimes};

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
    /// Run miami_snapshot_cpus() (or miami_snapshot()): the live entries of `net_tasks` (and the
    /// CPU times) into .bss, in one system call (agent.bpf.c). It also deletes the entries that
    /// went stale.
    pub(super) fn bpf_snapshot(&self) -> Result<()> {
        let max_age_ms = task_max_age_ms(self.cfg.release_ns);
        // TaskRow::from_slot() drops an entry whose age in whole ms exceeds max_age_ms.
        let arg = snapshot_arg {
            stale_ns: (max_age_ms + 1) * 1_000_000,
        };
        let prog = if self.kernel_times {
            &self.skel.progs.miami_snapshot_cpus
        } else {
            &self.skel.progs.miami_snapshot
        };
        run_syscall_prog(prog, arg)
    }

    /// Every live entry of the `net_tasks` table, from a fresh snapshot.
    pub(super) fn read_net_tasks(&self) -> Vec<net_task> {
        if let Err(e) = self.bpf_snapshot() {
            warn!("reading net_tasks: {e:#}");
            return Vec::new();
        }
        self.snap_tasks()
    }

    /// The CPUs' busy and idle times miami_snapshot_cpus() last copied from the kernel's
    /// counters, for the agent's loads.
    pub(super) fn snap_cpu_times(&self) -> Vec<CpuTimes> {
        let bss = self.skel.maps.bss_data.as_ref().unwrap();
        let nr = self.nr_cpus.min(bss.snap_cpu_busy_ns.len());
        cpu_times(
            &bss.snap_cpu_busy_ns[..nr],
            &bss.snap_cpu_idle_ns[..nr],
            &bss.snap_cpu_online[..nr],
        )
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
