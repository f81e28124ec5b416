// SPDX-License-Identifier: GPL-2.0
//! The network-task table as the stats read it: the agent's rounds copy it into .bss
//! (bpf/agent.bpf.c snap_tasks_take()), and it is read from memory; and the one way the loader
//! runs a BPF program by hand (BPF_PROG_TEST_RUN).

use anyhow::{bail, Result};
use libbpf_rs::ProgramInput;
use std::sync::atomic::{fence, Ordering};

use super::Scheduler;
use crate::bpf_intf::net_task;

/// Run syscall program @prog (BPF_PROG_TEST_RUN) on argument @arg; an error unless it returns 0.
/// Public for tests/it/snapshot.rs, which runs miami_snapshot() the way the scheduler does.
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
    /// The live entries of `net_tasks` as the agent's last round copied them (agent.bpf.c
    /// snap_tasks_take(), into .bss): no system call. A copy is at most a round old. The copy
    /// in progress (snap_seq odd, or changed while reading) is read again, a few times at most:
    /// a round writes it in well under a millisecond on a real CPU.
    pub(super) fn read_net_tasks(&self) -> Vec<net_task> {
        let bss = self.skel.maps.bss_data.as_ref().unwrap();
        let seq = || {
            // SAFETY: snap_seq is a u32 in the mmapped .bss, valid and aligned for as long as
            // the skeleton lives; BPF writes it, so it is read as volatile memory, and the
            // fences keep the copy's reads between the two reads of it.
            fence(Ordering::Acquire);
            let v = unsafe { std::ptr::read_volatile(&bss.snap_seq) };
            fence(Ordering::Acquire);
            v
        };
        let mut tasks = Vec::new();
        for _ in 0..READ_TRIES {
            let before = seq();
            let nr = (bss.snap_nr_tasks as usize).min(bss.snap_tasks.len());
            tasks = bss.snap_tasks[..nr]
                .iter()
                // SAFETY: the skeleton's net_task and bindgen's are both struct net_task of
                // intf.h.
                .map(|t| unsafe { std::ptr::read_unaligned(t as *const _ as *const net_task) })
                .collect();
            if before % 2 == 0 && seq() == before {
                break;
            }
        }
        tasks
    }
}

/// Reads of the task table before one written meanwhile is taken as it is.
const READ_TRIES: usize = 4;
