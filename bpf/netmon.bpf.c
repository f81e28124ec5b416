/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_miami communication load monitor (MiAMI paper, section III-B).
 *
 * fentry probes on tcp_sendmsg() and tcp_recvmsg() see every TCP send/recv call, in both
 * directions: the paper's placement applies to senders and receivers alike. Each call updates
 * the connection's sock_ctx (socket local storage) and then the calling task's task_ctx (task
 * local storage). No loops over sockets or tasks, no allocation besides the two storages: each
 * call costs two storage lookups, one clock read and a fixed 8-slot sum.
 *
 * Intensiveness. The paper keeps a "history of recent communication intervals" per connection
 * and evaluates 10^6 / Average, Average in us clamped to [1, 10^6]. We take "recent" as a time
 * window: the mean interval over the calls of the last window of intens_win_ns (100 ms), i.e.
 * window length / calls in it, closed by the first call after the window has passed. A window
 * with one call gives that call's interval, so a slow connection is measured by its own gaps.
 * Why not the last N intervals: traffic is bursty (a sender blocks on a full socket buffer, a
 * receiver waits for the next burst), so N consecutive intervals are either all short or
 * contain one long gap, and a snapshot of them swings by 10x; a window of time averages many
 * bursts and matches the rate really achieved (t_intens.sh checks it against a paced sender).
 * The value is held between window closings; a new connection has none (0) until its first
 * window closes, and is placed normally until then.
 *
 * IRQ CPU. sk->sk_incoming_cpu is the CPU that processed the socket's last received segment,
 * i.e. its softirq CPU: for a receiver the data path, for a sender the ACK path. With hardware
 * RSS it is the CPU of the NIC queue's IRQ; with RPS/RFS it is whatever CPU the steering chose,
 * which is still where the protocol work happens. A probe on tcp_rcv_established() records the
 * receiving interface (skb_iif) and the CPU it ran on, as a cross-check. An ifindex means
 * something only within a network namespace, so each socket also records its namespace's inode
 * number, which user space matches against its own and /run/netns to name the interface.
 *
 * The same probe checks that CPU against the receiving NIC's IRQ CPUs (the `nic_cpus` map, the
 * loader's per-NIC sets) and counts rx_irq_cpu or rx_off_irq: how much protocol work the NIC
 * IRQ map really describes. Off means RPS/RFS steering, threaded NAPI, or a segment queued on
 * the socket's backlog while its owner held the lock and processed on the owner's CPU. The
 * verdict is kept per socket and looked up again only when the CPU, the interface or the map
 * (nic_cpus_gen) changes, so a steady flow costs no map lookup per segment. Sockets of other
 * namespaces, loopback and NICs the loader does not know are counted in neither.
 *
 * Representative connection (paper III-B: "the most intensive connection" of a process). We
 * work per task rather than per process: threads of one server often serve different
 * connections, and sched_ext places tasks. A call on connection C makes C the task's
 * representative if C already is, if C is at least as intensive, or if the representative has
 * gone quiet for more than 4 of its own mean intervals (plus 1 ms), so a finished bulk
 * connection cannot pin a task forever.
 *
 * Accepted races: two threads calling on one socket at once may interleave their updates of
 * sock_ctx; a lost increment costs one call in one window, and the window restarts from
 * scratch when it closes, so nothing accumulates. A task's task_ctx is only written by the
 * task itself.
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

enum miami_rx {
	MIAMI_RX_UNKNOWN,	/* no nic_cpus entry for the socket's (netns, ifindex) */
	MIAMI_RX_IRQ_CPU,
	MIAMI_RX_OFF_IRQ,
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MIAMI_NR_TASK_SLOTS);
	__type(key, u32);
	__type(value, struct net_task);
} net_tasks SEC(".maps");

/* Publish @taskc in the bounded per-task table user space reads. */
static __always_inline void publish_task(struct task_ctx *taskc, u64 now)
{
	u64 pid_tgid = bpf_get_current_pid_tgid();
	u32 tid = (u32)pid_tgid, slot = tid & (MIAMI_NR_TASK_SLOTS - 1);
	struct net_task *nt = bpf_map_lookup_elem(&net_tasks, &slot);

	if (!nt)
		return;
	if (nt->tid != tid) {
		nt->tid = tid;
		nt->tgid = pid_tgid >> 32;
		bpf_get_current_comm(nt->comm, sizeof(nt->comm));
	}
	nt->last_comm_ns = now;
	nt->intens = taskc->intens;
	nt->irq_cpu = taskc->irq_cpu;
	nt->cpu = bpf_get_smp_processor_id();
	nt->ifindex = taskc->ifindex;
	nt->netns = taskc->netns;
	nt->cls = class_of(taskc->intens);
	nt->tier = taskc->tier;
}

/* Window over which intensiveness is averaged (--intens-window-ms). Default 100 ms: many bursts
 * long on real hardware, and a change of pattern shows within one agent period. Too short and
 * it swings with each burst (under TCG a 100 ms window swings by 2x). */
const volatile u64 intens_win_ns = 100000000;

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

/* Make @sockc's connection @taskc's representative if it is the most intensive one. */
static __always_inline void update_rep(struct task_ctx *taskc, struct sock_ctx *sockc, u64 now)
{
	u64 rep_quiet_ns;

	/* 4 mean intervals of the representative: 4 * 10^6 / intens us, in ns. */
	rep_quiet_ns = taskc->intens ? 4000000000ULL / taskc->intens : 0;
	if (taskc->rep_cookie != sockc->cookie && sockc->intens < taskc->intens &&
	    now - taskc->rep_last_ns <= rep_quiet_ns + 1000000)
		return;

	if (taskc->rep_cookie != sockc->cookie) {
		taskc->rep_cookie = sockc->cookie;
		stat_inc(MIAMI_STAT_REP_CHANGES);
	}
	taskc->rep_last_ns = now;
	taskc->intens = sockc->intens;
	taskc->irq_cpu = sockc->irq_cpu;
	taskc->ifindex = sockc->ifindex;
	taskc->netns = sockc->netns;
}

static __always_inline void update_task(struct sock_ctx *sockc, u64 now)
{
	struct task_ctx *taskc;

	taskc = bpf_task_storage_get(&task_ctx_stor, bpf_get_current_task_btf(), 0,
				     BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!taskc)
		return;
	if (!taskc->last_comm_ns) {
		taskc->irq_cpu = MIAMI_NO_CPU;
		taskc->target_cpu = MIAMI_NO_CPU;
		taskc->tier = MIAMI_TIER_NONE;
	}
	taskc->last_comm_ns = now;
	if (!sockc->intens)
		return;
	update_rep(taskc, sockc, now);
	publish_task(taskc, now);
}

static __always_inline void note_call(struct sock *sk)
{
	struct sock_ctx *sockc;
	u64 now = bpf_ktime_get_ns(), elapsed;

	sockc = bpf_sk_storage_get(&sock_ctx_stor, sk, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!sockc)
		return;

	if (!sockc->last_ns) {
		sockc->cookie = bpf_get_socket_cookie(sk);
		sockc->netns = sk->__sk_common.skc_net.net->ns.inum;
		sockc->irq_cpu = MIAMI_NO_CPU;
		sockc->rx_cpu = MIAMI_NO_CPU;
		sockc->win_start_ns = now;
		stat_inc(MIAMI_STAT_SOCKS_TRACKED);
	} else {
		sockc->win_calls++;
		elapsed = now - sockc->win_start_ns;
		if (elapsed >= intens_win_ns) {
			sockc->intens = intens_of(elapsed, sockc->win_calls);
			sockc->win_start_ns = now;
			sockc->win_calls = 0;
		}
	}
	sockc->last_ns = now;
	sockc->irq_cpu = sk->__sk_common.skc_incoming_cpu;

	update_task(sockc, now);
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

/* Did @cpu process a segment that came in on @ifindex as one of that NIC's IRQ CPUs? */
static __always_inline u32 rx_where(u32 netns, u32 ifindex, s32 cpu)
{
	struct nic_key key = { .netns = netns, .ifindex = ifindex };
	struct nic_cpus *nc;

	if (cpu < 0 || cpu >= MIAMI_MAX_CPUS)
		return MIAMI_RX_UNKNOWN;
	nc = bpf_map_lookup_elem(&nic_cpus, &key);
	if (!nc)
		return MIAMI_RX_UNKNOWN;
	if (nc->cpus[(cpu / 64) & (MIAMI_MAX_CPUS / 64 - 1)] & (1ULL << (cpu % 64)))
		return MIAMI_RX_IRQ_CPU;
	return MIAMI_RX_OFF_IRQ;
}

/*
 * Receive path: once per received segment on an established connection. Only sockets that a
 * task already sent or received on are updated (no storage is created here), so the cost for
 * untracked traffic is one failed lookup.
 */
SEC("fentry/tcp_rcv_established")
int BPF_PROG(miami_tcp_rcv_established, struct sock *sk, struct sk_buff *skb)
{
	struct sock_ctx *sockc;
	u32 iif, gen;
	s32 cpu;

	stat_inc(MIAMI_STAT_PROBE_RCV_PKT);
	sockc = bpf_sk_storage_get(&sock_ctx_stor, sk, NULL, 0);
	if (!sockc)
		return 0;
	cpu = bpf_get_smp_processor_id();
	iif = skb->skb_iif;
	gen = nic_cpus_gen;
	if (cpu != sockc->rx_cpu || iif != sockc->ifindex || gen != sockc->rx_gen) {
		sockc->rx_where = rx_where(sockc->netns, iif, cpu);
		sockc->rx_gen = gen;
	}
	sockc->ifindex = iif;
	sockc->rx_cpu = cpu;
	if (sockc->rx_where == MIAMI_RX_IRQ_CPU)
		stat_inc(MIAMI_STAT_RX_IRQ_CPU);
	else if (sockc->rx_where == MIAMI_RX_OFF_IRQ)
		stat_inc(MIAMI_STAT_RX_OFF_IRQ);
	return 0;
}
