/* SPDX-License-Identifier: GPL-2.0 */
/*
 * `make overhead`'s floor: probes that do nothing, at the places scx_miami's TCP probes attach
 * (bpf/netmon.bpf.c, sections 1-3 and 5). What bpf_stats reads for them under the same load is
 * what any program costs there: the kernel's dispatch and the stats' own clock reads, inflated
 * by a hypervisor where the host is a VM. scripts/overhead.sh prints scx_miami's figures beside
 * them. Built twice: -DFENTRY for fentry, else tracepoints; both load nowhere else.
 * No vmlinux.h: a program that reads no argument needs no kernel type.
 *
 * Nothing to count: bpf_stats counts the calls (run_cnt). Until stop 40 each call added one to
 * a global counter, one cache line for every CPU: with a sender and a receiver on two CPUs,
 * the line moved between them on every call, and the floor read 98-108 ns per call against
 * scx_miami's 37-41 (per-CPU slots), so "above the floor" came out negative.
 */
#define SEC(name) __attribute__((section(name), used))

char _license[] SEC("license") = "GPL";

/* A program that does nothing, at @place. */
#define FLOOR(place, name)				\
	SEC(place) int name(void *ctx)			\
	{						\
		return 0;				\
	}

#ifdef FENTRY
FLOOR("fentry/tcp_sendmsg", floor_send)
FLOOR("fentry/tcp_recvmsg", floor_recv)
FLOOR("fentry/tcp_rcv_established", floor_rcv)
#else
FLOOR("tp_btf/sock_send_length", floor_send)
FLOOR("tp_btf/sock_recv_length", floor_recv)
FLOOR("tp_btf/tcp_probe", floor_rcv)
#endif
