// SPDX-License-Identifier: GPL-2.0
//! Compiles bpf/*.bpf.c into one linked object and its libbpf-rs skeleton, and runs bindgen on
//! bpf/intf.h, the only header shared between BPF and Rust.

fn main() {
    scx_cargo::BpfBuilder::new()
        .unwrap()
        .enable_intf("bpf/intf.h", "bpf_intf.rs")
        .enable_skel("bpf/main.bpf.c", "bpf")
        .add_source("bpf/netmon.bpf.c")
        .add_source("bpf/agent.bpf.c")
        .compile_link_gen()
        .unwrap();
}
