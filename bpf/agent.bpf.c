/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_miami: the agent's side in BPF (MiAMI paper, section III-D) that placement calls, the
 * snapshots the agent's round (policy.bpf.c) reads, and the IRQ map.
 *
 * Of the agent's three steps, placement carries out all three at the task's next placement, so
 * none of them needs a loop over tasks here:
 *
 * Step 1, release: is_net_task() treats a task whose last send/recv call is older than
 * release_ns as a non-network task until it communicates again, in O(1) per placement. Its
 * move target goes with it. proc_irq_cpu() does the same for the threads of its process that do
 * not communicate themselves.
 *
 * Steps 2 and 3, upgrade and shed: the round writes {tid, cpu, seq, round} into the
 * policy_moves hash, keyed by tid, and then bumps policy_moves_gen. apply_move() looks there
 * only when the generation changed since the task last looked, so a placement costs one
 * comparison while the agent is quiet. It takes a new entry at the task's next placement (a
 * wakeup, or the end of its slice: ops.enqueue() re-places a task away from its target), if the
 * round's budget allows: round_moves counts moves applied this round, with a compare-and-swap
 * below max_moves (--max-migrations), and the round swaps it to 0. The cap is enforced here,
 * where moves happen: a move whose budget is spent stays pending for the next round, and one
 * MIAMI_MOVE_ROUNDS old is dropped (its task slept through them). main.bpf.c then tries the
 * target first while it is idle or has room, for target_ttl_ns (shed_ttl_ns for a shed), and
 * drops it earlier when its reason is gone (target_alive()).
 *
 * The IRQ map: whenever the NIC IRQ affinity changes, user space runs miami_set_irq_cpu() for
 * every CPU whose role changed (cpu_ctx.is_irq, and non_irq_cpumask, where non-network work
 * prefers to run).
 *
 * Accepted races: a policy_moves entry may be read while the round rewrites it; a torn entry
 * pairs an old seq with a new CPU or the reverse, which costs one misplaced or one skipped move,
 * still within the budget.
 *
 * The round's task table and CPU loads: snap_tasks_take() and snap_cpu_loads() below; the
 * loader reads the same table from memory for its stats.
 *
 * The functions are __hidden: libbpf verifies them as static subprograms of their callers in
 * main.bpf.c, with the callers' pointer types, as if they were in the same file.
 */
#include "miami.bpf.h"

char _license[] SEC("license") = "GPL";

/* Step 1: a network task silent this long is placed normally again. Default 1 s. Too short and
 * a paced sender drops in and out of its tier; too long and a finished one keeps it. */
volatile u64 release_ns = 1000000000;
/* Agent moves (policy_moves) applied per agent round at most (--max-migrations). Default 4.
 * The paper caps migrations per round because each one costs a cold cache. */
volatile u32 max_moves = 4;
/* How long a task keeps an agent target: default 1 s, ten agent rounds (user space writes
 * REPEAT_ROUNDS x --interval-ms). The agent re-sends a target it still wants after as many
 * rounds, so a target outlives its reason by at most this long. */
volatile u64 target_ttl_ns = 1000000000;
/*
 * How long a task keeps a shed target: default 5 s (user space writes SHED_HOLD_ROUNDS x
 * --interval-ms). A shed's reason outlives its own effect: the pair it split no longer
 * overloads their CPU, so the agent never re-sends it, and at target_ttl_ns the task went back
 * and the agent shed it again a round or two later, once a second for as long as the pair ran.
 * When the pair ends, step 2 brings a class-high task back at once (an upgrade replaces the
 * target); a target in another LLC still goes as soon as its LLC is not overloaded
 * (target_alive()).
 */
volatile u64 shed_ttl_ns = 5000000000ULL;
/* Agent moves applied in the current round; the round swaps it to 0 when it starts. */
volatile u32 round_moves;
/* Bumped by the round after it wrote its moves into policy_moves. */
volatile u32 policy_moves_gen;
/* The last policy_move.seq given out. */
u32 policy_moves_seq;

__hidden bool is_net_task(struct task_ctx *taskc, u64 now)
{
	bool net;

	if (!taskc)
		return false;
	net = taskc->intens && taskc->irq_cpu >= 0 && taskc->irq_cpu < nr_cpu_ids &&
	      now - taskc->last_comm_ns < release_ns;
	if (!net && taskc->placed_net) {
		taskc->placed_net = 0;
		taskc->target_cpu = MIAMI_NO_CPU;
		stat_inc(MIAMI_STAT_RELEASES);
	}
	if (net && !taskc->placed_net)
		taskc->placed_net = 1;
	return net;
}

/*
 * Step 1 for a process: its other threads follow its representative thread (struct proc_ctx)
 * while that one communicates, and are released with it. The group leader is read under the
 * RCU read lock every non-sleepable program holds; a leader without proc_ctx (a process that
 * never called send/recv) costs one task storage lookup.
 */
__hidden s32 proc_irq_cpu(struct task_struct *p, u64 now)
{
	struct task_struct *leader = p->group_leader;
	struct proc_ctx *procc;
	s32 irq;

	if (!leader)
		return MIAMI_NO_CPU;
	procc = bpf_task_storage_get(&proc_ctx_stor, leader, 0, 0);
	if (!procc || now - procc->last_ns >= release_ns)
		return MIAMI_NO_CPU;
	irq = procc->irq_cpu;
	return irq >= 0 && irq < nr_cpu_ids ? irq : MIAMI_NO_CPU;
}

__hidden void apply_move(const struct task_struct *p, struct task_ctx *taskc, u64 now)
{
	u32 gen = policy_moves_gen, n;
	s32 tid = p->pid;
	struct policy_move *mv;

	if (gen == taskc->moves_gen)
		return;
	mv = bpf_map_lookup_elem(&policy_moves, &tid);
	if (!mv || mv->tid != tid || mv->seq == taskc->move_seq ||
	    agent_round_no - mv->round >= MIAMI_MOVE_ROUNDS) {
		taskc->moves_gen = gen;
		return;
	}
	/* No budget: moves_gen stays, so the next placement looks again. */
	n = round_moves;
	if (n >= max_moves || __sync_val_compare_and_swap(&round_moves, n, n + 1) != n) {
		stat_inc(MIAMI_STAT_POLICY_DEFERRED);
		return;
	}
	taskc->moves_gen = gen;
	taskc->move_seq = mv->seq;
	taskc->target_cpu = mv->cpu;
	taskc->target_irq = taskc->irq_cpu;
	taskc->target_until_ns = now + (mv->kind == MIAMI_MOVE_SHED ? shed_ttl_ns : target_ttl_ns);
	stat_inc(mv->kind == MIAMI_MOVE_SHED ? MIAMI_STAT_POLICY_SHEDS : MIAMI_STAT_POLICY_UPGRADES);
}

/*
 * After @cpu's role changed: does its LLC still hold an IRQ CPU? Marks the answer on every CPU
 * of that LLC (cpu_ctx.irq_llc) and in irq_free_cpumask (and its weight), the LLCs where
 * non-network work goes first (cpus.bpf.h, pick_idle_irq_free()).
 */
static void mark_llc_irq(s32 cpu)
{
	u32 l = cpu_llc[cpu & (MIAMI_MAX_CPUS - 1)] & (MIAMI_MAX_LLCS - 1);
	u32 first = llc_first[l], nr = llc_nr[l], i;
	struct bpf_cpumask *mask;
	struct cpu_ctx *cpuc;
	bool irq = false;

	bpf_for(i, 0, nr) {
		cpuc = try_lookup_cpu_ctx(llc_cpus[(first + i) & (MIAMI_MAX_CPUS - 1)]);
		if (cpuc && cpuc->is_irq)
			irq = true;
	}
	bpf_rcu_read_lock();
	mask = irq_free_cpumask;
	bpf_for(i, 0, nr) {
		s32 c = llc_cpus[(first + i) & (MIAMI_MAX_CPUS - 1)];

		cpuc = try_lookup_cpu_ctx(c);
		if (cpuc)
			cpuc->irq_llc = irq;
		if (!mask)
			continue;
		if (irq)
			bpf_cpumask_clear_cpu(c, mask);
		else
			bpf_cpumask_set_cpu(c, mask);
	}
	if (mask)
		nr_irq_free_cpus = bpf_cpumask_weight(cast_mask(mask));
	bpf_rcu_read_unlock();
}

/*
 * Mark or unmark a CPU as an IRQ CPU. Run by user space (BPF_PROG_TEST_RUN) whenever the NIC
 * IRQ map changes.
 */
SEC("syscall")
int miami_set_irq_cpu(struct set_irq_cpu_arg *arg)
{
	struct bpf_cpumask *mask;
	struct cpu_ctx *cpuc;
	s32 cpu = arg->cpu;

	if (cpu < 0 || cpu >= nr_cpu_ids)
		return -EINVAL;
	cpuc = try_lookup_cpu_ctx(cpu);
	if (!cpuc)
		return -ENOENT;
	cpuc->is_irq = arg->is_irq ? 1 : 0;

	bpf_rcu_read_lock();
	mask = non_irq_cpumask;
	if (mask) {
		if (arg->is_irq)
			bpf_cpumask_clear_cpu(cpu, mask);
		else
			bpf_cpumask_set_cpu(cpu, mask);
	}
	bpf_rcu_read_unlock();
	mark_llc_irq(cpu);
	return 0;
}

/*
 * The agent round's task table, copied by snap_tasks_take() into this .bss, which user space
 * reads from memory (mmapped) for its stats: the live entries of net_tasks. One silent for at
 * least the stale age is deleted instead: the table holds live tasks only. Any walk of the table
 * visits its 16,384 buckets, which took 3.5 ms of CPU under TCG whatever it held; so the
 * snapshot walks the table only after an entry was added since the last walk (net_tasks_added,
 * counted by netmon.bpf.c). Otherwise the table holds exactly the tids of the last snapshot,
 * less those deleted here: the LRU evicts only to add. Those are looked up one by one, and a
 * quiet round costs as many lookups as there are network tasks. A walk deletes stale entries
 * after it, up to MIAMI_SNAP_STALE a round. The copy is 16,384 x 64 bytes of .bss (1 MB), the
 * size of the table itself. snap_seq is odd while a copy is being written: a reader in user
 * space retries then, or when it changed under it (src/scheduler/tasks.rs).
 */
u32 snap_seq;
u32 snap_nr_tasks;				/* entries of snap_tasks filled */
struct net_task snap_tasks[MIAMI_MAX_NET_TASKS];
static s32 snap_stale[MIAMI_SNAP_STALE];
static u64 snap_added = ~0ULL;			/* net_tasks_added at the last walk; none yet */

struct snap_walk {
	u64	now;
	u64	stale_ns;
	u32	nr;
};

/*
 * The walk's counts are globals, not members of @w on the stack: the verifier tracks a stack
 * count as a constant through each run of the callback, tells the runs apart by it, and gave
 * up on the timer's program ("The sequence of 8193 jumps is too complex", 7.3).
 */
static u32 walk_nr, walk_nr_stale;

static long snap_task(struct bpf_map *map, s32 *tid, struct net_task *nt, struct snap_walk *w)
{
	u64 last = nt->last_comm_ns;
	u32 i;

	/* A call after @now, on another CPU, is not stale. */
	if (last && last < w->now && w->now - last >= w->stale_ns) {
		i = walk_nr_stale;
		if (i < MIAMI_SNAP_STALE)
			snap_stale[i & (MIAMI_SNAP_STALE - 1)] = *tid;
		walk_nr_stale = i + 1;
		return 0;
	}
	i = walk_nr;
	if (i >= MIAMI_MAX_NET_TASKS)
		return 1;
	__builtin_memcpy(&snap_tasks[i & (MIAMI_MAX_NET_TASKS - 1)], nt, sizeof(*nt));
	walk_nr = i + 1;
	return 0;
}

/* Every entry of net_tasks, by a walk of the whole table. */
static void snap_walk_all(struct snap_walk *w)
{
	u32 i, nr_stale;

	walk_nr = 0;
	walk_nr_stale = 0;
	bpf_for_each_map_elem(&net_tasks, snap_task, w, 0);
	w->nr = walk_nr;
	nr_stale = walk_nr_stale;
	bpf_for(i, 0, nr_stale) {
		if (i >= MIAMI_SNAP_STALE)
			break;
		bpf_map_delete_elem(&net_tasks, &snap_stale[i]);
	}
	/* Stale entries left: the lookups would never see them again, so walk next time too. */
	if (nr_stale > MIAMI_SNAP_STALE)
		snap_added = ~0ULL;
}

/*
 * The entries of the last snapshot's tids, looked up again, compacted in place. The count kept
 * is a global, not a stack variable: the verifier then does not tell apart the loop's states
 * by it, and converges.
 */
static u32 snap_kept;

static void snap_lookup_known(struct snap_walk *w)
{
	u32 i, nr = snap_nr_tasks;

	snap_kept = 0;
	bpf_for(i, 0, nr) {
		struct net_task *nt;
		u32 j = snap_kept;
		s32 tid;
		u64 last;

		if (i >= MIAMI_MAX_NET_TASKS || j >= MIAMI_MAX_NET_TASKS)
			break;
		tid = snap_tasks[i].tid;
		nt = bpf_map_lookup_elem(&net_tasks, &tid);
		if (!nt)
			continue;
		last = nt->last_comm_ns;
		if (last && last < w->now && w->now - last >= w->stale_ns) {
			bpf_map_delete_elem(&net_tasks, &tid);
			continue;
		}
		__builtin_memcpy(&snap_tasks[j], nt, sizeof(*nt));
		snap_kept = j + 1;
	}
	w->nr = snap_kept;
}

/* The live entries of net_tasks at @now into snap_tasks[]; those silent @stale_ns deleted. */
__hidden void snap_tasks_take(u64 now, u64 stale_ns)
{
	struct snap_walk w = { .now = now, .stale_ns = stale_ns };
	u64 added = net_tasks_added;

	__sync_fetch_and_add(&snap_seq, 1);
	/* Read before the walk: an entry added during it makes the next snapshot walk again. */
	if (added != snap_added) {
		snap_added = added;
		snap_walk_all(&w);
	} else {
		snap_lookup_known(&w);
	}
	snap_nr_tasks = w.nr;
	__sync_fetch_and_add(&snap_seq, 1);
}

/* The snapshot alone, for tests/snapshot.rs (BPF_PROG_TEST_RUN). */
SEC("syscall")
int miami_snapshot(struct snapshot_arg *arg)
{
	snap_tasks_take(bpf_ktime_get_ns(), arg->stale_ns);
	return 0;
}

/*
 * The agent round's CPU loads (snap_cpu_loads() below, from the timer's round): each CPU's busy
 * and idle time since boot, as /proc/stat computes them, and whether the CPU is online (its
 * runqueue's flag; /proc/stat lists online CPUs only). The agent read /proc/stat for them:
 * under TCG that read (the kernel printing every IRQ's count over every CPU) cost 1.6 ms of CPU
 * per round, ten rounds a second (docs/results/loader-cost.md).
 *
 * Busy is the tick-sampled user, nice, system, irq, softirq and steal of kernel_cpustat. Idle
 * (with iowait) must be the nohz idle time, as fs/proc/stat.c's get_idle_time() takes it, not
 * wall time less busy: a vCPU that misses ticks under TCG has busy time that falls behind the
 * wall clock (a busy CPU read 37% against /proc/stat's 100% that way), while its idle time is
 * measured at idle entry and exit. Where it is kept changed: 6.12 keeps it in tick_sched
 * (idle_sleeptime, iowait_sleeptime, plus the idle period in progress while
 * TS_FLAG_IDLE_ACTIVE), 7.x in kernel_cpustat itself (cpustat[CPUTIME_IDLE] and [IOWAIT], plus
 * the period in progress while idle_elapse). CO-RE picks the layout; a seqcount guards each.
 * Without nohz (6.12: TS_FLAG_NOHZ clear) the idle ticks in cpustat[] are the idle time. On a
 * kernel with neither layout snap_cpu_idle_known stays 0, and the agent reads /proc/stat.
 *
 * The verifier finds per-CPU variables through kallsyms, which lists them only with
 * CONFIG_KALLSYMS_ALL, so on a kernel without it neither miami_snapshot_cpus() nor the timer's
 * program (policy.bpf.c miami_agent_start()) loads: the loader leaves both out (src/load.rs
 * kernel_cpu_times_refused(), which also asks the kernel's BTF), reads /proc/stat and runs the
 * rounds itself (miami_agent_round()).
 */
extern struct kernel_cpustat kernel_cpustat __ksym;
extern struct rq runqueues __ksym;
extern struct tick_sched tick_cpu_sched __ksym;

/* 6.12's struct tick_sched, the fields 7.x moved out (kernel/time/tick-sched.h). */
struct tick_sched___v612 {
	unsigned long flags;
	seqcount_t idle_sleeptime_seq;
	ktime_t idle_entrytime;
	ktime_t idle_sleeptime;
	ktime_t iowait_sleeptime;
} __attribute__((preserve_access_index));

#define MIAMI_TS_FLAG_IDLE_ACTIVE (1UL << 2)
#define MIAMI_TS_FLAG_NOHZ (1UL << 4)
/* Reads of a seqcount-guarded idle time before giving up on a consistent one (a writer holds
 * it for a few instructions at idle entry and exit). */
#define MIAMI_SEQ_TRIES 4

u64 snap_cpu_busy_ns[MIAMI_MAX_CPUS];
u64 snap_cpu_idle_ns[MIAMI_MAX_CPUS];
u8 snap_cpu_online[MIAMI_MAX_CPUS];
/* 1 when snap_cpu_idle_ns[] is the nohz idle time: CO-RE found one of the layouts above. */
u8 snap_cpu_idle_known;

/* The idle period in progress since @entry, at @now; 0 if the clocks disagree. */
static __always_inline u64 idle_since(u64 entry, u64 now)
{
	return (s64)(now - entry) > 0 ? now - entry : 0;
}

/*
 * @cpu's idle and iowait time since boot as /proc/stat takes it, at @now (ktime ns). A read the
 * seqcount never confirms gives its last try.
 */
static __always_inline u64 cpu_idle_ns(s32 cpu, struct kernel_cpustat *kcs, u64 now)
{
	u64 t = 0;
	u32 seq, i;

	if (bpf_core_field_exists(struct kernel_cpustat, idle_elapse)) {
		/* 7.x: the time of idle periods that ended is in cpustat[] already. */
		bpf_for(i, 0, MIAMI_SEQ_TRIES) {
			seq = BPF_CORE_READ(kcs, idle_sleeptime_seq.sequence);
			t = kcs->cpustat[CPUTIME_IDLE] + kcs->cpustat[CPUTIME_IOWAIT];
			if (BPF_CORE_READ(kcs, idle_elapse))
				t += idle_since(BPF_CORE_READ(kcs, idle_entrytime), now);
			if (!(seq & 1) && seq == BPF_CORE_READ(kcs, idle_sleeptime_seq.sequence))
				break;
		}
		return t;
	}
	if (bpf_core_field_exists(struct tick_sched___v612, idle_sleeptime)) {
		struct tick_sched___v612 *ts = (void *)bpf_per_cpu_ptr(&tick_cpu_sched, cpu);

		if (ts && (BPF_CORE_READ(ts, flags) & MIAMI_TS_FLAG_NOHZ)) {
			bpf_for(i, 0, MIAMI_SEQ_TRIES) {
				seq = BPF_CORE_READ(ts, idle_sleeptime_seq.sequence);
				t = BPF_CORE_READ(ts, idle_sleeptime) +
				    BPF_CORE_READ(ts, iowait_sleeptime);
				if (BPF_CORE_READ(ts, flags) & MIAMI_TS_FLAG_IDLE_ACTIVE)
					t += idle_since(BPF_CORE_READ(ts, idle_entrytime), now);
				if (!(seq & 1) &&
				    seq == BPF_CORE_READ(ts, idle_sleeptime_seq.sequence))
					break;
			}
			return t;
		}
	}
	/* No nohz idle time: the idle ticks are it. */
	return kcs->cpustat[CPUTIME_IDLE] + kcs->cpustat[CPUTIME_IOWAIT];
}

/* Each CPU's busy and idle time since boot at @now into snap_cpu_*[]. */
static __always_inline void snap_cpu_times(u64 now)
{
	u32 cpu;

	snap_cpu_idle_known = bpf_core_field_exists(struct kernel_cpustat, idle_elapse) ||
			      bpf_core_field_exists(struct tick_sched___v612, idle_sleeptime);
	bpf_for(cpu, 0, nr_cpu_ids) {
		struct kernel_cpustat *kcs = bpf_per_cpu_ptr(&kernel_cpustat, cpu);
		struct rq *rq = bpf_per_cpu_ptr(&runqueues, cpu);
		u64 *t;

		if (!kcs || !rq || cpu >= MIAMI_MAX_CPUS)
			break;
		t = kcs->cpustat;
		snap_cpu_busy_ns[cpu] = t[CPUTIME_USER] + t[CPUTIME_NICE] + t[CPUTIME_SYSTEM] +
					t[CPUTIME_IRQ] + t[CPUTIME_SOFTIRQ] + t[CPUTIME_STEAL];
		snap_cpu_idle_ns[cpu] = cpu_idle_ns(cpu, kcs, now);
		snap_cpu_online[cpu] = !!rq->online;
	}
}

/* The snapshot and the CPU times, in one system call: tests/snapshot.rs, and the loader's check
 * at start that the idle time's layout is known (snap_cpu_idle_known). */
SEC("syscall")
int miami_snapshot_cpus(struct snapshot_arg *arg)
{
	u64 now = bpf_ktime_get_ns();

	snap_cpu_times(now);
	snap_tasks_take(now, arg->stale_ns);
	return 0;
}

/*
 * The agent's loads at @now (policy.bpf.c agent_tick()): each CPU's busy share since the last
 * call, in hundredths of a percent, as /proc/stat's deltas give it (src/load.rs busy_pct(), which
 * the loader uses where this cannot load): 0 where no time passed, MIAMI_LOAD_NONE offline.
 */
static u64 prev_busy[MIAMI_MAX_CPUS], prev_total[MIAMI_MAX_CPUS];

__hidden void snap_cpu_loads(u64 now)
{
	u32 cpu;

	snap_cpu_times(now);
	bpf_for(cpu, 0, nr_cpu_ids) {
		u64 busy, total, db, dt;

		if (cpu >= MIAMI_MAX_CPUS)
			break;
		if (!snap_cpu_online[cpu]) {
			agent_load[cpu] = MIAMI_LOAD_NONE;
			prev_busy[cpu] = 0;
			prev_total[cpu] = 0;
			continue;
		}
		busy = snap_cpu_busy_ns[cpu];
		total = busy + snap_cpu_idle_ns[cpu];
		db = busy > prev_busy[cpu] ? busy - prev_busy[cpu] : 0;
		dt = total > prev_total[cpu] ? total - prev_total[cpu] : 0;
		agent_load[cpu] = !dt ? 0 : db >= dt ? 10000 : db * 10000 / dt;
		prev_busy[cpu] = busy;
		prev_total[cpu] = total;
	}
}
