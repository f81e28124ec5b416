/* SPDX-License-Identifier: GPL-2.0 */
/*
 * `make overhead`'s floor: probes that only count, at the places scx_miami's TCP probes attach
 * (bpf/netmon.bpf.c, sections 1-3 and 5). What bpf_stats reads for them under the same load is
 * what any program costs there: the kernel's dispatch and the stats' own clock reads, inflated
 * by a hypervisor where the host is a VM. scripts/overhead.sh prints scx_miami's figures beside
 * them. Built twice: -DFENTRY for fentry, else tracepoints; both load nowhere else.
 * No vmlinux.h: a program that reads no argument needs no kernel type.
 */
#define SEC(name) __attribute__((section(name), used))

char _license[] SEC("license") = "GPL";

unsigned long long nr_calls;

/* A program that only counts, at @place. */
#define FLOOR(place, name)				\
	SEC(place) int name(void *ctx)			\
	{						\
		__sync_fetch_and_add(&nr_calls, 1);	\
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
