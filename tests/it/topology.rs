// SPDX-License-Identifier: GPL-2.0
//! Host tests of `miami::topology::LlcMap`: the CPU -> LLC map the BPF side gets in rodata.

use miami::bpf_intf::{
    miami_consts_MIAMI_MAX_CPUS as MAX_CPUS, miami_consts_MIAMI_MAX_LLCS as MAX_LLCS,
};
use miami::topology::{LlcMap, LlcRuns};

/// @nr_llcs LLCs of @per_llc consecutive CPUs each.
fn blocks(nr_llcs: usize, per_llc: usize) -> Vec<(usize, usize)> {
    (0..nr_llcs * per_llc).map(|c| (c, c / per_llc)).collect()
}

#[test]
fn maps_cpus_to_llcs() {
    let m = LlcMap::from_pairs(8, blocks(2, 4)).unwrap();
    assert_eq!(m.cpu_llc, [0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(m.describe(), "0-3 | 4-7");
}

#[test]
fn single_llc() {
    let m = LlcMap::from_pairs(2, [(0, 0), (1, 0)]).unwrap();
    assert_eq!(m.cpu_llc, [0, 0]);
    assert_eq!(m.describe(), "0-1");
}

#[test]
fn interleaved_llcs() {
    // SMT siblings or chiplets numbered round-robin.
    let m = LlcMap::from_pairs(8, (0..8).map(|c| (c, c % 2))).unwrap();
    assert_eq!(m.cpu_llc, [0, 1, 0, 1, 0, 1, 0, 1]);
    assert_eq!(m.describe(), "0,2,4,6 | 1,3,5,7");
}

#[test]
fn missing_cpus_map_to_llc_0() {
    // Possible but not present CPUs (6, 7) get no pair.
    let m = LlcMap::from_pairs(8, [(0, 0), (1, 0), (2, 1), (3, 1), (4, 2), (5, 2)]).unwrap();
    assert_eq!(m.cpu_llc, [0, 0, 1, 1, 2, 2, 0, 0]);
    assert_eq!(m.describe(), "0-1,6-7 | 2-3 | 4-5");
}

#[test]
fn runs_list_each_llc_in_cpu_order() {
    let m = LlcMap::from_pairs(6, [(0, 0), (1, 0), (2, 1), (3, 1), (4, 0), (5, 1)]).unwrap();
    assert_eq!(
        m.runs(),
        LlcRuns {
            cpus: vec![0, 1, 4, 2, 3, 5],
            pos: vec![0, 1, 0, 1, 2, 2],
            first: vec![0, 3],
            nr: vec![3, 3],
        }
    );
}

/// BPF's llc_walk_cpu() walk on @m's runs meets the same CPUs in the same order as dispatch()'s
/// old walk over every CPU from cpu + 1, keeping those of cpu's LLC.
#[test]
fn runs_walk_like_a_walk_over_every_cpu() {
    let maps = [
        LlcMap::from_pairs(8, blocks(2, 4)).unwrap(),
        LlcMap::from_pairs(8, (0..8).map(|c| (c, c % 2))).unwrap(),
        LlcMap::from_pairs(8, [(0, 0), (1, 0), (2, 1), (3, 1), (4, 2), (5, 2)]).unwrap(),
        LlcMap::from_pairs(72, blocks(2, 36)).unwrap(),
        LlcMap::from_pairs(1, [(0, 0)]).unwrap(),
    ];
    for m in &maps {
        let r = m.runs();
        let n = m.cpu_llc.len();
        for cpu in 0..n {
            let llc = m.cpu_llc[cpu] as usize;
            let want: Vec<u32> = (1..n)
                .map(|i| ((cpu + i) % n) as u32)
                .filter(|&o| m.cpu_llc[o as usize] as usize == llc)
                .collect();
            let nr = r.nr[llc];
            // As llc_walk_cpu(): pos and i are below nr, so one subtraction wraps.
            let got: Vec<u32> = (1..nr)
                .map(|i| {
                    let j = r.pos[cpu] + i;
                    r.cpus[(r.first[llc] + if j >= nr { j - nr } else { j }) as usize]
                })
                .collect();
            assert_eq!(got, want, "CPU {cpu} of {:?}", m.cpu_llc);
        }
    }
}

#[test]
fn pair_order_does_not_matter() {
    let mut pairs = blocks(4, 4);
    pairs.reverse();
    let m = LlcMap::from_pairs(16, pairs).unwrap();
    assert_eq!(m, LlcMap::from_pairs(16, blocks(4, 4)).unwrap());
    assert_eq!(m.describe(), "0-3 | 4-7 | 8-11 | 12-15");
}

#[test]
fn limits_are_accepted() {
    let max_cpus = MAX_CPUS as usize;
    let max_llcs = MAX_LLCS as usize;
    let m = LlcMap::from_pairs(max_cpus, (0..max_cpus).map(|c| (c, c % max_llcs))).unwrap();
    assert_eq!(m.cpu_llc.len(), max_cpus);
    assert_eq!(m.cpu_llc[max_cpus - 1] as usize, max_llcs - 1);
    assert_eq!(m.describe().split(" | ").count(), max_llcs);
}

#[test]
fn cpu_beyond_nr_cpu_ids() {
    let e = LlcMap::from_pairs(4, [(0, 0), (4, 0)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("CPU 4") && e.contains("nr_cpu_ids 4"), "{e}");
}

#[test]
fn llc_id_too_large() {
    let llc = MAX_LLCS as usize;
    let e = LlcMap::from_pairs(4, [(1, llc)]).unwrap_err().to_string();
    assert!(e.contains(&format!("LLC id {llc}")), "{e}");
    assert!(e.contains("CPU 1"), "{e}");
    assert!(e.contains(&format!("at most {MAX_LLCS}")), "{e}");
}

#[test]
fn nr_cpu_ids_out_of_range() {
    let e = LlcMap::from_pairs(0, []).unwrap_err().to_string();
    assert!(e.contains("0 possible CPUs"), "{e}");
    let too_many = MAX_CPUS as usize + 1;
    let e = LlcMap::from_pairs(too_many, []).unwrap_err().to_string();
    assert!(e.contains(&format!("{too_many} possible CPUs")), "{e}");
    assert!(e.contains(&format!("1..={MAX_CPUS}")), "{e}");
}

#[test]
fn holds_while_a_cpu_is_offline() {
    // Loaded with 2 LLCs of 4; CPU 5 goes offline: scx_utils lists the other 7, unchanged.
    let m = LlcMap::from_pairs(8, blocks(2, 4)).unwrap();
    let online = blocks(2, 4).into_iter().filter(|&(c, _)| c != 5);
    assert!(m.holds(8, online));
    assert!(m.holds(8, blocks(2, 4)));
}

#[test]
fn does_not_hold_when_a_cpu_moves_or_the_cpu_count_changes() {
    let m = LlcMap::from_pairs(8, blocks(2, 4)).unwrap();
    // CPU 5 comes back in LLC 0 (it was loaded in LLC 1).
    let moved = blocks(2, 4)
        .into_iter()
        .map(|(c, l)| (c, if c == 5 { 0 } else { l }));
    assert!(!m.holds(8, moved));
    assert!(!m.holds(16, blocks(2, 4)));
    // A CPU beyond the map.
    assert!(!m.holds(8, [(8, 0)]));
}

#[test]
fn a_cpu_offline_at_load_must_come_back_in_llc_0() {
    // Loaded while CPU 5 was offline: its entry defaulted to LLC 0 (missing_cpus_map_to_llc_0),
    // so its return into LLC 1 needs a new load.
    let m = LlcMap::from_pairs(8, blocks(2, 4).into_iter().filter(|&(c, _)| c != 5)).unwrap();
    assert!(!m.holds(8, blocks(2, 4)));
}
