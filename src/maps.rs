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
