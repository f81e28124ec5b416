// SPDX-License-Identifier: GPL-2.0
//! TUI state without I/O: the metrics of the last sample (parsed from the stats JSON by field
//! name, so fields a newer scheduler adds show up without a change here), the history the
//! Policy view draws, the connection state, and what each key does.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use serde_json::Value;

use super::host::HostInfo;
use crate::cpulist::parse_cpu_list;
use crate::stats::{Sample, TaskRow, DERIVED, STATS};

/// Every key, as the Help view lists it.
pub const KEYS: &[(&str, &str)] = &[
    ("q", "quit"),
    ("Ctrl-C", "quit"),
    ("Tab", "next view"),
    ("Shift-Tab", "previous view"),
    ("s", "sort network tasks: intensiveness, class, tier"),
    ("p", "pause / resume updating (PAUSED while paused)"),
    ("?", "this help"),
    ("Up/Down, j/k", "scroll the CPUs view"),
];

/// Samples of class-boundary history kept for the Policy view's sparklines.
pub const HISTORY: usize = 240;

/// About how long "reconnected" shows after the socket came back, in seconds (at least 3
/// samples).
pub const RECONNECTED_S: f64 = 3.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Cpus,
    Tasks,
    Policy,
    Help,
}

impl View {
    pub const ALL: [View; 4] = [View::Cpus, View::Tasks, View::Policy, View::Help];

    pub fn title(self) -> &'static str {
        match self {
            View::Cpus => "CPUs",
            View::Tasks => "Network tasks",
            View::Policy => "Policy",
            View::Help => "Help",
        }
    }

    pub fn index(self) -> usize {
        Self::ALL.iter().position(|&v| v == self).unwrap_or(0)
    }

    fn step(self, by: isize) -> Self {
        let n = Self::ALL.len() as isize;
        Self::ALL[(self.index() as isize + by).rem_euclid(n) as usize]
    }
}

/// Order of the network-task table; `s` cycles through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Intens,
    Class,
    Tier,
}

impl SortKey {
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Intens => "intensiveness",
            SortKey::Class => "class",
            SortKey::Tier => "tier",
        }
    }

    fn next(self) -> Self {
        match self {
            SortKey::Intens => SortKey::Class,
            SortKey::Class => SortKey::Tier,
            SortKey::Tier => SortKey::Intens,
        }
    }
}

/// Rank of a class or tier name in its spelling order (high, middle, low; core, cache, other,
/// none); unknown names last.
fn rank(name: &str, order: &[&str]) -> usize {
    order.iter().position(|o| *o == name).unwrap_or(order.len())
}

/// @rows in @key order: intensiveness descending; class or tier in their order, then
/// intensiveness descending. Ties keep the most recent communication first, then tid.
pub fn sort_tasks(rows: &mut [TaskRow], key: SortKey) {
    rows.sort_by(|a, b| {
        let primary = match key {
            SortKey::Intens => std::cmp::Ordering::Equal,
            SortKey::Class => rank(&a.class, &crate::stats::CLASS_NAMES)
                .cmp(&rank(&b.class, &crate::stats::CLASS_NAMES)),
            SortKey::Tier => rank(&a.tier, &crate::stats::TIER_NAMES)
                .cmp(&rank(&b.tier, &crate::stats::TIER_NAMES)),
        };
        primary
            .then(b.intens.cmp(&a.intens))
            .then(a.age_ms.cmp(&b.age_ms))
            .then(a.tid.cmp(&b.tid))
    });
}

/// One row of the `cpus` table: the known columns and every other numeric one by name.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuStat {
    pub cpu: usize,
    pub irq: bool,
    pub fields: BTreeMap<String, f64>,
}

/// One sample, read by field name from the stats JSON.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Metrics {
    /// Every numeric field of the top object (counters are deltas since the previous read).
    pub fields: BTreeMap<String, f64>,
    pub irq_cpus: Vec<usize>,
    pub tasks: Vec<TaskRow>,
    pub cpus: Vec<CpuStat>,
}

impl Metrics {
    /// From the top object the stats server sends. Unknown fields are kept, not refused.
    pub fn from_json(v: &Value) -> Result<Self> {
        let obj = v
            .as_object()
            .ok_or_else(|| anyhow!("stats: not an object"))?;
        let fields = obj
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
            .collect();
        let irq_cpus = match obj.get("irq_cpus").and_then(Value::as_str) {
            Some(s) => parse_cpu_list(s).context("stats: irq_cpus")?,
            None => vec![],
        };
        let tasks = match obj.get("tasks") {
            Some(t) => serde_json::from_value(t.clone()).context("stats: tasks")?,
            None => vec![],
        };
        let cpus = obj
            .get("cpus")
            .and_then(Value::as_array)
            .map(|rows| {
                rows.iter()
                    .filter_map(Value::as_object)
                    .filter_map(|r| {
                        let cpu = r.get("cpu")?.as_u64()? as usize;
                        let irq = r.get("irq").and_then(Value::as_u64).unwrap_or(0) != 0
                            || irq_cpus.contains(&cpu);
                        let fields = r
                            .iter()
                            .filter(|(k, _)| !["cpu", "irq"].contains(&k.as_str()))
                            .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                            .collect();
                        Some(CpuStat { cpu, irq, fields })
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self {
            fields,
            irq_cpus,
            tasks,
            cpus,
        })
    }

    /// From a `Sample`, through the JSON the server would send for it.
    pub fn from_sample(s: &Sample) -> Self {
        Self::from_json(&s.to_json()).expect("a Sample's own JSON parses")
    }

    pub fn num(&self, name: &str) -> Option<f64> {
        self.fields.get(name).copied()
    }

    /// Numeric top-level fields that are neither a `STATS` counter nor a `DERIVED` field: what a
    /// newer scheduler (the policy agent) added.
    pub fn extra_fields(&self) -> impl Iterator<Item = (&str, f64)> {
        self.fields
            .iter()
            .filter(|(k, _)| {
                !STATS.iter().any(|s| s.name == k.as_str())
                    && !DERIVED.iter().any(|f| f.name == k.as_str())
            })
            .map(|(k, v)| (k.as_str(), *v))
    }

    /// The first numeric field, in name order, for which @pred holds.
    fn field_where(&self, pred: impl Fn(&str) -> bool) -> Option<(&str, f64)> {
        self.fields
            .iter()
            .find(|(k, _)| pred(k))
            .map(|(k, v)| (k.as_str(), *v))
    }

    /// Policy moves per agent round against the cap, if the stats carry them: a field named
    /// like *move* (not *cap*), a field named like *cap*, and optionally a *round* counter to
    /// divide by (unless the moves field is already per round). Returns (moves per round,
    /// cap, moves field name).
    pub fn moves_vs_cap(&self) -> Option<(f64, Option<f64>, String)> {
        let (name, moves) = self.field_where(|k| k.contains("move") && !k.contains("cap"))?;
        let cap = self.field_where(|k| k.contains("cap")).map(|(_, v)| v);
        let per_round = if name.contains("per_round") {
            moves
        } else {
            match self.field_where(|k| k.contains("round") && !k.contains("move")) {
                Some((_, r)) if r > 0.0 => moves / r,
                _ => moves,
            }
        };
        Some((per_round, cap, name.to_string()))
    }

    /// The CPU-row field the load bars use: a numeric column other than cpu/irq, preferring
    /// names that say load, util or busy.
    pub fn cpu_load_field(&self) -> Option<String> {
        let names: Vec<&String> = self.cpus.iter().flat_map(|c| c.fields.keys()).collect();
        names
            .iter()
            .find(|n| ["load", "util", "busy"].iter().any(|w| n.contains(w)))
            .or_else(|| names.first())
            .map(|n| n.to_string())
    }
}

/// Is a field name a percentage (`pc_*`, `*_pct`, `*percent*`)?
pub fn is_percent(name: &str) -> bool {
    name.starts_with("pc_") || name.ends_with("_pct") || name.contains("percent")
}

/// Connection to the stats socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    /// No answer yet.
    Connecting,
    /// Samples arrive; `reconnected` counts down the samples that still say so.
    Up { reconnected: u32 },
    /// The last attempt failed; retried every refresh period.
    Down { reason: String },
}

/// Everything the views draw.
#[derive(Debug, Clone)]
pub struct App {
    pub view: View,
    pub sort: SortKey,
    pub paused: bool,
    pub link: Link,
    pub refresh: Duration,
    pub socket: String,
    pub host: HostInfo,
    pub metrics: Option<Metrics>,
    /// (class_high_min, class_middle_min) per sample, oldest first.
    pub bounds: VecDeque<(u64, u64)>,
    pub nr_samples: u64,
    /// nr_irq_changes of the first sample this TUI saw.
    pub irq_changes_seen_first: Option<u64>,
    /// Samples since nr_irq_changes last grew (None: not while watching).
    pub samples_since_irq_change: Option<u64>,
    pub scroll: u16,
    /// A sample arrived at least once (so the next one after a failure is a reconnection).
    pub was_up: bool,
}

impl App {
    pub fn new(socket: &str, refresh: Duration, host: HostInfo) -> Self {
        Self {
            view: View::Cpus,
            sort: SortKey::Intens,
            paused: false,
            link: Link::Connecting,
            refresh,
            socket: socket.into(),
            host,
            metrics: None,
            bounds: VecDeque::new(),
            nr_samples: 0,
            irq_changes_seen_first: None,
            samples_since_irq_change: None,
            scroll: 0,
            was_up: false,
        }
    }

    /// A sample arrived. The link is up again even while paused; the data only changes when not
    /// paused.
    pub fn on_sample(&mut self, m: Metrics, busy_pct: BTreeMap<usize, f64>) {
        self.link = match &self.link {
            Link::Down { .. } if self.was_up => Link::Up {
                reconnected: ((RECONNECTED_S / self.refresh.as_secs_f64()).ceil() as u32).max(3),
            },
            Link::Up { reconnected } => Link::Up {
                reconnected: reconnected.saturating_sub(1),
            },
            _ => Link::Up { reconnected: 0 },
        };
        self.was_up = true;
        if self.paused {
            return;
        }
        let num = |n: &str| m.num(n).unwrap_or(0.0) as u64;
        self.bounds
            .push_back((num("class_high_min"), num("class_middle_min")));
        while self.bounds.len() > HISTORY {
            self.bounds.pop_front();
        }
        if let Some(changes) = m.num("nr_irq_changes").map(|v| v as u64) {
            let prev = self.metrics.as_ref().and_then(|p| p.num("nr_irq_changes"));
            self.irq_changes_seen_first.get_or_insert(changes);
            self.samples_since_irq_change = match prev {
                Some(p) if (p as u64) != changes => Some(0),
                _ => self.samples_since_irq_change.map(|s| s + 1),
            };
        }
        self.nr_samples += 1;
        self.host.busy_pct = busy_pct;
        self.metrics = Some(m);
    }

    /// The socket is gone or answered nonsense; keep the last data on screen.
    pub fn on_disconnect(&mut self, reason: impl Into<String>) {
        self.link = Link::Down {
            reason: reason.into(),
        };
    }

    /// Apply a key; true means quit.
    pub fn on_key(&mut self, key: KeyEvent) -> bool {
        if key.kind != KeyEventKind::Press {
            return false;
        }
        match key.code {
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => return true,
            KeyCode::Char('q') => return true,
            KeyCode::Tab => self.switch(self.view.step(1)),
            KeyCode::BackTab => self.switch(self.view.step(-1)),
            KeyCode::Char('s') => self.sort = self.sort.next(),
            KeyCode::Char('p') => self.paused = !self.paused,
            KeyCode::Char('?') => self.switch(View::Help),
            KeyCode::Down | KeyCode::Char('j') => self.scroll = self.scroll.saturating_add(1),
            KeyCode::Up | KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(1),
            _ => {}
        }
        false
    }

    fn switch(&mut self, view: View) {
        if view != self.view {
            self.view = view;
            self.scroll = 0;
        }
    }

    /// The task rows in the chosen order.
    pub fn sorted_tasks(&self) -> Vec<TaskRow> {
        let mut rows = self
            .metrics
            .as_ref()
            .map(|m| m.tasks.clone())
            .unwrap_or_default();
        sort_tasks(&mut rows, self.sort);
        rows
    }

    /// NIC names of @cpu: from the host's IRQ affinity, plus those the task rows report for it
    /// as their IRQ CPU.
    pub fn nics_of(&self, cpu: usize) -> Vec<String> {
        let mut names = self.host.nic_cpus.get(&cpu).cloned().unwrap_or_default();
        if let Some(m) = &self.metrics {
            for t in m.tasks.iter().filter(|t| t.irq_cpu == cpu as i32) {
                if t.nic != "-" && !names.contains(&t.nic) {
                    names.push(t.nic.clone());
                }
            }
        }
        names
    }
}
