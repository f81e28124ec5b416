/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_miami: MiAMI ("Multi-core aware processor Affinity for TCP/IP over Multiple network
 * Interfaces", Jang & Jin) as a sched_ext scheduler.
 *
 * 1. What it does
 *
 * A networking task runs best on the CPU that takes its NIC's interrupts and softirq (tier
 * core: task and protocol processing share L1/L2), second best on a CPU sharing that CPU's
 * last-level cache (tier cache), and anywhere else only when those are overloaded (tier other).
 * How hard a task pulls toward its IRQ CPU depends on its communication intensiveness
 * (netmon.bpf.c): 10^6 / mean interval between its send/recv calls in us, 1..10^6. The task's
 * most intensive connection represents it. Two boundaries, which the agent's rounds move
 * (policy.bpf.c), split intensiveness into three classes:
 *
 *   high    intens >= class_high_min     claims the core tier, even from non-network work and
 *                                        from the lower classes (their load there is no
 *                                        obstacle to it: has_room())
 *   middle  intens >= class_middle_min   core tier when free, else cache, else queues on core
 *   low     below                        core tier only when free, else cache; gives way first
 *
 * Every class takes a free IRQ CPU first: the paper chooses core-level affinity "as much as
 * possible" and falls back to cache or other only when the better CPU is overloaded; classes
 * decide who gives way under load.
 *
 * "Room" on a CPU is measured by its network load (the running-time average of network tasks
 * on it) against net_room_pct, not its total load: non-network work on an IRQ CPU yields to
 * network work (paper III-D, step 3 sheds low-class tasks, not the other way round), but two
 * receivers that each need a full CPU do not both get the IRQ CPU. A tier is never bought by
 * overloading a CPU: with no room in core or cache, the task is placed normally.
 *
 * 2. Non-network tasks
 *
 * Tasks without task_ctx, without a known IRQ CPU, or silent for longer than release_ns (paper
 * step 1, "release") are placed normally: an idle CPU in an LLC without IRQ CPUs (the previous
 * one first), which leaves the IRQ CPUs' LLC siblings, the network tasks' cache tier, to them;
 * then the previous CPU if it is idle and not an IRQ CPU, then any idle CPU that is not an IRQ
 * CPU, then the kernel's default idle pick; if nothing is idle they wait in the shared vtime
 * DSQ. One whose slice ends beside an IRQ CPU while such a CPU idles moves there. The other
 * threads of a network process (those that do not communicate themselves, within release_ns of
 * its most intensive thread's last call: proc_irq_cpu()) go to its IRQ CPU's LLC instead: an
 * idle non-IRQ CPU there, else any idle non-IRQ CPU, else queued on a non-IRQ CPU of that LLC
 * (pick_proc_cpu()). While a non-IRQ CPU that may run them is idle, an IRQ CPU does not take
 * them from the shared DSQ (it kicks that CPU instead), nor keep running one past its slice
 * (enqueue_last() hands it over). Keeping IRQ CPUs free is what leaves room for the network
 * work that MiAMI wants there.
 *
 * A task whose CPUs are restricted (a cpuset, taskset, a container's CPU list, isolcpus) gets
 * the same rules within its CPUs: every idle search runs on the intersection of the mask it
 * searches (an LLC, the non-IRQ CPUs) with the task's own (allowed_and()).
 *
 * 3. Queues and fairness
 *
 * Each CPU owns a per-CPU DSQ (id = CPU) that holds network tasks placed on it (and a task
 * enqueue_last() hands over, and a network process's other threads queued in its LLC); one
 * shared DSQ (MIAMI_DSQ_SHARED) holds everything else. Both are ordered by vtime (runtime
 * scaled by weight, with a lag limit of one slice), so ops.dispatch() compares the heads of
 * its own DSQ and of the shared DSQ and takes the earlier one: a network task does not starve
 * hogs and hogs do not starve it. We never insert into SCX_DSQ_LOCAL_ON from ops.enqueue() for
 * another CPU (scx PR #2943, issues #2879/#2825): the task goes to the target's own DSQ and the
 * target's ops.dispatch() moves it, which validates the task's affinity on that CPU.
 *
 * Work conservation: a CPU whose own DSQ is empty first takes an LLC sibling's backlog (a
 * sibling DSQ with two or more tasks, if its head is older than the shared DSQ's), then the
 * shared DSQ, then an LLC sibling's task once it has waited STEAL_ALONE_TICKS (dispatch.bpf.h),
 * then tasks from CPUs in overloaded LLCs whose DSQ holds more than one (the first is left for
 * its owner, which will run it soon). Slices are bounded, so every DSQ is drained and the
 * watchdog does not fire. A CPU whose local DSQ pinned tasks keep full never dispatches at all:
 * what waits on its DSQ goes to a sibling (steal_waited()) or the starvation guard, and
 * has_room() counts such a CPU as full, so that no network task is queued there to wait.
 *
 * Overload: a network task with no room in its LLC leaves it (tier other) only when the LLC is
 * overloaded on average, as the agent last measured it (llc_overloaded[]), and only for an idle
 * CPU; otherwise it queues in its LLC (llc_fallback_cpu()) and an LLC sibling that goes idle
 * pulls it. Likewise, an idle CPU steals from a DSQ in another LLC only when that LLC is
 * overloaded. Every CPU of an LLC being busy at the instant of one wakeup is not overload: the
 * wait is a fraction of a slice, and the other LLC costs a cold cache for the rest of the run.
 *
 * 4. Compatibility
 *
 * The same object loads on 6.12 and 7.x: only compat.bpf.h wrappers, no ops member that
 * 6.12's BTF lacks. 6.12 does not dispatch migration-disabled tasks for the scheduler, so
 * ops.enqueue() keeps them (and single-CPU tasks) on their CPU's local DSQ.
 *
 * 5. The agent's moves (paper III-D steps 1 to 3)
 *
 * agent.bpf.c: release (is_net_task()) and the upgrades and sheds the agent's rounds decide
 * (policy.bpf.c, a BPF timer; apply_move()). A task's move target comes first in pick_net_cpu() while it is idle or has
 * room, for at most target_ttl_ns (shed_ttl_ns for a shed), and a target outside the IRQ CPU's
 * LLC only while that LLC is overloaded (target_alive()).
 *
 * 6. Observe-only mode
 *
 * --observe loads the TCP probes and miami_observe_switch() below instead of these ops: no
 * struct_ops, so no sched_ext needed. The host keeps its scheduler; the stats show what MiAMI
 * sees (intensiveness, class, IRQ CPU) and the tier each network task really runs in. On a
 * kernel that refuses fentry, the TCP probes' tracepoint forms (netmon.bpf.c, section 5).
 *
 * 7. Accepted races
 *
 * Loads and the idle state of remote CPUs are read without locks; a stale value costs one
 * suboptimal placement. class_*_min may change between two placements of one task.
 */
#include "miami.bpf.h"

/*
 * The sched_ext kfuncs the ops call, weak: --observe loads this object without the ops, also on
 * kernels without sched_ext, where libbpf refuses a strong extern it cannot resolve (the compat
 * wrappers' kfuncs are weak already). When the ops load, the verifier still resolves every one.
 */
#pragma weak scx_bpf_create_dsq
#pragma weak scx_bpf_dsq_nr_queued
#pragma weak scx_bpf_error_bstr
#pragma weak scx_bpf_get_idle_cpumask
#pragma weak scx_bpf_kick_cpu
#pragma weak scx_bpf_pick_idle_cpu
#pragma weak scx_bpf_put_idle_cpumask
#pragma weak scx_bpf_select_cpu_dfl
#pragma weak scx_bpf_task_cpu
#pragma weak scx_bpf_test_and_clear_cpu_idle

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

/*
 * Set by the loader before load (rodata). Non-zero defaults so the verifier sees realistic
 * bounds.
 */
const volatile u32 nr_cpu_ids = 1;		/* CPUs possible; bounds every CPU loop */
const volatile u32 cpu_llc[MIAMI_MAX_CPUS];	/* CPU -> LLC id, from scx_utils::Topology */
/*
 * The same map by LLC (src/topology.rs LlcMap::runs()): llc_cpus[] lists each LLC's CPUs in
 * ascending order, one LLC after the other; LLC l's run starts at llc_first[l] and holds
 * llc_nr[l] CPUs, and cpu_llc_pos[cpu] is the CPU's place in its run. dispatch() walks a CPU's
 * LLC siblings with them (llc_walk_cpu()) in as many steps as the LLC has CPUs, not as the
 * machine has: an idle CPU calls dispatch() over and over.
 */
const volatile u32 llc_cpus[MIAMI_MAX_CPUS];
const volatile u32 cpu_llc_pos[MIAMI_MAX_CPUS];
const volatile u32 llc_first[MIAMI_MAX_LLCS];
const volatile u32 llc_nr[MIAMI_MAX_LLCS];
/* Slice for every task. 5 ms: long enough for throughput, short enough that a network task
 * queued behind a hog waits at most one slice. */
const volatile u64 slice_ns = 5000000;
/* --starve-ms: a task runnable about this long runs next, out of vtime order (run_starved()). */
const volatile u64 starve_ns = 1000000000;
/* Network load (percent of a CPU) up to which a CPU has room for one more network task.
 * Default 80. Higher packs more network tasks onto the IRQ CPU; lower spreads them sooner. */
const volatile u32 net_room_pct = 80;
/* Window of the per-CPU load averages. Default 10 ms. */
const volatile u64 load_win_ns = 10000000;

/*
 * The class boundaries on intensiveness (.data): the loader writes the initial ones
 * (--class-bounds, and again on a SIGHUP that changes them), the agent's rounds move them with
 * load. Defaults here only matter before the loader writes its values.
 */
volatile u32 class_high_min = 100000;
volatile u32 class_middle_min = 10000;

/*
 * Written by the agent every round (.bss): 1 for an LLC whose CPUs were busy above
 * --high-load-pct on average over the last round (the kernel's CPU times, softirq included). Zero until
 * the first round: no spilling before the agent has looked.
 */
volatile u8 llc_overloaded[MIAMI_MAX_LLCS];
/* How many of llc_overloaded[] are 1, written with them: dispatch() looks in other LLCs only then. */
volatile u32 nr_llcs_overloaded;

static u64 vtime_now;

/*
 * Test-only fault injection (--test-inject-error, hidden from --help), written by the loader at
 * run time (.bss). 0 (default): nothing. 1: the next dispatch() calls scx_bpf_error(), the path
 * of any BPF-side error. 2: the next dispatch() exits with a restart request, as the kernel's
 * hotplug exit does. Risk: none unless set; one load per dispatch().
 */
volatile u32 test_error;
/* --test-time-dispatch (hidden): time dispatch() by outcome (miami_dispatch()). */
const volatile bool time_dispatch;

/* CPUs that take no NIC input IRQ: where non-network tasks prefer to run (agent.bpf.c). */
private(MIAMI) struct bpf_cpumask __kptr *non_irq_cpumask;
/*
 * ... and of those, the CPUs of LLCs without an IRQ CPU: where they prefer to run first. A
 * section of its own: two kptrs in .data.MIAMI, each also declared extern in miami.bpf.h for
 * agent.bpf.c, came out of the link both at offset 0, and the kernel refused the BTF.
 */
private(IRQ_FREE) struct bpf_cpumask __kptr *irq_free_cpumask;
/* Its weight (agent.bpf.c): a load where the hot paths ask whether it is empty, not a kfunc. */
volatile u32 nr_irq_free_cpus;

/* A CPU's LLC and tier, network room, allowed, idle-in-LLC and non-IRQ CPUs: cpus.bpf.h. */
#include "cpus.bpf.h"
/* The starvation guard of ops.dispatch(): starve.bpf.h. */
#include "starve.bpf.h"

/*
 * Is the agent's target for @taskc still worth following? Not past its end of life (agent.bpf.c),
 * not once the task's IRQ CPU moved (the agent decided against the old one), and a target
 * outside the IRQ CPU's LLC (a shed out of it) only while that LLC is overloaded and the
 * target's is not: a network task leaves its LLC only for an overload, and comes back when it
 * ends or follows it there. Drops a dead target. Global: see pick_net_cpu().
 */
__noinline bool target_alive(struct task_ctx *taskc __arg_nonnull, u64 now)
{
	s32 cpu = taskc->target_cpu;

	if (cpu < 0)
		return false;
	if (taskc->target_irq == taskc->irq_cpu && (s64)(now - taskc->target_until_ns) < 0 &&
	    (tier_of(cpu, taskc->irq_cpu) != MIAMI_TIER_OTHER ||
	     (llc_is_overloaded(taskc->irq_cpu) && !llc_is_overloaded(cpu))))
		return true;
	taskc->target_cpu = MIAMI_NO_CPU;
	stat_inc(MIAMI_STAT_TARGET_EXPIRED);
	return false;
}

/*
 * Is @p the task enqueue_net() lets preempt @cpu, its IRQ CPU: class high and the most
 * intensive class-high task of @cpu's IRQs (the agent's last round)? Such a wakeup goes to the
 * head of @cpu's local DSQ (SCX_ENQ_PREEMPT), ahead of any pinned work waiting there.
 */
static bool irq_preempts(const struct task_struct *p, const struct task_ctx *taskc, s32 cpu)
{
	return taskc->cls == MIAMI_CLASS_HIGH && agent_irq_top[cpu & (MIAMI_MAX_CPUS - 1)] == p->pid;
}

/*
 * Choose a CPU for network task @p. *@idle tells whether the CPU was idle and claimed (then
 * select_cpu() dispatches directly); otherwise ops.enqueue() queues @p on that CPU's DSQ if it
 * is in the core or cache tier, or on the shared DSQ if not. Global (not __hidden: libbpf makes
 * those static), so the verifier checks it once per program instead of once per caller state:
 * static, with its callees has_room(), target_alive() and pick_idle_cache(), it made enqueue()
 * 72,904 verified instructions (BPF load 6.3 s under TCG), global 6,170 (1.9 s). The arg tags
 * give what the static version inherited from its callers: a trusted task, non-NULL pointers.
 */
__noinline s32 pick_net_cpu(struct task_struct *p __arg_trusted,
			    struct task_ctx *taskc __arg_nonnull, s32 prev_cpu, u64 now,
			    bool *idle __arg_nonnull)
{
	s32 irq = taskc->irq_cpu, cpu;
	u32 cls = class_of(taskc->intens);
	bool core_ok = cpu_allowed(p, irq);

	taskc->cls = cls;
	*idle = false;

	/* The agent's target comes first while it is free or has room (steps 2 and 3). */
	apply_move(p, taskc, now);
	cpu = taskc->target_cpu;
	if (target_alive(taskc, now) && cpu_allowed(p, cpu)) {
		if (scx_bpf_test_and_clear_cpu_idle(cpu)) {
			*idle = true;
			return cpu;
		}
		if (has_room(cpu, prev_cpu, now, false))
			return cpu;
	}

	/* Core tier when the IRQ CPU is free, whatever the class (III-D: core as much as possible). */
	if (core_ok && scx_bpf_test_and_clear_cpu_idle(irq)) {
		*idle = true;
		return irq;
	}
	/*
	 * Hysteresis: a task that last ran on its IRQ CPU waits there when that CPU only runs a
	 * kernel thread with nothing queued behind it in its own DSQ. That thread is mostly
	 * ksoftirqd doing this very task's protocol work under load; leaving for a sibling every
	 * time it runs would trade the core tier for a few hundred microseconds of waiting. The
	 * task that preempts there (irq_preempts()) goes ahead of everything; the others wait the
	 * thread out, and so not behind pinned work in the local DSQ (local_busy()). Stop 56 asked
	 * local_busy() of all: with one pinned hog per CPU of the LLC, a class-high receiver woken
	 * while ksoftirqd ran on its IRQ CPU, the hog waiting there, found no room in the LLC and
	 * left it (t_wake_kick: 0.807-0.847 of its switch-ins in the LLC, 0.968-0.982 before).
	 */
	if (core_ok && prev_cpu == irq && cpuc_cur_kthread(irq) && !scx_bpf_dsq_nr_queued(irq) &&
	    (irq_preempts(p, taskc, irq) || !local_busy(irq)))
		return irq;
	/*
	 * High claims the busy IRQ CPU while class-high work leaves room there; enqueue preempts
	 * non-network work, and the lower classes give way.
	 */
	if (cls == MIAMI_CLASS_HIGH && core_ok && has_room(irq, prev_cpu, now, true))
		return irq;

	/* Cache tier: a free LLC sibling. */
	cpu = pick_idle_cache(p, prev_cpu, irq);
	if (cpu >= 0) {
		*idle = true;
		return cpu;
	}
	/* Everything in the LLC busy: queue where there is room, the IRQ CPU first for middle. */
	if (cls == MIAMI_CLASS_MIDDLE && core_ok && has_room(irq, prev_cpu, now, false))
		return irq;
	if (llc_of(prev_cpu) == llc_of(irq) && cpu_allowed(p, prev_cpu) &&
	    has_room(prev_cpu, prev_cpu, now, false))
		return prev_cpu;
	/*
	 * Low gives way: it queues on a busy IRQ CPU only if that is its previous CPU (above), or
	 * to come back into the LLC after it was pushed out of it (paper step 2: upgrade when the
	 * target has room); otherwise a task that spilled once would stay out for good.
	 */
	if (core_ok && has_room(irq, prev_cpu, now, false) &&
	    (cls != MIAMI_CLASS_LOW || llc_of(prev_cpu) != llc_of(irq)))
		return irq;
	return -1;
}

/*
 * No room anywhere in @taskc's LLC, and either the LLC is not overloaded or no CPU elsewhere is
 * idle: moving to another tier would buy nothing but a cold cache, so queue in the LLC after
 * all, on the previous CPU if it is there, else on the IRQ CPU. LLC siblings that go idle pull
 * from there. -1 if neither may run @p.
 */
static s32 llc_fallback_cpu(const struct task_struct *p, struct task_ctx *taskc, s32 prev_cpu)
{
	if (llc_of(prev_cpu) == llc_of(taskc->irq_cpu) && cpu_allowed(p, prev_cpu))
		return prev_cpu;
	if (cpu_allowed(p, taskc->irq_cpu))
		return taskc->irq_cpu;
	return -1;
}

/*
 * ops.select_cpu(): called on wakeup of @p (not for migration-disabled or single-CPU tasks).
 * Picks the CPU by tier and class for network tasks and normally for the rest; dispatches
 * straight to the local DSQ when the chosen CPU was idle.
 */
s32 BPF_STRUCT_OPS(miami_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	struct task_ctx *taskc = try_lookup_task_ctx(p);
	u64 now = bpf_ktime_get_ns();
	bool idle = false;
	s32 cpu;

	if (is_net_task(taskc, now)) {
		cpu = pick_net_cpu(p, taskc, prev_cpu, now, &idle);
		if (cpu < 0) {
			/*
			 * Tier other only out of an overloaded LLC and for an idle CPU; else stay in
			 * the LLC (section 3, "Overload").
			 */
			s32 llc_cpu = llc_fallback_cpu(p, taskc, prev_cpu);

			if (llc_cpu >= 0 && !llc_is_overloaded(taskc->irq_cpu)) {
				cpu = llc_cpu;
				stat_inc(MIAMI_STAT_NET_LLC_HOLD);
			} else {
				cpu = pick_normal_cpu(p, prev_cpu, wake_flags, &idle);
				if (idle && tier_of(cpu, taskc->irq_cpu) == MIAMI_TIER_OTHER)
					stat_inc(MIAMI_STAT_NET_SPILL);
				else if (!idle && llc_cpu >= 0)
					cpu = llc_cpu;
			}
		}
	} else {
		s32 irq = proc_irq_cpu(p, now);

		cpu = irq >= 0 ? pick_proc_cpu(p, prev_cpu, irq, &idle) : -1;
		if (cpu < 0)
			cpu = pick_normal_cpu(p, prev_cpu, wake_flags, &idle);
	}

	if (idle) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
		stat_inc(MIAMI_STAT_DIRECT_LOCAL);
	}
	return cpu;
}

static u64 task_vtime(const struct task_struct *p)
{
	u64 vtime = p->scx.dsq_vtime;

	/* Lag limit: a task that slept long gets at most one slice of credit. */
	if ((s64)(vtime_now - slice_ns - vtime) > 0)
		vtime = vtime_now - slice_ns;
	return vtime;
}

/* Queue network task @p on @cpu's DSQ (@own: @p's own CPU) and wake or preempt that CPU. */
static void enqueue_net(struct task_struct *p, struct task_ctx *taskc, s32 cpu, bool own,
			u64 enq_flags)
{
	struct cpu_ctx *cpuc = try_lookup_cpu_ctx(cpu);

	if (cpu == taskc->irq_cpu && cpuc) {
		cpuc->core_waiter = p->pid;
		cpuc->core_wait_ns = bpf_ktime_get_ns();
		/*
		 * Class high preempts ksoftirqd too, where pick_net_cpu() has the other classes
		 * wait behind it (t_table3: a bulk sender that waited lost a third of its core tier
		 * to siblings, 75% core against 94-99%). A wakeup onto @p's own CPU, whose runqueue
		 * lock ops.enqueue() holds, goes to its local DSQ with SCX_ENQ_PREEMPT: the CPU
		 * reschedules there and then and runs @p next, where a kick went through an irq_work
		 * (kick_queued()) and then ran the lower vtime of @cpu's DSQ and the shared one.
		 *
		 * Only the most intensive class-high task of @cpu's IRQs (the agent's last round:
		 * agent_irq_top[]): eight receivers of one IRQ CPU each preempted its ksoftirqd,
		 * whose work feeds all eight.
		 *
		 * Not when @p's own slice ended on @cpu: the preemption would hit the pinned work
		 * that @cpu runs next (ops.stopping() has just cleared cur_net). A class-high task
		 * that never sleeps on its IRQ CPU then starved its kworkers (11 s runnable in 20 s),
		 * and every fork and exec waited for them (t_shapes' relay shape without --nic: 20
		 * shell spawns took 346 s).
		 */
		if (irq_preempts(p, taskc, cpu) && !cpuc->cur_net &&
		    ((enq_flags & SCX_ENQ_WAKEUP) || !own)) {
			stat_inc(MIAMI_STAT_PREEMPT_KICKS);
			if (own) {
				scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, enq_flags | SCX_ENQ_PREEMPT);
				return;
			}
			scx_bpf_dsq_insert_vtime(p, cpu, slice_ns, task_vtime(p), enq_flags);
			scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
			return;
		}
	}
	scx_bpf_dsq_insert_vtime(p, cpu, slice_ns, task_vtime(p), enq_flags);
	kick_queued(cpu, own, enq_flags);
}

/*
 * Should network task @p, on @cpu (tier @tier), be placed again? On a CPU it may not use, away
 * from the agent's target (a pending move is taken here), or class high in the cache tier while
 * its IRQ CPU has room: a bulk sender, which never wakes, gets at each slice end what a waking
 * task gets in select_cpu() (without it, t_table3's once stayed on a sibling: 64.8% core).
 */
static bool net_should_move(const struct task_struct *p, struct task_ctx *taskc, s32 cpu,
			    u32 tier, u64 now)
{
	apply_move(p, taskc, now);
	return !cpu_allowed(p, cpu) ||
	       (taskc->target_cpu >= 0 && taskc->target_cpu != cpu) ||
	       (tier == MIAMI_TIER_CACHE && class_of(taskc->intens) == MIAMI_CLASS_HIGH &&
		cpu_allowed(p, taskc->irq_cpu) && has_room(taskc->irq_cpu, cpu, now, true));
}

/* dispatch() found nothing else: should @prev go through ops.enqueue() (SCX_ENQ_LAST)? */
static bool prev_should_move(struct task_struct *prev, s32 cpu)
{
	struct task_ctx *taskc = try_lookup_task_ctx(prev);
	u64 now = bpf_ktime_get_ns();

	return is_net_task(taskc, now) &&
	       net_should_move(prev, taskc, cpu, tier_of(cpu, taskc->irq_cpu), now);
}

/*
 * SCX_ENQ_LAST: @p's slice ended and nothing else is queued for @cpu. dispatch() keeps such a
 * task running by refilling its slice, except a network task that should move (ops.enqueue()
 * places it) and non-network work on an IRQ CPU or beside one: that one comes here, when a CPU
 * it should rather use was idle, and moves to it (its DSQ, see section 3; normal_leave_cpu()).
 * The kernel would otherwise keep running it (without SCX_OPS_ENQ_LAST it does so whenever
 * dispatch() finds nothing), so a hog that once landed on an IRQ CPU stayed there. Should that
 * CPU have been taken meanwhile, @p stays, and the kick is the follow-up scheduling event the
 * kernel asks for after this flag.
 */
static void enqueue_last(struct task_struct *p, struct task_ctx *taskc, s32 cpu, u64 now,
			 u64 enq_flags)
{
	s32 idle;

	if (!is_net_task(taskc, now) && (idle = normal_leave_cpu(p, cpu, true)) >= 0) {
		stat_inc(MIAMI_STAT_NORMAL_AVOID_IRQ);
		scx_bpf_dsq_insert_vtime(p, idle, slice_ns, task_vtime(p), enq_flags);
		scx_bpf_kick_cpu(idle, SCX_KICK_IDLE);
		return;
	}
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, enq_flags);
	scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
}

/* ops.enqueue(): @p is runnable, not dispatched by select_cpu() (no idle CPU, or none ran). */
void BPF_STRUCT_OPS(miami_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *taskc;
	u64 now = bpf_ktime_get_ns();
	s32 task_cpu = scx_bpf_task_cpu(p), cpu = task_cpu;
	bool net;
	u32 tier;

	/* 6.12 leaves migration-disabled tasks to us; keep them (and pinned ones) in place. */
	if (p->nr_cpus_allowed == 1 || is_migration_disabled(p)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, enq_flags);
		return;
	}

	taskc = try_lookup_task_ctx(p);
	net = is_net_task(taskc, now);
	if ((enq_flags & SCX_ENQ_LAST) && !net) {
		enqueue_last(p, taskc, cpu, now, enq_flags);
		return;
	}
	if (net) {
		tier = tier_of(cpu, taskc->irq_cpu);
		/* Not placed by select_cpu() in a good tier (e.g. preempted): place it now. */
		if (tier == MIAMI_TIER_OTHER || net_should_move(p, taskc, cpu, tier, now)) {
			bool idle;
			s32 pick = pick_net_cpu(p, taskc, cpu, now, &idle);

			if (pick < 0)
				pick = llc_fallback_cpu(p, taskc, cpu);
			if (pick >= 0) {
				cpu = pick;
				tier = tier_of(cpu, taskc->irq_cpu);
			}
		}
		stat_inc(MIAMI_STAT_ENQ_CORE_HIGH + tier * MIAMI_NR_CLASSES + taskc->cls);
		/* SCX_ENQ_LAST (prev_should_move()): to another CPU's DSQ, or go on here. */
		if ((enq_flags & SCX_ENQ_LAST) && (cpu == task_cpu || tier == MIAMI_TIER_OTHER ||
						   !cpu_allowed(p, cpu))) {
			enqueue_last(p, taskc, task_cpu, now, enq_flags);
			return;
		}
		if (tier != MIAMI_TIER_OTHER && cpu_allowed(p, cpu)) {
			enqueue_net(p, taskc, cpu, cpu == task_cpu, enq_flags);
			return;
		}
	} else {
		s32 irq;

		stat_inc(MIAMI_STAT_ENQ_NORMAL);
		/*
		 * Another thread of a network process: on its CPU's DSQ if that is in the LLC and no
		 * pinned work would hold it there (pick_proc_cpu()). The flags first: a wakeup that
		 * skipped select_cpu() goes on below without the lookup.
		 */
		if ((!(enq_flags & SCX_ENQ_WAKEUP) || __COMPAT_is_enq_cpu_selected(enq_flags)) &&
		    (irq = proc_irq_cpu(p, now)) >= 0 && proc_cpu_ok(p, cpu, irq) &&
		    !local_busy(cpu)) {
			stat_inc(MIAMI_STAT_PROC_LLC);
			scx_bpf_dsq_insert_vtime(p, cpu, slice_ns, task_vtime(p), enq_flags);
			kick_queued(cpu, cpu == task_cpu, enq_flags);
			return;
		}
	}

	scx_bpf_dsq_insert_vtime(p, MIAMI_DSQ_SHARED, slice_ns, task_vtime(p), enq_flags);
	/*
	 * A wakeup that skipped select_cpu(): wake an idle CPU for it. Not on re-enqueue after a
	 * slice expired: the CPU it ran on dispatches next anyway, and kicking another would only
	 * migrate it -- unless that CPU is an IRQ CPU, which hands the task to a free non-IRQ CPU.
	 */
	if ((enq_flags & SCX_ENQ_WAKEUP) && !__COMPAT_is_enq_cpu_selected(enq_flags)) {
		bool idle;

		cpu = pick_normal_cpu(p, cpu, 0, &idle);
		if (idle)
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	} else if (is_irq_cpu(cpu)) {
		kick_idle_non_irq(p);
	}
}

/* ops.dispatch()'s work, dispatch_one(): dispatch.bpf.h. */
#include "dispatch.bpf.h"

/*
 * ops.dispatch(): @cpu has nothing local to run. With --test-time-dispatch, the time of each
 * call goes to its outcome's counter (MIAMI_STAT_DSP_*_NS, in MIAMI_STAT_DSP_CPU's order): what
 * bpf_stats gives as one total per program, by what the calls did. The verifier drops the
 * clock reads when it is off (rodata).
 */
void BPF_STRUCT_OPS(miami_dispatch, s32 cpu, struct task_struct *prev)
{
	u64 start = time_dispatch ? bpf_ktime_get_ns() : 0;
	s32 moved = dispatch_one(cpu, prev);

	if (time_dispatch)
		stat_add(moved < 0 ? MIAMI_STAT_DSP_NONE_NS :
				     MIAMI_STAT_DSP_CPU_NS + (moved - MIAMI_STAT_DSP_CPU),
			 bpf_ktime_get_ns() - start);
}

/* ops.running(): @p starts on this CPU. Tier bookkeeping and the vtime clock. */
void BPF_STRUCT_OPS(miami_running, struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct cpu_ctx *cpuc = try_lookup_cpu_ctx(cpu);
	struct task_ctx *taskc;
	u32 tier;

	if ((s64)(p->scx.dsq_vtime - vtime_now) > 0)
		vtime_now = p->scx.dsq_vtime;
	if (!cpuc)
		return;
	cpuc->run_start_ns = bpf_ktime_get_ns();
	cpuc->refilled = 0;
	if (cpuc->core_waiter == p->pid)
		cpuc->core_waiter = 0;
	cpuc->cur_net = 0;
	cpuc->cur_high = 0;
	cpuc->cur_kthread = !!(p->flags & PF_KTHREAD);

	taskc = try_lookup_task_ctx(p);
	if (!taskc || !taskc->placed_net)
		return;
	cpuc->cur_net = 1;
	cpuc->cur_high = taskc->cls == MIAMI_CLASS_HIGH;
	if (taskc->run_cpu != cpu) {
		if (taskc->run_cpu >= 0)
			stat_inc(MIAMI_STAT_NET_MIGRATIONS);
		taskc->run_cpu = cpu;
	}
	tier = tier_of(cpu, taskc->irq_cpu);
	if (tier != taskc->tier) {
		if (taskc->tier != MIAMI_TIER_NONE)
			stat_inc(MIAMI_STAT_TIER_CHANGES);
		taskc->tier = tier;
	}
}

/* ops.stopping(): @p leaves this CPU. Charge vtime, runtime by tier and the CPU's loads. */
void BPF_STRUCT_OPS(miami_stopping, struct task_struct *p, bool runnable)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct cpu_ctx *cpuc = try_lookup_cpu_ctx(cpu);
	u64 now = bpf_ktime_get_ns(), used;

	if (!cpuc || !cpuc->run_start_ns)
		return;
	used = now - cpuc->run_start_ns;
	cpuc->run_start_ns = 0;
	p->scx.dsq_vtime += used * 100 / (p->scx.weight ?: 100);

	if (cpuc->cur_net) {
		struct task_ctx *taskc = try_lookup_task_ctx(p);

		load_add(&cpuc->net_load, used, cpuc->cur_high, now);
		if (taskc && taskc->tier < MIAMI_NR_TIERS)
			stat_add(MIAMI_STAT_RUN_CORE_NS + taskc->tier, used);
		cpuc->cur_net = 0;
		cpuc->cur_high = 0;
	}
}

/* ops.enable(): @p joins the scheduler; start it at the current vtime. */
void BPF_STRUCT_OPS(miami_enable, struct task_struct *p)
{
	p->scx.dsq_vtime = vtime_now;
}

/* ops.init(): create the DSQs and the CPU masks. */
s32 BPF_STRUCT_OPS_SLEEPABLE(miami_init)
{
	s32 ret;
	u32 i;

	/* One per CPU (id = CPU), then the shared one. */
	bpf_for(i, 0, nr_cpu_ids + 1) {
		u64 id = i < nr_cpu_ids ? i : MIAMI_DSQ_SHARED;

		ret = scx_bpf_create_dsq(id, -1);
		if (ret) {
			scx_bpf_error("failed to create DSQ %llu: %d", id, ret);
			return ret;
		}
	}
	return init_cpumasks();
}

/*
 * Observe-only mode (--observe; section 7 of the header), instead of the ops above, on any kernel
 * with BTF and fentry: at each context switch, the outgoing network task's running time goes to
 * the tier it ran in (run_*_ns, as the ops count it) and the incoming one's tier is recorded.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(miami_observe_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	s32 cpu = bpf_get_smp_processor_id();
	struct cpu_ctx *cpuc = try_lookup_cpu_ctx(cpu);
	struct task_ctx *taskc;
	u64 now = bpf_ktime_get_ns();

	if (!cpuc)
		return 0;
	if (cpuc->cur_net && cpuc->run_start_ns) {
		taskc = try_lookup_task_ctx(prev);
		if (taskc && taskc->tier < MIAMI_NR_TIERS)
			stat_add(MIAMI_STAT_RUN_CORE_NS + taskc->tier, now - cpuc->run_start_ns);
	}
	cpuc->cur_net = 0;
	cpuc->run_start_ns = now;
	taskc = try_lookup_task_ctx(next);
	if (!is_net_task(taskc, now))
		return 0;
	cpuc->cur_net = 1;
	taskc->tier = tier_of(cpu, taskc->irq_cpu);
	return 0;
}

/* ops.exit(): record why we exit, for the loader's report and restart decision. */
void BPF_STRUCT_OPS(miami_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(miami_ops,
	       .select_cpu	= (void *)miami_select_cpu,
	       .enqueue		= (void *)miami_enqueue,
	       .dispatch	= (void *)miami_dispatch,
	       .running		= (void *)miami_running,
	       .stopping	= (void *)miami_stopping,
	       .enable		= (void *)miami_enable,
	       .init		= (void *)miami_init,
	       .exit		= (void *)miami_exit,
	       .name		= "miami");
