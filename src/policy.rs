// SPDX-License-Identifier: GPL-2.0
//! The MiAMI agent's decisions (paper III-D), as pure logic: given the per-CPU loads, the LLC
//! map and the network tasks, one round returns the moves to make and the class boundaries to
//! use. No kernel needed; tests/policy.rs drives it with synthetic inputs.
//!
//! Each round (--interval-ms):
//! 1. Release: tasks silent for --release-after-ms are out of the agent's view. The release
//!    itself happens in BPF at the task's next placement (agent.bpf.c is_net_task()), in O(1);
//!    the agent only stops considering them and counts them.
//! 2. Upgrade: class-high tasks in the cache or other tier move to their IRQ CPU if its load is
//!    below --low-load-pct, else (from the other tier) to the least loaded CPU of the IRQ CPU's
//!    LLC below that load. Most intensive first. A target that runs a network task already must
//!    stay below --low-load-pct with the mover's own share of a CPU added (`Util`; round()).
//! 3. Shed and adapt: for each CPU above --high-load-pct, most loaded first, the task that needs
//!    affinity least moves to a CPU below --low-load-pct, in its IRQ CPU's LLC if one is, else in
//!    another LLC, but only out of an LLC overloaded on average (above --high-load-pct) into one
//!    lightly loaded on average (below --low-load-pct): low class before middle before high, other
//!    tier before cache before core, less intensive first; so core-tier high-class tasks go last.
//!    When that task cannot move, only another of its class and tier may go in its place.
//!    A target that runs a network task must stay below --high-load-pct with the victim's share.
//!    One task per CPU per round: the next round sees the new load. The last network task on a CPU
//!    is not shed: shedding settles contention between tasks, and one task with its own softirq on
//!    its IRQ CPU is the placement MiAMI aims for, however busy that keeps the CPU; unless a task
//!    of a higher class whose IRQ CPU this is waits in another tier. The boundaries move once per
//!    round in which some CPU is overloaded by two or more network tasks: the lower boundary of the
//!    lowest class running on the most loaded such CPU rises by a quarter (the paper's "reducing
//!    the window size of the lowest class where processes are running"), so that the least
//!    intensive of that class drop a class and give way first while the more intensive ones keep
//!    their tier. It never rises past 3/4 of the intensiveness of the most intensive task there
//!    (see adapt()). When no CPU is overloaded, each boundary moves a quarter of the way back
//!    toward its initial value (--class-bounds).
//!
//! The boundaries are global, not per IRQ CPU: a class decides who gives way when tasks of
//! several NICs share an LLC, which only works if one intensiveness means one class everywhere;
//! and BPF classifies at every placement, where one global pair is two loads.
//!
//! At most `budget` (--max-migrations) moves per round leave here; BPF enforces the same cap
//! where moves are applied (policy_moves, round_moves). A move repeated to the same CPU is not
//! sent again within `REPEAT_ROUNDS`, so a move that BPF cannot honour (no room at the target)
//! does not eat every round's budget.

use std::collections::{BTreeMap, BTreeSet};

use crate::bpf_intf::{
    miami_consts_MIAMI_INTENS_MAX as INTENS_MAX, miami_move_kind_MIAMI_MOVE_SHED as MOVE_SHED,
    miami_move_kind_MIAMI_MOVE_UPGRADE as MOVE_UPGRADE,
};
use crate::config::ClassBounds;

/// Rounds during which the same (task, target) move is not sent again.
pub const REPEAT_ROUNDS: u64 = 10;
/// Rounds a task keeps a shed target (agent.bpf.c shed_ttl_ns): 5 s at the default period.
pub const SHED_HOLD_ROUNDS: u64 = 50;

/// In the order of the BPF class ids and of `stats::CLASS_NAMES` (`as usize` indexes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    High,
    Middle,
    Low,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    Core,
    Cache,
    Other,
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

/// A network task as the agent sees it (from the `net_tasks` table).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    pub tid: i32,
    pub intens: u32,
    pub irq_cpu: i32,
    /// CPU of its last send/recv call: where it runs.
    pub cpu: i32,
    pub age_ms: u64,
    /// Percent of a CPU it used lately (`Util`); None until measured.
    pub util: Option<f64>,
}

/// Shortest span between two samples of a thread's CPU time that `Util` turns into a share.
/// The monitor writes a sample at least once per intensiveness window (100 ms) while the thread
/// communicates; a shorter span says more about ticks than about the thread.
pub const UTIL_MIN_SPAN_NS: u64 = 50_000_000;

/// Each network task's share of a CPU, from its CPU time (`net_task.runtime_ns`) at two of the
/// monitor's samples (`last_comm_ns`) at least UTIL_MIN_SPAN_NS apart: the load it brings to a
/// CPU it moves to. The agent's CPU loads cannot tell it: they are per CPU, and two tasks on one
/// CPU split it whatever each would use alone.
#[derive(Debug, Default)]
pub struct Util {
    /// tid -> (CPU time ns, at ns) of the sample the next span starts from, and the last share.
    seen: BTreeMap<i32, (u64, u64, Option<f64>)>,
}

impl Util {
    /// The share of thread @tid, whose CPU time was @runtime_ns at @at_ns, in percent of a CPU;
    /// None until two samples span UTIL_MIN_SPAN_NS.
    pub fn update(&mut self, tid: i32, runtime_ns: u64, at_ns: u64) -> Option<f64> {
        let e = self.seen.entry(tid).or_insert((runtime_ns, at_ns, None));
        // A tid reused by a new thread starts over.
        if runtime_ns < e.0 || at_ns < e.1 {
            *e = (runtime_ns, at_ns, None);
        } else if at_ns - e.1 >= UTIL_MIN_SPAN_NS {
            let pct = (runtime_ns - e.0) as f64 * 100.0 / (at_ns - e.1) as f64;
            *e = (runtime_ns, at_ns, Some(pct.min(100.0)));
        }
        e.2
    }

    /// Forget the threads not in @tids (gone from the table).
    pub fn retain(&mut self, tids: &BTreeSet<i32>) {
        self.seen.retain(|tid, _| tids.contains(tid));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveKind {
    Upgrade,
    Shed,
}

impl MoveKind {
    /// The `struct policy_move.kind` value.
    pub fn bpf(self) -> u32 {
        match self {
            MoveKind::Upgrade => MOVE_UPGRADE,
            MoveKind::Shed => MOVE_SHED,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    pub tid: i32,
    pub cpu: usize,
    pub kind: MoveKind,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PolicyConfig {
    pub low_load_pct: f64,
    pub high_load_pct: f64,
    pub release_after_ms: u64,
    pub max_moves: usize,
    /// The boundaries the agent returns to when no overload holds them up (--class-bounds);
    /// None: derived each round from the most intensive task (`auto_bounds()`).
    pub init_bounds: Option<ClassBounds>,
}

/// Class bounds before the agent has seen a network task under `--class-bounds auto`.
pub const AUTO_START: ClassBounds = ClassBounds {
    high_min: 100_000,
    middle_min: 10_000,
};
/// `--class-bounds auto`: a task is class high within a factor AUTO_HIGH_DIV of the most
/// intensive task, middle within AUTO_MIDDLE_DIV, low below (docs/design.md section 5).
pub const AUTO_HIGH_DIV: u32 = 4;
pub const AUTO_MIDDLE_DIV: u32 = 64;

/// The automatic boundaries for a most intensive task of @top: high from top / 4, middle from
/// top / 64, but each class at least a factor of 2 wide (`widen()`).
pub fn auto_bounds(top: u32) -> ClassBounds {
    widen(ClassBounds {
        high_min: top / AUTO_HIGH_DIV,
        middle_min: top / AUTO_MIDDLE_DIV,
    })
}

/// The narrowest boundaries the agent makes: class low at least [1, 2), middle at least a
/// factor of 2 wide (high_min >= 2 * middle_min), high at least [high_min, 2 * high_min]. A
/// class squeezed to a width of 1 separates nothing; a factor of 2 keeps tasks whose measured
/// rates wobble by a quarter in one class.
pub fn widen(b: ClassBounds) -> ClassBounds {
    let high_min = b.high_min.clamp(4, INTENS_MAX as u32 / 2);
    ClassBounds {
        high_min,
        middle_min: b.middle_min.clamp(2, high_min / 2),
    }
}

/// A CPU's network tasks as `Policy::round()` judges a move onto it: how many it holds, and the
/// shares of a CPU of those that hold it from elsewhere (their last call ran on another CPU).
#[derive(Debug, Default, Clone, Copy)]
struct Held {
    n: i64,
    away_pct: f64,
    away_unknown: i64,
}

impl Held {
    /// Count @t as held by CPU @c (@sign 1) or no longer (@sign -1).
    fn add(&mut self, t: &TaskView, c: usize, sign: i64) {
        self.n += sign;
        if t.cpu as usize != c {
            match t.util {
                Some(u) => self.away_pct += sign as f64 * u,
                None => self.away_unknown += sign,
            }
        }
    }
}

/// What one round decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub moves: Vec<Move>,
    /// The boundaries for the next round (adapted or relaxed in this one).
    pub bounds: ClassBounds,
    /// The boundaries this round classed the tasks by (the `--verbose` move lines name them).
    pub classed_by: ClassBounds,
    /// Tasks left out because they stopped communicating (step 1).
    pub released: usize,
    /// CPUs above --high-load-pct.
    pub overloaded: Vec<usize>,
    /// LLC ids whose CPUs are above --high-load-pct on average: only these may lose network
    /// tasks to another LLC (BPF llc_overloaded[]).
    pub overloaded_llcs: Vec<u32>,
}

#[derive(Debug)]
pub struct Policy {
    cfg: PolicyConfig,
    bounds: ClassBounds,
    /// Under `--class-bounds auto`: the most intensive task, held with a decay (`top_ref()`).
    top: u32,
    round: u64,
    /// tid -> (target CPU, round it was sent): the repeat filter.
    sent: BTreeMap<i32, (usize, u64)>,
    /// tid -> (CPU it was shed off, round): the shed holds, SHED_HOLD_ROUNDS long.
    shed: BTreeMap<i32, (usize, u64)>,
}

fn tier_of(llc: &[u32], cpu: usize, irq: usize) -> Tier {
    if cpu == irq {
        Tier::Core
    } else if llc.get(cpu) == llc.get(irq) {
        Tier::Cache
    } else {
        Tier::Other
    }
}

/// Move @cur a quarter of the way toward @target (at least 1).
fn relax(cur: u32, target: u32) -> u32 {
    let step = (cur.abs_diff(target) / 4).max(1);
    match cur.cmp(&target) {
        std::cmp::Ordering::Greater => cur - step,
        std::cmp::Ordering::Less => cur + step,
        std::cmp::Ordering::Equal => cur,
    }
}

/// Each LLC's mean load over its online CPUs (offline ones, NaN in load.rs, are not part of its
/// capacity), by LLC id.
fn llc_means(loads: &[f64], llc: &[u32]) -> BTreeMap<u32, f64> {
    let mut sums: BTreeMap<u32, (f64, usize)> = BTreeMap::new();
    for (&l, &id) in loads.iter().zip(llc).filter(|(l, _)| !l.is_nan()) {
        let e = sums.entry(id).or_default();
        e.0 += l;
        e.1 += 1;
    }
    sums.into_iter()
        .map(|(id, (sum, n))| (id, sum / n as f64))
        .collect()
}

/// LLC ids, ascending, whose CPUs' mean load is above @high percent. Placement spills network
/// tasks out of an LLC only when it is overloaded as a whole: one wakeup finding all of its CPUs
/// busy says little (t_place_multi: 16 receivers that used about a CPU between them still met
/// that often enough to lose 8% of one receiver's time to the other LLC).
pub fn overloaded_llcs(loads: &[f64], llc: &[u32], high: f64) -> Vec<u32> {
    above(&llc_means(loads, llc), high)
}

/// The LLC ids of @means above @high.
fn above(means: &BTreeMap<u32, f64>, high: f64) -> Vec<u32> {
    means
        .iter()
        .filter(|&(_, &mean)| mean > high)
        .map(|(&id, _)| id)
        .collect()
}

impl Policy {
    pub fn new(cfg: PolicyConfig) -> Self {
        Self {
            bounds: cfg.init_bounds.unwrap_or(AUTO_START),
            cfg,
            top: 0,
            round: 0,
            sent: BTreeMap::new(),
            shed: BTreeMap::new(),
        }
    }

    /// The most intensive active task's intensiveness, held: it rises at once and falls by a
    /// quarter of the way per round, so that one quiet round of the top flow (a measurement
    /// window that caught a pause) does not reclassify everyone. 0 before any task.
    fn top_ref(&mut self, top_now: u32) -> u32 {
        self.top = if top_now >= self.top {
            top_now
        } else {
            self.top - (self.top - top_now).div_ceil(4)
        };
        self.top
    }

    pub fn bounds(&self) -> ClassBounds {
        self.bounds
    }

    /// Switch to @cfg (a reloaded configuration). New initial bounds replace the current ones;
    /// otherwise the boundaries keep their adapted values.
    pub fn set_config(&mut self, cfg: PolicyConfig) {
        if cfg.init_bounds != self.cfg.init_bounds {
            self.bounds = cfg.init_bounds.unwrap_or(AUTO_START);
            self.top = 0;
        }
        self.cfg = cfg;
    }

    /// The least loaded CPU among @cands below @limit percent that is not @except; ties go to
    /// the lower id.
    fn least_loaded(
        loads: &[f64],
        cands: impl Iterator<Item = usize>,
        limit: f64,
        except: usize,
    ) -> Option<usize> {
        cands
            .filter(|&c| c != except && loads.get(c).is_some_and(|&l| l < limit))
            .min_by(|&a, &b| loads[a].total_cmp(&loads[b]).then(a.cmp(&b)))
    }

    /// One agent round. @loads: busy percent per CPU; @llc: LLC id per CPU.
    pub fn round(&mut self, loads: &[f64], llc: &[u32], tasks: &[TaskView]) -> Round {
        self.round += 1;
        let nr_cpus = loads.len().min(llc.len());
        let valid = |c: i32| c >= 0 && (c as usize) < nr_cpus;

        // Step 1: only tasks that still communicate, with a known IRQ CPU.
        let (active, released): (Vec<&TaskView>, Vec<&TaskView>) = tasks
            .iter()
            .filter(|t| valid(t.irq_cpu) && valid(t.cpu) && t.intens > 0)
            .partition(|t| t.age_ms < self.cfg.release_after_ms);
        // The boundaries to return to: --class-bounds, or derived from the top task. The first
        // round that sees a task starts from the derived ones.
        let base = match self.cfg.init_bounds {
            Some(b) => Some(b),
            None => {
                let first = self.top == 0;
                let top = self.top_ref(active.iter().map(|t| t.intens).max().unwrap_or(0));
                let base = (top > 0).then(|| auto_bounds(top));
                if let (true, Some(b)) = (first, base) {
                    self.bounds = b;
                }
                base
            }
        };
        let bounds = self.bounds;
        let class = |t: &TaskView| bounds.class_of(t.intens);
        let tier = |t: &TaskView| tier_of(llc, t.cpu as usize, t.irq_cpu as usize);

        let mut moves: Vec<Move> = Vec::new();
        // CPUs already chosen as a target this round: one newcomer each, the next round sees
        // its load.
        let mut taken: Vec<usize> = Vec::new();
        let budget = self.cfg.max_moves;
        let llc_cpus = |cpu: usize| (0..nr_cpus).filter(move |&c| llc[c] == llc[cpu]);
        // Can @c take @t, its load then below @limit percent? A CPU that holds no other network
        // task can: a lone task is never shed. The ones it holds: those whose last call ran
        // there, and the class-high tasks whose IRQ CPU it is, wherever they ran last, since
        // BPF places those there whenever it is free (pick_net_cpu()). With any, the load there
        // plus @t's own share of a CPU, plus the shares of those away from it, must stay below
        // @limit: step 3 sheds one of two network tasks off a CPU above --high-load-pct, so a
        // move that lands above it is undone the next round, and an upgrade that lands between
        // the two thresholds as soon as the pair's load wobbles past --high-load-pct. Either
        // way the agent moved a pair back and forth for as long as they ran (t_pair_stable:
        // 2.3-3.7 moves a second). So an upgrade must land below --low-load-pct, the paper's
        // "the loads on the target core is low" after the move, and a shed below
        // --high-load-pct: the two thresholds are the band in which a pair stays put. A share
        // not measured yet (None) fits nowhere but on a CPU of its own. Summed per CPU once a
        // round: fits() runs for every candidate and CPU, and thousands of network tasks are a
        // shape the agent must take.
        let held_on = |o: &TaskView| {
            let (cpu, irq) = (o.cpu as usize, o.irq_cpu as usize);
            [
                Some(cpu),
                (class(o) == Class::High && irq != cpu).then_some(irq),
            ]
        };
        let mut held = vec![Held::default(); nr_cpus];
        for o in &active {
            for c in held_on(o).into_iter().flatten() {
                held[c].add(o, c, 1);
            }
        }
        let fits = |t: &TaskView, c: usize, limit: f64| {
            let mut h = held[c];
            if held_on(t).contains(&Some(c)) {
                h.add(t, c, -1); // not one of its own others
            }
            h.n == 0
                || matches!(t.util, Some(u) if h.away_unknown == 0 && loads[c] + u + h.away_pct < limit)
        };
        let (low, high) = (self.cfg.low_load_pct, self.cfg.high_load_pct);
        // A shed holds (its target lives shed_ttl_ns in BPF): the agent takes the task back
        // onto the CPU it was shed off only once no other network task is there or has its IRQ
        // CPU there, whatever its class: the pair has ended. fits() alone let it back as soon
        // as the partner's class dipped below high or it ran elsewhere for a round, and BPF
        // placement then brought the partner back too (t_pair_stable: a shed undone by an
        // upgrade half a second later, then shed again).
        let round = self.round;
        // Out of self while step 2 sends (send() borrows all of self); back before step 3.
        let mut shed = std::mem::take(&mut self.shed);
        shed.retain(|_, &mut (_, r)| round - r < SHED_HOLD_ROUNDS);
        // Per CPU: the network tasks that run there or have their IRQ CPU there, each once.
        let near_of = |o: &TaskView, c: usize| o.cpu as usize == c || o.irq_cpu as usize == c;
        let mut near = vec![0usize; nr_cpus];
        for o in &active {
            near[o.cpu as usize] += 1;
            if o.irq_cpu != o.cpu {
                near[o.irq_cpu as usize] += 1;
            }
        }
        let held_off = |t: &TaskView, c: usize| {
            shed.get(&t.tid)
                .is_some_and(|&(from, _)| from == c && near[c] > near_of(t, c) as usize)
        };

        // Step 2: upgrade, most intensive first.
        let mut up: Vec<&TaskView> = active
            .iter()
            .copied()
            .filter(|t| class(t) == Class::High && tier(t) != Tier::Core)
            .collect();
        up.sort_by_key(|t| (std::cmp::Reverse(t.intens), t.tid));
        for t in up {
            if moves.len() >= budget {
                break;
            }
            let irq = t.irq_cpu as usize;
            let open = |c: usize| !taken.contains(&c) && !held_off(t, c) && fits(t, c, low);
            let target = if loads[irq] < self.cfg.low_load_pct && open(irq) {
                Some(irq)
            } else if tier(t) == Tier::Other {
                Self::least_loaded(
                    loads,
                    llc_cpus(irq).filter(|&c| open(c)),
                    self.cfg.low_load_pct,
                    irq,
                )
            } else {
                None
            };
            if let Some(cpu) = target {
                if self.send(&mut moves, t.tid, cpu, MoveKind::Upgrade) {
                    taken.push(cpu);
                }
            }
        }

        self.shed = shed;

        // Step 3: shed off overloaded CPUs, most loaded first, and adapt the boundaries.
        let means = llc_means(&loads[..nr_cpus], &llc[..nr_cpus]);
        let llc_mean = |cpu: usize| means.get(&llc[cpu]).copied().unwrap_or(f64::NAN);
        let mut overloaded: Vec<usize> = (0..nr_cpus)
            .filter(|&c| loads[c] > self.cfg.high_load_pct)
            .collect();
        overloaded.sort_by(|&a, &b| loads[b].total_cmp(&loads[a]).then(a.cmp(&b)));
        let mut adapted = false;
        for &c in &overloaded {
            let mut victims: Vec<&TaskView> = active
                .iter()
                .copied()
                .filter(|t| t.cpu as usize == c)
                .collect();
            // The boundaries move for the most loaded CPU where network tasks contend.
            if !adapted && victims.len() >= 2 {
                adapted = true;
                self.adapt(
                    victims.iter().map(|t| class(t)).max(),
                    victims.iter().map(|t| t.intens).max(),
                );
            }
            // Shedding resolves contention between network tasks: the last one on a CPU stays,
            // even when its own protocol work keeps that CPU busy (a single receiver and its
            // softirq on the IRQ CPU are MiAMI's best case, not an overload to undo). Unless
            // that CPU is the IRQ CPU of a task of a higher class waiting in another tier: then
            // the lone one is contending too, from the other side (in t_table3 a low-class
            // sender kept the IRQ CPU that the bulk sender, class high, needed).
            let waiting = |v: &TaskView| {
                active
                    .iter()
                    .any(|t| t.irq_cpu as usize == c && t.cpu as usize != c && class(t) < class(v))
            };
            let contended = victims.len() >= 2 || victims.first().is_some_and(|v| waiting(v));
            if moves.len() >= budget || !contended {
                continue;
            }
            victims.sort_by_key(|t| {
                (
                    std::cmp::Reverse(class(t)),
                    std::cmp::Reverse(tier(t)),
                    t.intens,
                    t.tid,
                )
            });
            // Only those that need affinity as little as the first: a victim that cannot move
            // (no target, or its move was sent within REPEAT_ROUNDS and BPF brought it back)
            // does not send a task of a higher class or a better tier off the CPU in its place.
            // The bulk sender of Table III, class high on its IRQ CPU, could be shed for a paced
            // middle-class sender whose repeated shed the filter held back, and then held off
            // for SHED_HOLD_ROUNDS: the likely cause of 33-38% core tier in two CI runs of
            // t_table3 (docs/design.md section 9).
            let least = (class(victims[0]), tier(victims[0]));
            for t in victims
                .into_iter()
                .take_while(|t| (class(t), tier(t)) == least)
            {
                let irq = t.irq_cpu as usize;
                let free = |c2: &usize| {
                    !taken.contains(c2) && !overloaded.contains(c2) && fits(t, *c2, high)
                };
                // Out of the IRQ CPU's LLC only from an LLC overloaded on average (BPF drops
                // such a target otherwise: target_alive()) into one lightly loaded on average:
                // with every CPU busy, one CPU that read below --low-load-pct for a round is
                // no room worth a cold cache (t_overload: receivers shed from one saturated
                // LLC into the other lost up to 16% of their runtime there).
                let light = |c2: &usize| llc_mean(*c2) < self.cfg.low_load_pct;
                let target =
                    Self::least_loaded(loads, llc_cpus(irq).filter(free), self.cfg.low_load_pct, c)
                        .or_else(|| {
                            (llc_mean(irq) > self.cfg.high_load_pct).then_some(())?;
                            Self::least_loaded(
                                loads,
                                (0..nr_cpus).filter(free).filter(light),
                                self.cfg.low_load_pct,
                                c,
                            )
                        });
                if let Some(cpu) = target {
                    if self.send(&mut moves, t.tid, cpu, MoveKind::Shed) {
                        taken.push(cpu);
                        self.shed.insert(t.tid, (c, self.round));
                        break;
                    }
                }
            }
        }
        // A boundary raised for an overload comes back as soon as no CPU is overloaded by two
        // or more network tasks, whatever else is busy: a hog, or a lone receiver saturating
        // its own IRQ CPU, raises nothing and holds nothing up.
        if let (false, Some(base)) = (adapted, base) {
            self.bounds = ClassBounds {
                high_min: relax(self.bounds.high_min, base.high_min),
                middle_min: relax(self.bounds.middle_min, base.middle_min),
            };
            let high = self.bounds.high_min;
            self.bounds.middle_min = self
                .bounds
                .middle_min
                .min((high / 2).max(base.middle_min).min(high - 1));
        }
        self.sent
            .retain(|_, &mut (_, r)| self.round - r < REPEAT_ROUNDS);

        Round {
            moves,
            bounds: self.bounds,
            classed_by: bounds,
            released: released.len(),
            overloaded,
            overloaded_llcs: above(&means, self.cfg.high_load_pct),
        }
    }

    /// Queue a move unless the same one was sent within REPEAT_ROUNDS.
    fn send(&mut self, moves: &mut Vec<Move>, tid: i32, cpu: usize, kind: MoveKind) -> bool {
        if let Some(&(prev, r)) = self.sent.get(&tid) {
            if prev == cpu && self.round - r < REPEAT_ROUNDS {
                return false;
            }
        }
        self.sent.insert(tid, (cpu, self.round));
        moves.push(Move { tid, cpu, kind });
        true
    }

    /// Step 3's boundary move: raise the lower boundary of @lowest, the lowest class running
    /// on the most loaded CPU, by a quarter. Low has no lower boundary to raise: its tasks are
    /// the first to be shed anyway. The boundaries stay ordered and within 1..=10^6.
    ///
    /// The raise never passes 3/4 of @top, the intensiveness of the most intensive task on
    /// that CPU. The paper shrinks the window "so that more communication-intensive processes
    /// run with better affinity": that needs a more intensive task left to benefit. Without the
    /// bound, a CPU that stays overloaded (one busy-polling sender is enough) would ratchet the
    /// boundaries up until its own most intensive task is class low, the opposite of the goal
    /// (Table III's bulk process C lost the core tier that way). 3/4, not all of it, so that a
    /// task whose measured rate wobbles by up to a quarter is not demoted by the noise; not
    /// less, so that tasks less than twice apart can still be told apart (t_agent_cap's five
    /// senders, 1000-2500 calls/s, were not with half).
    ///
    /// Each class keeps its minimum width (`widen()`): middle_min rises to at most half of
    /// high_min, high_min to at most half of 10^6. Configured bounds narrower than that are
    /// not moved.
    fn adapt(&mut self, lowest: Option<Class>, top: Option<u32>) {
        let b = &mut self.bounds;
        let cap = (top.unwrap_or(0) as u64 * 3 / 4) as u32;
        let raise = |v: u32, max: u32| (v + (v / 4).max(1)).min(max).max(v);
        match lowest {
            Some(Class::Middle) => b.middle_min = raise(b.middle_min, cap.min(b.high_min / 2)),
            Some(Class::High) => b.high_min = raise(b.high_min, cap.min(INTENS_MAX as u32 / 2)),
            Some(Class::Low) | None => {}
        }
    }
}
