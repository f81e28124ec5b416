/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The only header shared by the BPF programs and the Rust loader (bindgen turns it into
 * bpf_intf.rs). Constants, the DSQ id layout, the stat ids and the structs user space reads.
 *
 * Spelling shared everywhere (BPF, Rust, stats, TUI, docs): tiers core/cache/other, classes
 * high/middle/low.
 */
#ifndef __MIAMI_INTF_H
#define __MIAMI_INTF_H

#ifndef __VMLINUX_H__
typedef unsigned char u8;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;
#endif

enum miami_consts {
	MIAMI_MAX_CPUS		= 1024,	/* rodata arrays are sized by this */
	MIAMI_MAX_LLCS		= 256,
	MIAMI_INTENS_MAX	= 1000000,	/* intensiveness range is 1..10^6 (paper III-B) */
	MIAMI_AVG_US_MAX	= 1000000,
	MIAMI_NO_CPU		= -1,
	MIAMI_MAX_NET_TASKS	= 16384,	/* net_tasks entries (LRU: the least recent go) */
	MIAMI_MAX_MOVES		= 2048,	/* policy_moves entries: 256 moves x a few rounds */
	MIAMI_COMM_LEN		= 16,
	MIAMI_MAX_NICS		= 256,	/* nic_cpus entries */
	MIAMI_SNAP_STALE	= 1024,	/* stale net_tasks entries deleted per snapshot */
	MIAMI_AGENT_MOVES_MAX	= 256,	/* moves one agent round decides at most (--max-migrations) */
	MIAMI_AGENT_LOG		= 4096,	/* the last moves kept for the loader's log (a power of 2) */
};

/*
 * The agent's constants (bpf/policy.bpf.c). Loads are in hundredths of a percent of a CPU.
 */
enum miami_agent_consts {
	MIAMI_LOAD_NONE		= 0xffffffff,	/* an offline CPU: no room, not overloaded */
	MIAMI_REPEAT_ROUNDS	= 10,	/* rounds during which the same move is not sent again */
	MIAMI_SHED_HOLD_ROUNDS	= 50,	/* rounds a shed holds (shed_ttl_ns: 5 s at 100 ms) */
	MIAMI_MOVE_ROUNDS	= 3,	/* rounds after which an unapplied move is stale */
	MIAMI_UTIL_MIN_SPAN_NS	= 50000000,	/* shortest span of a task's share of a CPU */
	MIAMI_AUTO_HIGH_DIV	= 4,	/* --class-bounds auto: high within 4x of the top task */
	MIAMI_AUTO_MIDDLE_DIV	= 64,	/* ... middle within 64x */
	MIAMI_AUTO_START_HIGH	= 100000,	/* ... before any task was seen */
	MIAMI_AUTO_START_MIDDLE	= 10000,
};

/*
 * DSQ ids: CPU N owns the per-CPU DSQ N; MIAMI_DSQ_SHARED is the vtime DSQ shared by all
 * CPUs for tasks that have no placement preference. All ids stay far below 2^63 (the kernel's
 * built-in DSQ ids have bit 63 set).
 */
enum miami_dsq {
	MIAMI_DSQ_SHARED	= MIAMI_MAX_CPUS,
};

/* Placement tier of a network task, relative to its representative connection's IRQ CPU. */
enum miami_tier {
	MIAMI_TIER_CORE		= 0,	/* the IRQ CPU itself */
	MIAMI_TIER_CACHE	= 1,	/* shares the IRQ CPU's last-level cache */
	MIAMI_TIER_OTHER	= 2,	/* anything else */
	MIAMI_NR_TIERS		= 3,
	MIAMI_TIER_NONE		= 3,	/* not a network task (never placed by tier) */
};

/* Communication class, by intensiveness against the two boundaries. */
enum miami_class {
	MIAMI_CLASS_HIGH	= 0,
	MIAMI_CLASS_MIDDLE	= 1,
	MIAMI_CLASS_LOW		= 2,
	MIAMI_NR_CLASSES	= 3,
};

/*
 * Counters, one slot each in the per-CPU `stats` array. Rust sums them over CPUs and names them
 * in ONE table (src/stats.rs); a host test checks that the table covers every id once.
 * The enqueue counters form a tier x class block: MIAMI_STAT_ENQ_CORE_HIGH + tier * 3 + class.
 */
enum miami_stat {
	MIAMI_STAT_ENQ_CORE_HIGH,
	MIAMI_STAT_ENQ_CORE_MIDDLE,
	MIAMI_STAT_ENQ_CORE_LOW,
	MIAMI_STAT_ENQ_CACHE_HIGH,
	MIAMI_STAT_ENQ_CACHE_MIDDLE,
	MIAMI_STAT_ENQ_CACHE_LOW,
	MIAMI_STAT_ENQ_OTHER_HIGH,
	MIAMI_STAT_ENQ_OTHER_MIDDLE,
	MIAMI_STAT_ENQ_OTHER_LOW,
	MIAMI_STAT_ENQ_NORMAL,		/* placements of non-network (or released) tasks */
	MIAMI_STAT_NORMAL_AVOID_IRQ,	/* ...of which went to an idle non-IRQ CPU */
	MIAMI_STAT_RUN_CORE_NS,		/* network-task runtime by tier */
	MIAMI_STAT_RUN_CACHE_NS,
	MIAMI_STAT_RUN_OTHER_NS,
	MIAMI_STAT_RELEASES,		/* network tasks released after going silent (step 1) */
	MIAMI_STAT_TIER_CHANGES,	/* a network task started running on a different tier */
	MIAMI_STAT_PREEMPT_KICKS,	/* high class claimed its IRQ CPU from a non-network task */
	MIAMI_STAT_PROBE_SEND,		/* tcp_sendmsg calls seen */
	MIAMI_STAT_PROBE_RECV,		/* tcp_recvmsg calls seen */
	MIAMI_STAT_PROBE_RCV_PKT,	/* tcp_rcv_established calls seen (receive path) */
	MIAMI_STAT_RX_IRQ_CPU,		/* ...of a NIC we know, on one of its IRQ CPUs */
	MIAMI_STAT_RX_OFF_IRQ,		/* ...elsewhere: RPS/RFS steering or the socket's backlog */
	MIAMI_STAT_SOCKS_TRACKED,	/* sockets that got a sock_ctx */
	MIAMI_STAT_REP_CHANGES,		/* a task's representative connection changed */
	MIAMI_STAT_NET_LLC_HOLD,	/* no room in the LLC, queued there: LLC not overloaded */
	MIAMI_STAT_NET_SPILL,		/* no room in the LLC, took an idle CPU outside: overloaded */
	MIAMI_STAT_DIRECT_LOCAL,	/* select_cpu() dispatched straight to an idle CPU */
	MIAMI_STAT_DSP_CPU,		/* dispatch() took a task from its own per-CPU DSQ */
	MIAMI_STAT_DSP_SHARED,		/* ... from the shared vtime DSQ */
	MIAMI_STAT_DSP_STEAL_LLC,	/* ... from an LLC sibling's per-CPU DSQ */
	MIAMI_STAT_DSP_STEAL_FAR,	/* ... from a per-CPU DSQ in another LLC */
	MIAMI_STAT_POLICY_UPGRADES,	/* agent moves applied: step 2, toward the IRQ CPU's LLC */
	MIAMI_STAT_POLICY_SHEDS,	/* agent moves applied: step 3, off an overloaded CPU */
	MIAMI_STAT_POLICY_DEFERRED,	/* agent moves held back: the round's budget was spent */
	MIAMI_STAT_TARGET_EXPIRED,	/* agent targets dropped: lifetime over, or reason gone */
	MIAMI_STAT_NET_MIGRATIONS,	/* a network task started running on another CPU than before */
	MIAMI_STAT_REP_CLOSED,		/* a task closed its representative connection */
	MIAMI_STAT_PROBE_MISSED,	/* calls not counted: no socket or task storage to be had */
	MIAMI_STAT_PROC_LLC,		/* a network process's other thread placed in its LLC */
	MIAMI_STAT_PROC_OUT,		/* ...on an idle CPU elsewhere: none idle in its LLC */
	MIAMI_STAT_STARVED,		/* tasks run by the starvation guard (run_starved()) */
	/* --test-time-dispatch: ns in dispatch() calls by outcome, DSP_CPU's order, then none. */
	MIAMI_STAT_DSP_CPU_NS,
	MIAMI_STAT_DSP_SHARED_NS,
	MIAMI_STAT_DSP_STEAL_LLC_NS,
	MIAMI_STAT_DSP_STEAL_FAR_NS,
	MIAMI_STAT_DSP_NONE_NS,
	MIAMI_NR_STATS,
};

/*
 * One entry of the `net_tasks` LRU hash, keyed by tid: a recently communicating thread, written
 * by the monitor when its view changes and at most once per intensiveness window otherwise.
 * miami_snapshot() copies the live ones out for the agent and the per-task table, and deletes
 * entries that went stale; past MIAMI_MAX_NET_TASKS threads the least recently written go first.
 */
struct net_task {
	u64	last_comm_ns;	/* CLOCK_MONOTONIC of its last send/recv tick (a call's, within a jiffy) */
	s32	tid;
	s32	tgid;
	u32	intens;
	s32	irq_cpu;
	s32	cpu;		/* CPU of its last tick's call */
	u32	ifindex;	/* in the namespace netns: ifindexes are per namespace */
	u8	cls;		/* enum miami_class at its last placement */
	u8	tier;		/* enum miami_tier it last ran in */
	u8	pad[2];
	u32	netns;		/* inode number of its network namespace (/proc/PID/ns/net) */
	char	comm[MIAMI_COMM_LEN];
	u64	runtime_ns;	/* its CPU time (se.sum_exec_runtime) at last_comm_ns */
};

/* Why the agent moves a task (struct policy_move.kind). */
enum miami_move_kind {
	MIAMI_MOVE_UPGRADE	= 1,	/* step 2: a better tier has room */
	MIAMI_MOVE_SHED		= 2,	/* step 3: its CPU is overloaded */
};

/*
 * One entry of the `policy_moves` hash, keyed by tid, written by the agent (user space): "place
 * thread @tid on @cpu from now on". A new @seq marks a new move; the BPF side applies it at the
 * task's next placement if the round's budget allows. User space deletes entries a few rounds
 * old.
 */
struct policy_move {
	s32	tid;
	s32	cpu;
	u32	seq;
	u32	kind;		/* enum miami_move_kind */
	u64	round;		/* the agent round that sent it: stale MIAMI_MOVE_ROUNDS later */
};

/*
 * A network task as the agent's round sees it (bpf/policy.bpf.c agent_views[]): from the
 * snapshot of net_tasks, or written by tests/policy.rs.
 */
struct agent_view {
	u64	age_ns;		/* since its last send/recv tick */
	s32	tid;
	u32	intens;
	s32	irq_cpu;
	s32	cpu;		/* CPU of its last call: where it runs */
	s32	util;		/* share of a CPU it used lately, hundredths of a percent; -1 unknown */
	u8	active;		/* set by the round: valid and not released (step 1) */
	u8	cls;		/* set by the round: enum miami_class */
	u8	tier;		/* set by the round: enum miami_tier */
	u8	pad;
};

/* One move an agent round decided (agent_moves[], and the loader's log, agent_log[]). */
struct agent_move {
	s32	tid;
	s32	cpu;		/* target */
	u32	kind;		/* enum miami_move_kind */
	s32	from;		/* where the round saw it */
	s32	irq;		/* its IRQ CPU */
	s32	util;		/* its share of a CPU, as agent_view.util */
	u32	load_from;	/* the two CPUs' loads, hundredths of a percent */
	u32	load_to;
	u32	cls;		/* its class in this round */
	u32	pad;
};

/* Flags of struct agent_round_arg. */
enum miami_round_flags {
	MIAMI_ROUND_VIEWS	= 1,	/* agent_views[] are given: no snapshot */
};

/* Argument of the miami_agent_round syscall program (tests, and loaders without BPF loads). */
struct agent_round_arg {
	u64	now_ns;		/* CLOCK_MONOTONIC of the snapshot */
	u64	stale_ns;	/* as snapshot_arg */
	u32	flags;
	u32	nr_views;	/* with MIAMI_ROUND_VIEWS: agent_views[] filled */
};

/*
 * The `nic_cpus` hash map: one entry per NIC of the loader's network namespace, keyed by
 * (namespace inode, ifindex) as sockets record them, holding the CPUs its receive IRQs go to.
 */
struct nic_key {
	u32	netns;
	u32	ifindex;
};

struct nic_cpus {
	u64	cpus[MIAMI_MAX_CPUS / 64];	/* bit N = CPU N */
};

/* Argument of the miami_snapshot syscall program: a net_tasks entry silent this long is stale. */
struct snapshot_arg {
	u64 stale_ns;
};

/* Arguments of the miami_set_irq_cpu syscall program (user space -> IRQ CPU mask). */
struct set_irq_cpu_arg {
	s32 cpu;
	u32 is_irq;
};

#endif /* __MIAMI_INTF_H */
