// SPDX-License-Identifier: GPL-2.0
//! Host test of the agent's snapshot program (bpf/agent.bpf.c miami_snapshot()) on this
//! machine's own kernel: BTF, no sched_ext needed, root. Only that program of the object loads.
//! A net_tasks table holding 12,000 threads, 3,000 of them silent past the stale age:
//!   - the snapshot copies out every live entry once, with its fields, and none of the stale;
//!   - it deletes the stale entries (MIAMI_SNAP_STALE per call, so three calls for 3,000);
//!   - it reads every CPU as online, with busy time that grows while a thread spins. Where the
//!     kernel's kallsyms lack the counters (this project's build hosts), the form without busy
//!     time loads, as in scx_miami, and this part says NOT RUN: the VM tests read it.

use std::collections::BTreeSet;
use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, ProgramInput};
use miami::bpf_intf::{net_task, snapshot_arg};
use miami::bpf_skel::{BpfSkel, BpfSkelBuilder};
use miami::load::busy_from_bpf;

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

fn snapshot(skel: &BpfSkel, busy: bool) {
    let mut arg = snapshot_arg { stale_ns: STALE_NS };
    // SAFETY: arg outlives the call.
    let ctx = unsafe {
        std::slice::from_raw_parts_mut(&mut arg as *mut _ as *mut u8, std::mem::size_of_val(&arg))
    };
    let prog = match busy {
        true => &skel.progs.miami_snapshot,
        false => &skel.progs.miami_snapshot_tasks,
    };
    let out = prog
        .test_run(ProgramInput {
            context_in: Some(ctx),
            ..Default::default()
        })
        .expect("running miami_snapshot (root)");
    assert_eq!(out.return_value, 0);
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
fn snapshot_copies_live_tasks_deletes_stale_and_reads_busy_time() {
    let nr_cpus = std::thread::available_parallelism().unwrap().get();
    let kallsyms = std::fs::File::open("/proc/kallsyms").unwrap();
    let busy = busy_from_bpf(None, std::io::BufReader::new(kallsyms)).is_ok();
    let form = if busy {
        "miami_snapshot"
    } else {
        "miami_snapshot_tasks"
    };
    let mut obj = MaybeUninit::uninit();
    let mut open = BpfSkelBuilder::default().open(&mut obj).unwrap();
    open.maps.miami_ops.set_autocreate(false).unwrap();
    for mut prog in open.open_object_mut().progs_mut() {
        let keep = prog.name() == form;
        prog.set_autoload(keep);
    }
    open.maps.rodata_data.as_mut().unwrap().nr_cpu_ids = nr_cpus as u32;
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

    snapshot(&skel, busy);
    let bss = skel.maps.bss_data.as_ref().unwrap();
    let busy0: Vec<u64> = bss.snap_busy_ns[..nr_cpus].to_vec();
    if busy {
        assert_eq!(
            bss.snap_busy_ok, 1,
            "kernel_cpustat and runqueues in this kernel's BTF"
        );
        assert!(bss.snap_online[..nr_cpus].iter().all(|&o| o == 1));
    }
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
    snapshot(&skel, busy);
    snapshot(&skel, busy);
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

    if !busy {
        eprintln!("snapshot: busy time NOT RUN: /proc/kallsyms lacks kernel_cpustat or runqueues");
        return;
    }
    // 300 ms of spinning: the CPUs' busy time grew by at least 200 ms in all.
    let until = std::time::Instant::now() + std::time::Duration::from_millis(300);
    while std::time::Instant::now() < until {
        std::hint::black_box(0u64);
    }
    snapshot(&skel, busy);
    let bss = skel.maps.bss_data.as_ref().unwrap();
    let grew: u64 = bss.snap_busy_ns[..nr_cpus]
        .iter()
        .zip(&busy0)
        .map(|(b, a)| b - a)
        .sum();
    assert!(
        grew >= 200_000_000,
        "busy ns grew by {grew} in 300 ms of spinning"
    );
}
