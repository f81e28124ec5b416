/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPU and LLC helpers of placement (main.bpf.c): a CPU's LLC, its LLC siblings and its tier,
 * network room on a CPU, the CPUs a task may run on (and a mask narrowed to them), an idle CPU
 * in an LLC, the non-IRQ CPUs where non-network work goes (pick_normal_cpu()), the CPU for a
 * network process's other threads, whether dispatch() may steal the head of a CPU's DSQ, and the
 * masks ops.init() makes.
 *
 * Included by main.bpf.c only, after the globals these read (cpu_llc and the LLC runs,
 * llc_overloaded, net_room_pct, slice_ns, non_irq_cpumask, irq_free_cpumask): a split of one
 * translation unit, so that main.bpf.c stays under the house limit of ~800 lines while the
 * compiled object stays what it was. The helpers are plain static functions, not __hidden ones
 * in an object of their own (agent.bpf.c), so that the compiler inlines them into the hot paths
 * as before and the verifier sees the same programs on every kernel of the matrix. Exceptions:
 * has_room() and pick_idle_cache() are global functions, verified once (see pick_net_cpu()).
 */
#ifndef __MIAMI_CPUS_BPF_H
#define __MIAMI_CPUS_BPF_H

struct llc_ctx {
	struct bpf_cpumask __kptr *span;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MIAMI_MAX_LLCS);
	__type(key, u32);
	__type(value, struct llc_ctx);
} llc_ctx_stor SEC(".maps");

/*
 * One scratch mask per CPU, for "these CPUs, but only those @p may run on" (allowed_and()).
 * The ops that use it run with the runqueue or pi lock held and interrupts off, so two uses on
 * one CPU never overlap.
 */
struct scratch_ctx {
	struct bpf_cpumask __kptr *mask;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MIAMI_MAX_CPUS);
	__type(key, u32);
	__type(value, struct scratch_ctx);
} scratch_stor SEC(".maps");

/* LLC of @cpu; an impossible id for an invalid CPU, so it matches no real LLC. */
static u32 llc_of(s32 cpu)
{
	u64 idx = (u32)cpu;

	if (idx >= MIAMI_MAX_CPUS)
		return (u32)-1;
	/*
	 * A no-op mask the compiler must keep (barrier_var): older verifiers (6.12) lose the bound
	 * of a 32-bit result (e.g. of a modulo) and reject the array index without it.
	 */
	barrier_var(idx);
	idx &= MIAMI_MAX_CPUS - 1;
	return cpu_llc[idx];
}

/* Is @cpu's LLC overloaded on average (llc_overloaded[])? */
static bool llc_is_overloaded(s32 cpu)
{
	u64 llc = llc_of(cpu);

	if (llc >= MIAMI_MAX_LLCS)
		return false;
	barrier_var(llc);	/* as in llc_of() */
	llc &= MIAMI_MAX_LLCS - 1;
	return llc_overloaded[llc];
}

/*
 * A walk over a CPU's LLC siblings: where its LLC's run starts in llc_cpus[], how many CPUs the
 * run holds, and the CPU's place in it. Read once per walk (llc_walk_init()), not per step: the
 * arrays are const volatile, so the compiler cannot hoist their loads out of a loop.
 */
struct llc_walk {
	u32	first;
	u32	nr;
	u32	pos;
};

/* Start a walk over @cpu's LLC; returns how many CPUs the LLC holds (0 for an invalid CPU). */
static u32 llc_walk_init(s32 cpu, struct llc_walk *w)
{
	u64 llc = llc_of(cpu);

	w->first = w->nr = w->pos = 0;
	if (llc >= MIAMI_MAX_LLCS)
		return 0;
	barrier_var(llc);	/* as in llc_of() */
	llc &= MIAMI_MAX_LLCS - 1;
	w->first = llc_first[llc];
	w->nr = llc_nr[llc];
	w->pos = cpu_llc_pos[(u32)cpu & (MIAMI_MAX_CPUS - 1)];
	return w->nr;
}

/*
 * The @i-th CPU after the walk's CPU in its LLC, for 1 <= @i < w->nr, wrapping around: the
 * order in which a walk over every CPU from that CPU + 1 meets its LLC siblings. pos and @i are
 * both below nr, so one subtraction wraps.
 */
static s32 llc_walk_cpu(const struct llc_walk *w, u32 i)
{
	u64 j = w->pos + i;

	if (j >= w->nr)
		j -= w->nr;
	j += w->first;
	barrier_var(j);
	j &= MIAMI_MAX_CPUS - 1;
	return llc_cpus[j];
}

static const struct cpumask *llc_span(s32 cpu)
{
	struct llc_ctx *llcc;
	u32 key = llc_of(cpu);

	llcc = bpf_map_lookup_elem(&llc_ctx_stor, &key);
	if (!llcc || !llcc->span)
		return NULL;
	return cast_mask(llcc->span);
}

static u32 tier_of(s32 cpu, s32 irq_cpu)
{
	if (cpu == irq_cpu)
		return MIAMI_TIER_CORE;
	if (llc_of(cpu) == llc_of(irq_cpu))
		return MIAMI_TIER_CACHE;
	return MIAMI_TIER_OTHER;
}

/*
 * Does a task wait in @cpu's local DSQ? ops.enqueue() puts single-CPU tasks there, and @cpu runs
 * that DSQ before it calls ops.dispatch(): while pinned tasks take turns there (two that never
 * sleep do), a task queued on @cpu's own DSQ runs only once an LLC sibling takes it
 * (steal_waited(), five jiffies, and only when that sibling dispatches at all). No task is
 * queued on such a CPU while another will do: has_room(), pick_net_cpu()'s hysteresis,
 * pick_proc_cpu() and ops.enqueue().
 */
static bool local_busy(s32 cpu)
{
	return scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu);
}

/*
 * Does @cpu have room for one more network task? For the task's own previous CPU the load
 * already includes the task itself, so staying there adds nothing: only the queue counts.
 * @high: the task is class high and @cpu is its IRQ CPU. Then only class-high tasks there
 * count, since the others give way to it (section 1 of main.bpf.c): counted, the low-class
 * tasks that take a free IRQ CPU while a bulk task is away keep it out once they are busy
 * enough (docs/design.md section 4).
 * A network task running there on a slice dispatch() refilled (alone there for a slice or
 * more) counts as a full CPU: ops.stopping() charges net_load, so until it stops load_read()
 * sees the windows pass idle and halves the average; a bulk sender alone on its IRQ CPU would
 * look like room after two. Not the time since it started running: under TCG a vCPU the host
 * does not run stretches every run, so a time bound could refuse room under overload.
 * Pinned work waiting there (local_busy()) means no room either: a class-high receiver whose IRQ
 * CPU ran two pinned hogs was queued behind them at each wakeup and read 0.18-0.30x EEVDF's
 * bytes in three runs (t_irq_pinned).
 * Global, not static: pick_net_cpu() calls it five times, and inlined each call forked the
 * verifier's states.
 */
__noinline bool has_room(s32 cpu, s32 prev_cpu, u64 now, bool high)
{
	struct cpu_ctx *cpuc = try_lookup_cpu_ctx(cpu);

	if (!cpuc || scx_bpf_dsq_nr_queued(cpu) >= 2 || local_busy(cpu))
		return false;
	if (cpu == prev_cpu)
		return true;
	if ((high ? cpuc->cur_high : cpuc->cur_net) && cpuc->refilled)
		return false;
	return load_read(&cpuc->net_load, high, now) * 100 < net_room_pct * 1024;
}

/* Let @p, alone on @cpu, run on for another slice; a network task then fills @cpu (has_room()). */
static void refill_slice(struct task_struct *p, s32 cpu)
{
	struct cpu_ctx *cpuc = try_lookup_cpu_ctx(cpu);

	p->scx.slice = slice_ns;
	if (cpuc)
		cpuc->refilled = 1;
}

static bool cpu_allowed(const struct task_struct *p, s32 cpu)
{
	return cpu >= 0 && cpu < nr_cpu_ids && bpf_cpumask_test_cpu(cpu, p->cpus_ptr);
}

static bool all_cpus_allowed(const struct task_struct *p)
{
	return p->nr_cpus_allowed >= nr_cpu_ids;
}

/* This CPU's scratch mask; NULL if missing. */
static struct bpf_cpumask *scratch_mask(void)
{
	u32 key = bpf_get_smp_processor_id();
	struct scratch_ctx *sc = bpf_map_lookup_elem(&scratch_stor, &key);

	return sc ? sc->mask : NULL;
}

/*
 * @mask limited to the CPUs @p may run on: @mask itself when @p may run anywhere, else this
 * CPU's scratch mask set to the intersection. A task under a cpuset, taskset, a container's CPU
 * list or isolcpus gets every placement rule inside the CPUs it has. NULL if no mask.
 */
static const struct cpumask *allowed_and(const struct task_struct *p, const struct cpumask *mask)
{
	struct bpf_cpumask *tmp;

	if (!mask || all_cpus_allowed(p))
		return mask;
	tmp = scratch_mask();
	if (!tmp)
		return NULL;
	bpf_cpumask_and(tmp, mask, p->cpus_ptr);
	return cast_mask(tmp);
}

/*
 * The CPUs of @cpu's LLC that take no NIC IRQ and that @p may run on, in this CPU's scratch
 * mask (a later allowed_and() overwrites it). NULL if a mask is missing.
 */
static const struct cpumask *llc_non_irq_for(const struct task_struct *p, s32 cpu)
{
	const struct cpumask *span = llc_span(cpu);
	struct bpf_cpumask *non_irq = non_irq_cpumask, *tmp = scratch_mask();

	if (!span || !non_irq || !tmp)
		return NULL;
	bpf_cpumask_and(tmp, span, cast_mask(non_irq));
	if (!all_cpus_allowed(p))
		bpf_cpumask_and(tmp, cast_mask(tmp), p->cpus_ptr);
	return cast_mask(tmp);
}

/* An idle CPU in @irq_cpu's LLC for @p, claimed; -1 if none. Global: see pick_net_cpu(). */
__noinline s32 pick_idle_cache(const struct task_struct *p __arg_trusted, s32 prev_cpu,
			       s32 irq_cpu)
{
	const struct cpumask *span;

	if (prev_cpu != irq_cpu && llc_of(prev_cpu) == llc_of(irq_cpu) &&
	    cpu_allowed(p, prev_cpu) && scx_bpf_test_and_clear_cpu_idle(prev_cpu))
		return prev_cpu;
	span = allowed_and(p, llc_span(irq_cpu));
	if (!span)
		return -1;
	return scx_bpf_pick_idle_cpu(span, 0);
}

/* Is the task running on @cpu a network task? */
static bool cpuc_cur_net(s32 cpu)
{
	struct cpu_ctx *cpuc = try_lookup_cpu_ctx(cpu);

	return cpuc && cpuc->cur_net;
}

/* Is the task running on @cpu a kernel thread? */
static bool cpuc_cur_kthread(s32 cpu)
{
	struct cpu_ctx *cpuc = try_lookup_cpu_ctx(cpu);

	return cpuc && cpuc->cur_kthread;
}

/* The CPUs that take no NIC IRQ and that @p may run on; NULL if none is known. */
static const struct cpumask *non_irq_for(const struct task_struct *p)
{
	struct bpf_cpumask *non_irq = non_irq_cpumask;

	return non_irq ? allowed_and(p, cast_mask(non_irq)) : NULL;
}

/*
 * Claim an idle CPU for @p in an LLC where no CPU takes a NIC IRQ; -1 if there is none. Such a
 * CPU is the "other" tier of every network task: non-network work there leaves the IRQ CPUs'
 * LLC siblings, the network tasks' cache tier, to them.
 */
static s32 pick_idle_irq_free(const struct task_struct *p)
{
	struct bpf_cpumask *free = irq_free_cpumask;
	const struct cpumask *mask;

	if (!nr_irq_free_cpus || !free)
		return -1;
	mask = allowed_and(p, cast_mask(free));
	return mask ? scx_bpf_pick_idle_cpu(mask, 0) : -1;
}

/*
 * Claim an idle CPU for @p that takes no NIC IRQ, one in an LLC without IRQ CPUs first; -1 if
 * there is none.
 */
static s32 pick_idle_non_irq(const struct task_struct *p)
{
	const struct cpumask *mask;
	s32 cpu = pick_idle_irq_free(p);

	if (cpu >= 0)
		return cpu;
	mask = non_irq_for(p);
	return mask ? scx_bpf_pick_idle_cpu(mask, 0) : -1;
}

/* Is a CPU of @mask idle right now? Claims nothing. */
static bool idle_in(const struct cpumask *mask)
{
	const struct cpumask *idle;
	bool ret;

	if (!mask)
		return false;
	idle = scx_bpf_get_idle_cpumask();
	ret = bpf_cpumask_intersects(idle, mask);
	scx_bpf_put_idle_cpumask(idle);
	return ret;
}

/*
 * Where non-network task @p, whose slice on @cpu ended with nothing else to run there, should go
 * instead (enqueue_last() moves it), if anywhere: off an IRQ CPU to an idle CPU that takes no
 * IRQ, and off an IRQ CPU's LLC sibling to an idle CPU of an LLC without IRQ CPUs. A hog never
 * sleeps, so it never passes select_cpu() again: one that started beside an IRQ CPU, because
 * nothing better was idle at its fork, would stay in the network tasks' cache tier for good.
 * Not another thread of a network process, which pick_proc_cpu() puts in that LLC on purpose:
 * asked last, since it is a task-storage lookup and dispatch() asks at every such slice end.
 * @claim: claim the CPU (enqueue_last()), or only tell whether there is one (dispatch()).
 * -1 if @p stays.
 */
static s32 normal_leave_cpu(struct task_struct *p, s32 cpu, bool claim)
{
	struct bpf_cpumask *free = irq_free_cpumask;
	struct cpu_ctx *cpuc = try_lookup_cpu_ctx(cpu);
	const struct cpumask *mask;

	if (!cpuc)
		return -1;
	if (cpuc->is_irq) {
		if (claim)
			return pick_idle_non_irq(p);
		return idle_in(non_irq_for(p)) ? cpu : -1;
	}
	if (!cpuc->irq_llc || !nr_irq_free_cpus || !free)
		return -1;
	mask = allowed_and(p, cast_mask(free));
	if (!mask || (!claim && !idle_in(mask)) || proc_irq_cpu(p, bpf_ktime_get_ns()) >= 0)
		return -1;
	return claim ? scx_bpf_pick_idle_cpu(mask, 0) : cpu;
}

/*
 * Claim an idle CPU that takes no NIC IRQ and that @p may run on, and kick it, so it picks up
 * non-network work that an IRQ CPU would otherwise take. False if there is none.
 */
static bool kick_idle_non_irq(const struct task_struct *p)
{
	s32 cpu = pick_idle_non_irq(p);

	if (cpu < 0)
		return false;
	scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	return true;
}

/*
 * Normal placement: an idle CPU that is not an IRQ CPU if there is one, in an LLC without IRQ
 * CPUs first. The previous CPU first in its group: idle and in such an LLC before any other,
 * idle and beside an IRQ CPU only when no CPU of those LLCs is idle.
 */
static s32 pick_normal_cpu(struct task_struct *p, s32 prev_cpu, u64 wake_flags, bool *idle)
{
	struct cpu_ctx *cpuc = try_lookup_cpu_ctx(prev_cpu);
	bool prev_ok = cpuc && !cpuc->is_irq && cpu_allowed(p, prev_cpu);
	const struct cpumask *mask;
	s32 cpu;

	*idle = true;
	if (prev_ok && !cpuc->irq_llc && scx_bpf_test_and_clear_cpu_idle(prev_cpu))
		return prev_cpu;
	if ((cpu = pick_idle_irq_free(p)) >= 0) {
		stat_inc(MIAMI_STAT_NORMAL_AVOID_IRQ);
		return cpu;
	}
	if (prev_ok && scx_bpf_test_and_clear_cpu_idle(prev_cpu))
		return prev_cpu;
	if ((mask = non_irq_for(p)) && (cpu = scx_bpf_pick_idle_cpu(mask, 0)) >= 0) {
		stat_inc(MIAMI_STAT_NORMAL_AVOID_IRQ);
		return cpu;
	}
	*idle = false;
	return scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, idle);
}

/*
 * Wake @cpu if it idles, for a task just queued on its DSQ by ops.enqueue(); @own: @cpu is the
 * task's own (scx_bpf_task_cpu(), which ops.enqueue() reads once). Not for a wakeup onto its own
 * CPU: the kernel reschedules that CPU itself if it idles (wakeup_preempt(): our class is above
 * the idle task's), and a kick from ops.enqueue(), which holds that CPU's runqueue lock, cannot
 * look whether it idles and goes through an irq_work, an interrupt on the waking CPU (a
 * receiver's IRQ CPU): half of enqueue()'s BPF time under TCG (docs/design.md section 7). Nor
 * for a task put back on the CPU that runs this (its slice ended there): that CPU is scheduling
 * and dispatches next.
 */
static void kick_queued(s32 cpu, bool own, u64 enq_flags)
{
	if (!own || !((enq_flags & SCX_ENQ_WAKEUP) || cpu == bpf_get_smp_processor_id()))
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
}

/* May a thread of a network process whose IRQ CPU is @irq_cpu queue on @cpu: its LLC, no IRQ? */
static bool proc_cpu_ok(const struct task_struct *p, s32 cpu, s32 irq_cpu)
{
	return llc_of(cpu) == llc_of(irq_cpu) && cpu_allowed(p, cpu) && !is_irq_cpu(cpu);
}

/*
 * A CPU of @irq_cpu's LLC for @p, a thread of that IRQ CPU's network process, to queue on: one
 * that takes no IRQ and has no pinned work waiting (local_busy()), walked from a random place so
 * that such threads spread over the LLC. -1 if none.
 */
static s32 pick_proc_queue(const struct task_struct *p, s32 irq_cpu)
{
	struct llc_walk w;
	u32 nr = llc_walk_init(irq_cpu, &w), start, i;

	if (!nr)
		return -1;
	start = bpf_get_prandom_u32() % nr;
	bpf_for(i, 0, nr) {
		s32 cpu = llc_walk_cpu(&w, (start + i) % nr);

		if (proc_cpu_ok(p, cpu, irq_cpu) && !local_busy(cpu))
			return cpu;
	}
	return -1;
}

/*
 * Normal placement for @p, a thread of a network process whose IRQ CPU is @irq_cpu
 * (proc_irq_cpu()): an idle CPU of that LLC that takes no IRQ, the previous one first; else any
 * idle CPU that takes no IRQ; else, nothing being idle, a non-IRQ CPU of the LLC to queue on
 * (ops.enqueue() keeps it there), the previous one if it is one, never one whose pinned work
 * would hold it (local_busy()). -1 if the LLC has none for @p: in t_proc_threads' second shape
 * every such CPU runs a pinned pair, and the thread queued behind one made 0.22-0.28x EEVDF's
 * bursts.
 */
static s32 pick_proc_cpu(struct task_struct *p, s32 prev_cpu, s32 irq_cpu, bool *idle)
{
	const struct cpumask *mask;
	bool prev_ok = proc_cpu_ok(p, prev_cpu, irq_cpu);
	s32 cpu;

	*idle = true;
	if (prev_ok && scx_bpf_test_and_clear_cpu_idle(prev_cpu)) {
		stat_inc(MIAMI_STAT_PROC_LLC);
		return prev_cpu;
	}
	mask = llc_non_irq_for(p, irq_cpu);
	if (mask && (cpu = scx_bpf_pick_idle_cpu(mask, 0)) >= 0) {
		stat_inc(MIAMI_STAT_PROC_LLC);
		return cpu;
	}
	if ((cpu = pick_idle_non_irq(p)) >= 0) {
		stat_inc(MIAMI_STAT_PROC_OUT);
		return cpu;
	}
	*idle = false;
	if (prev_ok && !local_busy(prev_cpu))
		return prev_cpu;
	return pick_proc_queue(p, irq_cpu);
}

/*
 * Is the head of per-CPU DSQ @dsq a network task queued on its own IRQ CPU? pick_net_cpu() put
 * it there by its class's rules, to wait for the core tier (which the paper gets by pinning the
 * task): a sibling that takes it trades that tier for the few hundred microseconds the IRQ CPU
 * spends on softirq work or on another task's slice. The IRQ CPU runs it next by vtime; should
 * that CPU stay taken (a pinned kernel thread that does not sleep runs before any DSQ),
 * siblings may take it after two slices, so it cannot starve.
 */
static bool head_waits_for_core(s32 dsq)
{
	struct cpu_ctx *cpuc = try_lookup_cpu_ctx(dsq);
	struct task_struct *head;

	if (!cpuc || !cpuc->core_waiter)
		return false;
	if (bpf_ktime_get_ns() - cpuc->core_wait_ns > 2 * slice_ns)
		return false;
	head = __COMPAT_scx_bpf_dsq_peek(dsq);
	return head && head->pid == cpuc->core_waiter;
}

/* Move the head of per-CPU DSQ @dsq to this CPU if it may run here and does not wait for it. */
static bool steal_from(s32 dsq)
{
	if (!scx_bpf_dsq_nr_queued(dsq) || head_waits_for_core(dsq))
		return false;
	return scx_bpf_dsq_move_to_local(dsq, 0);
}

/*
 * A new empty mask into kptr @slot (a global's or a map value's), the old one released.
 * Inlined: bpf_kptr_xchg() needs the slot's own address, which a call would hide.
 */
static __always_inline s32 new_cpumask(struct bpf_cpumask __kptr **slot)
{
	struct bpf_cpumask *mask = bpf_cpumask_create();

	if (!mask)
		return -ENOMEM;
	mask = bpf_kptr_xchg(slot, mask);
	if (mask)
		bpf_cpumask_release(mask);
	return 0;
}

/*
 * ops.init()'s part: the CPU masks above (each LLC's span, each CPU's scratch mask),
 * non_irq_cpumask and irq_free_cpumask, with every CPU in them until user space marks the IRQ
 * CPUs.
 */
static s32 init_cpumasks(void)
{
	struct bpf_cpumask *mask;
	struct llc_ctx *llcc;
	u32 cpu, key;

	if (new_cpumask(&non_irq_cpumask) || new_cpumask(&irq_free_cpumask))
		return -ENOMEM;

	bpf_for(cpu, 0, nr_cpu_ids) {
		struct scratch_ctx *sc = bpf_map_lookup_elem(&scratch_stor, &cpu);

		if (!sc)
			return -EINVAL;
		if (new_cpumask(&sc->mask))
			return -ENOMEM;

		key = llc_of(cpu);
		llcc = bpf_map_lookup_elem(&llc_ctx_stor, &key);
		if (!llcc)
			return -EINVAL;
		if (!llcc->span && new_cpumask(&llcc->span))
			return -ENOMEM;
		bpf_rcu_read_lock();
		mask = llcc->span;
		if (mask)
			bpf_cpumask_set_cpu(cpu, mask);
		mask = non_irq_cpumask;
		if (mask)
			bpf_cpumask_set_cpu(cpu, mask);
		mask = irq_free_cpumask;
		if (mask)
			bpf_cpumask_set_cpu(cpu, mask);
		bpf_rcu_read_unlock();
	}
	nr_irq_free_cpus = nr_cpu_ids;
	return 0;
}

#endif /* __MIAMI_CPUS_BPF_H */
