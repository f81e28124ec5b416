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
 * and evaluates 10^6 / Average, Average in us clamped to [1, 10^6]. We keep the last
 * MIAMI_NR_INTV (8) intervals in a ring and average them. A fixed window rather than an EWMA:
 * it forgets an old pattern completely after 8 calls (a sender that switches from bulk to
 * paced is reclassified within 8 calls, which an EWMA only approaches), and its mean is exactly
 * the paper's Average. Each interval is clamped to 1 s before it is stored; any interval that
 * long already puts intensiveness at the bottom of the range.
 *
 * IRQ CPU. sk->sk_incoming_cpu is the CPU that processed the socket's last received segment,
 * i.e. its softirq CPU: for a receiver the data path, for a sender the ACK path. With hardware
 * RSS it is the CPU of the NIC queue's IRQ; with RPS/RFS it is whatever CPU the steering chose,
 * which is still where the protocol work happens. A probe on tcp_rcv_established() records the
 * receiving interface (skb_iif) and the CPU it ran on, as a cross-check.
 *
 * Representative connection (paper III-B: "the most intensive connection" of a process). We
 * work per task rather than per process: threads of one server often serve different
 * connections, and sched_ext places tasks. A call on connection C makes C the task's
 * representative if C already is, if C is at least as intensive, or if the representative has
 * gone quiet for more than 4 of its own mean intervals (plus 1 ms), so a finished bulk
 * connection cannot pin a task forever.
 *
 * Accepted races: two threads calling on one socket at once may interleave their updates of
 * sock_ctx; the window is re-summed on every call, so a lost slot update costs one sample and
 * never corrupts the mean. A task's task_ctx is only written by the task itself.
 */
#include "miami.bpf.h"

char _license[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sock_ctx);
} sock_ctx_stor SEC(".maps");

static __always_inline u32 intens_of(struct sock_ctx *sockc)
{
	u32 i, n = sockc->nr_intv < MIAMI_NR_INTV ? sockc->nr_intv : MIAMI_NR_INTV;
	u64 sum = 0, avg_us;

	if (!n)
		return 0;
#pragma unroll
	for (i = 0; i < MIAMI_NR_INTV; i++)
		sum += sockc->intv_ns[i];
	avg_us = sum / n / 1000;
	if (avg_us < 1)
		avg_us = 1;
	if (avg_us > MIAMI_AVG_US_MAX)
		avg_us = MIAMI_AVG_US_MAX;
	return MIAMI_INTENS_MAX / avg_us;
}

static __always_inline void update_task(struct sock_ctx *sockc, u64 now)
{
	struct task_ctx *taskc;
	u64 rep_quiet_ns;

	taskc = bpf_task_storage_get(&task_ctx_stor, bpf_get_current_task_btf(), 0,
				     BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!taskc)
		return;
	if (!taskc->last_comm_ns) {
		taskc->irq_cpu = MIAMI_NO_CPU;
		taskc->tier = MIAMI_TIER_NONE;
	}
	taskc->last_comm_ns = now;
	if (!sockc->intens)
		return;

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
}

static __always_inline void note_call(struct sock *sk)
{
	struct sock_ctx *sockc;
	u64 now = bpf_ktime_get_ns(), intv;

	sockc = bpf_sk_storage_get(&sock_ctx_stor, sk, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!sockc)
		return;

	if (!sockc->last_ns) {
		sockc->cookie = bpf_get_socket_cookie(sk);
		sockc->irq_cpu = MIAMI_NO_CPU;
		sockc->rx_cpu = MIAMI_NO_CPU;
		stat_inc(MIAMI_STAT_SOCKS_TRACKED);
	} else {
		intv = now - sockc->last_ns;
		if (intv > 1000000000ULL)
			intv = 1000000000ULL;
		sockc->intv_ns[sockc->nr_intv & (MIAMI_NR_INTV - 1)] = intv;
		if (sockc->nr_intv < 0xffffffff)
			sockc->nr_intv++;
		sockc->intens = intens_of(sockc);
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

/*
 * Receive path: once per received segment on an established connection. Only sockets that a
 * task already sent or received on are updated (no storage is created here), so the cost for
 * untracked traffic is one failed lookup.
 */
SEC("fentry/tcp_rcv_established")
int BPF_PROG(miami_tcp_rcv_established, struct sock *sk, struct sk_buff *skb)
{
	struct sock_ctx *sockc;

	stat_inc(MIAMI_STAT_PROBE_RCV_PKT);
	sockc = bpf_sk_storage_get(&sock_ctx_stor, sk, NULL, 0);
	if (!sockc)
		return 0;
	sockc->ifindex = skb->skb_iif;
	sockc->rx_cpu = bpf_get_smp_processor_id();
	return 0;
}
