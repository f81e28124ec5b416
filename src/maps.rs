// SPDX-License-Identifier: GPL-2.0
//! Reading BPF maps whole, where libbpf-rs' own helpers fall short.

use anyhow::{bail, Result};
use libbpf_rs::MapCore;

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
