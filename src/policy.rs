// SPDX-License-Identifier: GPL-2.0
//! The MiAMI agent's round (paper III-D) runs in BPF (bpf/policy.bpf.c, whose header explains
//! the three steps and the class boundaries), from a BPF timer every --interval-ms. This module
//! is the user-space side of it: the configuration it reads, and the conversions between its
//! fixed-point state (loads and shares in hundredths of a percent) and what the loader logs and
//! reports. tests/it/policy.rs runs the round on the host through these with synthetic inputs.

use crate::bpf_intf::{
    miami_agent_consts_MIAMI_AUTO_START_HIGH as AUTO_START_HIGH,
    miami_agent_consts_MIAMI_AUTO_START_MIDDLE as AUTO_START_MIDDLE,
    miami_agent_consts_MIAMI_LOAD_NONE as LOAD_NONE, miami_agent_consts_MIAMI_REPEAT_ROUNDS,
    miami_agent_consts_MIAMI_SHED_HOLD_ROUNDS, miami_agent_consts_MIAMI_UTIL_MIN_SPAN_NS,
    miami_move_kind_MIAMI_MOVE_SHED as MOVE_SHED,
    miami_move_kind_MIAMI_MOVE_UPGRADE as MOVE_UPGRADE,
};
use crate::bpf_skel::types;
use crate::config::ClassBounds;

/// Rounds during which the same (task, target) move is not sent again.
pub const REPEAT_ROUNDS: u64 = miami_agent_consts_MIAMI_REPEAT_ROUNDS as u64;
/// Rounds a task keeps a shed target (agent.bpf.c shed_ttl_ns): 5 s at the default period.
pub const SHED_HOLD_ROUNDS: u64 = miami_agent_consts_MIAMI_SHED_HOLD_ROUNDS as u64;
/// Shortest span between two samples of a thread's CPU time that the round turns into a share
/// of a CPU. The monitor writes a sample at least once per intensiveness window (100 ms) while
/// the thread communicates; a shorter span says more about ticks than about the thread.
pub const UTIL_MIN_SPAN_NS: u64 = miami_agent_consts_MIAMI_UTIL_MIN_SPAN_NS as u64;

/// In the order of the BPF class ids and of `stats::CLASS_NAMES` (`as usize` indexes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    High,
    Middle,
    Low,
}

impl ClassBounds {
    pub fn class_of(&self, intens: u32) -> Class {
        if intens >= self.high_min {
            Class::High
        } else if intens >= self.middle_min {
            Class::Middle
        } else {
            Class::Low
        }
    }
}

/// Class bounds before the agent has seen a network task under `--class-bounds auto`.
pub const AUTO_START: ClassBounds = ClassBounds {
    high_min: AUTO_START_HIGH,
    middle_min: AUTO_START_MIDDLE,
};

/// A network task as the round sees it (`struct agent_view`; tests write these directly).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    pub tid: i32,
    pub intens: u32,
    pub irq_cpu: i32,
    /// CPU of its last send/recv call: where it runs.
    pub cpu: i32,
    pub age_ms: u64,
    /// Percent of a CPU it used lately; None until measured.
    pub util: Option<f64>,
}

impl TaskView {
    pub fn bpf(&self) -> types::agent_view {
        types::agent_view {
            age_ns: self.age_ms * 1_000_000,
            tid: self.tid,
            intens: self.intens,
            irq_cpu: self.irq_cpu,
            cpu: self.cpu,
            util: self.util.map_or(-1, |u| (u * 100.0).round() as i32),
            ..Default::default()
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveKind {
    Upgrade,
    Shed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    pub tid: i32,
    pub cpu: usize,
    pub kind: MoveKind,
}

impl From<&types::agent_move> for Move {
    fn from(m: &types::agent_move) -> Self {
        Self {
            tid: m.tid,
            cpu: m.cpu as usize,
            kind: if m.kind == MOVE_SHED {
                MoveKind::Shed
            } else {
                MoveKind::Upgrade
            },
        }
    }
}

/// One --verbose line for a move the round decided: where the round saw the task, its class,
/// its share, and the loads of both CPUs (percent; "?" for a share not measured yet).
pub fn describe_move(m: &types::agent_move) -> String {
    let kind = match m.kind {
        MOVE_UPGRADE => "Upgrade",
        MOVE_SHED => "Shed",
        _ => "?",
    };
    let class = crate::stats::CLASS_NAMES
        .get(m.cls as usize)
        .copied()
        .unwrap_or("?");
    let share = match m.util {
        u if u < 0 => "?".to_string(),
        u => format!("{:.0}", u as f64 / 100.0),
    };
    let pct = |l: u32| pct_of(l).map_or("?".into(), |p| format!("{p:.0}"));
    format!(
        "agent: {kind} tid {} -> CPU {} (from CPU {} at {}%, IRQ CPU {}, class {class}, share \
         {share}%, target at {}%)",
        m.tid,
        m.cpu,
        m.from,
        pct(m.load_from),
        m.irq,
        pct(m.load_to)
    )
}

#[derive(Debug, Clone, PartialEq)]
pub struct PolicyConfig {
    pub low_load_pct: f64,
    pub high_load_pct: f64,
    pub release_after_ms: u64,
    pub max_moves: usize,
    /// The boundaries the agent returns to when no overload holds them up (--class-bounds);
    /// None: derived each round from the most intensive task (`--class-bounds auto`).
    pub init_bounds: Option<ClassBounds>,
}

impl PolicyConfig {
    /// Write the round's knobs into BPF's .data. The class boundaries in force are not touched:
    /// `reset_bounds()` does that.
    pub fn write(&self, data: &mut types::data) {
        data.agent_low_load = load_bpf(self.low_load_pct);
        data.agent_high_load = load_bpf(self.high_load_pct);
        data.release_ns = self.release_after_ms * 1_000_000;
        data.max_moves = self.max_moves as u32;
        let b = self.init_bounds.unwrap_or(ClassBounds {
            high_min: 0,
            middle_min: 0,
        });
        (data.agent_init_high, data.agent_init_middle) = (b.high_min, b.middle_min);
    }

    /// Start the boundaries over from --class-bounds (or AUTO_START): at load, and when a
    /// reloaded configuration changed them. The next round takes the same reset (agent_reset).
    pub fn reset_bounds(&self, data: &mut types::data) {
        let b = self.init_bounds.unwrap_or(AUTO_START);
        (data.class_high_min, data.class_middle_min) = (b.high_min, b.middle_min);
        data.agent_reset = 1;
    }
}

/// The boundaries placement uses now (the last round's result).
pub fn bounds(data: &types::data) -> ClassBounds {
    ClassBounds {
        high_min: data.class_high_min,
        middle_min: data.class_middle_min,
    }
}

/// A load in percent as the round takes it: hundredths of a percent, LOAD_NONE for NaN (an
/// offline CPU: no room, not overloaded).
pub fn load_bpf(pct: f64) -> u32 {
    if pct.is_nan() {
        LOAD_NONE
    } else {
        (pct.clamp(0.0, 100.0) * 100.0).round() as u32
    }
}

/// The inverse of `load_bpf()`: None for an offline CPU.
pub fn pct_of(load: u32) -> Option<f64> {
    (load != LOAD_NONE).then(|| load as f64 / 100.0)
}

/// What the last round decided, from .bss.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub moves: Vec<Move>,
    /// The boundaries for the next round (adapted or relaxed in this one).
    pub bounds: ClassBounds,
    /// The boundaries this round classed the tasks by.
    pub classed_by: ClassBounds,
    /// Tasks left out because they stopped communicating (step 1).
    pub released: usize,
    /// CPUs above --high-load-pct, most loaded first.
    pub overloaded: Vec<usize>,
    /// LLC ids whose CPUs are above --high-load-pct on average: only these may lose network
    /// tasks to another LLC (BPF llc_overloaded[]).
    pub overloaded_llcs: Vec<u32>,
}

impl Round {
    pub fn read(bss: &types::bss, data: &types::data) -> Self {
        let nr = (bss.agent_nr_moves as usize).min(bss.agent_moves.len());
        let nr_over = (bss.agent_nr_over as usize).min(bss.agent_over.len());
        Self {
            moves: bss.agent_moves[..nr].iter().map(Move::from).collect(),
            bounds: bounds(data),
            classed_by: ClassBounds {
                high_min: bss.agent_classed_high,
                middle_min: bss.agent_classed_middle,
            },
            released: bss.agent_released as usize,
            overloaded: bss.agent_over[..nr_over]
                .iter()
                .map(|&c| c as usize)
                .collect(),
            overloaded_llcs: bss
                .llc_overloaded
                .iter()
                .enumerate()
                .filter(|&(_, &o)| o != 0)
                .map(|(id, _)| id as u32)
                .collect(),
        }
    }
}
