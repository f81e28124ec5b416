// SPDX-License-Identifier: GPL-2.0
//! Host test of the agent's snapshot program (bpf/agent.bpf.c miami_snapshot()) on this
//! machine's own kernel: BTF, no sched_ext needed, root. Only that program of the object loads.
//! A net_tasks table holding 12,000 threads, 3,000 of them silent past the stale age:
//!   - the snapshot copies out every live entry once, with its fields, and none of the stale;
//!   - it deletes the stale entries (MIAMI_SNAP_STALE per call, so three calls for 3,000: a
//!     walk that leaves some makes the next call walk again);
//!   - with no entry added since, a call looks the copied tids up again and finds the same.
//!
//! And miami_snapshot_cpus(), the agent's CPU loads: on a kernel whose kallsyms lists its per-CPU
//! variables (CONFIG_KALLSYMS_ALL, as Debian's), each CPU's busy share from the kernel's
//! counters agrees with /proc/stat's over the same window, a CPU kept busy by a spinning
//! thread reads busy, and one busy for the window's first 300 ms reads about 30% (its idle time
//! counted, the idle period in progress included); on one without (this project's build
//! machines), the program does not load, which is why the loader looks first. The guest runs
//! this test on every kernel of the matrix (t_sched_basic), where it compares.

use std::collections::BTreeSet;
use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};
use miami::bpf_intf::{net_task, snapshot_arg};
use miami::bpf_skel::{BpfSkel, BpfSkelBuilder, OpenBpfSkel};
use miami::load::{btf_has_vars, cpu_times, kallsyms_has, LoadReader, CPU_TIME_SYMS};
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

/// The object with only program @name to load.
fn open_only(open: &mut OpenBpfSkel, name: &str) {
    open.maps.miami_ops.set_autocreate(false).unwrap();
    for mut prog in open.open_object_mut().progs_mut() {
        let keep = prog.name() == name;
        prog.set_autoload(keep);
    }
}

#[test]
fn snapshot_copies_live_tasks_and_deletes_stale_ones() {
    let mut obj = MaybeUninit::uninit();
    let mut open = BpfSkelBuilder::default().open(&mut obj).unwrap();
    open_only(&mut open, "miami_snapshot");
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

/// Busy percent per CPU from miami_snapshot_cpus()' copy, since @reader's previous reading.
fn kernel_busy(skel: &BpfSkel, reader: &mut LoadReader, nr: usize) -> Vec<f64> {
    run_syscall_prog(
        &skel.progs.miami_snapshot_cpus,
        snapshot_arg { stale_ns: STALE_NS },
    )
    .expect("running miami_snapshot_cpus");
    let bss = skel.maps.bss_data.as_ref().unwrap();
    reader.advance(cpu_times(
        &bss.snap_cpu_busy_ns[..nr],
        &bss.snap_cpu_idle_ns[..nr],
        &bss.snap_cpu_online[..nr],
    ))
}

#[test]
fn cpu_times_are_the_kernels_busy_counters() {
    let nr = LoadReader::default().read().expect("/proc/stat").len();
    let mut obj = MaybeUninit::uninit();
    let mut open = BpfSkelBuilder::default().open(&mut obj).unwrap();
    open_only(&mut open, "miami_snapshot_cpus");
    open.maps.rodata_data.as_deref_mut().unwrap().nr_cpu_ids = nr as u32;
    let kallsyms = std::io::BufReader::new(std::fs::File::open("/proc/kallsyms").unwrap());
    if !kallsyms_has(kallsyms, &CPU_TIME_SYMS) {
        // Why the loader looks first: without the symbols the program does not load.
        let e = open.load().err().map(|e| e.to_string());
        assert!(
            e.is_some(),
            "miami_snapshot_cpus loaded although kallsyms lacks {CPU_TIME_SYMS:?}"
        );
        eprintln!("kallsyms lacks {CPU_TIME_SYMS:?} (no CONFIG_KALLSYMS_ALL): load refused, {e:?}");
        return;
    }
    let skel = open
        .load()
        .expect("loading the BPF object (root, a kernel with BTF)");

    // The last CPU spins for the whole window; the one before spins for its first 300 ms and
    // is idle from then on, an idle period still in progress at the second reading: about 30%
    // busy, where idle time uncounted, or only counted once an idle period ends, reads 100%.
    let (spin_cpu, burst_cpu) = (nr - 1, nr.saturating_sub(2));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spinner = {
        let stop = stop.clone();
        pinned(spin_cpu, move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(100));
    let (mut from_bpf, mut from_stat) = (LoadReader::default(), LoadReader::default());
    kernel_busy(&skel, &mut from_bpf, nr);
    from_stat.read().unwrap();
    let burst = pinned(burst_cpu, || {
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_millis(300) {
            std::hint::spin_loop();
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let bpf = kernel_busy(&skel, &mut from_bpf, nr);
    let stat = from_stat.read().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spinner.join().unwrap();
    burst.join().unwrap();

    eprintln!("busy % per CPU, BPF: {bpf:.1?}, /proc/stat: {stat:.1?}");
    assert_eq!(bpf.len(), nr, "a load per CPU: {bpf:?}");
    // /proc/stat counts in 10 ms units and is read just after the copy: a few points apart.
    for (cpu, (b, s)) in bpf.iter().zip(&stat).enumerate() {
        assert!(
            (b - s).abs() <= 10.0,
            "CPU {cpu}: {b:.1}% busy from the kernel's counters in BPF, {s:.1}% from /proc/stat"
        );
    }
    assert!(
        bpf[spin_cpu] >= 90.0,
        "CPU {spin_cpu} ran a spinning thread: {:.1}% busy from the kernel's counters",
        bpf[spin_cpu]
    );
    if burst_cpu != spin_cpu {
        assert!(
            (15.0..=50.0).contains(&bpf[burst_cpu]),
            "CPU {burst_cpu} spun 300 ms of the 1,000 and then idled: {:.1}% busy from the \
             kernel's counters",
            bpf[burst_cpu]
        );
    }
}

/// Run @f in a thread pinned to @cpu.
fn pinned(cpu: usize, f: impl FnOnce() + Send + 'static) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        // SAFETY: a zeroed cpu_set_t with one bit set, for this thread (pid 0).
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            assert_eq!(
                libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set),
                0,
                "pinning a thread to CPU {cpu}"
            );
        }
        f()
    })
}

#[test]
fn kallsyms_scan() {
    let text = "0000000000000000 A fixed_percpu_data\n\
                0000000000012340 A runqueues\n\
                0000000000023450 A kernel_cpustat\n\
                ffffffff81000000 T _text\n\
                ffffffff89356ee0 d tick_cpu_sched\n";
    assert!(kallsyms_has(text.as_bytes(), &CPU_TIME_SYMS));
    let without = "ffffffff81000000 T _text\nffffffff81000010 t runqueues_helper [mod]\n";
    assert!(!kallsyms_has(without.as_bytes(), &CPU_TIME_SYMS));
    let two = "0000000000012340 A runqueues\n0000000000023450 A kernel_cpustat\n";
    assert!(
        !kallsyms_has(two.as_bytes(), &CPU_TIME_SYMS),
        "two of three are not enough"
    );
}

/// Every kernel this project runs on (the build machines' too) describes the three variables in
/// its BTF; a name that is a struct but no variable, or no type at all, is not one.
#[test]
fn btf_lists_the_per_cpu_variables() {
    assert!(
        btf_has_vars(&CPU_TIME_SYMS),
        "{CPU_TIME_SYMS:?} in the kernel's BTF"
    );
    assert!(
        !btf_has_vars(&["task_struct"]),
        "a struct is not a variable"
    );
    assert!(!btf_has_vars(&["kernel_cpustat", "no_such_variable_xyz"]));
}
