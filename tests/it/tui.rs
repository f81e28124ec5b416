// SPDX-License-Identifier: GPL-2.0
//! Host tests of the TUI (`miami::tui`): every view drawn on ratatui's TestBackend from samples
//! built the way the stats server builds them (`Snapshot` -> `Sampler` -> `Sample` -> JSON),
//! with a fixed host (two LLCs, NIC IRQs on CPUs 1 and 5). They assert on the text on screen:
//! IRQ CPUs carry their NIC names, task rows their class and tier, `s` reorders rows, `p` shows
//! PAUSED, a lost socket shows the disconnected banner, the help lists every key. Also the
//! /proc/stat parsing behind the load bars, and (ignored) a render benchmark.

use std::collections::BTreeMap;
use std::time::Duration;

use miami::config::ClassBounds;
use miami::stats::{AgentState, Counters, Sampler, Snapshot, TaskRow, STATS};
use miami::tui::host::nic_cpus;
use miami::tui::{render, App, HostInfo, Metrics, SortKey, View, KEYS};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use serde_json::{json, Value};

fn task(tid: i32, comm: &str, intens: u32, class: &str, tier: &str, cpu: i32) -> TaskRow {
    let (irq_cpu, nic) = if cpu < 4 { (1, "eth0") } else { (5, "eth1") };
    TaskRow {
        tid,
        tgid: tid + 1000,
        comm: comm.into(),
        intens,
        class: class.into(),
        tier: tier.into(),
        irq_cpu,
        cpu,
        nic: nic.into(),
        age_ms: tid as u64,
    }
}

/// Four tasks whose order differs by intensiveness, class and tier. `lagger` is class low
/// though its intensiveness is middle: the class is the scheduler's, as of its last update.
fn tasks() -> Vec<TaskRow> {
    vec![
        task(42, "iperf3", 150_000, "high", "other", 6),
        task(7, "nginx", 20_000, "middle", "core", 1),
        task(9, "redis", 500, "low", "cache", 2),
        task(11, "lagger", 60_000, "low", "none", 3),
    ]
}

fn snapshot(scale: u64, nr_irq_changes: u64) -> Snapshot {
    let mut counters = Counters::default();
    for s in STATS {
        counters.0[s.id as usize] = (u64::from(s.id) + 1) * scale;
    }
    let set = |c: &mut Counters, name: &str, v: u64| {
        let id = STATS.iter().find(|s| s.name == name).unwrap().id;
        c.0[id as usize] = v;
    };
    set(&mut counters, "run_core_ns", 600 * scale);
    set(&mut counters, "run_cache_ns", 300 * scale);
    set(&mut counters, "run_other_ns", 100 * scale);
    Snapshot {
        counters,
        tasks: tasks(),
        irq_cpus: vec![1, 5],
        nr_cpus: 8,
        nr_irq_changes,
        nr_irq_refreshes: 3,
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

/// A sample as the stats server sends it: the first read of a new client.
fn metrics(nr_irq_changes: u64) -> Metrics {
    Metrics::from_sample(&Sampler::default().sample(&snapshot(1, nr_irq_changes)))
}

fn host() -> HostInfo {
    HostInfo {
        cpu_llc: vec![0, 0, 0, 0, 1, 1, 1, 1],
        nic_cpus: BTreeMap::from([(1, vec!["eth0".into()]), (5, vec!["eth1".into()])]),
        busy_pct: BTreeMap::new(),
    }
}

fn busy() -> BTreeMap<usize, f64> {
    (0..8).map(|c| (c, c as f64 * 10.0)).collect()
}

fn app_with_sample() -> App {
    let mut app = App::new("/var/run/scx/root/stats", Duration::from_secs(1), host());
    app.on_sample(metrics(2), busy());
    app
}

fn key(app: &mut App, code: KeyCode) -> bool {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// The screen as lines of text.
fn screen(app: &App, width: u16, height: u16) -> Vec<String> {
    let mut term = Terminal::new(TestBackend::new(width, height)).unwrap();
    render(&mut term, app).unwrap();
    lines(&term)
}

fn lines(term: &Terminal<TestBackend>) -> Vec<String> {
    let buf = term.backend().buffer();
    let w = buf.area.width as usize;
    buf.content
        .chunks(w)
        .map(|row| row.iter().map(|c| c.symbol()).collect())
        .collect()
}

fn line_with<'a>(lines: &'a [String], needle: &str) -> &'a str {
    lines
        .iter()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with '{needle}' in\n{}", lines.join("\n")))
}

/// Row of the task table for @tid, split into words (no test comm has a space).
fn task_row(lines: &[String], tid: i32) -> Vec<String> {
    let l = line_with(lines, &format!("│{}/{tid} ", tid + 1000));
    l.trim_matches(|c| c == '│' || c == ' ')
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// tids in the order the task table shows them.
fn task_order(lines: &[String]) -> Vec<i32> {
    lines
        .iter()
        .filter_map(|l| {
            let first = l
                .trim_matches(|c| c == '│' || c == ' ')
                .split_whitespace()
                .next()?;
            first.split_once('/')?.1.parse().ok()
        })
        .collect()
}

#[test]
fn cpus_view_groups_by_llc_and_marks_irq_cpus_with_nics() {
    let app = app_with_sample();
    assert_eq!(app.view, View::Cpus);
    let s = screen(&app, 120, 30);
    let text = s.join("\n");
    let llc0 = text.find("LLC 0  cpus 0-3").expect(&text);
    let llc1 = text.find("LLC 1  cpus 4-7").expect(&text);
    assert!(llc0 < llc1);
    // Every CPU under its LLC, in order.
    let pos = |cpu: usize| text.find(&format!("cpu {cpu:>3} ")).expect(&text);
    for cpu in 0..4 {
        assert!(llc0 < pos(cpu) && pos(cpu) < llc1, "cpu {cpu}\n{text}");
    }
    for cpu in 4..8 {
        assert!(llc1 < pos(cpu), "cpu {cpu}\n{text}");
    }
    assert!(line_with(&s, "cpu   1 ").contains("IRQ eth0"), "{text}");
    assert!(line_with(&s, "cpu   5 ").contains("IRQ eth1"), "{text}");
    for cpu in [0, 2, 3, 4, 6, 7] {
        assert!(
            !line_with(&s, &format!("cpu {cpu:>3} ")).contains("IRQ"),
            "{text}"
        );
    }
    // Network tasks under the CPU they last ran on.
    assert!(
        line_with(&s, "cpu   6 ").contains("net: iperf3/42"),
        "{text}"
    );
    assert!(line_with(&s, "cpu   1 ").contains("net: nginx/7"), "{text}");
    assert!(!line_with(&s, "cpu   0 ").contains("net:"), "{text}");
    // Load: the scheduler's load_pct column (the agent's /proc/stat reading): CPU 5 is 50 %
    // busy, CPU 0 10 %.
    assert!(text.contains("load: load_pct (stats)"), "{text}");
    assert!(
        line_with(&s, "cpu   5 ").contains("[##########..........]"),
        "{text}"
    );
    assert!(
        line_with(&s, "cpu   0 ").contains("[##..................]"),
        "{text}"
    );
}

#[test]
fn cpus_view_takes_a_load_field_from_the_cpu_rows() {
    let mut v = Sampler::default().sample(&snapshot(1, 0)).to_json();
    // A scheduler whose CPU rows name their load differently (and have no load_pct).
    for row in v["cpus"].as_array_mut().unwrap() {
        let cpu = row["cpu"].as_u64().unwrap();
        row.as_object_mut().unwrap().remove("load_pct");
        row["util_pct"] = json!(if cpu == 3 { 75.0 } else { 0.0 });
    }
    let mut app = App::new("s", Duration::from_secs(1), host());
    app.on_sample(Metrics::from_json(&v).unwrap(), busy());
    let s = screen(&app, 120, 30);
    assert!(s.join("\n").contains("load: util_pct (stats)"));
    assert!(
        line_with(&s, "cpu   3 ").contains("[###############.....]   75.0"),
        "{}",
        s.join("\n")
    );
}

#[test]
fn tasks_view_rows_show_class_tier_and_placement() {
    let mut app = app_with_sample();
    assert!(!key(&mut app, KeyCode::Tab));
    assert_eq!(app.view, View::Tasks);
    let s = screen(&app, 120, 20);
    let text = s.join("\n");
    assert!(
        text.contains("Network tasks (4) - sort: intensiveness"),
        "{text}"
    );
    let header = line_with(&s, "PID/TID");
    for col in [
        "COMM",
        "INTENS",
        "CLASS",
        "TIER",
        "IRQ CPU",
        "CPU",
        "NIC",
        "LAST COMM",
    ] {
        assert!(header.contains(col), "{header}");
    }
    assert_eq!(
        task_row(&s, 42),
        ["1042/42", "iperf3", "150000", "high", "other", "5", "6", "eth1", "42", "ms"]
    );
    assert_eq!(
        task_row(&s, 7),
        ["1007/7", "nginx", "20000", "middle", "core", "1", "1", "eth0", "7", "ms"]
    );
    assert_eq!(task_row(&s, 9)[3..5], ["low", "cache"]);
    assert_eq!(task_row(&s, 11)[3..5], ["low", "none"]);
}

/// A NIC of another network namespace with no name there has the longest label; it is shown
/// whole, and the columns after it still line up.
#[test]
fn tasks_view_shows_a_long_nic_label_whole() {
    let mut snap = snapshot(1, 0);
    snap.tasks[0].nic = "if3@netns:[4026532281]".into();
    let mut app = App::new("s", Duration::from_secs(1), host());
    app.on_sample(
        Metrics::from_sample(&Sampler::default().sample(&snap)),
        busy(),
    );
    key(&mut app, KeyCode::Tab);
    let s = screen(&app, 120, 20);
    assert_eq!(
        task_row(&s, 42)[7..],
        ["if3@netns:[4026532281]", "42", "ms"]
    );
    assert_eq!(task_row(&s, 7)[7..], ["eth0", "7", "ms"]);
}

#[test]
fn s_cycles_sort_and_changes_row_order() {
    let mut app = app_with_sample();
    key(&mut app, KeyCode::Tab);
    assert_eq!(task_order(&screen(&app, 120, 20)), [42, 11, 7, 9]);

    key(&mut app, KeyCode::Char('s'));
    assert_eq!(app.sort, SortKey::Class);
    let s = screen(&app, 120, 20);
    assert!(s.join("\n").contains("sort: class"));
    // high, middle, then low by intensiveness.
    assert_eq!(task_order(&s), [42, 7, 11, 9]);

    key(&mut app, KeyCode::Char('s'));
    assert_eq!(app.sort, SortKey::Tier);
    let s = screen(&app, 120, 20);
    assert!(s.join("\n").contains("sort: tier"));
    // core, cache, other, none.
    assert_eq!(task_order(&s), [7, 9, 42, 11]);

    key(&mut app, KeyCode::Char('s'));
    assert_eq!(app.sort, SortKey::Intens);
    assert_eq!(task_order(&screen(&app, 120, 20)), [42, 11, 7, 9]);
}

#[test]
fn p_pauses_updates_and_shows_paused() {
    let mut app = app_with_sample();
    assert!(!screen(&app, 120, 30).join("\n").contains("PAUSED"));
    key(&mut app, KeyCode::Char('p'));
    let s = screen(&app, 120, 30);
    assert!(s[1].contains("PAUSED"), "status line: {}", s[1]);
    // First on the status line, so a narrow terminal shows it too.
    assert!(screen(&app, 30, 10)[1].starts_with("PAUSED  connected"));

    // A sample while paused changes nothing on screen.
    let mut moved = snapshot(1, 2);
    moved.tasks = vec![task(99, "newcomer", 1, "low", "other", 0)];
    let before = screen(&app, 120, 30);
    app.on_sample(
        Metrics::from_sample(&Sampler::default().sample(&moved)),
        BTreeMap::new(),
    );
    assert_eq!(screen(&app, 120, 30), before);
    assert_eq!(app.nr_samples, 1);

    key(&mut app, KeyCode::Char('p'));
    app.on_sample(
        Metrics::from_sample(&Sampler::default().sample(&moved)),
        BTreeMap::new(),
    );
    let s = screen(&app, 120, 30);
    let text = s.join("\n");
    assert!(!text.contains("PAUSED"), "{text}");
    assert!(
        line_with(&s, "cpu   0 ").contains("net: newcomer/99"),
        "{text}"
    );
}

#[test]
fn disconnected_banner_then_reconnected() {
    let mut app = App::new("/var/run/scx/root/stats", Duration::from_secs(1), host());
    let s = screen(&app, 120, 20);
    assert!(s[1].contains("connecting"), "{}", s[1]);
    assert!(s.join("\n").contains("waiting for the first sample"));

    app.on_sample(metrics(0), busy());
    assert!(screen(&app, 120, 20)[1].contains("connected"));
    assert!(!screen(&app, 120, 20)[1].contains("reconnected"));

    app.on_disconnect("no scx_miami is running (no socket)");
    let s = screen(&app, 120, 20);
    assert!(
        s[1].contains("disconnected: no scx_miami is running (no socket), retrying"),
        "status line: {}",
        s[1]
    );
    assert!(screen(&app, 60, 10)[1]
        .starts_with("disconnected: no scx_miami is running (no socket), retrying"));
    // The last data stays on screen.
    assert!(line_with(&s, "cpu   1 ").contains("IRQ eth0"));

    app.on_sample(metrics(0), busy());
    let s = screen(&app, 120, 20);
    assert!(s[1].contains("reconnected"), "{}", s[1]);
    assert!(!s[1].contains("disconnected"), "{}", s[1]);
    for _ in 0..3 {
        app.on_sample(metrics(0), busy());
    }
    let s = screen(&app, 120, 20);
    assert!(
        s[1].contains("connected") && !s[1].contains("reconnected"),
        "{}",
        s[1]
    );
}

#[test]
fn help_lists_every_key() {
    let mut app = app_with_sample();
    key(&mut app, KeyCode::Char('?'));
    assert_eq!(app.view, View::Help);
    let s = screen(&app, 120, 30);
    let text = s.join("\n");
    for (k, what) in KEYS {
        assert!(
            s.iter().any(|l| {
                let l = l.trim_start_matches(['│', ' ']);
                l.starts_with(&format!("{k} ")) && l.contains(what)
            }),
            "{k}: {what} not listed\n{text}"
        );
    }
    for k in ["q", "Ctrl-C", "Tab", "Shift-Tab", "s", "p", "?"] {
        assert!(KEYS.iter().any(|(key, _)| *key == k), "{k} not in KEYS");
    }
    assert!(text.contains("sort network tasks"), "{text}");
    assert!(text.contains("PAUSED"), "{text}");
}

#[test]
fn keys_switch_views_and_quit() {
    let mut app = app_with_sample();
    let mut seen = vec![app.view];
    for _ in 0..4 {
        assert!(!key(&mut app, KeyCode::Tab));
        seen.push(app.view);
    }
    assert_eq!(
        seen,
        [
            View::Cpus,
            View::Tasks,
            View::Policy,
            View::Help,
            View::Cpus
        ]
    );
    assert!(!key(&mut app, KeyCode::BackTab));
    assert_eq!(app.view, View::Help);
    // The selected tab is drawn highlighted in the tab bar.
    let s = screen(&app, 120, 20);
    for v in View::ALL {
        assert!(s[0].contains(v.title()), "{}", s[0]);
    }
    assert!(key(&mut app, KeyCode::Char('q')));
    assert!(app.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)));
    // A plain c does nothing.
    assert!(!key(&mut app, KeyCode::Char('c')));
}

#[test]
fn policy_view_shows_bounds_shares_irq_map() {
    let mut app = app_with_sample();
    app.on_sample(metrics(3), busy());
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.view, View::Policy);
    let s = screen(&app, 120, 40);
    let text = s.join("\n");
    assert!(
        text.contains("Class boundaries on intensiveness (2 samples)"),
        "{text}"
    );
    assert!(line_with(&s, "high   >=").contains("100000"), "{text}");
    assert!(line_with(&s, "middle >=").contains("10000"), "{text}");
    // Tier shares from run_*_ns 600:300:100.
    assert!(line_with(&s, "core ").contains(" 60.0%"), "{text}");
    assert!(line_with(&s, "cache ").contains(" 30.0%"), "{text}");
    assert!(line_with(&s, "other ").contains(" 10.0%"), "{text}");
    assert!(
        text.contains("no policy moves / cap fields in these stats"),
        "{text}"
    );
    // The first read of a client: counters since start, net_migrations = (id + 1) * 1, over a
    // refresh of 1 s; agent fields as the snapshot says.
    let id = STATS
        .iter()
        .find(|s| s.name == "net_migrations")
        .unwrap()
        .id;
    assert!(
        line_with(&s, "network-task migrations").contains(&format!(
            "migrations {}.0/s (all causes), 2 network tasks, round 250 us",
            id + 1
        )),
        "{text}"
    );
    assert!(
        line_with(&s, "IRQ CPUs now").contains("1:eth0 5:eth1"),
        "{text}"
    );
    let l = line_with(&s, "changes since the scheduler started");
    assert!(l.contains("started: 3"), "{l}");
    assert!(l.contains("while watching: 1"), "{l}");
    assert!(l.contains("last: 0 samples ago"), "{l}");
}

#[test]
fn policy_view_picks_up_agent_fields_by_name() {
    let mut v: Value = Sampler::default().sample(&snapshot(1, 0)).to_json();
    v["agent_moves"] = json!(12);
    v["agent_rounds"] = json!(4);
    v["move_cap"] = json!(6);
    let m = Metrics::from_json(&v).unwrap();
    assert_eq!(
        m.moves_vs_cap(),
        Some((3.0, Some(6.0), "agent_moves".into()))
    );
    let mut app = App::new("s", Duration::from_secs(1), host());
    app.on_sample(m, busy());
    app.view = View::Policy;
    let s = screen(&app, 120, 40);
    let text = s.join("\n");
    assert!(
        line_with(&s, "moves per round").contains("moves per round 3.0 of cap 6"),
        "{text}"
    );
    for f in ["agent_moves", "agent_rounds", "move_cap"] {
        assert!(text.contains(f), "{f}\n{text}");
    }
}

#[test]
fn resize_and_tiny_terminals_draw() {
    let app = app_with_sample();
    let mut term = Terminal::new(TestBackend::new(120, 30)).unwrap();
    render(&mut term, &app).unwrap();
    term.backend_mut().resize(60, 12);
    render(&mut term, &app).unwrap();
    let s = lines(&term);
    assert_eq!(s.len(), 12);
    assert!(s.iter().all(|l| l.chars().count() == 60));
    assert!(s.join("\n").contains("LLC 0"));
    for v in View::ALL {
        let mut a = app.clone();
        a.view = v;
        for (w, h) in [(1, 1), (10, 3), (20, 8)] {
            screen(&a, w, h);
        }
    }
}

#[test]
fn nic_names_per_cpu_from_discovered_nics() {
    use miami::irq::{Nic, NicIrq, QueueKind};
    let irq = |n, kind, cpus: Vec<usize>| NicIrq {
        irq: n,
        name: String::new(),
        kind,
        cpus,
    };
    let nics = vec![
        Nic {
            name: "eth0".into(),
            ifindex: 2,
            irqs: vec![
                irq(40, QueueKind::Rx, vec![1]),
                irq(41, QueueKind::Tx, vec![2]),
            ],
        },
        Nic {
            name: "eth1".into(),
            ifindex: 3,
            irqs: vec![irq(42, QueueKind::Combined, vec![1, 5])],
        },
    ];
    let m = nic_cpus(&nics);
    assert_eq!(m[&1], ["eth0", "eth1"]);
    assert_eq!(m[&5], ["eth1"]);
    assert!(!m.contains_key(&2), "a transmit IRQ is not a receive CPU");
}

/// CPU time (this thread's) of parsing a sample and of drawing frames on a TestBackend;
/// `cargo test --test it -- --ignored --nocapture tui::bench`. Prints, never asserts on time.
#[test]
#[ignore]
fn bench_render_frames() {
    fn cpu_time() -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }
    const FRAMES: u32 = 1000;
    let mut app = app_with_sample();
    let mut term = Terminal::new(TestBackend::new(160, 48)).unwrap();
    let json = Sampler::default().sample(&snapshot(1, 0)).to_json();
    let start = cpu_time();
    for _ in 0..FRAMES {
        app.on_sample(Metrics::from_json(&json).unwrap(), busy());
    }
    let per = (cpu_time() - start) / FRAMES;
    println!(
        "parse + ingest one sample: {:.1} us CPU",
        per.as_secs_f64() * 1e6
    );
    for v in View::ALL {
        app.view = v;
        let start = cpu_time();
        for _ in 0..FRAMES {
            render(&mut term, &app).unwrap();
        }
        let per = (cpu_time() - start) / FRAMES;
        println!(
            "view {:<14} {FRAMES} frames 160x48: {:.1} us CPU per frame",
            v.title(),
            per.as_secs_f64() * 1e6
        );
    }
}
