// SPDX-License-Identifier: GPL-2.0
//! Host tests of the stats server side: metadata generated from the tables, per-client deltas
//! and the JSON shape, a live `StatsServer` on a temporary socket (malformed requests get an
//! error reply and the server keeps answering; the socket is 0600), the OpenMetrics output
//! against a strict checker, and docs/stats.md against --help-stats.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use miami::bpf_intf::*;
use miami::config::{ClassBounds, OutputFormat};
use miami::stats::*;
use scx_stats::prelude::{StatsClient, StatsData, StatsKind, StatsMeta, StatsResponse};
use serde_json::Value;

fn task(tid: i32, comm: &str, intens: u32) -> TaskRow {
    TaskRow {
        tid,
        tgid: tid,
        comm: comm.into(),
        intens,
        class: "high".into(),
        tier: "core".into(),
        irq_cpu: 1,
        cpu: 1,
        nic: "eth0".into(),
        age_ms: 3,
    }
}

fn snapshot(scale: u64) -> Snapshot {
    let mut counters = Counters::default();
    for s in STATS {
        counters.0[s.id as usize] = (u64::from(s.id) + 1) * scale;
    }
    Snapshot {
        counters,
        tasks: vec![task(42, "iperf3", 150_000), task(7, "we\"ird\\ na\nme", 20)],
        irq_cpus: vec![1, 5, 6],
        nr_cpus: 8,
        nr_irq_changes: 2,
        nr_irq_refreshes: 31,
        bounds: ClassBounds {
            high_min: 100_000,
            middle_min: 10_000,
        },
        agent: AgentState {
            max_moves: 4,
            round_max: 3,
            loads: vec![10.0, 95.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.4],
            nr_tasks: 2,
            round_us: 250,
            bpf_total_ms: 120,
            irq_refresh_cpu_us: 40,
            irq_scan_cpu_us: 900,
        },
        loader_cpu_ms: 1234,
    }
}

fn meta_map() -> BTreeMap<String, StatsMeta> {
    metas().into_iter().map(|m| (m.name.clone(), m)).collect()
}

// ---- metadata ----

#[test]
fn meta_is_built_from_the_tables() {
    let metas = meta_map();
    let top = &metas[META_TOP];
    assert_eq!(top.attrs.top.as_deref(), Some("true"));
    for s in STATS {
        let f = top
            .fields
            .get(s.name)
            .unwrap_or_else(|| panic!("{} missing", s.name));
        assert_eq!(f.data.to_string(), "u64", "{}", s.name);
        assert_eq!(f.attrs.desc.as_deref(), Some(s.desc), "{}", s.name);
        assert_eq!(f.attrs.user.get("_unit").map(String::as_str), Some(s.unit));
    }
    for d in DERIVED {
        let f = &top.fields[d.name];
        assert_eq!(f.attrs.desc.as_deref(), Some(d.desc), "{}", d.name);
    }
    assert_eq!(top.fields.len(), STATS.len() + DERIVED.len() + 2);
    for (field, of, table) in [
        ("tasks", META_TASK, TASK_FIELDS),
        ("cpus", META_CPU, CPU_FIELDS),
    ] {
        match &top.fields[field].data {
            StatsData::Array(StatsKind::Struct(name)) => assert_eq!(name, of),
            d => panic!("{field}: {d}"),
        }
        let names: BTreeSet<&str> = metas[of].fields.keys().map(String::as_str).collect();
        assert_eq!(names, table.iter().map(|f| f.name).collect());
        for f in table {
            assert_eq!(metas[of].fields[f.name].attrs.desc.as_deref(), Some(f.desc));
        }
    }
    // scx_stats accepts it: every nested struct is reachable (verify_meta runs in launch).
    server_data()
        .describe_meta(&mut Vec::new(), None)
        .expect("scx_stats rejects the metadata");
}

// ---- samples, deltas, JSON ----

#[test]
fn sampler_gives_totals_then_deltas() {
    let mut s = Sampler::default();
    let first = s.sample(&snapshot(10));
    assert_eq!(first.counters, snapshot(10).counters);
    let second = s.sample(&snapshot(13));
    for st in STATS {
        assert_eq!(second.counters.get(st.id), (u64::from(st.id) + 1) * 3);
    }
    // Another reader has its own previous read.
    let mut other = Sampler::default();
    assert_eq!(other.sample(&snapshot(13)).counters, snapshot(13).counters);
    assert_eq!(second.irq_cpus, [1, 5, 6]);
    assert_eq!(
        second
            .cpus
            .iter()
            .filter(|c| c.irq == 1)
            .map(|c| c.cpu)
            .collect::<Vec<_>>(),
        [1, 5, 6]
    );
    assert_eq!(second.cpus.len(), 8);
}

#[test]
fn json_has_every_field_with_its_meta_type() {
    let sample = Sampler::default().sample(&snapshot(1));
    let v = sample.to_json();
    let obj = v.as_object().unwrap();
    let metas = meta_map();
    let keys: BTreeSet<&str> = obj.keys().map(String::as_str).collect();
    let want: BTreeSet<&str> = metas[META_TOP].fields.keys().map(String::as_str).collect();
    assert_eq!(keys, want);
    let check = |meta: &StatsMeta, o: &serde_json::Map<String, Value>| {
        for (name, f) in &meta.fields {
            let val = &o[name];
            let ok = match f.data.to_string().as_str() {
                "u64" => val.is_u64(),
                "i64" => val.is_i64(),
                "float" => val.is_f64(),
                "string" => val.is_string(),
                _ => val.is_array(),
            };
            assert!(ok, "{}.{name} = {val} is not {}", meta.name, f.data);
        }
    };
    check(&metas[META_TOP], obj);
    for (field, of) in [("tasks", META_TASK), ("cpus", META_CPU)] {
        for row in obj[field].as_array().unwrap() {
            let row = row.as_object().unwrap();
            assert_eq!(row.len(), metas[of].fields.len(), "{row:?}");
            check(&metas[of], row);
        }
    }
    assert_eq!(
        obj["enq_core_high"],
        (miami_stat_MIAMI_STAT_ENQ_CORE_HIGH + 1) as u64
    );
    assert_eq!(obj["irq_cpus"], "1,5-6");
    assert_eq!(obj["class_high_min"], 100_000);
    assert_eq!(obj["nr_irq_changes"], 2);
    assert_eq!(obj["nr_irq_refreshes"], 31);
    assert_eq!(obj["agent_cost_us"], 250);
    assert_eq!(obj["agent_bpf_ms"], 120);
    assert_eq!(obj["irq_refresh_cpu_us"], 40);
    assert_eq!(obj["irq_scan_cpu_us"], 900);
    assert_eq!(obj["loader_cpu_ms"], 1234);
    let shares: f64 = ["core", "cache", "other"]
        .iter()
        .map(|t| obj[&format!("tier_share_{t}")].as_f64().unwrap())
        .sum();
    assert!((shares - 100.0).abs() < 1e-6);

    // A client reads back what the server wrote.
    assert_eq!(Sample::from_json(&v).unwrap(), sample);
    let mut extra = v.clone();
    extra["surprise"] = 1.into();
    assert!(Sample::from_json(&extra).is_err());
    let mut missing = v.clone();
    missing.as_object_mut().unwrap().remove("probe_send");
    assert!(Sample::from_json(&missing)
        .unwrap_err()
        .to_string()
        .contains("probe_send"));
}

#[test]
fn report_is_the_counter_report_plus_tables() {
    let sample = Sampler::default().sample(&snapshot(1));
    let text = sample.report(2.0);
    assert!(text.starts_with("--- stats (delta over 2.0 s)\n"));
    assert!(text.contains(&sample.counters.report()));
    assert!(text.contains("classes high>=100000 middle>=10000\n"));
    assert!(text.contains("irq_cpus 1,5-6 (changes since start: 2)\n"));
    assert!(text.contains("last round 250 us, all rounds 120 ms (BPF)\n"));
    assert!(text.contains(
        "loader CPU since start 1234 ms; IRQ map refresh 40 us CPU (one of the last 10), full scan 900 us CPU, 31 refreshes since start\n"
    ));
    assert!(text.ends_with(&format_tasks(&sample.tasks)));
    assert!(text.contains("iperf3"));
}

// ---- a live server ----

/// Answers the server's requests with @snap until the returned flag is set, like the run loop.
fn serve(
    server: &scx_stats::prelude::StatsServer<(), Snapshot>,
    snap: Snapshot,
) -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let (res_ch, req_ch) = server.channels();
    let flag = stop.clone();
    std::thread::spawn(move || {
        while !flag.load(Ordering::Relaxed) {
            if req_ch.recv_timeout(Duration::from_millis(20)).is_ok() {
                let _ = res_ch.send(snap.clone());
            }
        }
    });
    stop
}

/// `--monitor` against @path in a thread, every 50 ms, until @shutdown is set or it fails.
fn spawn_monitor(
    path: &Path,
    shutdown: Arc<AtomicBool>,
) -> std::thread::JoinHandle<anyhow::Result<()>> {
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        monitor(
            &p,
            Duration::from_millis(50),
            OutputFormat::Openmetrics,
            &shutdown,
        )
    })
}

fn roundtrip(
    conn: &mut UnixStream,
    reader: &mut BufReader<UnixStream>,
    req: &[u8],
) -> StatsResponse {
    conn.write_all(req).unwrap();
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("reply {line:?}: {e}"))
}

#[test]
fn server_answers_rejects_garbage_and_survives() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/stats");
    let server = launch_server(&path).unwrap();
    let stop = serve(&server, snapshot(5));

    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "socket mode {mode:o}");
    let dmode = std::fs::metadata(path.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dmode & 0o077, 0, "socket dir mode {dmode:o}");

    let mut conn = UnixStream::connect(&path).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    for bad in [
        &b"garbage\n"[..],
        b"{\"req\": 5}\n",
        b"{\"req\":\"no_such_request\"}\n",
        b"{\"req\":\"stats\",\"args\":{\"target\":\"nope\"}}\n",
        b"[1,2,3]\n",
    ] {
        let r = roundtrip(&mut conn, &mut reader, bad);
        assert_eq!(r.errno, libc::EINVAL, "{}", String::from_utf8_lossy(bad));
    }
    // The same connection still works.
    let r = roundtrip(&mut conn, &mut reader, b"{\"req\":\"stats\"}\n");
    assert_eq!(r.errno, 0);
    let s = Sample::from_json(&r.args["resp"]).unwrap();
    assert_eq!(s.counters, snapshot(5).counters);
    // Second read on this connection: nothing changed, so the deltas are zero.
    let r = roundtrip(
        &mut conn,
        &mut reader,
        b"{\"req\":\"stats\",\"args\":{\"target\":\"top\"}}\n",
    );
    assert_eq!(
        Sample::from_json(&r.args["resp"]).unwrap().counters,
        Counters::default()
    );

    // Bytes that are not UTF-8 end only this connection.
    conn.write_all(b"\xff\xfe\n").unwrap();
    let mut line = String::new();
    assert_eq!(reader.read_line(&mut line).unwrap_or(0), 0, "{line}");

    // A new client (scx_stats' own) gets metadata and its own deltas from the start.
    let mut client = StatsClient::new()
        .set_path(&path)
        .connect(Some(5000))
        .unwrap();
    let metas: BTreeMap<String, StatsMeta> = client.request("stats_meta", vec![]).unwrap();
    assert!(metas.contains_key(META_TOP) && metas.contains_key(META_TASK));
    let s = read_sample(&mut client).unwrap();
    assert_eq!(s.counters, snapshot(5).counters);
    assert_eq!(s.tasks, snapshot(5).tasks);

    // --monitor against it, stopped by its shutdown flag.
    let shutdown = Arc::new(AtomicBool::new(false));
    let mon = spawn_monitor(&path, shutdown.clone());
    std::thread::sleep(Duration::from_millis(300));
    shutdown.store(true, Ordering::Relaxed);
    mon.join().unwrap().unwrap();

    stop.store(true, Ordering::Relaxed);
    drop(server);
}

#[test]
fn monitor_of_a_stopping_scheduler_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stats");
    let server = launch_server(&path).unwrap();
    let stop = serve(&server, snapshot(1));
    let mon = spawn_monitor(&path, Arc::new(AtomicBool::new(false)));
    std::thread::sleep(Duration::from_millis(300));
    // The scheduler's exit: its run loop ends (and with it the channels' far ends), then the
    // server goes, while the client is still connected.
    stop.store(true, Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(100));
    drop(server);
    let err = mon
        .join()
        .unwrap()
        .expect_err("the monitor ends with an error");
    let text = format!("{err:#}");
    assert!(text.contains(STOPPING), "{text}");
    assert!(!text.contains("disconnected channel"), "{text}");
}

#[test]
fn monitor_without_a_server_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("stats");
    let e = monitor(
        &missing,
        Duration::from_secs(1),
        OutputFormat::Text,
        &AtomicBool::new(false),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("no scx_miami is running"), "{e}");
    assert!(e.contains(&missing.display().to_string()), "{e}");

    // A socket file with nothing listening (a scheduler that was killed -9).
    let stale = dir.path().join("stale");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    let e = monitor(
        &stale,
        Duration::from_secs(1),
        OutputFormat::Text,
        &AtomicBool::new(false),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("no scx_miami is running"), "{e}");
}

// ---- OpenMetrics ----

fn valid_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && c.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Parses `{k="v",...}` with OpenMetrics escapes; returns the pairs and the rest of the line.
fn parse_labels(s: &str) -> (Vec<(String, String)>, &str) {
    let mut out = Vec::new();
    let b = s.as_bytes();
    assert_eq!(b[0], b'{', "{s}");
    let mut i = 1;
    loop {
        if b[i] == b'}' {
            return (out, &s[i + 1..]);
        }
        let eq = s[i..].find('=').unwrap() + i;
        let key = &s[i..eq];
        assert!(valid_name(key), "label name {key:?}");
        assert_eq!(b[eq + 1], b'"', "{s}");
        let mut val = String::new();
        let mut j = eq + 2;
        loop {
            match b[j] {
                b'\\' => {
                    val.push(match b[j + 1] {
                        b'\\' => '\\',
                        b'"' => '"',
                        b'n' => '\n',
                        c => panic!("bad escape \\{} in {s}", c as char),
                    });
                    j += 2;
                }
                b'"' => break,
                b'\n' => panic!("raw newline in {s}"),
                _ => {
                    let ch = s[j..].chars().next().unwrap();
                    val.push(ch);
                    j += ch.len_utf8();
                }
            }
        }
        out.push((key.to_string(), val));
        i = j + 1;
        if b[i] == b',' {
            i += 1;
        }
    }
}

/// A strict reading of the OpenMetrics text format for what we emit: families are contiguous
/// and declared once, TYPE before samples, counters only as `_total`, gauges by their name,
/// label syntax and escapes, float values, unique label sets, `# EOF` last and only once.
/// Returns family -> (type, help, samples as (labels, value)).
#[allow(clippy::type_complexity)]
fn parse_openmetrics(
    text: &str,
) -> BTreeMap<String, (String, String, Vec<(Vec<(String, String)>, f64)>)> {
    assert!(text.ends_with("# EOF\n"), "no # EOF at the end");
    let body = text.strip_suffix("# EOF\n").unwrap();
    assert!(!body.contains("# EOF"), "# EOF before the end");
    let mut fams: BTreeMap<String, (String, String, Vec<_>)> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in body.lines() {
        if let Some(meta) = line.strip_prefix("# ") {
            let mut it = meta.splitn(3, ' ');
            let (kw, name, rest) = (
                it.next().unwrap(),
                it.next().unwrap(),
                it.next().unwrap_or(""),
            );
            assert!(valid_name(name), "{line}");
            if current.as_deref() != Some(name) {
                assert!(
                    !fams.contains_key(name),
                    "family {name} declared twice / not contiguous"
                );
                current = Some(name.to_string());
                fams.insert(name.into(), (String::new(), String::new(), vec![]));
            }
            let fam = fams.get_mut(name).unwrap();
            match kw {
                "TYPE" => {
                    assert!(["counter", "gauge"].contains(&rest), "{line}");
                    assert!(fam.0.is_empty() && fam.2.is_empty(), "{line}");
                    fam.0 = rest.into();
                }
                "HELP" => fam.1 = rest.into(),
                "UNIT" => assert!(name.ends_with(&format!("_{rest}")), "{line}"),
                _ => panic!("unknown metadata {line}"),
            }
            continue;
        }
        let fam_name = current
            .clone()
            .unwrap_or_else(|| panic!("sample before TYPE: {line}"));
        let fam = fams.get_mut(&fam_name).unwrap();
        let end = line.find(['{', ' ']).unwrap();
        let name = &line[..end];
        let want = if fam.0 == "counter" {
            format!("{fam_name}_total")
        } else {
            fam_name.clone()
        };
        assert_eq!(name, want, "{line}");
        let (labels, rest) = if line[end..].starts_with('{') {
            parse_labels(&line[end..])
        } else {
            (vec![], &line[end..])
        };
        let value = rest.strip_prefix(' ').unwrap_or_else(|| panic!("{line}"));
        let v: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("value {value:?} in {line}"));
        assert!(
            !fam.2.iter().any(|(l, _)| *l == labels),
            "duplicate sample {line}"
        );
        fam.2.push((labels, v));
    }
    for (n, f) in &fams {
        assert!(!f.0.is_empty(), "{n} has no TYPE");
    }
    fams
}

#[test]
fn openmetrics_parses_strictly() {
    let sample = Sampler::default().sample(&snapshot(2));
    let mut totals = snapshot(2).counters;
    totals.0[0] += 1_000_000;
    let text = format_openmetrics(&sample, &totals);
    let fams = parse_openmetrics(&text);
    for s in STATS {
        let (ty, help, samples) = &fams[&format!("miami_{}", s.name)];
        assert_eq!(ty, "counter");
        assert_eq!(help, s.desc);
        assert_eq!(samples.len(), 1);
        assert_eq!(samples[0].1, totals.get(s.id) as f64, "{}", s.name);
    }
    for d in DERIVED.iter().filter(|d| d.om != OmType::None) {
        let (ty, _, samples) = &fams[&format!("miami_{}", d.name)];
        assert_eq!(
            ty,
            if d.om == OmType::Counter {
                "counter"
            } else {
                "gauge"
            }
        );
        assert_eq!(samples.len(), 1);
    }
    assert_eq!(fams["miami_nr_irq_changes"].2[0].1, 2.0);
    assert_eq!(fams["miami_nr_irq_refreshes"].2[0].1, 31.0);
    let irq = &fams["miami_cpu_irq"].2;
    assert_eq!(irq.len(), 8);
    assert_eq!(irq.iter().filter(|(_, v)| *v == 1.0).count(), 3);
    let tasks = &fams["miami_task_intens"].2;
    assert_eq!(tasks.len(), 2);
    let weird = tasks
        .iter()
        .find(|(l, _)| l.contains(&("tid".into(), "7".into())))
        .unwrap();
    assert!(
        weird
            .0
            .contains(&("comm".into(), "we\"ird\\ na\nme".into())),
        "{weird:?}"
    );
    // Every scrape ends with # EOF; two scrapes are two documents.
    assert_eq!(text.matches("# EOF").count(), 1);
}

#[test]
fn base_units_only() {
    for u in ["count", "ns", "percent", "intens", "flag"] {
        assert_eq!(base_unit(u), None, "{u}");
    }
    assert_eq!(base_unit("seconds"), Some("seconds"));
    assert_eq!(base_unit("bytes"), Some("bytes"));
}

// ---- docs ----

#[test]
fn docs_stats_md_matches_help_stats() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/stats.md");
    let md = std::fs::read_to_string(&path).expect("docs/stats.md (make docs)");
    let block = md
        .split_once("```\n")
        .and_then(|(_, rest)| rest.split_once("```\n"))
        .map(|(b, _)| b)
        .expect("docs/stats.md has no ``` block");
    assert_eq!(block, describe(), "docs/stats.md is stale: run `make docs`");
}

/// --monitor against another scx scheduler's socket (its stats_meta has no `miami` object): an
/// error that says so, names the socket and points at --stats-socket, not a parse error.
#[test]
fn monitor_on_another_schedulers_socket_says_whose_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stats");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let other = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(conn.try_clone().unwrap());
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(line.contains("stats_meta"), "{line}");
        // scx_stats' reply, with another scheduler's object (ours renamed) in it.
        let other: BTreeMap<String, StatsMeta> = metas()
            .into_iter()
            .map(|mut m| {
                m.name = format!("other_{}", m.name);
                (m.name.clone(), m)
            })
            .collect();
        let reply = serde_json::json!({ "errno": 0, "args": { "resp": other } });
        (&conn).write_all(format!("{reply}\n").as_bytes()).unwrap();
    });
    let err = monitor(
        &path,
        Duration::from_millis(50),
        OutputFormat::Text,
        &AtomicBool::new(false),
    )
    .unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        msg.contains(&format!(
            "{} is not scx_miami's stats socket",
            path.display()
        )),
        "{msg}"
    );
    assert!(msg.contains("another scx scheduler serves there"), "{msg}");
    assert!(msg.contains("--stats-socket PATH"), "{msg}");
    other.join().unwrap();
}
