// SPDX-License-Identifier: GPL-2.0
//! --monitor --format openmetrics: one sample as OpenMetrics text exposition
//! (https://prometheus.io/docs/specs/om/open_metrics_spec/). Every `STATS` counter becomes a
//! counter family `miami_<name>` with the total since the scheduler started; numeric `DERIVED`
//! fields become gauges (or a counter for totals); the per-CPU IRQ flag and the task table
//! become labelled gauges. Each scrape ends with `# EOF`.

use std::fmt::Write;

use super::{Counters, CpuRow, FieldDesc, OmType, Sample, DERIVED, STATS};

const PREFIX: &str = "miami_";

/// The OpenMetrics base unit a table unit stands for, if any. Only those get a `# UNIT` line
/// (the spec wants the family name to end in it); "count", "ns" or "percent" are not base
/// units, so today no family has one.
pub fn base_unit(unit: &str) -> Option<&'static str> {
    match unit {
        "seconds" => Some("seconds"),
        "bytes" => Some("bytes"),
        "ratio" => Some("ratio"),
        _ => None,
    }
}

fn escape_help(s: &str) -> String {
    s.replace('\\', r"\\").replace('\n', r"\n")
}

fn escape_label(s: &str) -> String {
    s.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

fn header(out: &mut String, name: &str, ty: OmType, unit: &str, desc: &str) {
    let family = format!("{PREFIX}{name}");
    let ty = match ty {
        OmType::Counter => "counter",
        _ => "gauge",
    };
    let _ = writeln!(out, "# TYPE {family} {ty}");
    if let Some(u) = base_unit(unit).filter(|u| family.ends_with(&format!("_{u}"))) {
        let _ = writeln!(out, "# UNIT {family} {u}");
    }
    let _ = writeln!(out, "# HELP {family} {}", escape_help(desc));
}

fn labels(pairs: &[(&str, String)]) -> String {
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// A per-CPU gauge family: name, unit, description, the column it reads.
type CpuGauge = (&'static str, &'static str, &'static str, fn(&CpuRow) -> u64);

/// @sample's fields, with @totals (counters since the scheduler started) for the counters.
pub fn format_openmetrics(sample: &Sample, totals: &Counters) -> String {
    let mut out = String::new();
    for s in STATS {
        header(&mut out, s.name, OmType::Counter, s.unit, s.desc);
        let _ = writeln!(out, "{PREFIX}{}_total {}", s.name, totals.get(s.id));
    }
    let json = sample.to_json();
    for f in DERIVED.iter().filter(|f: &&FieldDesc| f.om != OmType::None) {
        let Some(v) = json.get(f.name).and_then(|v| v.as_f64()) else {
            continue;
        };
        header(&mut out, f.name, f.om, f.unit, f.desc);
        let suffix = if f.om == OmType::Counter {
            "_total"
        } else {
            ""
        };
        let _ = writeln!(out, "{PREFIX}{}{suffix} {v}", f.name);
    }
    // One gauge family per per-CPU column, labelled by CPU.
    let per_cpu: [CpuGauge; 2] = [
        (
            "cpu_irq",
            "flag",
            "1 if the CPU takes NIC receive IRQs, else 0",
            |c| c.irq,
        ),
        (
            "cpu_load",
            "percent",
            "busy share over the last agent round, hard and soft IRQ time included",
            |c| c.load_pct,
        ),
    ];
    for (name, unit, desc, value) in per_cpu {
        header(&mut out, name, OmType::Gauge, unit, desc);
        for c in &sample.cpus {
            let l = labels(&[("cpu", c.cpu.to_string())]);
            let _ = writeln!(out, "{PREFIX}{name}{l} {}", value(c));
        }
    }
    header(
        &mut out,
        "task_intens",
        OmType::Gauge,
        "intens",
        "communication intensiveness of the most intensive network tasks",
    );
    for t in &sample.tasks {
        let l = labels(&[
            ("tid", t.tid.to_string()),
            ("tgid", t.tgid.to_string()),
            ("comm", t.comm.clone()),
            ("class", t.class.clone()),
            ("tier", t.tier.clone()),
            ("nic", t.nic.clone()),
        ]);
        let _ = writeln!(out, "{PREFIX}task_intens{l} {}", t.intens);
    }
    out.push_str("# EOF\n");
    out
}
