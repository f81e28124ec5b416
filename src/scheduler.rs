// SPDX-License-Identifier: GPL-2.0
//! Loads, configures and runs the BPF scheduler: rodata from the validated config and the
//! topology, the IRQ CPU mask from the NIC IRQ map, then a run loop (run_loop.rs) that runs the
//! agent, refreshes the IRQ map, answers the stats server, prints stats and ends on shutdown or
//! when the kernel ejects the scheduler.

use anyhow::{Context, Result};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, OpenObject};
use log::{info, warn};
use scx_stats::prelude::StatsServer;
use scx_utils::Topology;
use scx_utils::{scx_ops_attach, scx_ops_load, scx_ops_open};
use std::collections::{BTreeMap, BTreeSet};
use std::mem::MaybeUninit;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use crate::bpf_intf::{policy_move, snapshot_arg};
use crate::bpf_skel::*;
use crate::config::{ClassBounds, Config};
use crate::irq::{self, IrqEvents, NicNames, Roots};
use crate::load::{kernel_cpu_times_refused, LoadReader};
use crate::maps::lookup_percpu_array;
use crate::policy::{
    Policy, PolicyConfig, TaskView, Util, AUTO_START, REPEAT_ROUNDS, SHED_HOLD_ROUNDS,
};
use crate::stats::{
    launch_server, top_tasks, AgentState, Counters, Snapshot, TaskRow, NR_STATS, TOP_TASKS,
};
use crate::topology::{self, LlcMap};

mod host;
mod irq_map;
mod probes;
mod restart;
mod run_loop;
mod tasks;
use host::running_ops;
pub use host::{check_host, lock_instance, InstanceLock};
use irq_map::FULL_SCAN_EVERY;
pub use probes::{fentry_refused, ProbeAttach};
pub use run_loop::{install_shutdown, install_sighup, loop_sleep};
pub use tasks::run_syscall_prog;

/// How recent a call must be for a task to be listed; older net_tasks entries are deleted.
const TASK_MAX_AGE_MS: u64 = 5000;

/// How old a task's last call may be for the agent to see it: at least @release_ns
/// (--release-after-ms), since BPF treats the task as a network task until then.
pub fn task_max_age_ms(release_ns: u64) -> u64 {
    TASK_MAX_AGE_MS.max(release_ns / 1_000_000)
}
/// Rounds after which the agent deletes a policy_moves entry: BPF takes a move at the task's
/// next placement, within a slice for a running task; one still there is held back by the
/// budget (then the next round may still apply it) or its task sleeps, and it is stale.
const MOVE_ROUNDS: u64 = 3;
/// The bytes of @v, a plain #[repr(C)] struct from intf.h, as a BPF map key or value.
fn as_bytes<T: Copy>(v: &T) -> &[u8] {
    // SAFETY: T is Copy plain data (bindgen structs of integers); the slice borrows @v.
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }
}

/// The agent's configuration within @cfg.
fn policy_config(cfg: &Config) -> PolicyConfig {
    PolicyConfig {
        low_load_pct: cfg.low_load_pct.into(),
        high_load_pct: cfg.high_load_pct.into(),
        release_after_ms: cfg.release_ns / 1_000_000,
        max_moves: cfg.max_moves as usize,
        init_bounds: cfg.bounds,
    }
}

/// How long a task follows an agent target: as many rounds as the agent waits before it sends
/// the same move again, so a target it still wants is renewed before it lapses.
fn target_ttl_ns(cfg: &Config) -> u64 {
    REPEAT_ROUNDS * cfg.interval_ms * 1_000_000
}

/// How long a task follows a shed target (agent.bpf.c shed_ttl_ns).
fn shed_ttl_ns(cfg: &Config) -> u64 {
    SHED_HOLD_ROUNDS * cfg.interval_ms * 1_000_000
}

/// @clock in ns: CLOCK_MONOTONIC is the clock of bpf_ktime_get_ns(); the CPU-time clocks give
/// what the loader itself costs (stats: agent_cpu_us, loader_cpu_ms and the IRQ refresh's).
fn clock_ns(clock: rustix::time::ClockId) -> u64 {
    let ts = rustix::time::clock_gettime(clock);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn monotonic_ns() -> u64 {
    clock_ns(rustix::time::ClockId::Monotonic)
}

/// Every this many agent rounds and quick IRQ map refreshes, their CPU time is read
/// (agent_cpu_us, irq_refresh_cpu_us; a full scan's always). A thread's CPU clock is a system
/// call that takes its runqueue's lock: in a TCG guest with eight busy receivers, perf counted
/// 9.8% of the loader's samples in it, at two reads per round and per refresh.
const CPU_CLOCK_EVERY: u64 = 10;

/// CPU time of the calling thread in us.
fn thread_cpu_us() -> u64 {
    clock_ns(rustix::time::ClockId::ThreadCPUTime) / 1000
}

pub struct Scheduler<'a> {
    skel: BpfSkel<'a>,
    link: Option<libbpf_rs::Link>,
    /// The running configuration; a SIGHUP with --config replaces its agent tunables.
    cfg: Config,
    roots: Roots,
    irq_cpus: BTreeSet<usize>,
    /// Receive IRQ CPUs per NIC of our namespace, by ifindex, as in BPF's nic_cpus.
    nic_cpus: BTreeMap<u32, BTreeSet<usize>>,
    /// Our network namespace's inode number: the other half of a nic_cpus key.
    own_netns: u32,
    /// Whether the IRQ map was read once; later changes count in nr_irq_changes.
    irq_cpus_known: bool,
    /// --nic names not found at the last IRQ map refresh (a NIC unplugged under us).
    missing_nics: Vec<String>,
    /// The NICs of the last full IRQ scan, their receive IRQs' targets as last read.
    nics: Vec<irq::Nic>,
    /// /sys/class/net at the last full IRQ scan: a change asks for the next one at once.
    ifnames: BTreeSet<String>,
    /// IRQ map refreshes since the last full scan.
    refreshes_since_scan: u32,
    /// IRQ map refreshes since the start (which of them are timed: CPU_CLOCK_EVERY).
    irq_refreshes: u64,
    /// The IRQ event probes loaded (fentry mode, and irq_map::IRQ_EVENT_FUNCS in this kernel's
    /// BTF).
    irq_probes: bool,
    /// The IRQ map events the last refreshes covered (Scheduler::irq_map_tick()).
    irq_seen: IrqEvents,
    /// When the last full scan of the IRQ map ended.
    last_scan: Instant,
    nr_irq_changes: u64,
    /// RFS/RPS as last seen; logged when it changes.
    steering: Option<irq::Steering>,
    nr_cpus: usize,
    /// LLC id per CPU, as given to BPF.
    cpu_llc: Vec<u32>,
    /// sched_ext's hotplug count when the CPUs were last read (init(), reattach()).
    hotplug_seq: u64,
    /// CPUs whose LLC cpu_llc holds: online at the load, or found in it since (reattach()).
    known_cpus: BTreeSet<usize>,
    policy: Policy,
    /// The network tasks' shares of a CPU, for the policy.
    util: Util,
    load: LoadReader,
    /// miami_snapshot_cpus() loaded, not miami_snapshot(): the kernel lists the per-CPU
    /// variables it reads (load.rs). Only one of the two loads.
    kernel_times: bool,
    /// The agent's loads come with the task table from miami_snapshot_cpus() (the kernel's
    /// counters read in BPF), not /proc/stat: it loaded and found the idle time.
    loads_in_bpf: bool,
    agent: AgentState,
    /// Sequence number of the last move written to policy_moves.
    move_seq: u32,
    /// policy_moves entries written, tid -> the round that wrote them, to delete them later.
    moves_written: BTreeMap<i32, u64>,
    agent_rounds: u64,
    /// On cfg.stats_socket (a --config file cannot change it); None when the socket could not
    /// be created: scheduling goes on without it.
    stats_server: Option<StatsServer<(), Snapshot>>,
}

impl<'a> Scheduler<'a> {
    /// @open_opts: libbpf's object open options from the command line (scx_utils' LibbpfOpts).
    pub fn init(
        cfg: &Config,
        verbose: bool,
        exit_dump_len: u32,
        open_opts: Option<libbpf_rs::libbpf_sys::bpf_object_open_opts>,
        probes: ProbeAttach,
        open_object: &'a mut MaybeUninit<OpenObject>,
    ) -> Result<Self> {
        let t_init = Instant::now();
        // Before the topology: a hotplug after this point shows as a changed count (run()).
        let hotplug_seq = if cfg.observe {
            0
        } else {
            restart::hotplug_seq()?
        };
        let topo = Topology::new().context("reading the CPU topology")?;
        let llcs = LlcMap::from_topology(&topo)?;
        info!(
            "{} {}: {} CPUs, LLCs {}",
            crate::SCHEDULER_NAME,
            crate::version(),
            llcs.cpu_llc.len(),
            llcs.describe()
        );

        let mut builder = BpfSkelBuilder::default();
        builder.obj_builder.debug(verbose);
        let mut skel = if cfg.observe {
            // No struct_ops: scx_ops_open! checks sched_ext's types, which this kernel may lack.
            let mut skel = match open_opts {
                Some(o) => builder.open_opts(o, open_object),
                None => builder.open(open_object),
            }
            .context("opening the BPF object")?;
            skel.maps.miami_ops.set_autocreate(false)?;
            // The ops, and the scx library's own probe on the sched_ext registration path.
            for mut prog in skel.open_object_mut().progs_mut() {
                if prog.prog_type() == libbpf_rs::ProgramType::StructOps
                    || prog.name().to_string_lossy().starts_with("scx_")
                {
                    prog.set_autoload(false);
                }
            }
            skel.progs
                .miami_observe_switch
                .set_autoload(cfg.observe_switch);
            skel
        } else {
            let mut skel = scx_ops_open!(builder, open_object, miami_ops, open_opts)?;
            skel.progs.miami_observe_switch.set_autoload(false);
            skel.struct_ops.miami_ops_mut().exit_dump_len = exit_dump_len;
            // Deviation from scx_ops_open!(), which sets the hotplug count it read: the kernel
            // compares that value, frozen in the struct_ops map at load, with its own at every
            // enable, so reattach() after any hotplug would be refused, again and again. 0
            // turns the kernel's check off; run() makes the same check after every attach.
            skel.struct_ops.miami_ops_mut().hotplug_seq = 0;
            // ENQ_LAST: a slice that ends with nothing else queued still reaches ops.enqueue()
            // when dispatch() does not extend it, which is how a hog leaves an IRQ CPU.
            skel.struct_ops.miami_ops_mut().flags = *scx_utils::compat::SCX_OPS_ENQ_EXITING
                | *scx_utils::compat::SCX_OPS_ENQ_MIGRATION_DISABLED
                | *scx_utils::compat::SCX_OPS_ENQ_LAST;
            skel
        };

        let irq_probes = probes.select(&mut skel);
        let refused = kernel_cpu_times_refused();
        let kernel_times = refused.is_none();
        skel.progs.miami_snapshot_cpus.set_autoload(kernel_times);
        skel.progs.miami_snapshot.set_autoload(!kernel_times);

        let rodata = skel.maps.rodata_data.as_mut().unwrap();
        rodata.nr_cpu_ids = llcs.cpu_llc.len() as u32;
        rodata.cpu_llc[..llcs.cpu_llc.len()].copy_from_slice(&llcs.cpu_llc);
        let runs = llcs.runs();
        rodata.llc_cpus[..runs.cpus.len()].copy_from_slice(&runs.cpus);
        rodata.cpu_llc_pos[..runs.pos.len()].copy_from_slice(&runs.pos);
        rodata.llc_first[..runs.first.len()].copy_from_slice(&runs.first);
        rodata.llc_nr[..runs.nr.len()].copy_from_slice(&runs.nr);
        rodata.slice_ns = cfg.slice_ns;
        rodata.intens_win_ns = cfg.intens_win_ns;
        rodata.net_room_pct = cfg.net_room_pct;
        rodata.time_dispatch = cfg.time_dispatch;
        rodata.nic_only = !cfg.nics.is_empty();

        // Run-time knobs live in .data (initialized globals); the agent rewrites them later.
        let data = skel.maps.data_data.as_mut().unwrap();
        let start = cfg.bounds.unwrap_or(AUTO_START);
        data.class_high_min = start.high_min;
        data.class_middle_min = start.middle_min;
        data.release_ns = cfg.release_ns;
        data.max_moves = cfg.max_moves;
        data.target_ttl_ns = target_ttl_ns(cfg);
        data.shed_ttl_ns = shed_ttl_ns(cfg);

        // How long loading (the verifier) and attaching (every task moved over) take: a
        // restart after CPU hotplug costs as much, and under load it is seconds.
        let t_load = Instant::now();
        let t_attach;
        let (skel, link) = if cfg.observe {
            let mut skel = skel.load().context("loading the BPF programs")?;
            t_attach = Instant::now();
            skel.attach()
                .context("attaching the TCP and context-switch probes")?;
            (skel, None)
        } else {
            let mut skel = scx_ops_load!(skel, miami_ops, uei)?;
            t_attach = Instant::now();
            let link = Some(scx_ops_attach!(skel, miami_ops)?);
            (skel, link)
        };
        info!(
            "{} in {:.1} s (BPF load {:.1} s, attach {:.1} s): slice {} us, release after {} ms, \
             classes {}",
            if cfg.observe {
                "observing (no scheduling)"
            } else {
                "attached"
            },
            t_init.elapsed().as_secs_f64(),
            (t_attach - t_load).as_secs_f64(),
            t_attach.elapsed().as_secs_f64(),
            cfg.slice_ns / 1000,
            cfg.release_ns / 1_000_000,
            match cfg.bounds {
                Some(b) => format!("high >= {}, middle >= {}", b.high_min, b.middle_min),
                None =>
                    "auto (high within 4x of the most intensive task, middle within 64x)".into(),
            }
        );

        // The idle time's layout is known once the program ran (CO-RE decides at load).
        let loads_in_bpf = kernel_times && {
            run_syscall_prog(
                &skel.progs.miami_snapshot_cpus,
                snapshot_arg { stale_ns: u64::MAX },
            )
            .context("running miami_snapshot_cpus")?;
            skel.maps.bss_data.as_ref().unwrap().snap_cpu_idle_known != 0
        };
        match (loads_in_bpf, refused) {
            (true, _) => info!("CPU loads for the agent from the kernel's counters, read in BPF"),
            (false, Some(why)) => info!("CPU loads for the agent from /proc/stat ({why})"),
            (false, None) => info!(
                "CPU loads for the agent from /proc/stat (this kernel keeps the nohz idle time \
                 where BPF does not look: neither in kernel_cpustat nor in 6.12's tick_sched)"
            ),
        }
        let roots = Roots::default();
        let own_ns = roots.proc.join("self/ns/net");
        let own_netns = std::fs::metadata(&own_ns)
            .with_context(|| format!("reading {}", own_ns.display()))?
            .ino() as u32;
        let mut sched = Self {
            skel,
            link,
            cfg: cfg.clone(),
            roots,
            irq_cpus: BTreeSet::new(),
            nic_cpus: BTreeMap::new(),
            own_netns,
            irq_cpus_known: false,
            missing_nics: Vec::new(),
            nics: Vec::new(),
            ifnames: BTreeSet::new(),
            refreshes_since_scan: FULL_SCAN_EVERY,
            irq_refreshes: 0,
            irq_probes,
            irq_seen: IrqEvents::default(),
            last_scan: Instant::now(),
            nr_irq_changes: 0,
            steering: None,
            nr_cpus: llcs.cpu_llc.len(),
            cpu_llc: llcs.cpu_llc.clone(),
            hotplug_seq,
            known_cpus: topology::online_cpus(&topo).collect(),
            policy: Policy::new(policy_config(cfg)),
            util: Util::default(),
            load: LoadReader::default(),
            kernel_times,
            loads_in_bpf,
            agent: AgentState {
                max_moves: cfg.max_moves.into(),
                ..Default::default()
            },
            move_seq: 0,
            moves_written: BTreeMap::new(),
            agent_rounds: 0,
            stats_server: None,
        };
        sched.refresh_irqs(true)?;
        match sched.irq_events() {
            Some(_) => info!(
                "IRQ map: re-read on IRQ affinity, IRQ handler and interface events, at most \
                 every {} ms",
                cfg.irq_refresh_ms
            ),
            None => info!(
                "IRQ map: re-read every {} ms ({})",
                cfg.irq_refresh_ms,
                if irq_probes {
                    "no rtnetlink link events"
                } else if probes == ProbeAttach::Tracepoint {
                    "no fexit probes on this kernel"
                } else {
                    "this kernel lacks one of the functions the IRQ event probes attach to"
                }
            ),
        }
        // Only after attaching: a second instance that fails to attach must not take over the
        // socket of the one that runs.
        match launch_server(&sched.cfg.stats_socket) {
            Ok(server) => {
                info!("stats socket: {}", sched.cfg.stats_socket.display());
                sched.stats_server = Some(server);
            }
            Err(e) => warn!("no stats socket, --monitor will not work: {e:#}"),
        }
        Ok(sched)
    }

    pub fn counters(&self) -> Counters {
        match lookup_percpu_array(&self.skel.maps.stats, NR_STATS as u32) {
            Ok(per_stat) => {
                let mut c = Counters::from_percpu(per_stat);
                c.0.resize(NR_STATS, 0);
                c
            }
            Err(e) => {
                log::debug!("reading the counters: {e:#}");
                Counters::default()
            }
        }
    }

    /// Recently communicating threads from the `net_tasks` table, their NICs named.
    pub fn tasks(&self) -> Vec<TaskRow> {
        let nics = NicNames::read(
            &self.roots.sys.join("class/net"),
            &self.roots.proc.join("self/ns/net"),
            Path::new("/run/netns"),
        );
        let (now, max_age) = (monotonic_ns(), task_max_age_ms(self.cfg.release_ns));
        self.read_net_tasks()
            .iter()
            .filter_map(|nt| {
                TaskRow::from_slot(nt, now, max_age, |ifindex, netns| {
                    nics.label(ifindex, netns)
                })
            })
            .collect()
    }

    /// The agent's view of the network tasks of the last snapshot, without NIC names (it never
    /// shows one).
    fn agent_tasks(&mut self) -> Vec<TaskView> {
        let (now, max_age) = (monotonic_ns(), task_max_age_ms(self.cfg.release_ns));
        let tasks: Vec<TaskView> = self
            .snap_tasks()
            .iter()
            .filter_map(|nt| {
                let t = TaskRow::from_slot(nt, now, max_age, |_, _| String::new())?;
                Some(TaskView {
                    tid: t.tid,
                    intens: t.intens,
                    irq_cpu: t.irq_cpu,
                    cpu: t.cpu,
                    age_ms: t.age_ms,
                    util: self.util.update(t.tid, nt.runtime_ns, nt.last_comm_ns),
                })
            })
            .collect();
        self.util.retain(&tasks.iter().map(|t| t.tid).collect());
        tasks
    }

    /// One agent round (MiAMI III-D): loads, then the policy's moves and boundaries into BPF.
    fn agent_round(&mut self) -> Result<()> {
        self.agent_rounds += 1;
        let timed = self.agent_rounds % CPU_CLOCK_EVERY == 1;
        let (started, cpu0) = (Instant::now(), if timed { thread_cpu_us() } else { 0 });
        self.bpf_snapshot().context("taking the agent's snapshot")?;
        let loads = if self.loads_in_bpf {
            self.load.advance(self.snap_cpu_times())
        } else {
            self.load.read()?
        };
        let tasks = self.agent_tasks();

        // Moves BPF applied since the previous round; the swap also refills the budget.
        let bss = self.skel.maps.bss_data.as_mut().unwrap();
        // SAFETY: round_moves is a u32 in the mmapped .bss that BPF only updates atomically
        // (cmpxchg); the pointer is valid and aligned for as long as the skeleton lives.
        let applied =
            unsafe { AtomicU32::from_ptr(&mut bss.round_moves) }.swap(0, Ordering::SeqCst);
        self.agent.round_max = self.agent.round_max.max(applied.into());

        let mut round = self.policy.round(&loads, &self.cpu_llc, &tasks);
        if self.cfg.observe {
            round.moves.clear(); // no ops to apply them
        }
        let this_round = self.agent_rounds;
        let old: Vec<i32> = self
            .moves_written
            .iter()
            .filter(|&(_, &r)| this_round - r >= MOVE_ROUNDS)
            .map(|(&tid, _)| tid)
            .collect();
        for tid in old {
            self.moves_written.remove(&tid);
            let _ = self.skel.maps.policy_moves.delete(&tid.to_ne_bytes());
        }
        for m in &round.moves {
            self.move_seq = self.move_seq.wrapping_add(1).max(1);
            let mv = policy_move {
                tid: m.tid,
                cpu: m.cpu as i32,
                seq: self.move_seq,
                kind: m.kind.bpf(),
            };
            self.skel
                .maps
                .policy_moves
                .update(&m.tid.to_ne_bytes(), as_bytes(&mv), MapFlags::ANY)
                .context("writing policy_moves")?;
            self.moves_written.insert(m.tid, this_round);
            if log::log_enabled!(log::Level::Debug) {
                // What the move was decided on: where the agent saw the task, its class, its
                // share, and the loads of both CPUs (percent; "?" for a share not measured yet).
                let t = tasks.iter().find(|t| t.tid == m.tid);
                let (from, irq) = t.map_or((-1, -1), |t| (t.cpu, t.irq_cpu));
                let class = t.map_or("?", |t| {
                    crate::stats::CLASS_NAMES[round.classed_by.class_of(t.intens) as usize]
                });
                let share = t
                    .and_then(|t| t.util)
                    .map_or("?".to_string(), |u| format!("{u:.0}"));
                let load = |cpu: i32| loads.get(cpu as usize).map_or(-1.0, |l| *l);
                log::debug!(
                    "agent: {:?} tid {} -> CPU {} (from CPU {from} at {:.0}%, IRQ CPU {irq}, \
                     class {class}, share {share}%, target at {:.0}%)",
                    m.kind,
                    m.tid,
                    m.cpu,
                    load(from),
                    load(m.cpu as i32)
                );
            }
        }
        let bss = self.skel.maps.bss_data.as_mut().unwrap();
        if !round.moves.is_empty() {
            bss.policy_moves_gen = bss.policy_moves_gen.wrapping_add(1);
        }
        for (id, flag) in bss.llc_overloaded.iter_mut().enumerate() {
            let over = round.overloaded_llcs.contains(&(id as u32)) as u8;
            if *flag != over {
                log::debug!("agent: LLC {id} overloaded {over}");
                *flag = over;
            }
        }
        bss.nr_llcs_overloaded = round.overloaded_llcs.len() as u32;
        let data = self.skel.maps.data_data.as_mut().unwrap();
        if (data.class_high_min, data.class_middle_min)
            != (round.bounds.high_min, round.bounds.middle_min)
        {
            log::debug!(
                "agent: class bounds high >= {}, middle >= {} (overloaded CPUs {:?})",
                round.bounds.high_min,
                round.bounds.middle_min,
                round.overloaded
            );
            data.class_high_min = round.bounds.high_min;
            data.class_middle_min = round.bounds.middle_min;
        }
        self.agent.loads = loads;
        self.agent.nr_tasks = tasks.len() as u64;
        self.agent.round_us = started.elapsed().as_micros() as u64;
        if timed {
            self.agent.round_cpu_us = thread_cpu_us() - cpu0;
        }
        Ok(())
    }

    /// Totals for the stats server and --stats.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            counters: self.counters(),
            tasks: top_tasks(self.tasks(), TOP_TASKS),
            irq_cpus: self.irq_cpus.iter().copied().collect(),
            nr_cpus: self.nr_cpus,
            nr_irq_changes: self.nr_irq_changes,
            nr_irq_refreshes: self.irq_refreshes,
            bounds: self.policy.bounds(),
            agent: self.agent.clone(),
            loader_cpu_ms: clock_ns(rustix::time::ClockId::ProcessCPUTime) / 1_000_000,
        }
    }

    /// Take the agent tunables of @new (a reloaded --config) into the running scheduler: the
    /// periods at their next round, the thresholds, cap and initial class bounds in the policy,
    /// the release threshold and cap in BPF's .data. New initial bounds also reset the current
    /// ones. Logs what changed.
    pub fn reconfigure(&mut self, new: &Config) {
        let old = &self.cfg;
        let mut changed = Vec::new();
        let mut note = |name: &str, a: String, b: String| {
            if a != b {
                changed.push(format!("{name} {a} -> {b}"));
            }
        };
        let ms = |ns: u64| (ns / 1_000_000).to_string();
        let bounds = |b: Option<ClassBounds>| {
            b.map_or("auto".into(), |b| {
                format!("{},{}", b.high_min, b.middle_min)
            })
        };
        note(
            "interval-ms",
            old.interval_ms.to_string(),
            new.interval_ms.to_string(),
        );
        note("release-after-ms", ms(old.release_ns), ms(new.release_ns));
        note(
            "low-load-pct",
            old.low_load_pct.to_string(),
            new.low_load_pct.to_string(),
        );
        note(
            "high-load-pct",
            old.high_load_pct.to_string(),
            new.high_load_pct.to_string(),
        );
        note(
            "max-migrations",
            old.max_moves.to_string(),
            new.max_moves.to_string(),
        );
        note("class-bounds", bounds(old.bounds), bounds(new.bounds));
        note(
            "irq-refresh-ms",
            old.irq_refresh_ms.to_string(),
            new.irq_refresh_ms.to_string(),
        );
        if changed.is_empty() {
            info!("reconfigured: nothing changed");
            return;
        }
        let data = self.skel.maps.data_data.as_mut().unwrap();
        data.release_ns = new.release_ns;
        data.max_moves = new.max_moves;
        data.target_ttl_ns = target_ttl_ns(new);
        data.shed_ttl_ns = shed_ttl_ns(new);
        if new.max_moves != old.max_moves {
            // "Most moves in one round" is judged against the cap in force.
            self.agent = AgentState {
                max_moves: new.max_moves.into(),
                round_max: 0,
                ..self.agent.clone()
            };
        }
        self.policy.set_config(policy_config(new));
        let b = self.policy.bounds();
        (data.class_high_min, data.class_middle_min) = (b.high_min, b.middle_min);
        self.cfg = new.clone();
        info!("reconfigured: {}", changed.join(", "));
    }
}

impl Drop for Scheduler<'_> {
    fn drop(&mut self) {
        // Detaching is what leaves the host as it was; the IRQ map is only read, never written.
        let _ = self.link.take();
        // Stop the server (its drop wakes the listener through the socket), then remove the
        // socket so --monitor reports "not running" rather than a refused connection.
        if self.stats_server.take().is_some() {
            let _ = std::fs::remove_file(&self.cfg.stats_socket);
        }
        info!("unregistered {}", crate::SCHEDULER_NAME);
    }
}
