/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ops.dispatch()'s work (main.bpf.c miami_dispatch()): dispatch_one(), and the wait before an
 * idle CPU takes a sibling's lone queued task.
 *
 * Included by main.bpf.c only, after everything dispatch_one() calls (cpus.bpf.h, starve.bpf.h,
 * the placement helpers): a split of one translation unit, as cpus.bpf.h and starve.bpf.h are,
 * so that main.bpf.c stays under the house limit of ~800 lines; static functions, so the
 * verifier sees the programs it saw with them in main.bpf.c.
 */
#ifndef __MIAMI_DISPATCH_BPF_H
#define __MIAMI_DISPATCH_BPF_H

/*
 * How long a task queued on an LLC sibling's DSQ outside a backlog (typically alone there, to
 * run next) waits for that sibling before an idle CPU takes it, in the watchdog's jiffies
 * (p->scx.runnable_at): 16-20 ms at Debian's HZ=250, three to four slices, so that in effect
 * only a sibling held by pinned work loses it (a single-CPU task on the local DSQ runs again
 * before its CPU looks at its own DSQ).
 *
 * Taken at once (until stop 54), the receivers of micro-2n-16 waited less than under EEVDF, but
 * each woken sooner read less per wakeup (1.44x EEVDF's wakeups per byte, traced), and these
 * moves were most of dispatch()'s time: 0.94x and 0.97x EEVDF's Gbit/s in the same machine's
 * boots, 1.01x and 1.03x with no such steal, 1.00x and 1.02x with this wait. Under TCG, where
 * the 90th percentile of a receiver's wait from waking to running was 13-21 ms, two ticks (4-8
 * ms) left it at 0.95x (docs/results/bench.md, stop 54).
 */
#define STEAL_ALONE_TICKS	5

/*
 * Move the head of per-CPU DSQ @dsq to this CPU if it has been runnable STEAL_ALONE_TICKS by
 * @now_j, may run here and does not wait for its core (steal_from() without its emptiness
 * check: the peek here gives that).
 */
static bool steal_waited(s32 dsq, u64 now_j)
{
	struct task_struct *head = __COMPAT_scx_bpf_dsq_peek(dsq);

	if (!head || now_j - head->scx.runnable_at < STEAL_ALONE_TICKS || head_waits_for_core(dsq))
		return false;
	return scx_bpf_dsq_move_to_local(dsq, 0);
}

/*
 * ops.dispatch()'s work: own DSQ vs shared DSQ by vtime, then pull from LLC siblings, then from
 * other LLCs. Returns the counter of the DSQ it moved a task from (MIAMI_STAT_DSP_*), or -1.
 */
static __always_inline s32 dispatch_one(s32 cpu, struct task_struct *prev)
{
	struct task_struct *own, *shared;
	struct llc_walk sibs;
	u32 my_llc = llc_of(cpu), nr_sibs = llc_walk_init(cpu, &sibs), i;
	bool irq_cpu, sib_queued = true;
	s32 other;

	if (test_error) {
		if (test_error == 1)
			scx_bpf_error("test error injected (--test-inject-error error)");
		else
			scx_bpf_exit(SCX_ECODE_ACT_RESTART, "test restart injected");
		test_error = 0;
	}

	if ((other = run_starved(cpu)) >= 0) {
		stat_inc(other);
		return other;
	}
	own = __COMPAT_scx_bpf_dsq_peek(cpu);
	shared = __COMPAT_scx_bpf_dsq_peek(MIAMI_DSQ_SHARED);
	if (own && (!shared || own->scx.dsq_vtime <= shared->scx.dsq_vtime)) {
		if (scx_bpf_dsq_move_to_local(cpu, 0)) {
			stat_inc(MIAMI_STAT_DSP_CPU);
			return MIAMI_STAT_DSP_CPU;
		}
	}
	/*
	 * Own DSQ empty: a sibling's backlog of network tasks (two or more queued, so the sibling
	 * keeps one) comes before the shared DSQ when it is older, so an overloaded IRQ CPU's queue
	 * spreads over its LLC rather than leaving the LLC. The same pass notes whether any sibling
	 * has a task queued at all, so that the steal below walks the CPUs only then: an idle CPU
	 * calls dispatch() over and over, and three walks over every CPU made our dispatch() cost
	 * about twice scx_bpfland's with eight receivers (docs/results/bench.md). A task queued on
	 * a sibling in between is run by that sibling.
	 */
	if (!own) {
		sib_queued = false;
		bpf_for(i, 1, nr_sibs) {
			struct task_struct *head;
			u64 nr;

			other = llc_walk_cpu(&sibs, i);
			if (!(nr = scx_bpf_dsq_nr_queued(other)))
				continue;
			sib_queued = true;
			if (nr < 2)
				continue;
			head = __COMPAT_scx_bpf_dsq_peek(other);
			if (head && (!shared || head->scx.dsq_vtime <= shared->scx.dsq_vtime) &&
			    !head_waits_for_core(other) && scx_bpf_dsq_move_to_local(other, 0)) {
				stat_inc(MIAMI_STAT_DSP_STEAL_LLC);
				return MIAMI_STAT_DSP_STEAL_LLC;
			}
			break;
		}
	}
	/*
	 * An IRQ CPU leaves non-network work to a free non-IRQ CPU that may run it (kicked here), so
	 * its own time stays for softirq and network tasks. Only a CPU of the task's own: kicking
	 * one it may not use starved it while non-IRQ CPUs sat idle (a 44 s stall once).
	 */
	irq_cpu = is_irq_cpu(cpu);
	if (shared && !(irq_cpu && kick_idle_non_irq(shared)) &&
	    scx_bpf_dsq_move_to_local(MIAMI_DSQ_SHARED, 0)) {
		stat_inc(MIAMI_STAT_DSP_SHARED);
		return MIAMI_STAT_DSP_SHARED;
	}
	if (own && scx_bpf_dsq_move_to_local(cpu, 0)) {
		stat_inc(MIAMI_STAT_DSP_CPU);
		return MIAMI_STAT_DSP_CPU;
	}

	/* A sibling's queued task outside a backlog, once it has waited (steal_waited()). */
	if (sib_queued) {
		u64 now_j = bpf_jiffies64();

		bpf_for(i, 1, nr_sibs) {
			other = llc_walk_cpu(&sibs, i);
			if (steal_waited(other, now_j)) {
				stat_inc(MIAMI_STAT_DSP_STEAL_LLC);
				return MIAMI_STAT_DSP_STEAL_LLC;
			}
		}
	}
	/* Other LLCs: only out of an overloaded one, so only when one besides ours is. */
	if (nr_llcs_overloaded > llc_is_overloaded(cpu)) {
		bpf_for(i, 1, nr_cpu_ids) {
			other = (cpu + i) % nr_cpu_ids;
			if (llc_of(other) != my_llc && llc_is_overloaded(other) &&
			    scx_bpf_dsq_nr_queued(other) > 1 && steal_from(other)) {
				stat_inc(MIAMI_STAT_DSP_STEAL_FAR);
				return MIAMI_STAT_DSP_STEAL_FAR;
			}
		}
	}

	/*
	 * Nothing else to run: let @prev go on, unless it is non-network work on an IRQ CPU or
	 * beside one while a CPU it should rather use is idle (normal_leave_cpu(): enqueue_last()
	 * moves it), or a network task that should move (prev_should_move()). Checked here, so
	 * that a busy machine does not send every slice end of an IRQ CPU through enqueue_last()
	 * and idle.
	 */
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED) &&
	    !(!cpuc_cur_net(cpu) && normal_leave_cpu(prev, cpu, false) >= 0) &&
	    !prev_should_move(prev, cpu))
		refill_slice(prev, cpu);
	return -1;
}

#endif /* __MIAMI_DISPATCH_BPF_H */
