// SPDX-License-Identifier: GPL-2.0
//! One stats sample: what the run loop hands out (`Snapshot`, totals), what a reader makes of
//! it (`Sample`, counters as the increase since that reader's previous read), its JSON form on
//! the stats socket and the human report that --stats and --monitor print.

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{format_tasks, Counters, TaskRow, DERIVED, STATS};
use crate::config::ClassBounds;
use crate::cpulist::{format_cpu_list, parse_cpu_list};

/// The run loop's answer to a stats request: totals since the scheduler started.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub counters: Counters,
    /// The most intensive network tasks, most intensive first, interfaces named.
    pub tasks: Vec<TaskRow>,
    pub irq_cpus: Vec<usize>,
    pub nr_cpus: usize,
    pub nr_irq_changes: u64,
    /// IRQ map refreshes since the start, quick or full.
    pub nr_irq_refreshes: u64,
    /// The class boundaries in use now.
    pub bounds: ClassBounds,
    pub agent: AgentState,
    /// CPU time of the whole loader process since it started.
    pub loader_cpu_ms: u64,
}

/// What the agent reports: its cap, its busiest round, the last per-CPU loads, how many
/// network tasks it saw and what its last round cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentState {
    pub max_moves: u64,
    pub round_max: u64,
    /// Busy percent per CPU over the last round.
    pub loads: Vec<f64>,
    pub nr_tasks: u64,
    /// Time of the last round (BPF), and of all rounds since the start.
    pub round_us: u64,
    pub bpf_total_ms: u64,
    /// CPU time (the loader thread's) of the last IRQ map refresh (quick or full) and of the
    /// last full scan.
    pub irq_refresh_cpu_us: u64,
    pub irq_scan_cpu_us: u64,
}

/// One row of the per-CPU table (`CPU_FIELDS`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuRow {
    pub cpu: u64,
    pub irq: u64,
    pub load_pct: u64,
}

/// The top metrics object: counters since the reader's previous read, plus `DERIVED`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub counters: Counters,
    pub class_high_min: u64,
    pub class_middle_min: u64,
    pub irq_cpus: Vec<usize>,
    pub nr_irq_changes: u64,
    pub nr_irq_refreshes: u64,
    pub policy_round_max: u64,
    pub max_migrations: u64,
    pub nr_net_tasks: u64,
    pub agent_cost_us: u64,
    pub agent_bpf_ms: u64,
    pub irq_refresh_cpu_us: u64,
    pub irq_scan_cpu_us: u64,
    pub loader_cpu_ms: u64,
    pub tasks: Vec<TaskRow>,
    pub cpus: Vec<CpuRow>,
}

/// Per-reader state: the totals of its previous read, so each client gets its own deltas.
#[derive(Debug, Default)]
pub struct Sampler {
    prev: Counters,
}

impl Sampler {
    pub fn sample(&mut self, snap: &Snapshot) -> Sample {
        let counters = snap.counters.delta(&self.prev);
        self.prev = snap.counters.clone();
        Sample {
            counters,
            class_high_min: snap.bounds.high_min.into(),
            class_middle_min: snap.bounds.middle_min.into(),
            irq_cpus: snap.irq_cpus.clone(),
            nr_irq_changes: snap.nr_irq_changes,
            nr_irq_refreshes: snap.nr_irq_refreshes,
            policy_round_max: snap.agent.round_max,
            max_migrations: snap.agent.max_moves,
            nr_net_tasks: snap.agent.nr_tasks,
            agent_cost_us: snap.agent.round_us,
            agent_bpf_ms: snap.agent.bpf_total_ms,
            irq_refresh_cpu_us: snap.agent.irq_refresh_cpu_us,
            irq_scan_cpu_us: snap.agent.irq_scan_cpu_us,
            loader_cpu_ms: snap.loader_cpu_ms,
            tasks: snap.tasks.clone(),
            cpus: (0..snap.nr_cpus)
                .map(|cpu| CpuRow {
                    cpu: cpu as u64,
                    irq: snap.irq_cpus.contains(&cpu).into(),
                    load_pct: snap.agent.loads.get(cpu).map_or(0, |l| l.round() as u64),
                })
                .collect(),
        }
    }
}

impl Sample {
    /// The value of a `DERIVED` field as JSON; the one place that maps a derived name to data.
    fn derived(&self, name: &str) -> Value {
        let [core, cache, other] = self.counters.tier_shares();
        match name {
            "tier_share_core" => core.into(),
            "tier_share_cache" => cache.into(),
            "tier_share_other" => other.into(),
            "class_high_min" => self.class_high_min.into(),
            "class_middle_min" => self.class_middle_min.into(),
            "irq_cpus" => format_cpu_list(&self.irq_cpus).into(),
            "nr_irq_changes" => self.nr_irq_changes.into(),
            "nr_irq_refreshes" => self.nr_irq_refreshes.into(),
            "policy_round_max" => self.policy_round_max.into(),
            "max_migrations" => self.max_migrations.into(),
            "nr_net_tasks" => self.nr_net_tasks.into(),
            "agent_cost_us" => self.agent_cost_us.into(),
            "agent_bpf_ms" => self.agent_bpf_ms.into(),
            "irq_refresh_cpu_us" => self.irq_refresh_cpu_us.into(),
            "irq_scan_cpu_us" => self.irq_scan_cpu_us.into(),
            "loader_cpu_ms" => self.loader_cpu_ms.into(),
            _ => unreachable!("DERIVED field {name} has no value"),
        }
    }

    /// The top object as served on the stats socket: every `STATS` and `DERIVED` name, then
    /// `tasks` and `cpus`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        for s in STATS {
            m.insert(s.name.into(), self.counters.get(s.id).into());
        }
        for f in DERIVED {
            m.insert(f.name.into(), self.derived(f.name));
        }
        m.insert("tasks".into(), serde_json::to_value(&self.tasks).unwrap());
        m.insert("cpus".into(), serde_json::to_value(&self.cpus).unwrap());
        Value::Object(m)
    }

    /// The inverse of `to_json`, for a client. Tier shares are recomputed from the counters.
    pub fn from_json(v: &Value) -> Result<Self> {
        let obj = v
            .as_object()
            .ok_or_else(|| anyhow!("stats: not an object"))?;
        let u64_of = |name: &str| -> Result<u64> {
            obj.get(name)
                .and_then(Value::as_u64)
                .ok_or_else(|| anyhow!("stats: field {name} missing or not a u64"))
        };
        let mut counters = Counters::default();
        for s in STATS {
            counters.0[s.id as usize] = u64_of(s.name)?;
        }
        let rows = |name: &str| -> Result<Value> {
            obj.get(name)
                .cloned()
                .ok_or_else(|| anyhow!("stats: field {name} missing"))
        };
        let irq_cpus = obj
            .get("irq_cpus")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("stats: field irq_cpus missing or not a string"))?;
        let sample = Self {
            counters,
            class_high_min: u64_of("class_high_min")?,
            class_middle_min: u64_of("class_middle_min")?,
            irq_cpus: parse_cpu_list(irq_cpus)?,
            nr_irq_changes: u64_of("nr_irq_changes")?,
            nr_irq_refreshes: u64_of("nr_irq_refreshes")?,
            policy_round_max: u64_of("policy_round_max")?,
            max_migrations: u64_of("max_migrations")?,
            nr_net_tasks: u64_of("nr_net_tasks")?,
            agent_cost_us: u64_of("agent_cost_us")?,
            agent_bpf_ms: u64_of("agent_bpf_ms")?,
            irq_refresh_cpu_us: u64_of("irq_refresh_cpu_us")?,
            irq_scan_cpu_us: u64_of("irq_scan_cpu_us")?,
            loader_cpu_ms: u64_of("loader_cpu_ms")?,
            tasks: serde_json::from_value(rows("tasks")?).context("stats: tasks")?,
            cpus: serde_json::from_value(rows("cpus")?).context("stats: cpus")?,
        };
        if let Some(extra) = obj.keys().find(|k| {
            !STATS.iter().any(|s| s.name == *k)
                && !DERIVED.iter().any(|f| f.name == *k)
                && !["tasks", "cpus"].contains(&k.as_str())
        }) {
            bail!("stats: unknown field {extra}: is the scheduler a different scx_miami version?");
        }
        Ok(sample)
    }

    /// The human report of --stats and --monitor: tier shares and counters, class boundaries
    /// and IRQ CPUs, then the task table.
    pub fn report(&self, interval_s: f64) -> String {
        format!(
            "--- stats (delta over {interval_s:.1} s)\n{}classes high>={} middle>={}\n\
             agent: most moves in one round {} (cap {}), {} network tasks, last round {} us, \
             all rounds {} ms (BPF)\n\
             loader CPU since start {} ms; IRQ map refresh {} us CPU (one of the last 10), full \
             scan {} us CPU, {} refreshes since start\n\
             irq_cpus {} (changes since start: {})\n{}",
            self.counters.report(),
            self.class_high_min,
            self.class_middle_min,
            self.policy_round_max,
            self.max_migrations,
            self.nr_net_tasks,
            self.agent_cost_us,
            self.agent_bpf_ms,
            self.loader_cpu_ms,
            self.irq_refresh_cpu_us,
            self.irq_scan_cpu_us,
            self.nr_irq_refreshes,
            format_cpu_list(&self.irq_cpus),
            self.nr_irq_changes,
            format_tasks(&self.tasks)
        )
    }
}
