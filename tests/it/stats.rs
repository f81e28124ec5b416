// SPDX-License-Identifier: GPL-2.0
//! Host tests of `miami::stats`: the one counter table matches intf.h, per-CPU summing, deltas,
//! tier shares and the --help-stats text.

use std::collections::BTreeSet;

use miami::bpf_intf::*;
use miami::scheduler::task_max_age_ms;
use miami::stats::{
    describe, Counters, TaskRow, CPU_FIELDS, DERIVED, NR_STATS, STATS, TASK_FIELDS,
};

fn counters(pairs: &[(u32, u64)]) -> Counters {
    let mut c = Counters::default();
    for &(id, v) in pairs {
        c.0[id as usize] = v;
    }
    c
}

#[test]
fn table_covers_every_id_once() {
    assert_eq!(NR_STATS, miami_stat_MIAMI_NR_STATS as usize);
    assert_eq!(STATS.len(), NR_STATS);
    let ids: Vec<u32> = STATS.iter().map(|s| s.id).collect();
    let unique: BTreeSet<u32> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "duplicate id in {ids:?}");
    assert_eq!(
        unique,
        (0..NR_STATS as u32).collect(),
        "ids must be 0..NR_STATS"
    );
    // The table lists ids in order, so the report follows intf.h.
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
}

#[test]
fn names_unique_snake_case_and_described() {
    let mut seen = BTreeSet::new();
    for s in STATS {
        assert!(seen.insert(s.name), "duplicate name {}", s.name);
        assert!(!s.name.is_empty());
        assert!(
            s.name.starts_with(|c: char| c.is_ascii_lowercase()),
            "{} must start with a lowercase letter",
            s.name
        );
        assert!(
            s.name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{} is not snake_case",
            s.name
        );
        assert!(
            !s.name.contains("__") && !s.name.ends_with('_'),
            "{}",
            s.name
        );
        // The report pads names to 18 columns.
        assert!(s.name.len() <= 18, "{} is too long for the report", s.name);
        assert!(
            ["count", "ns"].contains(&s.unit),
            "{}: unit {}",
            s.name,
            s.unit
        );
        assert_eq!(
            s.name.ends_with("_ns"),
            s.unit == "ns",
            "{}: unit in the name",
            s.name
        );
        assert!(!s.desc.is_empty() && !s.desc.contains('\n'), "{}", s.name);
    }
}

#[test]
fn enqueue_block_is_tier_by_class() {
    // intf.h: MIAMI_STAT_ENQ_CORE_HIGH + tier * 3 + class.
    let base = miami_stat_MIAMI_STAT_ENQ_CORE_HIGH;
    for (t, tier) in ["core", "cache", "other"].iter().enumerate() {
        for (c, class) in ["high", "middle", "low"].iter().enumerate() {
            let id = base + (t * 3 + c) as u32;
            let s = STATS.iter().find(|s| s.id == id).unwrap();
            assert_eq!(s.name, format!("enq_{tier}_{class}"));
        }
    }
}

#[test]
fn from_percpu_sums_cpus() {
    let cpu = |v: u64| v.to_ne_bytes().to_vec();
    let c = Counters::from_percpu(vec![
        vec![cpu(1), cpu(2), cpu(3)],
        vec![cpu(0), cpu(0), cpu(0)],
        vec![cpu(u64::from(u32::MAX)), cpu(1)],
    ]);
    assert_eq!(c.0, vec![6, 0, u64::from(u32::MAX) + 1]);
    assert_eq!(c.get(0), 6);
    assert_eq!(c.get(2), 1 << 32);
}

#[test]
fn from_percpu_ignores_bytes_past_the_value() {
    // Per-CPU values are padded to 8 bytes by the kernel; only the first 8 count.
    let mut b = 7u64.to_ne_bytes().to_vec();
    b.extend_from_slice(&[0xff; 8]);
    let c = Counters::from_percpu(vec![vec![b.clone(), b]]);
    assert_eq!(c.0, vec![14]);
}

#[test]
fn from_percpu_full_table() {
    // One value per stat and CPU, as the scheduler reads the `stats` map.
    let nr_cpus = 4;
    let per_stat = (0..NR_STATS as u64).map(|id| {
        (0..nr_cpus)
            .map(|cpu| (id * 10 + cpu).to_ne_bytes().to_vec())
            .collect()
    });
    let c = Counters::from_percpu(per_stat);
    assert_eq!(c.0.len(), NR_STATS);
    for s in STATS {
        let id = u64::from(s.id);
        assert_eq!(c.get(s.id), id * 10 * nr_cpus + (0..nr_cpus).sum::<u64>());
    }
}

#[test]
fn get_out_of_range_is_zero() {
    let c = Counters::default();
    assert_eq!(c.0.len(), NR_STATS);
    assert_eq!(c.get(NR_STATS as u32), 0);
    assert_eq!(c.get(u32::MAX), 0);
}

#[test]
fn delta_subtracts_and_saturates() {
    let prev = counters(&[(0, 10), (1, 5), (2, 100)]);
    let now = counters(&[(0, 15), (1, 5), (2, 40)]);
    let d = now.delta(&prev);
    assert_eq!(d.get(0), 5);
    assert_eq!(d.get(1), 0);
    // A counter that went back (the scheduler restarted) reads 0, not a huge wrap.
    assert_eq!(d.get(2), 0);
    assert_eq!(d.0.len(), NR_STATS);

    // Against an empty previous snapshot the delta is the counters themselves.
    assert_eq!(now.delta(&Counters(vec![])), now);
    assert_eq!(now.delta(&Counters::default()), now);
    // A longer previous snapshot does not lengthen the result.
    let longer = Counters(vec![1; NR_STATS + 5]);
    assert_eq!(now.delta(&longer).0.len(), NR_STATS);
}

#[test]
fn tier_shares_sum_to_100() {
    let c = counters(&[
        (miami_stat_MIAMI_STAT_RUN_CORE_NS, 600),
        (miami_stat_MIAMI_STAT_RUN_CACHE_NS, 300),
        (miami_stat_MIAMI_STAT_RUN_OTHER_NS, 100),
    ]);
    let [core, cache, other] = c.tier_shares();
    assert!((core - 60.0).abs() < 1e-9, "{core}");
    assert!((cache - 30.0).abs() < 1e-9, "{cache}");
    assert!((other - 10.0).abs() < 1e-9, "{other}");

    for (a, b, d) in [
        (1, 1, 1),
        (7, 0, 0),
        (0, 3, 9),
        (u64::MAX / 4, 1, u64::MAX / 4),
    ] {
        let c = counters(&[
            (miami_stat_MIAMI_STAT_RUN_CORE_NS, a),
            (miami_stat_MIAMI_STAT_RUN_CACHE_NS, b),
            (miami_stat_MIAMI_STAT_RUN_OTHER_NS, d),
        ]);
        let s = c.tier_shares();
        assert!((s.iter().sum::<f64>() - 100.0).abs() < 1e-6, "{s:?}");
        assert!(s.iter().all(|v| (0.0..=100.0).contains(v)), "{s:?}");
    }
}

#[test]
fn tier_shares_zero_without_runtime() {
    assert_eq!(Counters::default().tier_shares(), [0.0; 3]);
    // Other counters do not make up a runtime.
    let c = counters(&[(miami_stat_MIAMI_STAT_ENQ_CORE_HIGH, 50)]);
    assert_eq!(c.tier_shares(), [0.0; 3]);
}

#[test]
fn describe_lists_counters_then_derived_and_row_fields() {
    let text = describe();
    assert!(text.ends_with('\n'));
    let sections: Vec<&str> = text.split("\n\n").collect();
    assert_eq!(sections.len(), 4, "{text}");
    let tables: [Vec<(&str, &str, &str)>; 4] = [
        STATS.iter().map(|s| (s.name, s.unit, s.desc)).collect(),
        DERIVED.iter().map(|f| (f.name, f.unit, f.desc)).collect(),
        TASK_FIELDS
            .iter()
            .map(|f| (f.name, f.unit, f.desc))
            .collect(),
        CPU_FIELDS
            .iter()
            .map(|f| (f.name, f.unit, f.desc))
            .collect(),
    ];
    for (section, table) in sections.iter().zip(&tables) {
        let lines: Vec<&str> = section.lines().skip(1).collect();
        assert_eq!(lines.len(), table.len(), "{section}");
        for (line, (name, unit, desc)) in lines.iter().zip(table) {
            assert_eq!(line.split_whitespace().next(), Some(*name), "{line}");
            assert!(line.contains(&format!("[{unit}]")), "{line}");
            assert!(line.ends_with(desc), "{line}");
        }
    }
}

#[test]
fn report_lists_shares_then_every_counter() {
    let c = counters(&[
        (miami_stat_MIAMI_STAT_RUN_CORE_NS, 3),
        (miami_stat_MIAMI_STAT_RUN_OTHER_NS, 1),
        (miami_stat_MIAMI_STAT_PROBE_SEND, 42),
    ]);
    let text = c.report();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + STATS.len());
    assert_eq!(lines[0], "tier_share core=75.0% cache=0.0% other=25.0%");
    for (line, s) in lines[1..].iter().zip(STATS) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields, [s.name, &c.get(s.id).to_string()], "{line}");
    }
    assert!(text.contains("probe_send"));
    assert!(lines
        .iter()
        .any(|l| l.split_whitespace().eq(["probe_send", "42"])));
}

/// A thread that called 6 s ago is still a network task in BPF under --release-after-ms 10000:
/// the agent's view keeps it (it dropped everything older than 5 s before, whatever the release
/// time), and drops it once the release time has passed.
#[test]
fn task_rows_live_as_long_as_the_release_time() {
    // SAFETY: net_task is plain integers (bindgen from intf.h); all zeros is a valid value.
    let mut nt: net_task = unsafe { std::mem::zeroed() };
    (nt.last_comm_ns, nt.tid, nt.tgid, nt.intens) = (1_000_000_000, 42, 42, 500);
    let at = |age_ms: u64| nt.last_comm_ns + age_ms * 1_000_000;
    let row = |age_ms, max| TaskRow::from_slot(&nt, at(age_ms), max, |_, _| String::new());
    let max = task_max_age_ms(10_000_000_000);
    assert_eq!(max, 10_000);
    assert_eq!(row(6_000, max).map(|r| r.age_ms), Some(6_000));
    assert!(row(10_001, max).is_none());
    // The default release (1 s) keeps the 5 s floor, so the TUI lists recent tasks a while.
    assert_eq!(task_max_age_ms(1_000_000_000), 5_000);
}
