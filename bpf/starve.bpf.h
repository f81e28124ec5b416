/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The starvation guard of ops.dispatch() (dispatch.bpf.h dispatch_one()): --starve-ms.
 *
 * Included by main.bpf.c only, after cpus.bpf.h and the global it reads (starve_ns): a split of
 * one translation unit, as cpus.bpf.h is, so that main.bpf.c stays near the house limit of ~800
 * lines; static functions, so the verifier sees the programs it saw with them in main.bpf.c.
 */
#ifndef __MIAMI_STARVE_BPF_H
#define __MIAMI_STARVE_BPF_H

/*
 * Each CPU's epoch (run_starved()): when it began, and the jiffies then. Read at every
 * dispatch() of that CPU and written by it only, twice a second by default: an array in .bss,
 * not cpu_ctx, so that dispatch() pays a load rather than a map lookup, and cpu_ctx stays one
 * cache line.
 */
struct starve_epoch {
	u64	ns;
	u64	jiffies;
};
static struct starve_epoch starve_epochs[MIAMI_MAX_CPUS];

/*
 * Move the task of DSQ @dsq_id that has been runnable longest, if since before jiffy @before_j,
 * and may run on @cpu, to @cpu's local DSQ. Two walks: the first finds when it became runnable,
 * the second moves the first task that did as early, which is that one or its equal.
 */
static bool move_starved(u64 dsq_id, s32 cpu, u64 before_j)
{
	struct task_struct *p;
	u64 oldest_j = before_j;
	bool found = false;

	bpf_for_each(scx_dsq, p, dsq_id, 0) {
		if ((s64)(p->scx.runnable_at - oldest_j) < 0 && cpu_allowed(p, cpu)) {
			oldest_j = p->scx.runnable_at;
			found = true;
		}
	}
	if (!found)
		return false;
	bpf_for_each(scx_dsq, p, dsq_id, 0) {
		if ((s64)(p->scx.runnable_at - oldest_j) <= 0 && cpu_allowed(p, cpu))
			return scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0);
	}
	return false;
}

/*
 * The starvation guard. Vtime order is fair by weight, and a task that slept gets at most one
 * slice of credit (task_vtime()), but vtime_now only moves when a task that starts running is
 * ahead of it. Under a flood of short wakers, each of which runs briefly and sleeps again well
 * before it gets there, it barely moves, every wakeup enters ahead of a task that stays
 * runnable, and more so of a low-weight one: khugepaged (nice 19, weight 15: one slice of
 * running puts it 6.7 slices ahead) waited 32 s beside 4,000 network threads in
 * t_many_threads, and the kernel's watchdog ejected the scheduler. Here each CPU, every
 * starve_ns / 2, runs the task of its own DSQ, or else of the shared one, that has been
 * runnable longest, if that is starve_ns / 2 or more, ahead of the order: such a task goes next
 * at the next epoch of a CPU that may run it, unless others waited longer (t_starve: 0.9-3.1 s
 * with the default 1 s beside 600 wakers, 5.6-13.4 s with 10 s). p->scx.runnable_at is the
 * watchdog's own clock (jiffies, reset each time the task stops running); the epochs turn
 * starve_ns into jiffies without knowing HZ: a task runnable since before the previous epoch's
 * jiffies has waited at least starve_ns / 2. One task an epoch: the walks cost nothing
 * between, where a first form, which went on rescuing at every dispatch() while any waited
 * that long (each walk over hundreds of tasks), slowed a flooded guest more than it helped.
 * The clock itself is left as it is (see docs/design.md). Returns the DSQ counter of the move,
 * or -1.
 */
static __noinline s32 run_starved(s32 cpu)
{
	struct starve_epoch *e = &starve_epochs[cpu & (MIAMI_MAX_CPUS - 1)];
	u64 now = bpf_ktime_get_ns(), before_j = e->jiffies;

	if (now - e->ns < starve_ns / 2)
		return -1;
	e->jiffies = bpf_jiffies64();
	e->ns = now;
	if (!before_j)
		return -1;
	if (move_starved(cpu, cpu, before_j)) {
		stat_inc(MIAMI_STAT_STARVED);
		return MIAMI_STAT_DSP_CPU;
	}
	if (move_starved(MIAMI_DSQ_SHARED, cpu, before_j)) {
		stat_inc(MIAMI_STAT_STARVED);
		return MIAMI_STAT_DSP_SHARED;
	}
	return -1;
}

#endif /* __MIAMI_STARVE_BPF_H */
