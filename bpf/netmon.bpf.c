/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_miami communication load monitor (MiAMI paper, section III-B).
 *
 * fentry probes on tcp_sendmsg() and tcp_recvmsg() see every TCP send/recv call, in both
 * directions: the paper's placement applies to senders and receivers alike. Each call is
 * counted in the connection's sock_ctx (socket local storage), and at most once per jiffy per
 * connection and CPU the calls counted so far update it and the calling task's task_ctx
 * (task local storage): a "tick" (section 6). No loops over sockets or tasks, no allocation
 * besides the two storages: a call costs one storage lookup, a count and a jiffies read, a tick
 * a task storage lookup, one clock read and a few comparisons; the net_tasks table is written
 * only when the task's view changes and at most once per window otherwise.
 *
 * 1. Intensiveness. The paper keeps a "history of recent communication intervals" per
 * connection and evaluates 10^6 / Average, Average in us clamped to [1, 10^6]. We take "recent"
 * as windows of time (rate_note()): the mean interval over the calls of a window of
 * intens_win_ns (100 ms), i.e. window length / calls in it, closed by the first tick after the
 * window has passed, and averaged with the windows before, halving their weight each time
 * (rate_close()). A window with one call gives that call's interval, so a slow connection is
 * measured by its own gaps. Why not the last N intervals: traffic is bursty (a sender blocks on
 * a full socket buffer, a receiver waits for the next burst), so N consecutive intervals are
 * either all short or contain one long gap, and a snapshot of them swings by 10x; a window of
 * time averages many bursts and matches the rate really achieved (t_intens.sh checks it against
 * a paced sender). The value is held between window closings; a new connection has none (0)
 * until its first window closes.
 *
 * 2. IRQ CPU. sk->sk_incoming_cpu is the CPU that processed the socket's last received segment,
 * i.e. its softirq CPU: for a receiver the data path, for a sender the ACK path. With hardware
 * RSS it is the CPU of the NIC queue's IRQ; with RPS/RFS it is whatever CPU the steering chose,
 * which is still where the protocol work happens. A connection over loopback has none: there
 * the "softirq CPU" is the peer's own CPU (the sender runs the receive path), and pulling each
 * end of a local pair toward the other's CPU honours no interrupt. Such a connection (its
 * segments arrive on ifindex 1, lo in every namespace) still counts for the task's
 * intensiveness, but names no IRQ CPU. The receiving interface is the socket's
 * sk_rx_dst_ifindex, read at each tick: TCP takes it from the segment that set the socket's
 * cached input route, and drops that route when a segment comes in on another interface
 * (tcp_v4_do_rcv(), tcp_v6_do_rcv()), so the next one sets it again. An ifindex means something
 * only within a network namespace, so each socket also records its namespace's inode number,
 * which user space matches against its own and /run/netns to name the interface.
 *
 * With --nic (nic_only), traffic on the other interfaces pulls nowhere either: a connection
 * whose segments arrive on an interface that is not one of the chosen NICs (!is_nic():
 * another NIC of ours, or any interface of another namespace) names its
 * softirq CPU only if that CPU is an IRQ CPU of the chosen NICs (cpu_ctx.is_irq), which is
 * where a container's traffic, arriving on one of them and bridged to a veth, is processed.
 * Otherwise its task is placed normally: an operator who names eth0 does not have the tasks
 * of a management NIC pulled to that NIC's CPU, and in the test guest the client namespace's
 * load generators (the paper's separate client machines) are not packed onto their NIC's LLC.
 *
 * A probe on tcp_rcv_established() checks the CPU that processes each segment of an
 * established connection against the receiving NIC's IRQ CPUs (the `nic_cpus` map, the
 * loader's per-NIC sets) and counts rx_irq_cpu or rx_off_irq: how much protocol work the NIC
 * IRQ map really describes. Off means RPS/RFS steering, threaded NAPI, or a segment queued on
 * the socket's backlog while its owner held the lock and processed on the owner's CPU. The
 * verdict is kept per CPU (rx_seen) and looked up again only when the interface, the namespace
 * or the map (nic_cpus_gen) changes, so a CPU that takes one NIC's segments costs no map lookup
 * per segment, and the probe reads no socket storage. Segments of other namespaces' NICs,
 * loopback and NICs the loader does not know are counted in neither.
 *
 * 3. What a task is (paper III-B: a process is represented by "the most intensive connection").
 * We work per task rather than per process: threads of one server often serve different
 * connections, and sched_ext places tasks. The task keeps:
 *  - its representative connection: a connection with a rate takes over when there is none
 *    (or it was closed by this task, see the tcp_close probe), and, after winning for one
 *    window, when the representative is no longer live (quiet for longer than 4 of its own
 *    mean intervals or one window) or when it is clearly more intensive: by more than a
 *    quarter. Hysteresis, because a proxy relaying one connection into another at one rate has
 *    two equally intensive connections, often on different NICs and LLCs; "at least as
 *    intensive" handed the task back and forth on nearly every call;
 *  - the rate of all its calls, on any connection (task_ctx.all);
 *  - a majority vote over the IRQ CPUs of its calls (vote_cpu/vote_cnt, capped at VOTE_MAX, so
 *    a new majority wins within a few calls; a silence of one window starts a new vote, so a
 *    task that comes back on another NIC follows it at its first call).
 * From them, at each tick: intens = the larger of the live representative's and the all-calls
 * rate; irq_cpu = the live representative's, else the vote. The paper's representative assumes
 * connections that live long enough to have a rate. A server whose connections carry one
 * request each (a web server under a load generator, an RPC front end, netperf TCP_CRR) has
 * none, however busy it is, and an event loop with many slow connections has only slow ones:
 * such a thread is as communication-intensive as its call rate says, which is what the
 * all-calls rate measures; for a task with one connection both rates agree. The IRQ CPU comes
 * from the representative when there is one, because the vote flips between two equally used
 * connections (the proxy) where the representative holds.
 *
 * Races: two threads ticking on one socket at once (a sender and a receiver thread) update its
 * window with atomics (rate_note_shared()): a call is counted once and a window closed once. The
 * clock is read after the storage lookup, and a window that another thread moved past our clock
 * reading only counts our calls: without that a negative elapsed time read as a huge one and the
 * rate as 1. Other sock_ctx fields (IRQ CPU, interface) are last-writer-wins, which is what they
 * mean. A task's task_ctx is written only by the task itself, with plain stores.
 *
 * 4. IRQ map events. The loader keeps the NIC IRQ map (nic_cpus, the IRQ CPUs) current by
 * re-reading /proc/irq and sysfs; under TCG a re-read costs 1-30 ms of CPU and a full scan
 * 90-290 ms (docs/results/loader-cost.md), so it re-reads only when something changed. Two
 * counters say when, each bumped at fexit, once the change is visible in /proc:
 *  - irq_affinity_events: irq_set_affinity_locked() (a write to /proc/irq/N/smp_affinity,
 *    irqbalance, a driver's hint; with the move pending until the next interrupt on some x86
 *    chips) and irq_do_set_affinity(), where every change reaches the chip: the pending move,
 *    a vector set up, an IRQ moved off a CPU going offline. A receive IRQ's target re-read.
 *  - irq_vector_events: request_threaded_irq() and free_irq(), every handler that comes or goes
 *    (a NIC probed or removed, ethtool -L). Only a full scan sees new vectors.
 * Interfaces that come, go or change namespace reach the loader by rtnetlink instead.
 *
 * 5. Tracepoints instead of fentry. Some kernels refuse fentry and fexit programs (EPERM at
 * load: this project's build hosts, whose kernel forces lockdown, do) yet run BTF tracepoint
 * programs. There the loader (--observe) loads the same bodies on tracepoints at the same
 * places: sock_send_length and sock_recv_length, which socket-layer sends and receives of every
 * family pass right after the protocol's sendmsg/recvmsg returns (kept when the socket is TCP
 * over IPv4 or IPv6, as tcp_sendmsg()/tcp_recvmsg() are), and tcp_probe, the first thing
 * tcp_rcv_established() does. Differences: tcp_close() has no tracepoint, so a representative
 * closed by its task is dropped when it goes quiet rather than at once, and the calls that wait
 * in a slot for a tick when a socket closes are not counted (section 6: a connection that
 * carries one request, recv, send and close within a jiffy on one CPU, counts one call
 * instead of two or three in its task's all-calls rate); in-kernel senders that
 * call tcp_sendmsg() without the socket layer are not seen; the IRQ map events (section 4) are
 * fexit probes too, so the IRQ map is re-read on a period.
 *
 * 6. What a call costs. On a real CPU (`make overhead`, docs/results/overhead.md) the clock read
 * and the task storage lookup each cost about as much as everything else a call did, and a bulk
 * flow makes tens of thousands of calls a second. So a call only counts itself in its socket,
 * in the slot of the CPU it runs on (sock_ctx.slot, two per socket, cpu_slot()), and the first
 * call on the socket from that CPU in a new jiffy takes the calls the slot counted and brings
 * the socket and the calling task up to date with them (a tick, note_tick(): the clock, the rate
 * windows, the task's storage, the vote, the representative, net_tasks). Nothing is sampled:
 * every call is counted, in the window it was made in or, if a window ended between it and its
 * tick (at most one jiffy, 4 ms at HZ=250, after the slot's previous tick), the next one. A call
 * made in the jiffy of its slot's last tick waits there for the socket's next call from that
 * CPU (a thread that moved to another CPU takes over the slot least recently ticked, its calls
 * with it), or for the socket's close: the tcp_close probe takes them if that tick was in this
 * jiffy or the last, and drops older ones rather than date them at the close. Per CPU, not per
 * socket: with one count per socket, the first call of each jiffy took every thread's calls, so
 * a thread that calls rarely beside a fast one on the same socket almost never ticked, and its
 * representative looked quiet (tests/host/observe.sh: a reader of 50 calls a second beside a
 * writer of 50,000 on the build host's CPU had no fresh row at all; per CPU its rows read the
 * writer's, also with both threads pinned to one CPU). Per thread cost 35-45 ns more per call
 * there than per CPU: the current task is a helper call, whose return that CPU's Safe RET
 * mitigation makes slow, where the CPU id is inlined. A thread that calls less often than once
 * per jiffy ticks at every call, as before; so does a call from a third CPU while the two slots
 * were both ticked in the current jiffy.
 */
#include "miami.bpf.h"

char _license[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sock_ctx);
} sock_ctx_stor SEC(".maps");

/* Per-NIC receive IRQ CPUs, written by user space whenever the IRQ map changes. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MIAMI_MAX_NICS);
	__type(key, struct nic_key);
	__type(value, struct nic_cpus);
} nic_cpus SEC(".maps");

/* Bumped by user space after each change of nic_cpus: cached verdicts are stale. */
volatile u32 nic_cpus_gen;

/*
 * The receive path's last verdict on this CPU (section 2): segments of one interface came in
 * here, and this CPU is one of its IRQ CPUs (MIAMI_RX_IRQ_CPU) or not. Per CPU, not per socket:
 * a CPU takes the segments of few interfaces, whatever the socket. Until stop 41 the verdict
 * and the interface were kept in sock_ctx, and the probe's socket storage lookup was half its
 * cost (`make overhead`, the build host's CPU, scratch builds in one session: 18.6 ns per
 * segment above a program that does nothing there when the probe only counted the segment,
 * 47.1 with the lookup, 57.5 with the rest). Most likely because that storage is written by
 * the socket's callers on another CPU: over loopback the receiver's, where the sender's CPU
 * processes the segment. Without the lookup: 23.0 against 58.9 (docs/results/overhead.md).
 */
struct rx_seen {
	u32	netns;
	u32	ifindex;
	u32	gen;			/* nic_cpus_gen when decided */
	u32	where;			/* enum miami_rx */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct rx_seen);
} rx_seen SEC(".maps");

/* Entries added to net_tasks: the snapshot walks the table only after one was (agent.bpf.c). */
volatile u64 net_tasks_added;

/* Section 4: IRQ map events, read by user space. */
volatile u64 irq_affinity_events;
volatile u64 irq_vector_events;

enum miami_rx {
	MIAMI_RX_UNKNOWN,	/* no nic_cpus entry for the segment's (netns, ifindex) */
	MIAMI_RX_IRQ_CPU,
	MIAMI_RX_OFF_IRQ,
};

/* Window over which intensiveness is averaged (--intens-window-ms). Default 100 ms: many bursts
 * long on real hardware, and a change of pattern shows within one agent period. Too short and
 * it swings with each burst (under TCG a 100 ms window swings by 2x). */
const volatile u64 intens_win_ns = 100000000;

/* Loopback's ifindex, the same in every network namespace. */
#define LOOPBACK_IFINDEX	1
/* --nic was given: only the chosen NICs' traffic pulls a task (section 2). Set before load. */
const volatile bool nic_only;
/* Most votes the IRQ CPU vote holds: a CPU that takes over the calls wins within as many. */
#define VOTE_MAX		8

/*
 * Make thread @tid (@taskc) its process's representative (struct proc_ctx) if it is the most
 * intensive of the process's communicating threads: more intensive than the one there, or that
 * one itself, or that one has not published for two windows (it publishes at least once per
 * window while it communicates).
 */
static __always_inline void publish_proc(struct task_ctx *taskc, u64 now, s32 tid)
{
	struct task_struct *leader = bpf_get_current_task_btf()->group_leader;
	struct proc_ctx *procc;

	if (taskc->irq_cpu < 0 || !leader)
		return;
	procc = bpf_task_storage_get(&proc_ctx_stor, leader, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!procc || (procc->tid != tid && taskc->intens <= procc->intens &&
		       now - procc->last_ns < 2 * intens_win_ns))
		return;
	procc->tid = tid;
	procc->irq_cpu = taskc->irq_cpu;
	procc->intens = taskc->intens;
	procc->last_ns = now;
}

/*
 * Write @taskc to net_tasks, and to its process's proc_ctx: when its view changed (@changed),
 * else once per window.
 */
static __always_inline void publish_task(struct task_ctx *taskc, u64 now, bool changed)
{
	struct net_task *nt;
	u64 pid_tgid;
	s32 tid;

	if (!changed && now - taskc->pub_ns < intens_win_ns)
		return;
	taskc->pub_ns = now;
	/* After the check: a helper call, which most ticks need not make. */
	pid_tgid = bpf_get_current_pid_tgid();
	tid = (u32)pid_tgid;
	publish_proc(taskc, now, tid);
	nt = bpf_map_lookup_elem(&net_tasks, &tid);
	if (!nt) {
		struct net_task fresh = { .tid = tid, .tgid = pid_tgid >> 32 };

		bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
		if (!bpf_map_update_elem(&net_tasks, &tid, &fresh, BPF_NOEXIST))
			__sync_fetch_and_add(&net_tasks_added, 1);
		nt = bpf_map_lookup_elem(&net_tasks, &tid);
		if (!nt)
			return;
	}
	nt->last_comm_ns = now;
	/* The agent's share of a CPU this thread needs (policy.bpf.c agent_util()), from two of these. */
	nt->runtime_ns = bpf_get_current_task_btf()->se.sum_exec_runtime;
	nt->intens = taskc->intens;
	nt->irq_cpu = taskc->irq_cpu;
	nt->cpu = bpf_get_smp_processor_id();
	nt->ifindex = taskc->ifindex;
	nt->netns = taskc->netns;
	nt->cls = class_of(taskc->intens);
	nt->tier = taskc->tier;
}

/* 10^6 / mean interval in us over a window of @elapsed_ns holding @calls intervals. */
static __always_inline u32 intens_of(u64 elapsed_ns, u32 calls)
{
	u64 avg_us = elapsed_ns / (calls ?: 1) / 1000;

	if (avg_us < 1)
		avg_us = 1;
	if (avg_us > MIAMI_AVG_US_MAX)
		avg_us = MIAMI_AVG_US_MAX;
	return MIAMI_INTENS_MAX / avg_us;
}

/*
 * The rate of a window of @elapsed_ns that just closed with @calls intervals, averaged with @old,
 * the rate so far: halves, so the windows before weigh 1/4, 1/8, ... (the paper's "history of
 * recent intervals"). One window of 100 ms holds a few calls under TCG, whose vCPUs run in
 * bursts, and swung by 2x either way; two equal connections then looked "clearly" different. A
 * window that held a long silence (over two windows) starts afresh: a task that stopped sending
 * is not averaged with its past.
 */
static __always_inline u32 rate_close(u32 old, s64 elapsed, u32 calls)
{
	u32 now_rate = intens_of(elapsed, calls);

	if (!old || elapsed > 2 * (s64)intens_win_ns)
		return now_rate;
	return (old + now_rate) / 2;
}

/*
 * Count @calls calls, the last at @now, in @w and close its window when it is over. A call ends
 * an interval, except the first one ever, which opens the window. Another thread may have moved
 * the window past @now since we read the clock (section 3, Races): then the calls only count.
 */
static __always_inline void rate_note(struct rate_win *w, u64 now, u32 calls)
{
	s64 elapsed;

	if (!w->last_ns) {
		w->win_start_ns = now;
		w->last_ns = now;
		w->win_calls = calls - 1;
		return;
	}
	w->win_calls += calls;
	elapsed = now - w->win_start_ns;
	if (elapsed >= (s64)intens_win_ns) {
		w->intens = rate_close(w->intens, elapsed, w->win_calls);
		w->win_start_ns = now;
		w->win_calls = 0;
	}
	if ((s64)(now - w->last_ns) > 0)
		w->last_ns = now;
}

/*
 * rate_note() for a window that two threads may update at once (a socket both tick on): the
 * calls are counted with an atomic add, and only the thread whose compare-and-swap moves the
 * window's start closes it, taking the calls counted so far with an atomic exchange. Calls
 * counted between the two land in the closing window instead of the next: one tick off, never a
 * window counted twice (plain updates did that, and a row read 2x the true rate).
 */
static __always_inline void rate_note_shared(struct rate_win *w, u64 now, u32 calls)
{
	u64 start = w->win_start_ns;
	s64 elapsed;

	if (!w->last_ns) {
		w->win_start_ns = now;
		w->last_ns = now;
		__sync_fetch_and_add(&w->win_calls, calls - 1);
		return;
	}
	__sync_fetch_and_add(&w->win_calls, calls);
	elapsed = now - start;
	if (elapsed >= (s64)intens_win_ns &&
	    __sync_val_compare_and_swap(&w->win_start_ns, start, now) == start) {
		calls = __sync_lock_test_and_set(&w->win_calls, 0);
		w->intens = rate_close(w->intens, elapsed, calls);
	}
	if ((s64)(now - w->last_ns) > 0)
		w->last_ns = now;
}

/*
 * Is the representative connection still live: not closed, and not quiet for longer than 4 of
 * its own mean intervals (4 * 10^6 / intens us, in ns) or one window, whichever is longer, plus
 * 1 ms? Its rate comes from windows, so a pause shorter than one says nothing; under TCG a
 * relay's connections paused 25 ms often enough to swap them 38 times in 6 s.
 */
static __always_inline bool rep_live(const struct task_ctx *taskc, u64 now)
{
	u64 quiet_ns;

	if (!taskc->rep_cookie || !taskc->rep_intens)
		return false;
	quiet_ns = 4000000000ULL / taskc->rep_intens;
	if (quiet_ns < intens_win_ns)
		quiet_ns = intens_win_ns;
	return (s64)(now - taskc->rep_last_ns) <= (s64)(quiet_ns + 1000000);
}

/*
 * Name @sockc's interface as @taskc's NIC (the stats' task table): a connection with an IRQ
 * CPU, or, while the task has none, any but loopback, so that a task talking only over a NIC
 * outside --nic (section 2) shows which one.
 */
static __always_inline void name_nic(struct task_ctx *taskc, const struct sock_ctx *sockc)
{
	if (sockc->irq_cpu < 0 &&
	    (taskc->irq_cpu >= 0 || !sockc->ifindex || sockc->ifindex == LOOPBACK_IFINDEX))
		return;
	taskc->ifindex = sockc->ifindex;
	taskc->netns = sockc->netns;
}

/*
 * Make @sockc's connection @taskc's representative if it should be (section 3). A connection
 * that would take over from a representative the task still has must keep winning, at every
 * tick of any challenger, for one window (chal_since_ns): the host stops a TCG guest's vCPUs
 * for hundreds of ms, after which both of a relay's connections look quiet, and the one whose
 * window closes first looks slower; one such stop swapped them, and a CI run counted 8 swaps in
 * 6 s against 5 allowed. A challenger loses the moment the representative is live and not
 * clearly slower, so a stop costs no swap; a representative that really went quiet or slow is
 * replaced one window later. With no representative (none yet, or closed) it is at once.
 */
static __always_inline void update_rep(struct task_ctx *taskc, struct sock_ctx *sockc, u64 now)
{
	u32 intens = sockc->rate.intens;

	if (taskc->rep_cookie != sockc->cookie) {
		if (!intens)
			return;
		if (rep_live(taskc, now) && (u64)intens * 4 <= (u64)taskc->rep_intens * 5) {
			taskc->chal_since_ns = 0;
			return;
		}
		if (taskc->rep_cookie) {
			if (!taskc->chal_since_ns)
				taskc->chal_since_ns = now;
			if ((s64)(now - taskc->chal_since_ns) < (s64)intens_win_ns)
				return;
		}
		taskc->rep_cookie = sockc->cookie;
		taskc->chal_since_ns = 0;
		stat_inc(MIAMI_STAT_REP_CHANGES);
	}
	taskc->rep_last_ns = now;
	if (intens)
		taskc->rep_intens = intens;
	if (sockc->irq_cpu >= 0)
		taskc->rep_irq = sockc->irq_cpu;
	name_nic(taskc, sockc);
}

/*
 * Count @calls votes for @cpu, the IRQ CPU of a socket's calls, in @taskc's majority vote: the
 * same as that many votes one after the other (a vote for another CPU takes one away, and one
 * with none left takes the vote over), held at VOTE_MAX.
 */
static __always_inline void vote_irq(struct task_ctx *taskc, s32 cpu, u32 calls)
{
	u32 cnt = taskc->vote_cnt;

	if (cpu < 0)
		return;
	if (!cnt || taskc->vote_cpu == cpu) {
		taskc->vote_cpu = cpu;
		cnt += calls;
	} else if (calls > cnt) {
		taskc->vote_cpu = cpu;
		cnt = calls - cnt;
	} else {
		cnt -= calls;
	}
	taskc->vote_cnt = cnt < VOTE_MAX ? cnt : VOTE_MAX;
}

/* Derive @taskc's view (intens, irq_cpu) from what it keeps; true if it changed. */
static __always_inline bool update_view(struct task_ctx *taskc, u64 now)
{
	u32 intens = taskc->all.intens;
	s32 irq = taskc->vote_cnt ? taskc->vote_cpu : MIAMI_NO_CPU;
	bool changed;

	if (rep_live(taskc, now)) {
		if (taskc->rep_intens > intens)
			intens = taskc->rep_intens;
		irq = taskc->rep_irq;
	}
	changed = intens != taskc->intens || irq != taskc->irq_cpu;
	taskc->intens = intens;
	taskc->irq_cpu = irq;
	return changed;
}

/*
 * A tick of @sockc (section 6), for the @calls calls counted since the last: the task's part.
 * @closing: the socket is being closed, so it is no candidate for representative.
 */
static __always_inline void update_task(struct sock_ctx *sockc, u64 now, u32 calls, bool closing)
{
	struct task_ctx *taskc;
	bool changed;

	taskc = bpf_task_storage_get(&task_ctx_stor, bpf_get_current_task_btf(), 0,
				     BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!taskc) {
		stat_inc(MIAMI_STAT_PROBE_MISSED);
		return;
	}
	if (!taskc->last_comm_ns) {
		taskc->irq_cpu = MIAMI_NO_CPU;
		taskc->rep_irq = MIAMI_NO_CPU;
		taskc->run_cpu = MIAMI_NO_CPU;
		taskc->target_cpu = MIAMI_NO_CPU;
		taskc->tier = MIAMI_TIER_NONE;
	}
	/* After a silence the old majority says nothing about where the next calls come from. */
	if (now - taskc->last_comm_ns > intens_win_ns)
		taskc->vote_cnt = 0;
	taskc->last_comm_ns = now;
	rate_note(&taskc->all, now, calls);
	vote_irq(taskc, sockc->irq_cpu, calls);
	/* Without a representative, the last connection names the NIC (as name_nic() allows). */
	if (!taskc->rep_cookie)
		name_nic(taskc, sockc);
	if (!closing)
		update_rep(taskc, sockc, now);
	changed = update_view(taskc, now);
	if (taskc->intens)
		publish_task(taskc, now, changed);
}

/* The chosen NICs' receive IRQ CPUs, by (network namespace, interface); NULL for another one. */
static __always_inline struct nic_cpus *nic_of(u32 netns, u32 ifindex)
{
	struct nic_key key = { .netns = netns, .ifindex = ifindex };

	return bpf_map_lookup_elem(&nic_cpus, &key);
}

/* Is @ifindex of namespace @netns one of the NICs the loader chose (section 2)? */
static __always_inline bool is_nic(u32 netns, u32 ifindex)
{
	return nic_of(netns, ifindex);
}

/* Did @cpu process a segment that came in on @ifindex as one of that NIC's IRQ CPUs? */
static __always_inline u32 rx_where(u32 netns, u32 ifindex, s32 cpu)
{
	struct nic_cpus *nc;

	if (cpu < 0 || cpu >= MIAMI_MAX_CPUS)
		return MIAMI_RX_UNKNOWN;
	nc = nic_of(netns, ifindex);
	if (!nc)
		return MIAMI_RX_UNKNOWN;
	if (nc->cpus[(cpu / 64) & (MIAMI_MAX_CPUS / 64 - 1)] & (1ULL << (cpu % 64)))
		return MIAMI_RX_IRQ_CPU;
	return MIAMI_RX_OFF_IRQ;
}

/*
 * A tick of @sockc (section 6): the @calls calls counted since the last, the last one now.
 * A subprogram of its own, not inlined: a tick comes once in about 130 calls of a bulk flow
 * on the build host's CPU, and inlined, its code around the count made every call slower
 * (`make overhead`, alternating sessions: send and recv 9-48 ns per call more than with the
 * tick out of line; docs/results/overhead.md). A static subprogram is verified with its
 * caller's argument types.
 */
static __noinline void note_tick(struct sock *sk, struct sock_ctx *sockc, u32 calls,
				 bool closing)
{
	u64 now = bpf_ktime_get_ns();
	s32 irq_cpu;

	if (!sockc->rate.last_ns) {
		sockc->cookie = bpf_get_socket_cookie(sk);
		sockc->netns = sk->__sk_common.skc_net.net->ns.inum;
		stat_inc(MIAMI_STAT_SOCKS_TRACKED);
	}
	if (sockc->ifindex != sk->sk_rx_dst_ifindex)
		sockc->ifindex = sk->sk_rx_dst_ifindex;
	rate_note_shared(&sockc->rate, now, calls);
	irq_cpu = sk->__sk_common.skc_incoming_cpu;
	if (sockc->ifindex == LOOPBACK_IFINDEX ||
	    (nic_only && !is_nic(sockc->netns, sockc->ifindex) && !is_irq_cpu(irq_cpu)))
		irq_cpu = MIAMI_NO_CPU;
	if (sockc->irq_cpu != irq_cpu)
		sockc->irq_cpu = irq_cpu;

	update_task(sockc, now, calls, closing);
}

/* The slot of @sockc held by the CPU of slot key @key (its id + 1), NULL if it holds none. */
static __always_inline struct sock_slot *own_slot(struct sock_ctx *sockc, s32 key)
{
	if (sockc->slot[0].key == key)
		return &sockc->slot[0];
	if (sockc->slot[1].key == key)
		return &sockc->slot[1];
	return NULL;
}

/*
 * The slot of @sockc that this CPU counts in (section 6): its own, else the one ticked longest
 * ago, taken over with the calls it holds (another CPU's, from an earlier jiffy: a thread that
 * moved here takes its own calls along); NULL when both were ticked in this jiffy by two other
 * CPUs. Keyed by CPU, not thread, for the cost (section 6). Two threads on one CPU share its
 * slot, so calls of one may tick with the other's: at most a jiffy of calls, where a thread that
 * sleeps between calls is usually switched out.
 * Plain stores: a slot is written by the CPU that holds it; a takeover races with its old
 * holder's last store at worst, one call off.
 */
static __always_inline struct sock_slot *cpu_slot(struct sock_ctx *sockc, u64 jiffies)
{
	s32 key = bpf_get_smp_processor_id() + 1, old;
	struct sock_slot *slot;

	slot = own_slot(sockc, key);
	if (slot)
		return slot;
	slot = &sockc->slot[sockc->slot[1].tick_jiffies < sockc->slot[0].tick_jiffies];
	old = slot->key;
	if (slot->tick_jiffies == jiffies ||
	    __sync_val_compare_and_swap(&slot->key, old, key) != old)
		return NULL;
	return slot;
}

/* A send or recv call on @sk: counted in this CPU's slot, and the first of a jiffy ticks. */
static __always_inline void note_call(struct sock *sk)
{
	struct sock_ctx *sockc;
	struct sock_slot *slot;
	u64 jiffies;
	u32 calls;

	sockc = bpf_sk_storage_get(&sock_ctx_stor, sk, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!sockc) {
		stat_inc(MIAMI_STAT_PROBE_MISSED);
		return;
	}
	jiffies = bpf_jiffies64();
	slot = cpu_slot(sockc, jiffies);
	if (!slot) {
		note_tick(sk, sockc, 1, false);
		return;
	}
	calls = slot->calls + 1;
	if (slot->tick_jiffies == jiffies) {
		slot->calls = calls;
		return;
	}
	slot->tick_jiffies = jiffies;
	slot->calls = 0;
	note_tick(sk, sockc, calls, false);
}

SEC("fentry/tcp_sendmsg")
int BPF_PROG(miami_tcp_sendmsg, struct sock *sk)
{
	stat_inc(MIAMI_STAT_PROBE_SEND);
	note_call(sk);
	return 0;
}

SEC("fentry/tcp_recvmsg")
int BPF_PROG(miami_tcp_recvmsg, struct sock *sk)
{
	stat_inc(MIAMI_STAT_PROBE_RECV);
	note_call(sk);
	return 0;
}

/*
 * A connection closes. If it is the closing task's representative, the task no longer has one:
 * its view falls back to its all-calls rate and IRQ vote at once, rather than after the
 * representative's quiet time. Only the closing task is told; another thread that had this
 * connection as its representative sees it go quiet.
 */
SEC("fentry/tcp_close")
int BPF_PROG(miami_tcp_close, struct sock *sk)
{
	struct sock_ctx *sockc;
	struct sock_slot *slot;
	struct task_ctx *taskc;
	u32 calls;
	u64 now;

	sockc = bpf_sk_storage_get(&sock_ctx_stor, sk, NULL, 0);
	if (!sockc)
		return 0;
	/*
	 * The calls counted on this CPU since its last tick on the socket: no next call will take
	 * them. Only if that tick was in this jiffy or the last, so they were made just now, most
	 * likely by the closing thread; older ones would date a long-idle socket's calls at its
	 * close.
	 */
	slot = own_slot(sockc, bpf_get_smp_processor_id() + 1);
	if (slot && slot->calls && bpf_jiffies64() - slot->tick_jiffies <= 1) {
		calls = slot->calls;
		slot->calls = 0;
		note_tick(sk, sockc, calls, true);
	}
	taskc = bpf_task_storage_get(&task_ctx_stor, bpf_get_current_task_btf(), 0, 0);
	if (!taskc || !taskc->rep_cookie || taskc->rep_cookie != sockc->cookie)
		return 0;
	taskc->rep_cookie = 0;
	stat_inc(MIAMI_STAT_REP_CLOSED);
	now = bpf_ktime_get_ns();
	if (update_view(taskc, now) && taskc->intens)
		publish_task(taskc, now, true);
	return 0;
}

/*
 * Receive path: once per received segment on an established connection, tracked by a task's
 * calls or not (section 2). Nothing of the socket's is written here.
 */
static __always_inline int note_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct rx_seen *seen;
	u32 iif, gen, netns, zero = 0;

	stat_inc(MIAMI_STAT_PROBE_RCV_PKT);
	seen = bpf_map_lookup_elem(&rx_seen, &zero);
	if (!seen)
		return 0;
	iif = skb->skb_iif;
	netns = sk->__sk_common.skc_net.net->ns.inum;
	gen = nic_cpus_gen;
	if (iif != seen->ifindex || netns != seen->netns || gen != seen->gen) {
		seen->where = rx_where(netns, iif, bpf_get_smp_processor_id());
		seen->ifindex = iif;
		seen->netns = netns;
		seen->gen = gen;
	}
	if (seen->where == MIAMI_RX_IRQ_CPU)
		stat_inc(MIAMI_STAT_RX_IRQ_CPU);
	else if (seen->where == MIAMI_RX_OFF_IRQ)
		stat_inc(MIAMI_STAT_RX_OFF_IRQ);
	return 0;
}

SEC("fentry/tcp_rcv_established")
int BPF_PROG(miami_tcp_rcv_established, struct sock *sk, struct sk_buff *skb)
{
	return note_rcv(sk, skb);
}

/* Section 5: the probes above on tracepoints, for kernels that refuse fentry. */
#define MIAMI_AF_INET	2	/* include/linux/socket.h, not in vmlinux.h */
#define MIAMI_AF_INET6	10

/* A TCP socket over IPv4 or IPv6: one that tcp_sendmsg() and tcp_recvmsg() serve. */
static __always_inline bool is_inet_tcp(struct sock *sk)
{
	u16 family;

	if (!sk || sk->sk_protocol != IPPROTO_TCP)
		return false;
	family = sk->__sk_common.skc_family;
	return family == MIAMI_AF_INET || family == MIAMI_AF_INET6;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(miami_tp_send, struct sock *sk, int ret, int flags)
{
	if (!is_inet_tcp(sk))
		return 0;
	stat_inc(MIAMI_STAT_PROBE_SEND);
	note_call(sk);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(miami_tp_recv, struct sock *sk, int ret, int flags)
{
	if (!is_inet_tcp(sk))
		return 0;
	stat_inc(MIAMI_STAT_PROBE_RECV);
	note_call(sk);
	return 0;
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(miami_tp_rcv, struct sock *sk, struct sk_buff *skb)
{
	return note_rcv(sk, skb);
}

/* Section 4. Counted whatever the return value: a failed change is one re-read too many. */
SEC("fexit/irq_set_affinity_locked")
int BPF_PROG(miami_irq_set_affinity)
{
	__sync_fetch_and_add(&irq_affinity_events, 1);
	return 0;
}

SEC("fexit/irq_do_set_affinity")
int BPF_PROG(miami_irq_do_set_affinity)
{
	__sync_fetch_and_add(&irq_affinity_events, 1);
	return 0;
}

SEC("fexit/request_threaded_irq")
int BPF_PROG(miami_irq_request)
{
	__sync_fetch_and_add(&irq_vector_events, 1);
	return 0;
}

SEC("fexit/free_irq")
int BPF_PROG(miami_irq_free)
{
	__sync_fetch_and_add(&irq_vector_events, 1);
	return 0;
}
