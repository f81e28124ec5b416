// SPDX-License-Identifier: GPL-2.0
//! Host tests of the agent's round (bpf/policy.bpf.c miami_agent_round(), loaded on this
//! machine's kernel: BTF, no sched_ext needed, root) and of its load input where BPF cannot read
//! the loads (src/load.rs), with synthetic inputs: each of the paper's three steps, the cap, the
//! boundary moves under load and their relaxation, the repeat filter, the tasks' shares of a
//! CPU, and the /proc/stat parser. The round ran in user space until the agent moved into a BPF
//! timer; these tests are the behaviour it had there.

use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};
use miami::bpf_intf::{
    agent_round_arg, miami_round_flags_MIAMI_ROUND_VIEWS as ROUND_VIEWS, net_task,
};
use miami::bpf_skel::{BpfSkel, BpfSkelBuilder};
use miami::config::ClassBounds;
use miami::load::{busy_pct, parse_proc_stat, LoadReader};
use miami::policy::{
    self, Class, Move, MoveKind, PolicyConfig, Round, TaskView, AUTO_START, REPEAT_ROUNDS,
    SHED_HOLD_ROUNDS, UTIL_MIN_SPAN_NS,
};
use miami::scheduler::run_syscall_prog;
use miami::topology::LlcMap;

/// The agent's round loaded on the host: the object with miami_agent_round() alone, for CPUs
/// whose LLCs are @llc, configured by @cfg. Each round runs on the loads and tasks given.
struct Policy {
    skel: BpfSkel<'static>,
    llc: Vec<u32>,
}

impl Policy {
    fn new(cfg: PolicyConfig) -> Self {
        Self::with_llc(cfg, &LLC)
    }

    fn with_llc(cfg: PolicyConfig, llc: &[u32]) -> Self {
        // The object outlives the skeleton; one per test's policy, leaked at the test's end.
        let obj = Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open = BpfSkelBuilder::default().open(obj).unwrap();
        open.maps.miami_ops.set_autocreate(false).unwrap();
        for mut prog in open.open_object_mut().progs_mut() {
            let keep = prog.name() == "miami_agent_round";
            prog.set_autoload(keep);
        }
        let map = LlcMap::from_pairs(
            llc.len(),
            llc.iter().enumerate().map(|(c, &l)| (c, l as usize)),
        )
        .unwrap();
        let runs = map.runs();
        let ro = open.maps.rodata_data.as_mut().unwrap();
        ro.nr_cpu_ids = llc.len() as u32;
        ro.cpu_llc[..llc.len()].copy_from_slice(llc);
        ro.llc_cpus[..runs.cpus.len()].copy_from_slice(&runs.cpus);
        ro.cpu_llc_pos[..runs.pos.len()].copy_from_slice(&runs.pos);
        ro.llc_first[..runs.first.len()].copy_from_slice(&runs.first);
        ro.llc_nr[..runs.nr.len()].copy_from_slice(&runs.nr);
        let data = open.maps.data_data.as_mut().unwrap();
        cfg.write(data);
        cfg.reset_bounds(data);
        let skel = open
            .load()
            .expect("loading the BPF object (root, a kernel with BTF)");
        Self {
            skel,
            llc: llc.to_vec(),
        }
    }

    /// One round. @loads: busy percent per CPU; @llc: LLC id per CPU (as loaded).
    fn round(&mut self, loads: &[f64], llc: &[u32], tasks: &[TaskView]) -> Round {
        assert_eq!(
            llc,
            &self.llc[..],
            "a Policy runs on the LLC map it was loaded with"
        );
        let bss = self.skel.maps.bss_data.as_mut().unwrap();
        for (slot, &l) in bss.agent_load.iter_mut().zip(loads) {
            *slot = policy::load_bpf(l);
        }
        for (slot, t) in bss.agent_views.iter_mut().zip(tasks) {
            *slot = t.bpf();
        }
        let arg = agent_round_arg {
            now_ns: 0,
            stale_ns: 0,
            flags: ROUND_VIEWS,
            nr_views: tasks.len() as u32,
        };
        run_syscall_prog(&self.skel.progs.miami_agent_round, arg).expect("miami_agent_round");
        Round::read(
            self.skel.maps.bss_data.as_ref().unwrap(),
            self.skel.maps.data_data.as_ref().unwrap(),
        )
    }

    fn bounds(&self) -> ClassBounds {
        policy::bounds(self.skel.maps.data_data.as_ref().unwrap())
    }
}

/// The LLC ids whose CPUs' mean load is above @high percent, as a round finds them.
fn overloaded_llcs(loads: &[f64], llc: &[u32], high: f64) -> Vec<u32> {
    let cfg = PolicyConfig {
        high_load_pct: high,
        ..config(4)
    };
    Policy::with_llc(cfg, llc)
        .round(loads, llc, &[])
        .overloaded_llcs
}

/// The boundaries `--class-bounds auto` gives for a most intensive task of @top: those of the
/// first round that sees it.
fn auto_bounds(top: u32) -> ClassBounds {
    let mut p = Policy::new(PolicyConfig {
        init_bounds: None,
        ..config(4)
    });
    p.round(&loads(&[]), &LLC, &[task(1, top, 1, 1)]).bounds
}

/// Two LLCs: CPUs 0-3 and 4-7.
const LLC: [u32; 8] = [0, 0, 0, 0, 1, 1, 1, 1];
const INIT: ClassBounds = ClassBounds {
    high_min: 1000,
    middle_min: 100,
};

fn config(max_moves: usize) -> PolicyConfig {
    PolicyConfig {
        low_load_pct: 50.0,
        high_load_pct: 90.0,
        release_after_ms: 1000,
        max_moves,
        init_bounds: Some(INIT),
    }
}

fn policy(max_moves: usize) -> Policy {
    Policy::new(config(max_moves))
}

fn task(tid: i32, intens: u32, irq_cpu: i32, cpu: i32) -> TaskView {
    TaskView {
        tid,
        intens,
        irq_cpu,
        cpu,
        age_ms: 5,
        util: None,
    }
}

/// task() using @util percent of a CPU.
fn measured(tid: i32, intens: u32, irq_cpu: i32, cpu: i32, util: f64) -> TaskView {
    TaskView {
        util: Some(util),
        ..task(tid, intens, irq_cpu, cpu)
    }
}

/// The boundaries after 100 rounds of the same @loads and @tasks, from INIT.
fn settled(loads: &[f64], tasks: &[TaskView]) -> ClassBounds {
    let mut p = policy(4);
    for _ in 0..100 {
        p.round(loads, &LLC, tasks);
    }
    p.bounds()
}

fn mv(tid: i32, cpu: usize, kind: MoveKind) -> Move {
    Move { tid, cpu, kind }
}

/// Loads with @busy CPUs at the given percent, the rest at 10%.
fn loads(busy: &[(usize, f64)]) -> Vec<f64> {
    let mut l = vec![10.0; 8];
    for &(c, v) in busy {
        l[c] = v;
    }
    l
}

// ---- step 1: release ----

#[test]
fn silent_tasks_are_released_and_not_moved() {
    let mut p = policy(4);
    let mut t = task(1, 5000, 1, 6); // high, other tier: an upgrade candidate...
    t.age_ms = 1000; // ...but silent for --release-after-ms
    let r = p.round(&loads(&[]), &LLC, &[t.clone()]);
    assert_eq!(r.released, 1);
    assert!(r.moves.is_empty());
    t.age_ms = 999;
    let r = p.round(&loads(&[]), &LLC, &[t]);
    assert_eq!(r.released, 0);
    assert_eq!(r.moves, vec![mv(1, 1, MoveKind::Upgrade)]);
}

// ---- step 2: upgrade ----

#[test]
fn high_class_upgrades_to_a_free_irq_cpu() {
    let mut p = policy(4);
    // CPU 1 (10%) runs task 3: task 1 goes there once its own share is known to fit, 10 + 20
    // below --low-load-pct.
    let tasks = [
        measured(1, 5000, 1, 2, 20.0), // high, cache tier
        task(2, 500, 5, 6),            // middle, cache tier: not upgraded
        task(3, 50, 5, 1),             // low, other tier: not upgraded
        task(4, 9000, 5, 5),           // high, already core
    ];
    let r = p.round(&loads(&[]), &LLC, &tasks);
    assert_eq!(r.moves, vec![mv(1, 1, MoveKind::Upgrade)]);
}

#[test]
fn busy_irq_cpu_upgrades_from_other_tier_into_the_llc_only() {
    let mut p = policy(4);
    // IRQ CPU 1 at 70% (not below --low-load-pct 50); its LLC siblings 0, 2, 3 at 60, 30, 20.
    let l = loads(&[(1, 70.0), (0, 60.0), (2, 30.0), (3, 20.0)]);
    let r = p.round(&l, &LLC, &[task(1, 5000, 1, 6), task(2, 4000, 1, 2)]);
    // Task 1 (other tier) goes to the least loaded sibling, CPU 3; task 2 is already in the
    // cache tier and the core is not free: it stays.
    assert_eq!(r.moves, vec![mv(1, 3, MoveKind::Upgrade)]);
}

#[test]
fn one_newcomer_per_target_cpu_most_intensive_first() {
    let mut p = policy(4);
    // Both class high with IRQ CPU 1, each using 10% of a CPU: 10 + 10 + 10 below 50 fits.
    let t = [measured(1, 2000, 1, 2, 10.0), measured(2, 8000, 1, 3, 10.0)];
    let r = p.round(&loads(&[]), &LLC, &t);
    assert_eq!(r.moves, vec![mv(2, 1, MoveKind::Upgrade)]);
}

#[test]
fn an_upgrade_onto_a_cpu_with_a_network_task_must_land_below_low_load() {
    // Two class-high senders of IRQ CPU 7: task 1 runs there (CPU 7 at 40%), task 2 on sibling
    // CPU 4 using 30% of a CPU. CPU 7 reads below --low-load-pct (50), but with task 2 it would
    // carry 40 + 30 = 70%: between the thresholds, where the pair's next wobble past 90% sheds
    // one of them again. No upgrade.
    let l = loads(&[(7, 40.0), (4, 30.0)]);
    let round = |t2: TaskView| policy(4).round(&l, &LLC, &[task(1, 5000, 7, 7), t2]).moves;
    assert_eq!(round(measured(2, 5000, 7, 4, 30.0)), vec![]);
    // Using 9% of a CPU, it fits: 40 + 9 = 49 < 50.
    assert_eq!(
        round(measured(2, 5000, 7, 4, 9.0)),
        vec![mv(2, 7, MoveKind::Upgrade)]
    );
    // Its share not measured yet: no move onto an occupied CPU.
    assert_eq!(round(task(2, 5000, 7, 4)), vec![]);
    // From the other tier the same holds for the siblings: CPU 6 (5%) holds a network task and
    // 5 + 45 = 50 is not below 50, so the move goes to CPU 5 (10%, no network task) instead.
    let mut p = policy(4);
    let r = p.round(
        &loads(&[(7, 80.0), (4, 20.0), (5, 10.0), (6, 5.0)]),
        &LLC,
        &[
            task(1, 5000, 7, 7),
            task(4, 50, 7, 6),
            measured(3, 5000, 7, 1, 45.0),
        ],
    );
    assert_eq!(r.moves, vec![mv(3, 5, MoveKind::Upgrade)]);
}

#[test]
fn a_class_high_task_of_the_same_irq_cpu_counts_there_wherever_it_ran_last() {
    // Tasks 1 and 2, class high, both of IRQ CPU 7 (10%), last ran on siblings 6 and 4. BPF
    // places either on CPU 7 whenever it is free, so an upgrade of one must fit both: 10 + 30 +
    // 30 is not below 50.
    let round = |u: f64| {
        let t = [measured(1, 6000, 7, 6, u), measured(2, 5000, 7, 4, u)];
        policy(4).round(&loads(&[]), &LLC, &t).moves
    };
    assert_eq!(round(30.0), vec![]);
    // At 15% each, 10 + 15 + 15 = 40 fits: the more intensive one goes, the other stays in
    // the cache tier (one newcomer per CPU and round).
    assert_eq!(round(15.0), vec![mv(1, 7, MoveKind::Upgrade)]);
}

#[test]
fn an_upgrade_onto_a_cpu_without_a_network_task_ignores_the_movers_share() {
    // A lone task is never shed, so a sender using a whole CPU still takes its free IRQ CPU.
    let mut p = policy(4);
    let r = p.round(
        &loads(&[(4, 100.0)]),
        &LLC,
        &[measured(1, 5000, 7, 4, 100.0)],
    );
    assert_eq!(r.moves, vec![mv(1, 7, MoveKind::Upgrade)]);
}

// ---- step 3: shed ----

#[test]
fn shed_order_low_other_first_core_high_last() {
    let mut p = policy(8);
    // Everything runs on CPU 1, overloaded; CPU 1 is the IRQ CPU of tasks 10 and 11.
    let mut tasks = vec![
        task(10, 5000, 1, 1), // high, core: last
        task(11, 500, 1, 1),  // middle, core
        task(12, 500, 5, 1),  // middle, other
        task(13, 50, 0, 1),   // low, cache
        task(14, 60, 5, 1),   // low, other: first
        task(15, 40, 5, 1),   // low, other, less intensive: before 14
    ];
    let l = loads(&[(1, 99.0)]);
    let mut order = Vec::new();
    for _ in 0..tasks.len() - 1 {
        let r = p.round(&l, &LLC, &tasks);
        let sheds: Vec<&Move> = r
            .moves
            .iter()
            .filter(|m| m.kind == MoveKind::Shed)
            .collect();
        assert_eq!(
            sheds.len(),
            1,
            "one shed per overloaded CPU per round: {r:?}"
        );
        order.push(sheds[0].tid);
        // The task moved: it no longer runs on CPU 1.
        let t = tasks.iter_mut().find(|t| t.tid == sheds[0].tid).unwrap();
        t.cpu = sheds[0].cpu as i32;
    }
    assert_eq!(order, vec![15, 14, 13, 12, 11]);
    // The last network task on the CPU stays, however loaded the CPU is.
    assert!(p.round(&l, &LLC, &tasks).moves.is_empty());
}

#[test]
fn a_single_task_with_its_softirq_is_not_shed() {
    let mut p = policy(4);
    // One receiver on its IRQ CPU, which its own protocol work keeps 100% busy.
    let r = p.round(&loads(&[(1, 100.0)]), &LLC, &[task(1, 50, 1, 1)]);
    assert_eq!(r.overloaded, vec![1]);
    assert!(r.moves.is_empty(), "{r:?}");
}

#[test]
fn a_victim_that_cannot_move_does_not_send_a_better_placed_task_instead() {
    // Table III: paced sender 1 (middle) and bulk sender 2 (high) both run on CPU 0, the IRQ
    // CPU of both, at 100%. Round 1 sheds the pacer to CPU 1, the least loaded.
    let mut p = policy(4);
    let l = loads(&[(0, 100.0)]);
    let t = [measured(1, 500, 0, 0, 10.0), measured(2, 5000, 0, 0, 60.0)];
    assert_eq!(p.round(&l, &LLC, &t).moves, vec![mv(1, 1, MoveKind::Shed)]);
    // BPF brings the pacer back (a middle-class task takes its IRQ CPU when that is free), and
    // the repeat filter holds its shed back for REPEAT_ROUNDS rounds. The bulk sender, class
    // high in the core tier, is not shed in its place: it needs the CPU most (step 3).
    for round in 2..=REPEAT_ROUNDS {
        assert_eq!(p.round(&l, &LLC, &t).moves, vec![], "round {round}");
    }
    assert_eq!(p.round(&l, &LLC, &t).moves, vec![mv(1, 1, MoveKind::Shed)]);

    // One class, two tiers: task 3 (IRQ CPU 5) runs on CPU 1 in the other tier, next to task 4
    // in its core tier. LLC 1 has no CPU below 50% and is not overloaded on average (80%), so
    // task 3 has nowhere to go; task 4 stays too, though LLC 0 has room.
    let l = vec![10.0, 100.0, 10.0, 10.0, 80.0, 80.0, 80.0, 80.0];
    let t = [measured(3, 5000, 5, 1, 40.0), measured(4, 6000, 1, 1, 40.0)];
    assert_eq!(policy(4).round(&l, &LLC, &t).moves, vec![]);
    // Two of one class and tier (a pair on its IRQ CPU): the other one goes if the first
    // cannot, here because the first's share (45%) does not fit next to CPU 6's network task
    // (48 + 45 >= 90), where the second's (30%) does.
    let l = loads(&[(7, 100.0), (4, 95.0), (5, 95.0), (6, 48.0)]);
    let t = [
        measured(5, 5000, 7, 7, 45.0),
        measured(6, 6000, 7, 7, 30.0),
        measured(7, 50, 6, 6, 5.0),
    ];
    assert_eq!(
        policy(4).round(&l, &LLC, &t).moves,
        vec![mv(6, 6, MoveKind::Shed)]
    );
}

#[test]
fn a_lone_task_gives_way_to_a_higher_class_waiting_for_its_irq_cpu() {
    // Task 1 (low) alone on CPU 0, the IRQ CPU of task 2 (high), which runs in the cache tier
    // on CPU 2 (Table III: a paced sender on the core, the bulk sender waiting beside it).
    let l = loads(&[(0, 100.0), (2, 95.0)]);
    let lone = task(1, 50, 0, 0);
    let waiting = task(2, 5000, 0, 2);
    let r = policy(4).round(&l, &LLC, &[lone.clone(), waiting.clone()]);
    assert_eq!(r.moves, vec![mv(1, 1, MoveKind::Shed)], "{r:?}");
    // Not for a waiting task of the same class or lower, nor one with another IRQ CPU.
    for w in [task(2, 60, 0, 2), task(2, 5000, 4, 2)] {
        let r = policy(4).round(&l, &LLC, &[lone.clone(), w.clone()]);
        assert!(r.moves.iter().all(|m| m.tid != 1), "{w:?}: {r:?}");
    }
}

#[test]
fn shed_target_prefers_the_irq_llc_then_a_lightly_loaded_llc_below_low_load() {
    let mut p = policy(4);
    // Task 1's IRQ CPU is 1 (LLC 0); it runs on overloaded CPU 2 next to task 2, which needs
    // affinity more (high class).
    let t = [task(1, 50, 1, 2), task(2, 5000, 2, 2)];
    let r = p.round(&loads(&[(2, 95.0), (3, 5.0)]), &LLC, &t);
    assert_eq!(r.moves, vec![mv(1, 3, MoveKind::Shed)]);
    assert_eq!(r.overloaded, vec![2]);

    // LLC 0 all at or above 50% and overloaded on average ((92 + 95 + 95 + 91) / 4 = 93.25 >
    // 90), LLC 1 lightly loaded ((20 + 30 + 1 + 40) / 4 = 22.75 < 50): out of the LLC, to the
    // least loaded CPU there (CPU 6 at 1%).
    let mut p = policy(4);
    let l = vec![92.0, 95.0, 95.0, 91.0, 20.0, 30.0, 1.0, 40.0];
    let r = p.round(&l, &LLC, &t);
    assert_eq!(r.moves, vec![mv(1, 6, MoveKind::Shed)]);

    // LLC 0 busy but not overloaded on average ((60 + 70 + 95 + 55) / 4 = 70): the task stays
    // in its LLC, whatever LLC 1 has free.
    let mut p = policy(4);
    let r = p.round(&[60.0, 70.0, 95.0, 55.0, 20.0, 30.0, 1.0, 40.0], &LLC, &t);
    assert!(r.moves.is_empty(), "{:?}", r.moves);

    // LLC 0 overloaded, LLC 1 busy on average ((100 + 100 + 30 + 100) / 4 = 82.5 >= 50) with
    // one CPU at 30%: not lightly loaded, so no move into it.
    let mut p = policy(4);
    let r = p.round(
        &[95.0, 95.0, 95.0, 95.0, 100.0, 100.0, 30.0, 100.0],
        &LLC,
        &t,
    );
    assert!(r.moves.is_empty(), "{:?}", r.moves);

    // Nowhere below 50%: no move, but the CPU is still reported overloaded.
    let mut p = policy(4);
    let r = p.round(&[95.0; 8], &LLC, &t);
    assert!(r.moves.is_empty());
    assert_eq!(r.overloaded.len(), 8);
}

#[test]
fn a_shed_onto_a_cpu_with_a_network_task_must_land_below_high_load() {
    // Tasks 1 (low) and 2 (high) contend on CPU 2 (95%). CPU 3 (20%) runs network task 3; task
    // 1 uses 75% of a CPU: 20 + 75 = 95 would overload CPU 3 in turn, so it goes to CPU 0
    // (30%, no network task).
    let l = loads(&[(0, 30.0), (1, 40.0), (2, 95.0), (3, 20.0)]);
    let round = |u: f64| {
        let t = [
            measured(1, 50, 1, 2, u),
            task(2, 5000, 2, 2),
            task(3, 50, 1, 3),
        ];
        policy(4).round(&l, &LLC, &t).moves
    };
    assert_eq!(round(75.0), vec![mv(1, 0, MoveKind::Shed)]);
    // Using 60%, 20 + 60 = 80 < 90: the least loaded CPU, 3, takes it.
    assert_eq!(round(60.0), vec![mv(1, 3, MoveKind::Shed)]);
}

#[test]
fn a_shed_task_comes_back_only_once_its_pair_ends_or_the_hold_lapses() {
    // Round 1: tasks 1 and 2, class high, both of IRQ CPU 7 and both running there (100%).
    // Task 1, the less intensive, is shed to CPU 4, the least loaded CPU of the LLC.
    let mut p = policy(4);
    let pair = [measured(1, 5000, 7, 7, 5.0), measured(2, 6000, 7, 7, 60.0)];
    let r = p.round(&loads(&[(7, 100.0)]), &LLC, &pair);
    assert_eq!(r.moves, vec![mv(1, 4, MoveKind::Shed)]);
    // Then task 2's rate dips below class high and CPU 7 reads 20%. An upgrade would fit
    // there (20 + 5 = 25 < 50, task 2 not away), but task 2 is still on CPU 7: the pair has
    // not ended, so task 1 stays on CPU 4 for as long as the hold lasts, SHED_HOLD_ROUNDS
    // rounds from the shed (rounds 2 to 50)...
    let split = [measured(1, 5000, 7, 4, 5.0), measured(2, 500, 7, 7, 60.0)];
    let l = loads(&[(7, 20.0), (4, 40.0)]);
    for round in 2..=SHED_HOLD_ROUNDS {
        assert_eq!(p.round(&l, &LLC, &split).moves, vec![], "round {round}");
    }
    // ...and goes back at round 51, when it lapses.
    assert_eq!(
        p.round(&l, &LLC, &split).moves,
        vec![mv(1, 7, MoveKind::Upgrade)]
    );
    // Within the hold, it goes back as soon as task 2 is gone (released or ended).
    let mut p = policy(4);
    p.round(&loads(&[(7, 100.0)]), &LLC, &pair);
    assert_eq!(p.round(&l, &LLC, &split).moves, vec![]);
    assert_eq!(
        p.round(&l, &LLC, &split[..1]).moves,
        vec![mv(1, 7, MoveKind::Upgrade)]
    );
}

/// A task's share of a CPU as a round computes it from net_tasks: @tid's CPU time was @rt_ns
/// at its last call at @at_ns. None: not measured yet.
fn util_round(p: &mut Policy, tid: i32, rt_ns: u64, at_ns: u64) -> Option<f64> {
    let mut nt: net_task = unsafe { std::mem::zeroed() };
    (nt.tid, nt.intens, nt.last_comm_ns, nt.runtime_ns) = (tid, 1000, at_ns, rt_ns);
    // SAFETY: net_task is plain #[repr(C)] data.
    let bytes = unsafe {
        std::slice::from_raw_parts(
            &nt as *const _ as *const u8,
            std::mem::size_of::<net_task>(),
        )
    };
    let maps = &p.skel.maps;
    maps.net_tasks
        .update(&tid.to_ne_bytes(), bytes, MapFlags::ANY)
        .unwrap();
    round_on_table(p, at_ns);
    let bss = p.skel.maps.bss_data.as_ref().unwrap();
    bss.agent_views[..bss.agent_nr_tasks as usize]
        .iter()
        .find(|v| v.tid == tid)
        .and_then(|v| (v.util >= 0).then(|| v.util as f64 / 100.0))
}

/// A round on the net_tasks table as it is (a snapshot, walked: user space added entries).
fn round_on_table(p: &mut Policy, now_ns: u64) {
    p.skel.maps.bss_data.as_mut().unwrap().net_tasks_added += 1;
    let arg = agent_round_arg {
        now_ns: now_ns + 1_000_000,
        stale_ns: 10_000_000_000,
        flags: 0,
        nr_views: 0,
    };
    run_syscall_prog(&p.skel.progs.miami_agent_round, arg).expect("miami_agent_round");
}

#[test]
fn util_is_cpu_time_over_the_span_between_samples() {
    let mut p = policy(4);
    let u = &mut p;
    let ms = 1_000_000;
    assert_eq!(util_round(u, 1, 0, 1000 * ms), None);
    // 40 ms of CPU time over 100 ms: 40%.
    assert_eq!(util_round(u, 1, 40 * ms, 1100 * ms), Some(40.0));
    // A sample less than UTIL_MIN_SPAN_NS after the last keeps the share and the start.
    let short = UTIL_MIN_SPAN_NS / 2;
    assert_eq!(util_round(u, 1, 50 * ms, 1100 * ms + short), Some(40.0));
    // 80 ms over the 200 ms since the last kept sample: 40 -> 120 ms of CPU time, 40%.
    assert_eq!(util_round(u, 1, 120 * ms, 1300 * ms), Some(40.0));
    // More CPU time than wall time (clocks of different CPUs): at most 100%.
    assert_eq!(util_round(u, 1, 300 * ms, 1400 * ms), Some(100.0));
    // CPU time going back: a new thread with the same tid, measured afresh.
    assert_eq!(util_round(u, 1, 5 * ms, 1500 * ms), None);
    assert_eq!(util_round(u, 1, 25 * ms, 1600 * ms), Some(20.0));
    // A thread gone from the table for a round is forgotten.
    u.skel.maps.net_tasks.delete(&1i32.to_ne_bytes()).unwrap();
    round_on_table(u, 1700 * ms);
    assert_eq!(util_round(u, 1, 500 * ms, 5000 * ms), None);
}

// ---- who may preempt an IRQ CPU ----

#[test]
fn each_irq_cpu_names_its_most_intensive_class_high_task() {
    // Placement lets only that task preempt the IRQ CPU (main.bpf.c, enqueue_net()): the
    // others of class high there wait like any network task.
    let mut silent = task(6, 20000, 2, 2);
    silent.age_ms = 1000; // released: not a candidate, however intensive
    let tasks = [
        task(1, 5000, 1, 1),
        task(3, 9000, 1, 3), // ties with task 2: the lower tid wins
        task(2, 9000, 1, 2),
        task(4, 500, 5, 5), // middle: never named
        task(5, 3000, 5, 6),
        silent,
        task(7, 900, 0, 0), // middle alone on CPU 0: none named there
    ];
    let mut p = policy(4);
    p.round(&loads(&[]), &LLC, &tasks);
    let top = |p: &Policy| p.skel.maps.bss_data.as_ref().unwrap().agent_irq_top[..8].to_vec();
    assert_eq!(top(&p), vec![0, 2, 0, 0, 0, 5, 0, 0]);
    // The next round without task 2 names task 3; without any class-high task, none.
    p.round(&loads(&[]), &LLC, &tasks[..2]);
    assert_eq!(top(&p), vec![0, 3, 0, 0, 0, 0, 0, 0]);
    p.round(&loads(&[]), &LLC, &[task(4, 500, 5, 5)]);
    assert_eq!(top(&p), vec![0; 8]);
}

// ---- LLC overload: when network tasks may leave their LLC ----

#[test]
fn an_llc_is_overloaded_only_when_busy_on_average() {
    let mut p = policy(4);
    // One CPU of LLC 0 saturated, the LLC at 40% on average: busy, not overloaded.
    let r = p.round(&loads(&[(1, 100.0)]), &LLC, &[]);
    assert_eq!(r.overloaded, vec![1]);
    assert!(r.overloaded_llcs.is_empty(), "{r:?}");
    // LLC 1 at 92.5% on average (one CPU at 70%): overloaded; LLC 0 at 89.75%: not, because
    // the limit (90) is exclusive, as for CPUs.
    let l = [99.0, 80.0, 90.0, 90.0, 100.0, 100.0, 100.0, 70.0];
    assert_eq!(p.round(&l, &LLC, &[]).overloaded_llcs, vec![1]);
    assert_eq!(p.round(&[95.0; 8], &LLC, &[]).overloaded_llcs, vec![0, 1]);
    // LLC ids need not be dense or ordered by CPU.
    assert_eq!(
        overloaded_llcs(&[95.0, 10.0, 95.0, 10.0], &[7, 2, 7, 2], 90.0),
        vec![7]
    );
}

// ---- the cap ----

#[test]
fn moves_per_round_never_exceed_the_cap() {
    // 6 upgrade candidates and 4 overloaded CPUs with a task each.
    let mut tasks: Vec<TaskView> = (0..6)
        .map(|i| task(i, 5000 + i as u32, 1, 4 + (i % 2)))
        .collect();
    tasks.extend((0..4).map(|i| task(100 + i, 10, 0, 4 + i)));
    let l = vec![10.0, 10.0, 10.0, 10.0, 99.0, 98.0, 97.0, 96.0];
    for cap in [0, 1, 2, 3, 5] {
        let mut p = policy(cap);
        let r = p.round(&l, &LLC, &tasks);
        assert!(r.moves.len() <= cap, "cap {cap}: {:?}", r.moves);
        if cap > 0 {
            assert!(!r.moves.is_empty(), "cap {cap}: nothing moved");
        }
    }
    // Cap 0 still adapts the boundaries.
    let mut p = policy(0);
    let r = p.round(&l, &LLC, &[task(1, 500, 4, 4), task(2, 600, 4, 4)]);
    assert!(r.moves.is_empty());
    assert!(r.bounds.middle_min > INIT.middle_min);
}

#[test]
fn a_move_is_not_repeated_within_repeat_rounds() {
    let mut p = policy(4);
    let t = [task(1, 5000, 1, 2)];
    let l = loads(&[]);
    assert_eq!(p.round(&l, &LLC, &t).moves.len(), 1);
    for i in 1..REPEAT_ROUNDS {
        assert!(p.round(&l, &LLC, &t).moves.is_empty(), "round {i}");
    }
    assert_eq!(
        p.round(&l, &LLC, &t).moves,
        vec![mv(1, 1, MoveKind::Upgrade)]
    );
}

// ---- boundaries ----

#[test]
fn overload_raises_the_lowest_running_class_and_relaxes_back() {
    let mut p = policy(4);
    let hot = loads(&[(1, 99.0)]);
    // Lowest class on CPU 1 is middle: middle_min rises by a quarter per round (v + v / 4,
    // integer): 100, 125, 156, ...
    let mid = [task(1, 5000, 1, 1), task(2, 500, 1, 1)];
    assert_eq!(
        p.round(&hot, &LLC, &mid).bounds,
        ClassBounds {
            high_min: 1000,
            middle_min: 125
        }
    );
    assert_eq!(p.round(&hot, &LLC, &mid).bounds.middle_min, 156);
    // ... 195, 243, 303, 378, 472, and then not to 590 but to 500: the middle class keeps a
    // factor of 2 (high_min / 2 = 500). Task 2 (500) stays middle, however long it lasts.
    for _ in 0..50 {
        p.round(&hot, &LLC, &mid);
    }
    assert_eq!(
        p.bounds(),
        ClassBounds {
            high_min: 1000,
            middle_min: 500
        }
    );
    assert_eq!(p.bounds().class_of(500), Class::Middle);
    // A middle task just under high_min: the boundary stops at high_min / 2 as well.
    let top = [task(1, 5000, 1, 1), task(2, 999, 1, 1)];
    assert_eq!(settled(&hot, &top).middle_min, 500);

    // Only high-class tasks there: high_min rises, but never past 3/4 of the most intensive
    // task's intensiveness (3/4 of 5000 = 3750), so that task keeps its class however long the
    // overload lasts.
    let high = [task(1, 5000, 1, 1), task(2, 4000, 1, 1)];
    assert_eq!(policy(4).round(&hot, &LLC, &high).bounds.high_min, 1250);
    let b = settled(&hot, &high);
    assert_eq!(b.high_min, 3750);
    assert_eq!(b.class_of(4000), Class::High);
    // Two high-class tasks far apart: high_min goes 1000, 1250, 1562 (past 1500): task 2 is
    // middle now, the lowest class there, so middle_min rises, up to 1562 / 2 = 781. The less
    // intensive task dropped one class; the more intensive one never does.
    let b = settled(&hot, &[task(1, 8000, 1, 1), task(2, 1500, 1, 1)]);
    assert_eq!(
        b,
        ClassBounds {
            high_min: 1562,
            middle_min: 781
        }
    );
    assert_eq!(b.class_of(1500), Class::Middle);
    assert_eq!(b.class_of(8000), Class::High);
    // The most intensive tasks possible: high_min stops at 10^6 / 2 (3/4 of 10^6 would leave
    // the high class narrower than a factor of 2).
    let max = [task(1, 1_000_000, 1, 1), task(2, 1_000_000, 1, 1)];
    assert_eq!(settled(&hot, &max).high_min, 500_000);
    // A single network task on the overloaded CPU: nothing contends, nothing moves, however
    // long the overload lasts (a lone bulk sender lost class high that way in t_table3).
    for lone in [task(1, 800, 1, 1), task(1, 5000, 1, 1)] {
        assert_eq!(settled(&hot, std::slice::from_ref(&lone)), INIT, "{lone:?}");
    }

    // A low-class task there: nothing to shrink, the boundaries stay.
    let mut p = policy(4);
    let low = [task(1, 5000, 1, 1), task(2, 50, 1, 1)];
    assert_eq!(p.round(&hot, &LLC, &low).bounds, INIT);

    // Load falls: back toward the initial values, a quarter of the distance per round,
    // monotonically, ordered, and exactly there in the end.
    let mut p = policy(4);
    for _ in 0..8 {
        p.round(&hot, &LLC, &mid);
        p.round(&hot, &LLC, &high);
    }
    let raised = p.bounds();
    assert!(raised.high_min > INIT.high_min && raised.middle_min > INIT.middle_min);
    let mut prev = raised;
    for _ in 0..200 {
        let b = p.round(&loads(&[]), &LLC, &mid).bounds;
        assert!(b.middle_min < b.high_min, "{b:?}");
        assert!(b.high_min <= prev.high_min && b.middle_min <= prev.middle_min);
        prev = b;
    }
    assert_eq!(p.bounds(), INIT);
}

/// Rounds until @p's boundaries are back at INIT under @loads and @tasks, at most 100.
fn rounds_to_init(p: &mut Policy, loads: &[f64], tasks: &[TaskView]) -> usize {
    (1..=100)
        .find(|_| p.round(loads, &LLC, tasks).bounds == INIT)
        .unwrap_or(usize::MAX)
}

#[test]
fn a_raised_boundary_comes_back_whatever_else_is_busy() {
    // Raise middle_min to its cap (500, see above) with two tasks on overloaded CPU 1.
    let mid = [task(1, 5000, 1, 1), task(2, 500, 1, 1)];
    let raise = |p: &mut Policy| {
        for _ in 0..20 {
            p.round(&loads(&[(1, 99.0)]), &LLC, &mid);
        }
        assert_eq!(p.bounds().middle_min, 500);
    };
    // Relaxing from 500 to 100: the distance 400 shrinks by a quarter (at least 1) per round,
    // 400, 300, 225, 169, 127, 96, 72, 54, 41, 31, 24, 18, 14, 11, 9, 7, 6, 5, 4, 3, 2, 1, 0:
    // 22 rounds.
    const BACK: usize = 22;
    // The overload ends, and an unrelated CPU hog keeps CPU 6 at 100% (no network task there).
    let mut p = policy(4);
    raise(&mut p);
    let hog = loads(&[(6, 100.0)]);
    assert_eq!(rounds_to_init(&mut p, &hog, &mid[..1]), BACK);
    // The overload ends, and a lone receiver keeps its own IRQ CPU 1 at 100%.
    let mut p = policy(4);
    raise(&mut p);
    let lone = [task(1, 5000, 1, 1), task(2, 500, 1, 3)];
    assert_eq!(rounds_to_init(&mut p, &loads(&[(1, 100.0)]), &lone), BACK);
    // While the overload lasts, nothing comes back.
    let mut p = policy(4);
    raise(&mut p);
    assert_eq!(
        rounds_to_init(&mut p, &loads(&[(1, 99.0)]), &mid),
        usize::MAX
    );
}

#[test]
fn auto_bounds_follow_the_most_intensive_task() {
    // A bulk receiver reading 64 KiB per call: 1, 10, 100 Gbit/s make 125e6 / 65536 = 1907,
    // 19073 and 190734 calls/s. Boundaries at top / 4 and top / 64.
    assert_eq!(
        auto_bounds(1907),
        ClassBounds {
            high_min: 476,
            middle_min: 29
        }
    );
    assert_eq!(
        auto_bounds(19073),
        ClassBounds {
            high_min: 4768,
            middle_min: 298
        }
    );
    assert_eq!(
        auto_bounds(190734),
        ClassBounds {
            high_min: 47683,
            middle_min: 2980
        }
    );
    // A light flow of 100 calls/s beside each bulk flow: middle at 1 Gbit/s, low above; the
    // bulk flow is high everywhere.
    for (top, light) in [
        (1907, Class::Middle),
        (19073, Class::Low),
        (190734, Class::Low),
    ] {
        let b = auto_bounds(top);
        assert_eq!(b.class_of(top), Class::High);
        assert_eq!(b.class_of(100), light, "top {top}");
    }
    // Tiny rates still give three classes, each at least a factor of 2 wide.
    assert_eq!(
        auto_bounds(10),
        ClassBounds {
            high_min: 4,
            middle_min: 2
        }
    );
}

#[test]
fn auto_bounds_in_the_policy_start_at_the_first_task_and_decay_slowly() {
    let mut p = Policy::new(PolicyConfig {
        init_bounds: None,
        ..config(4)
    });
    assert_eq!(p.bounds(), AUTO_START);
    let idle = loads(&[]);
    // The first round with a task: straight to top / 4, top / 64.
    let bulk = [task(1, 6400, 1, 1), task(2, 100, 5, 5)];
    assert_eq!(
        p.round(&idle, &LLC, &bulk).bounds,
        ClassBounds {
            high_min: 1600,
            middle_min: 100
        }
    );
    // The bulk task stops: the top falls a quarter of the way to the next task per round
    // (6400 -> 4825 -> 3644 ...), and the boundaries relax toward the new values, a quarter
    // of the way per round: high_min 1600 -> 1600 - (1600 - 4825 / 4 = 1206) / 4 = 1502.
    let light = [task(2, 100, 5, 5)];
    assert_eq!(p.round(&idle, &LLC, &light).bounds.high_min, 1502);
    for _ in 0..200 {
        p.round(&idle, &LLC, &light);
    }
    // In the end the light task is the top one, class high on its own.
    assert_eq!(p.bounds(), auto_bounds(100));
    assert_eq!(p.bounds().class_of(100), Class::High);
}

// ---- /proc/stat ----

const STAT0: &str = "cpu  100 0 100 800 0 0 0 0 0 0
cpu0 10 0 10 80 0 0 0 0 0 0
cpu1 0 0 0 100 0 0 0 0 0 0
intr 12345 0 0
ctxt 999
";
// CPU 0: +50 user, +20 irq, +10 softirq, +20 idle: 80% busy. CPU 1: +40 iowait, +60 idle, +50
// guest (already inside user, which did not move): 0% busy.
const STAT1: &str = "cpu  200 0 100 900 40 20 10 0 50 0
cpu0 60 0 10 100 0 20 10 0 0 0
cpu1 0 0 0 160 40 0 0 0 50 0
intr 23456 0 0
";

#[test]
fn proc_stat_busy_includes_irq_excludes_idle_iowait_and_guest() {
    let a = parse_proc_stat(STAT0).unwrap();
    let b = parse_proc_stat(STAT1).unwrap();
    assert_eq!(a.len(), 2);
    assert_eq!(busy_pct(&a, &b), vec![80.0, 0.0]);

    let mut r = LoadReader::default();
    r.update(STAT0).unwrap();
    assert_eq!(r.update(STAT1).unwrap(), vec![80.0, 0.0]);
    // No time passed: 0, not NaN.
    assert_eq!(r.update(STAT1).unwrap(), vec![0.0, 0.0]);
}

/// The live /proc/stat, read through the file kept open: each read is a fresh reading (a
/// stale one would give 0% busy on every CPU forever), so a CPU kept busy between two reads
/// shows as busy.
#[test]
fn load_reader_rereads_the_live_file() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut r = LoadReader::default();
    let first = r.read().unwrap();
    assert!(first.len() >= cpus, "{first:?}");
    let until = std::time::Instant::now() + std::time::Duration::from_millis(300);
    while std::time::Instant::now() < until {
        std::hint::black_box(0u64);
    }
    let busy = r.read().unwrap();
    assert!(busy.iter().all(|p| (0.0..=100.0).contains(p)), "{busy:?}");
    // 300 ms spinning on one CPU: at least that one is mostly busy (ticks are 4 ms or less).
    assert!(busy.iter().any(|&p| p >= 50.0), "{busy:?}");
}

/// A /proc/stat larger than the read buffer (a big host: a line per CPU, a number per IRQ) is
/// read whole, not cut at the buffer's end: the same CPUs as with a buffer that holds it.
#[test]
fn load_reader_grows_its_buffer() {
    let whole = LoadReader::default().read().unwrap().len();
    let mut r = LoadReader::with_buffer_len(64);
    assert_eq!(r.read().unwrap().len(), whole);
    assert_eq!(r.read().unwrap().len(), whole);
}

#[test]
fn proc_stat_bad_input_is_an_error() {
    let e = parse_proc_stat("intr 1 2\n").unwrap_err().to_string();
    assert!(e.contains("no per-CPU lines"), "{e}");
    let e = parse_proc_stat("cpu0 1 x 3 4\n").unwrap_err().to_string();
    assert!(e.contains("bad line"), "{e}");
    let e = parse_proc_stat("cpu0 1 2\n").unwrap_err().to_string();
    assert!(e.contains("too few columns"), "{e}");
}

// ---- offline CPUs ----

/// /proc/stat omits offline CPUs. Their load reads as NaN, not 0: an offline CPU looked idle,
/// the best target for every move.
#[test]
fn offline_cpus_are_never_targets_and_never_overloaded() {
    // CPU 2 and CPU 6 offline in the second reading (their lines are missing).
    let all = "cpu0 10 0 10 80 0 0 0 0\ncpu1 10 0 10 80 0 0 0 0\ncpu2 10 0 10 80 0 0 0 0\n\
               cpu3 10 0 10 80 0 0 0 0\ncpu4 10 0 10 80 0 0 0 0\ncpu5 10 0 10 80 0 0 0 0\n\
               cpu6 10 0 10 80 0 0 0 0\ncpu7 10 0 10 80 0 0 0 0\n";
    let some = "cpu0 20 0 20 160 0 0 0 0\ncpu1 110 0 10 80 0 0 0 0\n\
                cpu3 110 0 10 80 0 0 0 0\ncpu4 20 0 20 160 0 0 0 0\ncpu5 20 0 20 160 0 0 0 0\n\
                cpu7 20 0 20 160 0 0 0 0\n";
    let mut r = LoadReader::default();
    r.update(all).unwrap();
    let l = r.update(some).unwrap();
    // CPUs 1 and 3: +100 busy, 0 idle: 100%. CPUs 0, 4, 5, 7: +20 busy of +100: 20%.
    assert_eq!(l.len(), 8);
    assert!(l[2].is_nan() && l[6].is_nan(), "{l:?}");
    assert_eq!([l[0], l[1], l[3], l[4]], [20.0, 100.0, 100.0, 20.0]);
    // A high-class task in the other tier whose IRQ CPU (2) is offline: no upgrade to it, and
    // a move into its LLC goes to CPU 0, the online CPU below --low-load-pct, never to 2.
    let mut p = policy(4);
    let r = p.round(&l, &LLC, &[task(1, 5000, 2, 6)]);
    assert_eq!(r.moves, vec![mv(1, 0, MoveKind::Upgrade)]);
    // Two tasks shed off overloaded CPU 1: targets in the LLC are 0 (20%), not offline 2.
    let mut p = policy(4);
    let r = p.round(&l, &LLC, &[task(1, 500, 1, 1), task(2, 400, 1, 1)]);
    assert!(
        r.moves.iter().all(|m| m.cpu != 2 && m.cpu != 6),
        "{:?}",
        r.moves
    );
    assert_eq!(r.moves, vec![mv(2, 0, MoveKind::Shed)]);
    assert!(!r.overloaded.contains(&2) && !r.overloaded.contains(&6));
    // LLC 0 on average over its online CPUs 0, 1, 3: (20 + 100 + 100) / 3 = 73%: not
    // overloaded at --high-load-pct 90; with CPU 2 counted as 0% it would be 55%.
    assert_eq!(overloaded_llcs(&l, &LLC, 70.0), vec![0]);
    assert_eq!(overloaded_llcs(&l, &LLC, 90.0), Vec::<u32>::new());
}
