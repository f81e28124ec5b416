// SPDX-License-Identifier: GPL-2.0
//! The stats socket: a scx_stats `StatsServer` whose metadata is generated from the tables in
//! `stats` (never a hand-written struct per counter), its launch with a root-only socket, and
//! the `--monitor` client.
//!
//! Protocol (scx_stats): one JSON request per line, `{"req":"stats_meta"}` or
//! `{"req":"stats","args":{"target":"top"}}`; one JSON reply per line, `{"errno":0,"args":
//! {"resp":...}}`. A malformed request gets an error reply (errno EINVAL) and the connection
//! stays usable; a request that is not UTF-8 ends only that connection. Each connection has
//! its own `Sampler`, so counters are the increase since that client's previous read (the
//! first read returns totals since the scheduler started).

use std::collections::BTreeMap;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use scx_stats::prelude::*;

use super::{
    format_openmetrics, Counters, FieldDesc, FieldType, Sample, Sampler, Snapshot, CPU_FIELDS,
    DERIVED, STATS, TASK_FIELDS,
};
use crate::config::OutputFormat;

/// Where scx_stats' server and client meet by default (base /var/run/scx, "root", "stats").
pub const DEFAULT_SOCKET: &str = "/var/run/scx/root/stats";

/// Names of the metadata structs: the top object, a task row, a CPU row.
pub const META_TOP: &str = "miami";
pub const META_TASK: &str = "miami_task";
pub const META_CPU: &str = "miami_cpu";

fn stats_field(kind: StatsKind, unit: &str, desc: &str) -> StatsField {
    StatsField {
        data: StatsData::Datum(kind),
        attrs: StatsFieldAttrs {
            desc: Some(desc.into()),
            user: [("_unit".to_string(), unit.to_string())].into(),
        },
    }
}

fn kind_of(f: &FieldDesc) -> StatsKind {
    match f.ty {
        FieldType::I64 => StatsKind::I64,
        FieldType::U64 => StatsKind::U64,
        FieldType::Float => StatsKind::Float,
        FieldType::Str => StatsKind::String,
    }
}

fn meta(name: &str, top: bool, desc: &str, fields: BTreeMap<String, StatsField>) -> StatsMeta {
    StatsMeta {
        name: name.into(),
        attrs: StatsStructAttrs {
            top: top.then(|| "true".into()),
            desc: Some(desc.into()),
            user: BTreeMap::new(),
        },
        fields,
    }
}

fn fields_of(table: &[FieldDesc]) -> BTreeMap<String, StatsField> {
    table
        .iter()
        .map(|f| (f.name.into(), stats_field(kind_of(f), f.unit, f.desc)))
        .collect()
}

/// The scx_stats metadata, generated from `STATS`, `DERIVED`, `TASK_FIELDS` and `CPU_FIELDS`.
pub fn metas() -> Vec<StatsMeta> {
    let mut top: BTreeMap<String, StatsField> = STATS
        .iter()
        .map(|s| (s.name.into(), stats_field(StatsKind::U64, s.unit, s.desc)))
        .collect();
    top.extend(fields_of(DERIVED));
    let array = |of: &str, desc: &str| StatsField {
        data: StatsData::Array(StatsKind::Struct(of.into())),
        attrs: StatsFieldAttrs {
            desc: Some(desc.into()),
            user: BTreeMap::new(),
        },
    };
    top.insert(
        "tasks".into(),
        array(META_TASK, "the most intensive network tasks"),
    );
    top.insert("cpus".into(), array(META_CPU, "one row per CPU"));
    vec![
        meta(META_TOP, true, "scx_miami statistics", top),
        meta(META_TASK, false, "a network task", fields_of(TASK_FIELDS)),
        meta(META_CPU, false, "a CPU", fields_of(CPU_FIELDS)),
    ]
}

/// What a stats request gets once the scheduler's run loop no longer answers (server_data()).
pub const STOPPING: &str = "scx_miami is stopping: its run loop no longer answers";

/// Server data: the metadata and the "top" target. A reader asks the run loop for a
/// `Snapshot` over the server's channels (request `()`), and turns it into its own deltas.
pub fn server_data() -> StatsServerData<(), Snapshot> {
    let data = metas()
        .into_iter()
        .fold(StatsServerData::new(), |d, m| d.add_meta(m));
    data.add_ops(
        "top",
        StatsOps {
            open: Box::new(|_| {
                let mut sampler = Sampler::default();
                Ok(Box::new(move |_args, (req, res)| {
                    // Closed channels mean the run loop is gone: the scheduler is stopping.
                    // Said so, instead of crossbeam's "receiving on an empty and disconnected
                    // channel", which is what a --monitor client printed then.
                    req.send(()).map_err(|_| anyhow!(STOPPING))?;
                    let snap = res.recv().map_err(|_| anyhow!(STOPPING))?;
                    Ok(sampler.sample(&snap).to_json())
                }))
            }),
            close: None,
        },
    )
}

/// Start serving on @path. scx_stats binds with the process umask and never restricts the
/// socket, and anyone who can connect can read every task's name and placement: bind under
/// umask 077 (no moment with a world-connectable socket) and chmod 0600 after, in case the
/// path existed with other permissions. Directories it creates are 0700.
pub fn launch_server(path: &Path) -> Result<StatsServer<(), Snapshot>> {
    // SAFETY: umask only swaps the process file-creation mask; restored below.
    let old = unsafe { libc::umask(0o077) };
    let server = StatsServer::new(server_data()).set_path(path).launch();
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    let server = server?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("chmod 0600 {}", path.display()))?;
    Ok(server)
}

/// Connect to the scheduler's stats socket, with errors a user can act on.
fn connect(path: &Path) -> Result<StatsClient> {
    let client = StatsClient::new()
        .set_path(path)
        .connect(Some(5000))
        .map_err(|e| {
            let hint = match e.downcast_ref::<std::io::Error>().map(|e| e.kind()) {
                Some(ErrorKind::NotFound) => "no scx_miami is running (no socket)".to_string(),
                Some(ErrorKind::ConnectionRefused) => {
                    "no scx_miami is running (stale socket, nothing listens)".to_string()
                }
                Some(ErrorKind::PermissionDenied) => {
                    "permission denied: the stats socket is root-only; try sudo".to_string()
                }
                _ => format!("{e:#}"),
            };
            anyhow!("cannot connect to {}: {hint}", path.display())
        })?;
    Ok(client)
}

/// The error of a client whose socket at @path answers without our stats (no `miami` object):
/// another scx scheduler's, all of which serve on the default path.
pub fn not_ours(path: &Path) -> anyhow::Error {
    anyhow!(
        "{} is not scx_miami's stats socket: another scx scheduler serves there (cat \
         /sys/kernel/sched_ext/root/ops names it). A scx_miami --observe beside it serves on \
         the --stats-socket PATH it was given: give the same option here",
        path.display()
    )
}

/// One read of the top object.
pub fn read_sample(client: &mut StatsClient) -> Result<Sample> {
    let v: serde_json::Value = client.request("stats", vec![("target".into(), "top".into())])?;
    Sample::from_json(&v)
}

/// --monitor: print a sample of the running scheduler every @interval until @shutdown. Unlike
/// scx_utils::monitor_stats, a missing scheduler is an error, not a reason to wait.
pub fn monitor(
    path: &Path,
    interval: Duration,
    format: OutputFormat,
    shutdown: &AtomicBool,
) -> Result<()> {
    let mut client = connect(path)?;
    let metas: BTreeMap<String, StatsMeta> = client
        .request("stats_meta", vec![])
        .with_context(|| format!("reading stats metadata from {}", path.display()))?;
    if !metas.contains_key(META_TOP) {
        return Err(not_ours(path));
    }
    // Counters arrive as deltas; OpenMetrics counters are totals. The first read is the total
    // since the scheduler started, so the running sum is the total.
    let mut totals = Counters::default();
    let mut next = Instant::now();
    while !shutdown.load(Ordering::Relaxed) {
        if Instant::now() < next {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        next += interval;
        let sample = read_sample(&mut client)
            .with_context(|| format!("reading stats from {}", path.display()))?;
        totals = Counters(
            totals
                .0
                .iter()
                .zip(&sample.counters.0)
                .map(|(a, b)| a + b)
                .collect(),
        );
        let text = match format {
            OutputFormat::Text => sample.report(interval.as_secs_f64()),
            OutputFormat::Openmetrics => format_openmetrics(&sample, &totals),
        };
        let mut out = std::io::stdout().lock();
        match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
            // The reader went away (`| head`, a script that has what it needs): done, quietly.
            Err(e) if e.kind() == ErrorKind::BrokenPipe => return Ok(()),
            r => r.context("writing to stdout")?,
        }
    }
    Ok(())
}
