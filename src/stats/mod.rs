// SPDX-License-Identifier: GPL-2.0
//! The one table of BPF counters: id (from intf.h), name, unit, description. It drives reading,
//! deltas, the stats server's metadata and JSON, --help-stats, the printed report and the
//! OpenMetrics output; nothing else names a counter. Fields that are not BPF counters (tier
//! shares, class boundaries, IRQ CPUs) are the second table, `DERIVED`; the per-task and
//! per-CPU rows are `TASK_FIELDS` and `CPU_FIELDS`.

use serde::{Deserialize, Serialize};

use crate::bpf_intf::*;

mod openmetrics;
mod sample;
mod server;

pub use openmetrics::{base_unit, format_openmetrics};
pub use sample::{AgentState, CpuRow, Sample, Sampler, Snapshot};
pub use server::{
    launch_server, metas, monitor, not_ours, read_sample, server_data, DEFAULT_SOCKET, META_CPU,
    META_TASK, META_TOP, STOPPING,
};

pub struct StatDesc {
    pub id: u32,
    pub name: &'static str,
    pub unit: &'static str,
    pub desc: &'static str,
}

macro_rules! stat {
    ($id:ident, $name:expr, $unit:expr, $desc:expr) => {
        StatDesc {
            id: $id,
            name: $name,
            unit: $unit,
            desc: $desc,
        }
    };
}

pub const NR_STATS: usize = miami_stat_MIAMI_NR_STATS as usize;

pub static STATS: &[StatDesc] = &[
    stat!(
        miami_stat_MIAMI_STAT_ENQ_CORE_HIGH,
        "enq_core_high",
        "count",
        "network-task enqueues on the IRQ CPU, class high"
    ),
    stat!(
        miami_stat_MIAMI_STAT_ENQ_CORE_MIDDLE,
        "enq_core_middle",
        "count",
        "network-task enqueues on the IRQ CPU, class middle"
    ),
    stat!(
        miami_stat_MIAMI_STAT_ENQ_CORE_LOW,
        "enq_core_low",
        "count",
        "network-task enqueues on the IRQ CPU, class low"
    ),
    stat!(
        miami_stat_MIAMI_STAT_ENQ_CACHE_HIGH,
        "enq_cache_high",
        "count",
        "network-task enqueues on an LLC sibling of the IRQ CPU, class high"
    ),
    stat!(
        miami_stat_MIAMI_STAT_ENQ_CACHE_MIDDLE,
        "enq_cache_middle",
        "count",
        "network-task enqueues on an LLC sibling of the IRQ CPU, class middle"
    ),
    stat!(
        miami_stat_MIAMI_STAT_ENQ_CACHE_LOW,
        "enq_cache_low",
        "count",
        "network-task enqueues on an LLC sibling of the IRQ CPU, class low"
    ),
    stat!(
        miami_stat_MIAMI_STAT_ENQ_OTHER_HIGH,
        "enq_other_high",
        "count",
        "network-task enqueues outside the IRQ CPU's LLC, class high"
    ),
    stat!(
        miami_stat_MIAMI_STAT_ENQ_OTHER_MIDDLE,
        "enq_other_middle",
        "count",
        "network-task enqueues outside the IRQ CPU's LLC, class middle"
    ),
    stat!(
        miami_stat_MIAMI_STAT_ENQ_OTHER_LOW,
        "enq_other_low",
        "count",
        "network-task enqueues outside the IRQ CPU's LLC, class low"
    ),
    stat!(
        miami_stat_MIAMI_STAT_ENQ_NORMAL,
        "enq_normal",
        "count",
        "enqueues of non-network or released tasks"
    ),
    stat!(
        miami_stat_MIAMI_STAT_NORMAL_AVOID_IRQ,
        "normal_avoid_irq",
        "count",
        "non-network wakeups placed on an idle CPU that takes no NIC IRQ"
    ),
    stat!(
        miami_stat_MIAMI_STAT_RUN_CORE_NS,
        "run_core_ns",
        "ns",
        "network-task runtime on the IRQ CPU (tier core)"
    ),
    stat!(
        miami_stat_MIAMI_STAT_RUN_CACHE_NS,
        "run_cache_ns",
        "ns",
        "network-task runtime on an LLC sibling of the IRQ CPU (tier cache)"
    ),
    stat!(
        miami_stat_MIAMI_STAT_RUN_OTHER_NS,
        "run_other_ns",
        "ns",
        "network-task runtime elsewhere (tier other)"
    ),
    stat!(
        miami_stat_MIAMI_STAT_RELEASES,
        "releases",
        "count",
        "network tasks released after --release-after-ms without a call (step 1)"
    ),
    stat!(
        miami_stat_MIAMI_STAT_TIER_CHANGES,
        "tier_changes",
        "count",
        "a network task started running in a different tier than last time"
    ),
    stat!(
        miami_stat_MIAMI_STAT_PREEMPT_KICKS,
        "preempt_kicks",
        "count",
        "class-high tasks that preempted non-network work on their IRQ CPU"
    ),
    stat!(
        miami_stat_MIAMI_STAT_PROBE_SEND,
        "probe_send",
        "count",
        "tcp_sendmsg calls seen by the monitor"
    ),
    stat!(
        miami_stat_MIAMI_STAT_PROBE_RECV,
        "probe_recv",
        "count",
        "tcp_recvmsg calls seen by the monitor"
    ),
    stat!(
        miami_stat_MIAMI_STAT_PROBE_RCV_PKT,
        "probe_rcv_pkt",
        "count",
        "segments through tcp_rcv_established"
    ),
    stat!(
        miami_stat_MIAMI_STAT_RX_IRQ_CPU,
        "rx_irq_cpu",
        "count",
        "segments of our NICs processed on one of their IRQ CPUs"
    ),
    stat!(
        miami_stat_MIAMI_STAT_RX_OFF_IRQ,
        "rx_off_irq",
        "count",
        "segments of our NICs processed elsewhere: RPS/RFS, or the socket's backlog"
    ),
    stat!(
        miami_stat_MIAMI_STAT_SOCKS_TRACKED,
        "socks_tracked",
        "count",
        "sockets that got per-connection state"
    ),
    stat!(
        miami_stat_MIAMI_STAT_REP_CHANGES,
        "rep_changes",
        "count",
        "a task's representative (most intensive) connection changed"
    ),
    stat!(
        miami_stat_MIAMI_STAT_NET_LLC_HOLD,
        "net_llc_hold",
        "count",
        "network wakeups with no room in the IRQ CPU's LLC that queued there: not overloaded"
    ),
    stat!(
        miami_stat_MIAMI_STAT_NET_SPILL,
        "net_spill",
        "count",
        "network wakeups with no room in an overloaded LLC that took an idle CPU elsewhere"
    ),
    stat!(
        miami_stat_MIAMI_STAT_DIRECT_LOCAL,
        "direct_local",
        "count",
        "wakeups dispatched straight to an idle CPU"
    ),
    stat!(
        miami_stat_MIAMI_STAT_DSP_CPU,
        "dsp_cpu",
        "count",
        "dispatches from the CPU's own per-CPU DSQ"
    ),
    stat!(
        miami_stat_MIAMI_STAT_DSP_SHARED,
        "dsp_shared",
        "count",
        "dispatches from the shared vtime DSQ"
    ),
    stat!(
        miami_stat_MIAMI_STAT_DSP_STEAL_LLC,
        "dsp_steal_llc",
        "count",
        "dispatches pulled from an LLC sibling's per-CPU DSQ"
    ),
    stat!(
        miami_stat_MIAMI_STAT_DSP_STEAL_FAR,
        "dsp_steal_far",
        "count",
        "dispatches pulled from a per-CPU DSQ in another LLC"
    ),
    stat!(
        miami_stat_MIAMI_STAT_POLICY_UPGRADES,
        "policy_upgrades",
        "count",
        "agent moves applied, step 2: a class-high task to its IRQ CPU or into its LLC"
    ),
    stat!(
        miami_stat_MIAMI_STAT_POLICY_SHEDS,
        "policy_sheds",
        "count",
        "agent moves applied, step 3: a task off a CPU above --high-load-pct"
    ),
    stat!(
        miami_stat_MIAMI_STAT_POLICY_DEFERRED,
        "policy_deferred",
        "count",
        "placements that found an agent move pending but the round's --max-migrations spent"
    ),
    stat!(
        miami_stat_MIAMI_STAT_TARGET_EXPIRED,
        "target_expired",
        "count",
        "agent targets dropped: older than 10 rounds, the IRQ CPU moved, or the overload ended"
    ),
    stat!(
        miami_stat_MIAMI_STAT_NET_MIGRATIONS,
        "net_migrations",
        "count",
        "network tasks that started running on another CPU than last time (all causes)"
    ),
    stat!(
        miami_stat_MIAMI_STAT_REP_CLOSED,
        "rep_closed",
        "count",
        "tasks that closed their representative connection"
    ),
    stat!(
        miami_stat_MIAMI_STAT_PROBE_MISSED,
        "probe_missed",
        "count",
        "send/recv calls the monitor could not count: no socket or task storage to be had"
    ),
    stat!(
        miami_stat_MIAMI_STAT_PROC_LLC,
        "proc_llc",
        "count",
        "placements of a network process's threads that do not communicate, in its IRQ CPU's LLC"
    ),
    stat!(
        miami_stat_MIAMI_STAT_PROC_OUT,
        "proc_out",
        "count",
        "placements of those threads on an idle CPU outside that LLC, none being idle in it"
    ),
    stat!(
        miami_stat_MIAMI_STAT_STARVED,
        "starved",
        "count",
        "tasks runnable for half of --starve-ms or more that the starvation guard ran out of vtime order"
    ),
    stat!(
        miami_stat_MIAMI_STAT_DSP_CPU_NS,
        "dsp_cpu_ns",
        "ns",
        "with --test-time-dispatch only: time in dispatch() calls that took a task from the CPU's own DSQ"
    ),
    stat!(
        miami_stat_MIAMI_STAT_DSP_SHARED_NS,
        "dsp_shared_ns",
        "ns",
        "with --test-time-dispatch only: time in dispatch() calls that took one from the shared DSQ"
    ),
    stat!(
        miami_stat_MIAMI_STAT_DSP_STEAL_LLC_NS,
        "dsp_steal_llc_ns",
        "ns",
        "with --test-time-dispatch only: time in dispatch() calls that pulled one from an LLC sibling's DSQ"
    ),
    stat!(
        miami_stat_MIAMI_STAT_DSP_STEAL_FAR_NS,
        "dsp_steal_far_ns",
        "ns",
        "with --test-time-dispatch only: time in dispatch() calls that pulled one from another LLC"
    ),
    stat!(
        miami_stat_MIAMI_STAT_DSP_NONE_NS,
        "dsp_none_ns",
        "ns",
        "with --test-time-dispatch only: time in dispatch() calls that moved no task"
    ),
];

/// Counter values indexed by stat id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counters(pub Vec<u64>);

impl Default for Counters {
    fn default() -> Self {
        Self(vec![0; NR_STATS])
    }
}

impl Counters {
    /// Sum per-CPU values: @percpu[cpu] is the 8-byte little/native-endian value of one CPU.
    pub fn from_percpu(per_stat: impl IntoIterator<Item = Vec<Vec<u8>>>) -> Self {
        let v = per_stat
            .into_iter()
            .map(|cpus| {
                cpus.iter()
                    .map(|b| {
                        b.get(..8)
                            .and_then(|s| s.try_into().ok())
                            .map_or(0, u64::from_ne_bytes)
                    })
                    .sum()
            })
            .collect();
        Self(v)
    }

    pub fn get(&self, id: u32) -> u64 {
        self.0.get(id as usize).copied().unwrap_or(0)
    }

    /// Counter increase since @prev (counters never go back; a restart resets them).
    pub fn delta(&self, prev: &Counters) -> Counters {
        Counters(
            self.0
                .iter()
                .zip(prev.0.iter().chain(std::iter::repeat(&0)))
                .map(|(c, p)| c.saturating_sub(*p))
                .collect(),
        )
    }

    /// Share of network-task runtime per tier (core, cache, other), in percent.
    pub fn tier_shares(&self) -> [f64; 3] {
        let ns = [
            self.get(miami_stat_MIAMI_STAT_RUN_CORE_NS),
            self.get(miami_stat_MIAMI_STAT_RUN_CACHE_NS),
            self.get(miami_stat_MIAMI_STAT_RUN_OTHER_NS),
        ];
        let total: u64 = ns.iter().sum();
        if total == 0 {
            return [0.0; 3];
        }
        ns.map(|v| v as f64 * 100.0 / total as f64)
    }

    /// One line per counter: "name value", with the tier shares first.
    pub fn report(&self) -> String {
        let [core, cache, other] = self.tier_shares();
        let mut out = format!("tier_share core={core:.1}% cache={cache:.1}% other={other:.1}%\n");
        for s in STATS {
            out.push_str(&format!("{:<18} {}\n", s.name, self.get(s.id)));
        }
        out
    }
}

pub const CLASS_NAMES: [&str; 3] = ["high", "middle", "low"];
pub const TIER_NAMES: [&str; 4] = ["core", "cache", "other", "none"];

/// How a field is exported as OpenMetrics: a counter (a total that only grows), a gauge, or not
/// at all (strings, which are exported another way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OmType {
    Counter,
    Gauge,
    None,
}

/// JSON type of a field that is not a BPF counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    I64,
    U64,
    Float,
    Str,
}

/// A field of the top metrics object that is not a BPF counter, or a column of a row table.
pub struct FieldDesc {
    pub name: &'static str,
    pub ty: FieldType,
    pub unit: &'static str,
    pub om: OmType,
    pub desc: &'static str,
}

macro_rules! field {
    ($name:expr, $ty:ident, $unit:expr, $om:ident, $desc:expr) => {
        FieldDesc {
            name: $name,
            ty: FieldType::$ty,
            unit: $unit,
            om: OmType::$om,
            desc: $desc,
        }
    };
}

/// Fields computed by the loader, after the counters in the top object.
pub static DERIVED: &[FieldDesc] = &[
    field!(
        "tier_share_core",
        Float,
        "percent",
        Gauge,
        "share of network-task runtime on the IRQ CPU over the interval"
    ),
    field!(
        "tier_share_cache",
        Float,
        "percent",
        Gauge,
        "share of network-task runtime on an LLC sibling of the IRQ CPU over the interval"
    ),
    field!(
        "tier_share_other",
        Float,
        "percent",
        Gauge,
        "share of network-task runtime elsewhere over the interval"
    ),
    field!(
        "class_high_min",
        U64,
        "intens",
        Gauge,
        "intensiveness from which a task is class high now (the agent moves it under load)"
    ),
    field!(
        "class_middle_min",
        U64,
        "intens",
        Gauge,
        "intensiveness from which a task is class middle now (the agent moves it under load)"
    ),
    field!(
        "irq_cpus",
        Str,
        "cpu list",
        None,
        "CPUs that take NIC receive IRQs now, e.g. 1,5-6 (OpenMetrics: miami_cpu_irq)"
    ),
    field!(
        "policy_round_max",
        U64,
        "count",
        Gauge,
        "most agent moves applied in one round since the start (never above max_migrations)"
    ),
    field!(
        "max_migrations",
        U64,
        "count",
        Gauge,
        "cap on agent moves (targets) applied per round (--max-migrations); wakeup placement \
         and idle stealing move network tasks too: net_migrations counts every move"
    ),
    field!(
        "nr_net_tasks",
        U64,
        "count",
        Gauge,
        "network tasks the agent saw in its last round (every one, not only the top rows)"
    ),
    field!(
        "agent_cost_us",
        U64,
        "us",
        Gauge,
        "time of the agent's last round in BPF: snapshot of loads and tasks, steps 1-3, moves \
         written (the BPF timer's, or the loader's system call where user space runs the rounds)"
    ),
    field!(
        "agent_bpf_ms",
        U64,
        "ms",
        Counter,
        "time of all the agent's rounds since the start (a total, not a delta): the agent's cost, \
         in the BPF timer's softirq, outside loader_cpu_ms"
    ),
    field!(
        "irq_refresh_cpu_us",
        U64,
        "us",
        Gauge,
        "CPU time of one of the last 10 IRQ map re-reads (after IRQ or interface events, or every --irq-refresh-ms where those are not seen), quick or full (read every 10th, and for each full scan)"
    ),
    field!(
        "irq_scan_cpu_us",
        U64,
        "us",
        Gauge,
        "CPU time of the last full IRQ map scan (every interface, PCI device and IRQ vector)"
    ),
    field!(
        "loader_cpu_ms",
        U64,
        "ms",
        Counter,
        "CPU time of the whole loader process, every thread, since it started (a total, not a \
         delta): what scx_miami costs in user space"
    ),
    field!(
        "nr_irq_changes",
        U64,
        "count",
        Counter,
        "times the IRQ CPUs or a NIC's receive CPUs changed since start (a total, not a delta)"
    ),
    field!(
        "nr_irq_refreshes",
        U64,
        "count",
        Counter,
        "IRQ map re-reads since start, quick or full (a total, not a delta): after IRQ and \
         interface events only, where the kernel reports them (the start-up log says which)"
    ),
];

/// Columns of the per-task table, the `tasks` array of the top object: the most intensive
/// recently communicating threads.
pub static TASK_FIELDS: &[FieldDesc] = &[
    field!("tid", I64, "id", None, "thread id"),
    field!("tgid", I64, "id", None, "process id"),
    field!("comm", Str, "name", None, "thread name"),
    field!(
        "intens",
        U64,
        "intens",
        Gauge,
        "communication intensiveness, 10^6 / mean call interval in us"
    ),
    field!("class", Str, "name", None, "class: high, middle or low"),
    field!(
        "tier",
        Str,
        "name",
        None,
        "tier it last ran in: core, cache, other (none: not yet)"
    ),
    field!(
        "irq_cpu",
        I64,
        "cpu",
        None,
        "IRQ CPU it is placed near: its representative connection's, else the one most of its \
         calls had (-1: none, e.g. loopback only)"
    ),
    field!(
        "cpu",
        I64,
        "cpu",
        None,
        "CPU of its last call seen (the table is written at most once per window)"
    ),
    field!(
        "nic",
        Str,
        "name",
        None,
        "interface of that IRQ CPU's connection, or with no IRQ CPU (a NIC outside --nic) of \
         its last connection but loopback (-: unknown; ifN@NS: index N in namespace NS)"
    ),
    field!(
        "age_ms",
        U64,
        "ms",
        None,
        "time since its last send/recv call"
    ),
];

/// Columns of the per-CPU table, the `cpus` array of the top object.
pub static CPU_FIELDS: &[FieldDesc] = &[
    field!("cpu", U64, "cpu", None, "CPU id"),
    field!(
        "irq",
        U64,
        "flag",
        Gauge,
        "1 if the CPU takes NIC receive IRQs, else 0 (OpenMetrics: miami_cpu_irq)"
    ),
    field!(
        "load_pct",
        U64,
        "percent",
        Gauge,
        "busy share over the last agent round, hard and soft IRQ time included (the kernel's CPU time counters, as /proc/stat)"
    ),
];

/// Rows shown in the task table.
pub const TOP_TASKS: usize = 16;

/// --help-stats and docs/stats.md: every field of the stats server's top object with its unit
/// and description, then the columns of its two row tables.
pub fn describe() -> String {
    let line = |name: &str, unit: &str, desc: &str| format!("{name:<18} [{unit}] {desc}\n");
    let mut out =
        String::from("counters: BPF counters summed over CPUs; increase since the previous read\n");
    for s in STATS {
        out.push_str(&line(s.name, s.unit, s.desc));
    }
    out.push_str("\nderived: computed by the loader\n");
    for f in DERIVED {
        out.push_str(&line(f.name, f.unit, f.desc));
    }
    out.push_str(&format!(
        "\ntasks: one row per network task, the {TOP_TASKS} most intensive first\n"
    ));
    for f in TASK_FIELDS {
        out.push_str(&line(f.name, f.unit, f.desc));
    }
    out.push_str("\ncpus: one row per CPU\n");
    for f in CPU_FIELDS {
        out.push_str(&line(f.name, f.unit, f.desc));
    }
    out
}

/// One row of the per-task table, from a `struct net_task` slot. Its fields are `TASK_FIELDS`,
/// in that order (a host test keeps them in step).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRow {
    pub tid: i32,
    pub tgid: i32,
    pub comm: String,
    pub intens: u32,
    pub class: String,
    pub tier: String,
    pub irq_cpu: i32,
    pub cpu: i32,
    pub nic: String,
    pub age_ms: u64,
}

impl TaskRow {
    /// None for an empty slot or one whose thread last called more than @max_age_ms ago.
    /// @nic_name names an interface by ifindex and network namespace inode (NicNames::label).
    pub fn from_slot(
        nt: &net_task,
        now_ns: u64,
        max_age_ms: u64,
        nic_name: impl Fn(u32, u32) -> String,
    ) -> Option<Self> {
        if nt.tid <= 0 || nt.last_comm_ns == 0 {
            return None;
        }
        let age_ms = now_ns.saturating_sub(nt.last_comm_ns) / 1_000_000;
        if age_ms > max_age_ms {
            return None;
        }
        let comm: Vec<u8> = nt
            .comm
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        Some(Self {
            tid: nt.tid,
            tgid: nt.tgid,
            comm: String::from_utf8_lossy(&comm).into_owned(),
            intens: nt.intens,
            class: CLASS_NAMES
                .get(nt.cls as usize)
                .copied()
                .unwrap_or("?")
                .into(),
            tier: TIER_NAMES
                .get(nt.tier as usize)
                .copied()
                .unwrap_or("?")
                .into(),
            irq_cpu: nt.irq_cpu,
            cpu: nt.cpu,
            nic: if nt.ifindex == 0 {
                "-".into()
            } else {
                nic_name(nt.ifindex, nt.netns)
            },
            age_ms,
        })
    }
}

/// The @n most intensive rows, most intensive first (ties: most recent first).
pub fn top_tasks(mut rows: Vec<TaskRow>, n: usize) -> Vec<TaskRow> {
    rows.sort_by(|a, b| b.intens.cmp(&a.intens).then(a.age_ms.cmp(&b.age_ms)));
    rows.truncate(n);
    rows
}

/// The task table as text.
pub fn format_tasks(rows: &[TaskRow]) -> String {
    let mut out = format!(
        "{:>8} {:>8} {:<15} {:>8} {:<6} {:<5} {:>4} {:>4} {:<8} {:>7}\n",
        "tid", "tgid", "comm", "intens", "class", "tier", "irq", "cpu", "nic", "age_ms"
    );
    for r in rows {
        out.push_str(&format!(
            "{:>8} {:>8} {:<15} {:>8} {:<6} {:<5} {:>4} {:>4} {:<8} {:>7}\n",
            r.tid, r.tgid, r.comm, r.intens, r.class, r.tier, r.irq_cpu, r.cpu, r.nic, r.age_ms
        ));
    }
    out
}
