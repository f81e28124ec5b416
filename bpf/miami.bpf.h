/* SPDX-License-Identifier: GPL-2.0 */
/*
 * BPF-internal state shared by main.bpf.c (sched_ext ops), netmon.bpf.c (TCP probes) and
 * agent.bpf.c (the agent's moves).
 *
 * The maps both files touch are defined here __weak: each object carries an identical
 * definition and libbpf's static linker keeps one. Globals owned by one file are declared
 * extern here.
 */
#ifndef __MIAMI_BPF_H
#define __MIAMI_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"

/*
 * A call rate over windows of time (netmon.bpf.c rate_note()): the paper's intensiveness,
 * 10^6 / mean interval in us, of the last closed window.
 */
struct rate_win {
	u64	last_ns;		/* time of the last call; 0 = none yet */
	u64	win_start_ns;		/* start of the current window */
	u32	win_calls;		/* intervals that ended in the current window */
	u32	intens;			/* of the last closed window; 0 = none closed yet */
};

/* A CPU's calls on a socket since its last tick there (netmon.bpf.c, section 6). */
struct sock_slot {
	s32	key;			/* the CPU's id + 1, 0 = free */
	u32	calls;			/* calls counted since its last tick */
	u64	tick_jiffies;		/* jiffies at its last tick */
};

/*
 * Per-connection state of the communication load monitor (paper III-B, "miami_node"), in
 * socket local storage so it lives and dies with the socket.
 */
struct sock_ctx {
	u64	cookie;			/* socket cookie, the connection's id in task_ctx */
	struct rate_win rate;		/* calls on this connection, by any thread */
	s32	irq_cpu;		/* sk_incoming_cpu at the last call; -1 unknown or local */
	u32	ifindex;		/* its receiving interface: sk_rx_dst_ifindex at the last tick */
	u32	netns;			/* inode number of the socket's network namespace */
	struct sock_slot slot[2];	/* the last two CPUs that called on it */
};

/*
 * Per-task state. Created by the probes for tasks that call TCP send/recv; tasks without it are
 * non-network tasks. The monitor keeps the representative connection (the task's most
 * intensive live one), the rate of all the task's calls, and a vote on their IRQ CPUs, and
 * derives from them the view placement reads: intens and irq_cpu (netmon.bpf.c, "What a task
 * is").
 */
struct task_ctx {
	/* The view placement reads, rewritten at the task's own ticks (netmon.bpf.c, section 6). */
	u64	last_comm_ns;		/* last tick of its send/recv calls on any connection */
	u32	intens;			/* 1..10^6; 0 = not measured yet */
	s32	irq_cpu;		/* IRQ (softirq) CPU to be near, -1 unknown */
	u32	ifindex;		/* its receiving interface, 0 unknown */
	u32	netns;			/* ... in this network namespace (inode number) */

	/* What the view is derived from. */
	u64	rep_cookie;		/* representative connection's socket cookie, 0 none */
	u64	rep_last_ns;		/* last tick on the representative connection */
	u32	rep_intens;		/* its intensiveness */
	s32	rep_irq;		/* its IRQ CPU */
	u64	chal_since_ns;		/* another connection has been winning since, 0 none */
	struct rate_win all;		/* every call of the task, on any connection */
	s32	vote_cpu;		/* majority vote over the IRQ CPUs of its calls */
	u32	vote_cnt;
	u64	pub_ns;			/* last time it was written to net_tasks */

	/* Placement and the agent's moves. */
	u8	cls;			/* class at the last placement (enum miami_class) */
	u8	tier;			/* tier of the CPU it last ran on (enum miami_tier) */
	u8	placed_net;		/* last placement treated it as a network task */
	u8	pad;
	s32	run_cpu;		/* CPU it last ran on as a network task, -1 none */
	s32	target_cpu;		/* the agent's move target, -1 none (policy_moves) */
	s32	target_irq;		/* irq_cpu when the move was applied: a re-pin drops it */
	u64	target_until_ns;	/* its end of life: target_ttl_ns (shed_ttl_ns) after it came */
	u32	move_seq;		/* seq of the last policy_moves entry applied */
	u32	moves_gen;		/* policy_moves_gen when policy_moves was last looked up */
};

/*
 * A process's network view (paper III-B: "a process is represented by its most intensive
 * connection"), in task storage of its thread group leader: the most intensive of its threads
 * that communicates, as that thread last published itself (netmon.bpf.c publish_proc()). Its
 * other threads, which call no send/recv of their own (a server's main or worker-pool thread),
 * are placed in this IRQ CPU's LLC when there is room there (main.bpf.c, section 2).
 */
struct proc_ctx {
	u64	last_ns;		/* when the representative thread last published */
	s32	tid;			/* the representative thread */
	s32	irq_cpu;		/* its IRQ CPU */
	u32	intens;			/* its intensiveness */
	u32	pad;
};

/*
 * A time-windowed busy average of one CPU's network tasks, in 1/1024 of a CPU: of all of them
 * (avg) and of the class-high ones among them (high_avg), over the same windows. Room for a
 * class-high task on its IRQ CPU counts only the second (has_room()).
 */
struct load_avg {
	u64	win_start_ns;
	u64	win_busy_ns;
	u64	win_high_ns;
	u32	avg;
	u32	high_avg;
};

/* Window of the load averages (main.bpf.c rodata). */
extern const volatile u64 load_win_ns;

static __always_inline u32 load_util(u64 busy_ns, u64 elapsed)
{
	u64 util = busy_ns * 1024 / elapsed;

	return util > 1024 ? 1024 : util;
}

/* Add @busy_ns (of a class-high task if @high) to @la and close its window when it is over. */
static __always_inline void load_add(struct load_avg *la, u64 busy_ns, bool high, u64 now)
{
	u64 elapsed;

	la->win_busy_ns += busy_ns;
	if (high)
		la->win_high_ns += busy_ns;
	elapsed = now - la->win_start_ns;
	if (elapsed < load_win_ns)
		return;
	la->avg = (la->avg + load_util(la->win_busy_ns, elapsed)) / 2;
	la->high_avg = (la->high_avg + load_util(la->win_high_ns, elapsed)) / 2;
	la->win_start_ns = now;
	la->win_busy_ns = 0;
	la->win_high_ns = 0;
}

/*
 * The average (of class-high tasks if @high) as seen now: halved for every window that passed
 * without an update.
 */
static __always_inline u32 load_read(const struct load_avg *la, bool high, u64 now)
{
	u64 idle_wins = (now - la->win_start_ns) / load_win_ns;
	u32 avg = high ? la->high_avg : la->avg;

	if (idle_wins <= 1)
		return avg;
	if (idle_wins > 11)
		return 0;
	return avg >> (idle_wins - 1);
}

struct cpu_ctx {
	u64		run_start_ns;	/* when the current task started running */
	struct load_avg	net_load;	/* network tasks' running time: what "room" on a CPU means */
	u8		cur_net;	/* the running task is a network task */
	u8		cur_high;	/* ... of class high */
	u8		cur_kthread;	/* the running task is a kernel thread (ksoftirqd, kworker) */
	u8		is_irq;		/* a NIC input IRQ targets this CPU (set by user space) */
	u8		irq_llc;	/* ... or another CPU of its LLC (agent.bpf.c) */
	u8		refilled;	/* dispatch() gave the running task another slice */
	/* Written by the CPU that enqueues: a hint, read racily by stealing siblings. */
	s32		core_waiter;	/* pid of a network task queued here, its IRQ CPU; 0 none */
	u64		core_wait_ns;	/* ... since when */
} __attribute__((aligned(64)));	/* one cache line per CPU: remote readers, local writers */

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctx_stor SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct proc_ctx);
} proc_ctx_stor SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MIAMI_MAX_CPUS);
	__type(key, u32);
	__type(value, struct cpu_ctx);
} cpu_ctx_stor SEC(".maps") __weak;

/* The network tasks (netmon.bpf.c writes, agent.bpf.c copies out for user space), by tid. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MIAMI_MAX_NET_TASKS);
	__type(key, s32);
	__type(value, struct net_task);
} net_tasks SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MIAMI_NR_STATS);
	__type(key, u32);
	__type(value, u64);
} stats SEC(".maps") __weak;

static __always_inline void stat_add(u32 idx, u64 v)
{
	u64 *cnt = bpf_map_lookup_elem(&stats, &idx);

	if (cnt)
		(*cnt) += v;
}

static __always_inline void stat_inc(u32 idx)
{
	stat_add(idx, 1);
}

/* Class boundaries, in main.bpf.c's .data: user space rewrites them at run time. */
extern volatile u32 class_high_min;
extern volatile u32 class_middle_min;

/* The class of @intens against boundaries @high and @middle. */
static __always_inline u32 class_by(u32 intens, u32 high, u32 middle)
{
	if (intens >= high)
		return MIAMI_CLASS_HIGH;
	if (intens >= middle)
		return MIAMI_CLASS_MIDDLE;
	return MIAMI_CLASS_LOW;
}

static __always_inline u32 class_of(u32 intens)
{
	return class_by(intens, class_high_min, class_middle_min);
}

/* netmon.bpf.c: entries added to net_tasks so far. */
extern volatile u64 net_tasks_added;

/* Set by the loader before load (main.bpf.c rodata): CPUs possible. */
extern const volatile u32 nr_cpu_ids;

/*
 * agent.bpf.c. Is @p (its @taskc) a network task right now? Releases it (step 1) when it has
 * been silent for release_ns.
 */
__hidden bool is_net_task(struct task_ctx *taskc, u64 now);
/*
 * agent.bpf.c. The IRQ CPU of @p's process when @p itself is no network task but another of its
 * threads is (struct proc_ctx, live within release_ns); -1 otherwise.
 */
__hidden s32 proc_irq_cpu(struct task_struct *p, u64 now);
/* agent.bpf.c. Take the agent's pending move for @p, if any, within the round's budget. */
__hidden void apply_move(const struct task_struct *p, struct task_ctx *taskc, u64 now);

/* The agent's moves by tid (policy.bpf.c writes, agent.bpf.c apply_move() takes them). LRU: an
 * entry never applied goes when the table fills; MIAMI_MOVE_ROUNDS old, it is ignored anyway. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MIAMI_MAX_MOVES);
	__type(key, s32);
	__type(value, struct policy_move);
} policy_moves SEC(".maps") __weak;

/* agent.bpf.c: the agent's knobs (user space) and the moves' budget and generation. */
extern volatile u64 release_ns;
extern volatile u32 max_moves;
extern volatile u32 round_moves;
extern volatile u32 policy_moves_gen;
extern u32 policy_moves_seq;
/* agent.bpf.c: the snapshot of net_tasks (snap_tasks_take()) and the CPU loads. */
extern u32 snap_nr_tasks;
extern struct net_task snap_tasks[MIAMI_MAX_NET_TASKS];
__hidden void snap_tasks_take(u64 now, u64 stale_ns);
__hidden void snap_cpu_loads(u64 now);
/* policy.bpf.c: the agent's rounds so far, and each CPU's load over the last one. */
extern u64 agent_round_no;
extern u32 agent_load[MIAMI_MAX_CPUS];
extern s32 agent_irq_top[MIAMI_MAX_CPUS];

/* main.bpf.c: the LLC map (rodata) and the LLCs overloaded on average (the agent writes it). */
extern const volatile u32 cpu_llc[MIAMI_MAX_CPUS];
extern const volatile u32 llc_cpus[MIAMI_MAX_CPUS];
extern const volatile u32 llc_first[MIAMI_MAX_LLCS];
extern const volatile u32 llc_nr[MIAMI_MAX_LLCS];
extern volatile u8 llc_overloaded[MIAMI_MAX_LLCS];
extern volatile u32 nr_llcs_overloaded;

/*
 * CPUs that take no NIC input IRQ, and the CPUs of the LLCs in which no CPU takes one
 * (main.bpf.c; agent.bpf.c keeps both up to date).
 */
extern private(MIAMI) struct bpf_cpumask __kptr *non_irq_cpumask;
extern private(IRQ_FREE) struct bpf_cpumask __kptr *irq_free_cpumask;
extern volatile u32 nr_irq_free_cpus;

static __always_inline struct cpu_ctx *try_lookup_cpu_ctx(s32 cpu)
{
	u32 key = cpu;

	return bpf_map_lookup_elem(&cpu_ctx_stor, &key);
}

/* Does a NIC input IRQ target @cpu (user space sets cpu_ctx.is_irq: agent.bpf.c)? */
static __always_inline bool is_irq_cpu(s32 cpu)
{
	struct cpu_ctx *cpuc = try_lookup_cpu_ctx(cpu);

	return cpuc && cpuc->is_irq;
}

static __always_inline struct task_ctx *try_lookup_task_ctx(const struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctx_stor, (struct task_struct *)p, 0, 0);
}

#endif /* __MIAMI_BPF_H */
