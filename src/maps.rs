// SPDX-License-Identifier: GPL-2.0
//! Reading BPF maps whole, where libbpf-rs' own helpers fall short.

use anyhow::{bail, Result};
use libbpf_rs::MapCore;

/// Every (key, value) of hash map @map, @batch entries per BPF_MAP_LOOKUP_BATCH call, until the
/// kernel says ENOENT. Not libbpf-rs' lookup_batch(): its iterator ends at the first batch shorter
/// than asked, and a hash map's batch is short whenever the next bucket does not fit in what is
/// left of it (kernel/bpf/hashtab.c), so past one batch it may drop most entries (tests/maps.rs).
pub fn lookup_all(map: &impl MapCore, batch: u32) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    use libbpf_rs::libbpf_sys;
    use std::os::fd::AsRawFd;

    let (ks, vs) = (map.key_size() as usize, map.value_size() as usize);
    let mut keys = vec![0u8; ks * batch as usize];
    let mut values = vec![0u8; vs * batch as usize];
    // The batch token: a bucket index (u32) for hash maps; 8 bytes leave room.
    let (mut token_in, mut token_out) = ([0u8; 8], [0u8; 8]);
    let opts = libbpf_sys::bpf_map_batch_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_map_batch_opts>() as _,
        ..Default::default()
    };
    let mut out = Vec::new();
    for first in std::iter::once(true).chain(std::iter::repeat(false)) {
        let mut count = batch;
        // SAFETY: keys and values hold @batch entries of the map's sizes; the tokens 8 bytes.
        let ret = unsafe {
            libbpf_sys::bpf_map_lookup_batch(
                map.as_fd().as_raw_fd(),
                if first {
                    std::ptr::null_mut()
                } else {
                    token_in.as_mut_ptr().cast()
                },
                token_out.as_mut_ptr().cast(),
                keys.as_mut_ptr().cast(),
                values.as_mut_ptr().cast(),
                &mut count,
                &opts,
            )
        };
        let errno = if ret < 0 { -ret } else { 0 };
        if errno != 0 && errno != libc::ENOENT {
            bail!(
                "BPF_MAP_LOOKUP_BATCH on {}: {}",
                map.name().to_string_lossy(),
                std::io::Error::from_raw_os_error(errno)
            );
        }
        let n = count.min(batch) as usize;
        out.extend((0..n).map(|i| {
            (
                keys[i * ks..(i + 1) * ks].to_vec(),
                values[i * vs..(i + 1) * vs].to_vec(),
            )
        }));
        if errno == libc::ENOENT || n == 0 {
            break;
        }
        token_in = token_out;
    }
    Ok(out)
}

/// The first @n entries of per-CPU array @map, each as its value on every possible CPU, in one
/// BPF_MAP_LOOKUP_BATCH call where a lookup per key costs @n system calls: a stats snapshot
/// reads every counter, and under TCG each bpf() call cost about 0.3 ms
/// (docs/results/loader-cost.md).
pub fn lookup_percpu_array(map: &impl MapCore, n: u32) -> Result<Vec<Vec<Vec<u8>>>> {
    use libbpf_rs::libbpf_sys;
    use std::os::fd::AsRawFd;

    let nr_cpus = libbpf_rs::num_possible_cpus()?;
    // The kernel's per-CPU stride (bpf_map_copy_value()): the value size rounded up to 8.
    let vs = (map.value_size() as usize).next_multiple_of(8);
    let mut keys = vec![0u8; map.key_size() as usize * n as usize];
    let mut values = vec![0u8; vs * nr_cpus * n as usize];
    let mut token_out = [0u8; 8];
    let mut count = n;
    let opts = libbpf_sys::bpf_map_batch_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_map_batch_opts>() as _,
        ..Default::default()
    };
    // SAFETY: keys and values hold @n entries of the sizes the kernel writes for a per-CPU
    // map; the token 8 bytes (an array's is its u32 key).
    let ret = unsafe {
        libbpf_sys::bpf_map_lookup_batch(
            map.as_fd().as_raw_fd(),
            std::ptr::null_mut(),
            token_out.as_mut_ptr().cast(),
            keys.as_mut_ptr().cast(),
            values.as_mut_ptr().cast(),
            &mut count,
            &opts,
        )
    };
    // ENOENT: the array ended before @n entries; count says how many came.
    if ret < 0 && -ret != libc::ENOENT {
        bail!(
            "BPF_MAP_LOOKUP_BATCH on {}: {}",
            map.name().to_string_lossy(),
            std::io::Error::from_raw_os_error(-ret)
        );
    }
    Ok(values
        .chunks(vs * nr_cpus)
        .take(count.min(n) as usize)
        .map(|entry| entry.chunks(vs).map(<[u8]>::to_vec).collect())
        .collect())
}
