// SPDX-License-Identifier: GPL-2.0
//! Host test of `miami::maps::lookup_all` on a real kernel map (no sched_ext needed, but
//! root to create a BPF map): an LRU hash shaped like net_tasks, holding more entries than one
//! batch, is read whole. libbpf-rs' own batch iterator stops at the first short batch, and a
//! hash map's batches are short wherever a bucket does not fit in what is left of one: on the
//! host's 6.18 it read 4,095 of 12,000 such entries in batches of 1,024, and 127 of 5,000 in
//! batches of 64.

use std::collections::BTreeSet;

use libbpf_rs::{libbpf_sys, MapCore, MapFlags, MapHandle, MapType};
use miami::maps::{lookup_all, lookup_percpu_array};

const VALUE_SIZE: u32 = 64;

fn lru_hash(max_entries: u32) -> MapHandle {
    let opts = libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as _,
        ..Default::default()
    };
    MapHandle::create(
        MapType::LruHash,
        Some("t_lookup_all"),
        4,
        VALUE_SIZE,
        max_entries,
        &opts,
    )
    .expect("creating a BPF map (the host tests run as root)")
}

/// @n entries, key i, value i repeated, in a map of @max_entries; read back in batches of @batch.
fn roundtrip(n: u32, max_entries: u32, batch: u32) {
    let map = lru_hash(max_entries);
    for i in 0..n {
        let value: Vec<u8> = (0..VALUE_SIZE).map(|_| i as u8).collect();
        map.update(&i.to_ne_bytes(), &value, MapFlags::ANY).unwrap();
    }
    let rows = lookup_all(&map, batch).unwrap();
    let keys: BTreeSet<u32> = rows
        .iter()
        .map(|(k, _)| u32::from_ne_bytes(k[..4].try_into().unwrap()))
        .collect();
    assert_eq!(rows.len(), n as usize, "entries read (batch {batch})");
    assert_eq!(keys, (0..n).collect(), "every key once (batch {batch})");
    for (k, v) in &rows {
        let i = u32::from_ne_bytes(k[..4].try_into().unwrap());
        assert!(v.iter().all(|&b| b == i as u8), "value of key {i}");
    }
}

#[test]
fn lookup_all_reads_past_one_batch() {
    // net_tasks' shape: 16384 entries, 1024 per batch (scheduler.rs BATCH), 2,000 threads.
    roundtrip(2000, 16384, 1024);
    roundtrip(12000, 16384, 1024);
    // Many short batches, and a table of exactly one batch.
    roundtrip(5000, 16384, 64);
    roundtrip(1024, 16384, 1024);
}

#[test]
fn lookup_all_of_an_empty_map_is_empty() {
    assert!(lookup_all(&lru_hash(16), 8).unwrap().is_empty());
}

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
