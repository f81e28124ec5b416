/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The smallest sched_ext scheduler: a name and no callbacks, so the kernel's defaults run every
 * task from the global FIFO. t_ops loads it (bpftool struct_ops register) as "another sched_ext
 * scheduler" that scx_miami must refuse to replace. It stands in for scx_bpfland there, whose
 * build from the crate registry took 4m41s of a cold `make test`; `make bench` still runs
 * scx_bpfland.
 *
 * No headers: libbpf matches the struct_ops type to the kernel's sched_ext_ops by name and
 * copies the members the local type has, here only the name (SCX_OPS_NAME_LEN, 128).
 */
#define SEC(name) __attribute__((section(name), used))

struct sched_ext_ops {
	char name[128];
};

char _license[] SEC("license") = "GPL";

SEC(".struct_ops.link")
struct sched_ext_ops peer_fifo = { .name = "peer_fifo" };
