// SPDX-License-Identifier: GPL-2.0
//! Host test of the agent's snapshot program (bpf/agent.bpf.c miami_snapshot()) on this
//! machine's own kernel: BTF, no sched_ext needed, root. Only that program of the object loads.
//! A net_tasks table holding 12,000 threads, 3,000 of them silent past the stale age:
//!   - the snapshot copies out every live entry once, with its fields, and none of the stale;
//!   - it deletes the stale entries (MIAMI_SNAP_STALE per call, so three calls for 3,000: a
//!     walk that leaves some makes the next call walk again);
//!   - with no entry added since, a call looks the copied tids up again and finds the same.

use std::collections::BTreeSet;
use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};
use miami::bpf_intf::{net_task, snapshot_arg};
use miami::bpf_skel::{BpfSkel, BpfSkelBuilder};
use miami::scheduler::run_syscall_prog;

const LIVE: i32 = 9000;
const STALE: i32 = 3000;
const STALE_NS: u64 = 5_000_000_000;

fn as_bytes<T>(v: &T) -> &[u8] {
    // SAFETY: plain #[repr(C)] values from bindgen, read as bytes for the map and the program.
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }
}

fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn snapshot(skel: &BpfSkel) {
    run_syscall_prog(
        &skel.progs.miami_snapshot,
        snapshot_arg { stale_ns: STALE_NS },
    )
    .expect("running miami_snapshot (root)");
}

fn copied(skel: &BpfSkel) -> Vec<net_task> {
    let bss = skel.maps.bss_data.as_ref().unwrap();
    bss.snap_tasks[..bss.snap_nr_tasks as usize]
        .iter()
        // SAFETY: both are struct net_task of intf.h.
        .map(|t| unsafe { std::ptr::read_unaligned(t as *const _ as *const net_task) })
        .collect()
}

#[test]
fn snapshot_copies_live_tasks_and_deletes_stale_ones() {
    let mut obj = MaybeUninit::uninit();
    let mut open = BpfSkelBuilder::default().open(&mut obj).unwrap();
    open.maps.miami_ops.set_autocreate(false).unwrap();
    for mut prog in open.open_object_mut().progs_mut() {
        let keep = prog.name() == "miami_snapshot";
        prog.set_autoload(keep);
    }
    let mut skel = open
        .load()
        .expect("loading the BPF object (root, a kernel with BTF)");

    let now = monotonic_ns();
    for tid in 1..=LIVE + STALE {
        let mut nt: net_task = unsafe { std::mem::zeroed() };
        nt.tid = tid;
        nt.tgid = tid / 10;
        nt.intens = tid as u32;
        // The probes count what they add; here user space adds.
        skel.maps.bss_data.as_mut().unwrap().net_tasks_added += 1;
        // Live: a call within the last second. Stale: 6 s ago, past STALE_NS.
        nt.last_comm_ns = if tid <= LIVE {
            now - 1_000_000_000
        } else {
            now - 6_000_000_000
        };
        skel.maps
            .net_tasks
            .update(&tid.to_ne_bytes(), as_bytes(&nt), MapFlags::ANY)
            .unwrap();
    }

    snapshot(&skel);
    let tasks = copied(&skel);
    assert_eq!(tasks.len(), LIVE as usize, "live entries copied");
    let tids: BTreeSet<i32> = tasks.iter().map(|t| t.tid).collect();
    assert_eq!(
        tids,
        (1..=LIVE).collect(),
        "every live tid once, no stale one"
    );
    assert!(tasks
        .iter()
        .all(|t| t.intens == t.tid as u32 && t.tgid == t.tid / 10));

    // Deleted: MIAMI_SNAP_STALE (1,024) a call; the third call leaves none.
    snapshot(&skel);
    snapshot(&skel);
    let left = (LIVE + 1..=LIVE + STALE)
        .filter(|tid| {
            skel.maps
                .net_tasks
                .lookup(&tid.to_ne_bytes(), MapFlags::ANY)
                .unwrap()
                .is_some()
        })
        .count();
    assert_eq!(left, 0, "stale entries left after three snapshots");
    assert_eq!(copied(&skel).len(), LIVE as usize);

    // Nothing added since: the fourth call looks the copied tids up, and sees their new values.
    let mut nt: net_task = unsafe { std::mem::zeroed() };
    nt.tid = 7;
    nt.intens = 424242;
    nt.last_comm_ns = monotonic_ns();
    skel.maps
        .net_tasks
        .update(&7i32.to_ne_bytes(), as_bytes(&nt), MapFlags::EXIST)
        .unwrap();
    snapshot(&skel);
    let tasks = copied(&skel);
    assert_eq!(
        tasks.len(),
        LIVE as usize,
        "live entries after a lookup round"
    );
    let seven: Vec<u32> = tasks
        .iter()
        .filter(|t| t.tid == 7)
        .map(|t| t.intens)
        .collect();
    assert_eq!(
        seven,
        vec![424242],
        "tid 7 once, with the value written after the walk"
    );
}
