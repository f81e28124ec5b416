// SPDX-License-Identifier: GPL-2.0
//! Host test of `miami::maps::lookup_percpu_array` on a real kernel map (no sched_ext needed,
//! but root to create a BPF map).

use libbpf_rs::{libbpf_sys, MapCore, MapFlags, MapHandle, MapType};
use miami::maps::lookup_percpu_array;

/// A per-CPU array shaped like the stats map (u32 key, u64 value): every entry, on every
/// possible CPU, comes back from the one batched read, in key order.
#[test]
fn percpu_array_read_whole() {
    let n = 39;
    let nr_cpus = libbpf_rs::num_possible_cpus().unwrap();
    let opts = libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as _,
        ..Default::default()
    };
    let map = MapHandle::create(MapType::PercpuArray, Some("t_percpu"), 4, 8, n, &opts)
        .expect("creating a BPF map (the host tests run as root)");
    // Key k holds 1000 * k + cpu on each CPU.
    for k in 0..n {
        let values: Vec<Vec<u8>> = (0..nr_cpus)
            .map(|c| (1000 * k as u64 + c as u64).to_ne_bytes().to_vec())
            .collect();
        map.update_percpu(&k.to_ne_bytes(), &values, MapFlags::ANY)
            .unwrap();
    }
    let rows = lookup_percpu_array(&map, n).unwrap();
    assert_eq!(rows.len(), n as usize);
    for (k, cpus) in rows.iter().enumerate() {
        assert_eq!(cpus.len(), nr_cpus);
        for (c, v) in cpus.iter().enumerate() {
            assert_eq!(v.as_slice(), (1000 * k as u64 + c as u64).to_ne_bytes());
        }
    }
    // Asking for more than the array holds: the kernel says ENOENT and gives what there is.
    assert_eq!(lookup_percpu_array(&map, n + 5).unwrap().len(), n as usize);
}
