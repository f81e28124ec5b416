// SPDX-License-Identifier: GPL-2.0
//! Loads, configures and runs the BPF scheduler: rodata from the validated config and the
//! topology, the IRQ CPU mask from the NIC IRQ map, then a run loop (run_loop.rs) that runs the
//! agent, refreshes the IRQ map, answers the stats server, prints stats and ends on shutdown or
//! when the kernel ejects the scheduler.

use anyhow::{Context, Result};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::OpenObject;
use log::{info, warn};
use scx_stats::prelude::StatsServer;
use scx_utils::Topology;
use scx_utils::{scx_ops_attach, scx_ops_load, scx_ops_open};
use std::collections::{BTreeMap, BTreeSet};
use std::mem::MaybeUninit;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Instant;

use crate::bpf_intf::{agent_round_arg, snapshot_arg};
use crate::bpf_skel::*;
use crate::config::{ClassBounds, Config};
use crate::irq::{self, IrqEvents, NicNames, Roots};
use crate::load::{kernel_cpu_times_refused, LoadReader};
use crate::maps::lookup_percpu_array;
use crate::policy::{self, PolicyConfig, REPEAT_ROUNDS, SHED_HOLD_ROUNDS};
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

/// The snapshot's stale age: net_tasks entries silent this long are deleted, and the stats and
/// the agent list those up to a ms younger (task_max_age_ms()).
fn stale_ns(release_ns: u64) -> u64 {
    (task_max_age_ms(release_ns) + 1) * 1_000_000
}

/// The agent's knobs of @cfg into BPF's .data: at load, and on a SIGHUP's reload (the next round
/// takes them).
fn write_agent_knobs(data: &mut types::data, cfg: &Config) {
    policy_config(cfg).write(data);
    data.target_ttl_ns = target_ttl_ns(cfg);
    data.shed_ttl_ns = shed_ttl_ns(cfg);
    data.agent_interval_ns = cfg.interval_ms * 1_000_000;
    data.agent_stale_ns = stale_ns(cfg.release_ns);
}

/// How long a task follows a shed target (agent.bpf.c shed_ttl_ns).
fn shed_ttl_ns(cfg: &Config) -> u64 {
    SHED_HOLD_ROUNDS * cfg.interval_ms * 1_000_000
}

/// @clock in ns: CLOCK_MONOTONIC is the clock of bpf_ktime_get_ns(); the CPU-time clocks give
/// what the loader itself costs (stats: loader_cpu_ms and the IRQ refresh's).
fn clock_ns(clock: rustix::time::ClockId) -> u64 {
    let ts = rustix::time::clock_gettime(clock);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn monotonic_ns() -> u64 {
    clock_ns(rustix::time::ClockId::Monotonic)
}

/// Every this many quick IRQ map refreshes, their CPU time is read (irq_refresh_cpu_us; a full
/// scan's always). A thread's CPU clock is a system call that takes its runqueue's lock: in a
/// TCG guest with eight busy receivers, perf counted 9.8% of the loader's samples in it, at two
/// reads per agent round and per refresh when the rounds ran in user space.
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
    /// /proc/stat, for the rounds where the loads cannot be read in BPF (`!loads_in_bpf`).
    load: LoadReader,
    /// The agent's rounds run in a BPF timer (policy.bpf.c miami_agent_start()), their loads
    /// from the kernel's counters read in BPF: miami_snapshot_cpus() loaded and found the idle
    /// time. Otherwise the run loop runs each round (miami_agent_round()) on /proc/stat's loads.
    loads_in_bpf: bool,
    agent: AgentState,
    /// The rounds' moves logged so far (policy.bpf.c agent_log_head).
    log_tail: u64,
    /// The class boundaries last logged.
    agent_bounds: ClassBounds,
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
        skel.progs.miami_agent_start.set_autoload(kernel_times);
        skel.progs.miami_snapshot.set_autoload(false); // tests/it/snapshot.rs only

        let rodata = skel.maps.rodata_data.as_mut().unwrap();
        rodata.nr_cpu_ids = llcs.cpu_llc.len() as u32;
        rodata.cpu_llc[..llcs.cpu_llc.len()].copy_from_slice(&llcs.cpu_llc);
        let runs = llcs.runs();
        rodata.llc_cpus[..runs.cpus.len()].copy_from_slice(&runs.cpus);
        rodata.cpu_llc_pos[..runs.pos.len()].copy_from_slice(&runs.pos);
        rodata.llc_first[..runs.first.len()].copy_from_slice(&runs.first);
        rodata.llc_nr[..runs.nr.len()].copy_from_slice(&runs.nr);
        rodata.slice_ns = cfg.slice_ns;
        rodata.starve_ns = cfg.starve_ns;
        rodata.intens_win_ns = cfg.intens_win_ns;
        rodata.net_room_pct = cfg.net_room_pct;
        rodata.time_dispatch = cfg.time_dispatch;
        rodata.nic_only = !cfg.nics.is_empty();

        // Run-time knobs live in .data (initialized globals); the agent rewrites them later.
        let data = skel.maps.data_data.as_mut().unwrap();
        write_agent_knobs(data, cfg);
        policy_config(cfg).reset_bounds(data);
        data.agent_apply = !cfg.observe as u32;

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
            (true, _) => info!(
                "agent: rounds in a BPF timer every {} ms, CPU loads from the kernel's counters",
                cfg.interval_ms
            ),
            (false, Some(why)) => info!(
                "agent: rounds from user space every {} ms, CPU loads from /proc/stat ({why})",
                cfg.interval_ms
            ),
            (false, None) => info!(
                "agent: rounds from user space every {} ms, CPU loads from /proc/stat (this \
                 kernel keeps the nohz idle time where BPF does not look: neither in \
                 kernel_cpustat nor in 6.12's tick_sched)",
                cfg.interval_ms
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
            load: LoadReader::default(),
            loads_in_bpf,
            agent: AgentState {
                max_moves: cfg.max_moves.into(),
                ..Default::default()
            },
            log_tail: 0,
            agent_bounds: cfg.bounds.unwrap_or(policy::AUTO_START),
            stats_server: None,
        };
        sched.refresh_irqs(true)?;
        sched.agent_start()?;
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

    /// Start the agent's rounds in the BPF timer, or note that the run loop runs them.
    fn agent_start(&mut self) -> Result<()> {
        if self.loads_in_bpf {
            run_syscall_prog(&self.skel.progs.miami_agent_start, 0u64)
                .context("starting the agent's timer (miami_agent_start)")?;
        }
        Ok(())
    }

    /// Whether the run loop runs the agent's rounds (the kernel's CPU time counters cannot be
    /// read in BPF here), rather than the BPF timer.
    fn agent_in_user_space(&self) -> bool {
        !self.loads_in_bpf
    }

    /// One agent round from user space (MiAMI III-D), where the BPF timer cannot run them:
    /// /proc/stat's loads into BPF, then the round on a fresh snapshot (miami_agent_round()).
    fn agent_round(&mut self) -> Result<()> {
        let loads = self.load.read()?;
        let bss = self.skel.maps.bss_data.as_mut().unwrap();
        for (slot, &l) in bss.agent_load.iter_mut().zip(&loads) {
            *slot = policy::load_bpf(l);
        }
        let arg = agent_round_arg {
            now_ns: monotonic_ns(),
            stale_ns: stale_ns(self.cfg.release_ns),
            flags: 0,
            nr_views: 0,
        };
        run_syscall_prog(&self.skel.progs.miami_agent_round, arg)
            .context("running the agent's round (miami_agent_round)")
    }

    /// Take what the rounds did since the last call: their moves into the --verbose log, a
    /// boundary change too; their figures into the stats. Reads memory only (.bss).
    fn agent_report(&mut self) {
        let bss = self.skel.maps.bss_data.as_ref().unwrap();
        let head = bss.agent_log_head;
        let size = bss.agent_log.len() as u64;
        if log::log_enabled!(log::Level::Debug) {
            let from = self.log_tail.max(head.saturating_sub(size));
            if from > self.log_tail {
                log::debug!(
                    "agent: {} moves not logged (the log wrapped)",
                    from - self.log_tail
                );
            }
            for n in from..head {
                log::debug!(
                    "{}",
                    policy::describe_move(&bss.agent_log[(n % size) as usize])
                );
            }
        }
        self.log_tail = head;
        self.agent.round_max = bss.agent_round_max.into();
        self.agent.nr_tasks = bss.agent_nr_tasks.into();
        self.agent.round_us = bss.agent_round_ns / 1000;
        self.agent.bpf_total_ms = bss.agent_round_ns_total / 1_000_000;
        let nr = self.nr_cpus.min(bss.agent_load.len());
        self.agent.loads = bss.agent_load[..nr]
            .iter()
            .map(|&l| policy::pct_of(l).unwrap_or(f64::NAN))
            .collect();
        let b = policy::bounds(self.skel.maps.data_data.as_ref().unwrap());
        if b != self.agent_bounds {
            log::debug!(
                "agent: class bounds high >= {}, middle >= {} ({} CPUs overloaded)",
                b.high_min,
                b.middle_min,
                bss.agent_nr_over
            );
            self.agent_bounds = b;
        }
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
            bounds: policy::bounds(self.skel.maps.data_data.as_ref().unwrap()),
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
        write_agent_knobs(data, new);
        if new.bounds != old.bounds {
            policy_config(new).reset_bounds(data);
        }
        if new.max_moves != old.max_moves {
            // "Most moves in one round" is judged against the cap in force.
            self.agent.max_moves = new.max_moves.into();
            self.agent.round_max = 0;
            self.skel.maps.bss_data.as_mut().unwrap().agent_round_max = 0;
        }
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
