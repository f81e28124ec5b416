// SPDX-License-Identifier: GPL-2.0
//! Rendering of an `App` into any ratatui backend: a tab bar, a status line (connection,
//! PAUSED), the current view and a key hint line. No I/O here, so tests draw on a TestBackend.

use ratatui::backend::Backend;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Sparkline, Table, Tabs};
use ratatui::{Frame, Terminal};

use super::app::{is_percent, App, Link, View, KEYS};
use crate::cpulist::format_cpu_list;
use crate::stats::TaskRow;

/// Characters of a load bar.
const BAR: usize = 20;

/// Draw @app on @terminal (one frame).
pub fn render<B: Backend>(terminal: &mut Terminal<B>, app: &App) -> Result<(), B::Error> {
    terminal.draw(|f| draw(f, app)).map(|_| ())
}

/// Draw @app into @frame.
pub fn draw(frame: &mut Frame, app: &App) {
    let [tabs, status, body, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(frame.area());

    let titles: Vec<&str> = View::ALL.iter().map(|v| v.title()).collect();
    frame.render_widget(
        Tabs::new(titles)
            .select(app.view.index())
            .highlight_style(Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)),
        tabs,
    );
    frame.render_widget(Paragraph::new(status_line(app)), status);
    match app.view {
        View::Cpus => draw_cpus(frame, body, app),
        View::Tasks => draw_tasks(frame, body, app),
        View::Policy => draw_policy(frame, body, app),
        View::Help => draw_help(frame, body, app),
    }
    frame.render_widget(
        Paragraph::new("q quit  Tab/Shift-Tab view  s sort  p pause  ? help")
            .style(Style::new().add_modifier(Modifier::DIM)),
        keys,
    );
}

/// Connection state and PAUSED first, so a narrow terminal still shows them.
fn status_line(app: &App) -> Line<'static> {
    let mut spans = Vec::new();
    if app.paused {
        spans.push(Span::styled(
            "PAUSED",
            Style::new()
                .fg(Color::Yellow)
                .add_modifier(Modifier::REVERSED | Modifier::BOLD),
        ));
        spans.push(Span::raw("  "));
    }
    let (text, color) = match &app.link {
        Link::Connecting => ("connecting".to_string(), Color::Yellow),
        Link::Up { reconnected } if *reconnected > 0 => ("reconnected".into(), Color::Green),
        Link::Up { .. } => ("connected".into(), Color::Green),
        Link::Down { reason } => (format!("disconnected: {reason}, retrying"), Color::Red),
    };
    spans.push(Span::styled(
        text,
        Style::new().fg(color).add_modifier(Modifier::BOLD),
    ));
    spans.push(Span::raw(format!(
        "  samples {}  every {:.2} s  {}",
        app.nr_samples,
        app.refresh.as_secs_f64(),
        app.socket
    )));
    Line::from(spans)
}

fn block(title: String) -> Block<'static> {
    Block::new().borders(Borders::ALL).title(title)
}

fn waiting(frame: &mut Frame, area: Rect, title: &str) {
    frame.render_widget(
        Paragraph::new("waiting for the first sample").block(block(title.into())),
        area,
    );
}

/// "[#####.....]" for @pct percent, @width characters inside the brackets.
fn bar(pct: f64, width: usize) -> String {
    let filled = ((pct.clamp(0.0, 100.0) / 100.0) * width as f64).round() as usize;
    format!("[{}{}]", "#".repeat(filled), ".".repeat(width - filled))
}

/// The CPUs view: one section per LLC, one line per CPU with its load bar, its IRQ mark and
/// NIC names, and the network tasks that last ran on it.
fn draw_cpus(frame: &mut Frame, area: Rect, app: &App) {
    let Some(m) = &app.metrics else {
        return waiting(frame, area, "CPUs");
    };
    // Load: a CPU-row field of the stats if there is one, else busy time from /proc/stat.
    let field = m.cpu_load_field();
    let load_max = field.as_ref().map_or(100.0, |f| {
        if is_percent(f) {
            100.0
        } else {
            m.cpus
                .iter()
                .filter_map(|c| c.fields.get(f))
                .fold(0.0, |a: f64, &b| a.max(b))
                .max(f64::MIN_POSITIVE)
        }
    });
    let source = match &field {
        Some(f) if is_percent(f) => format!("load: {f} (stats)"),
        Some(f) => format!("load: {f} (stats, bar relative to the busiest CPU)"),
        None => "load: busy % from /proc/stat".into(),
    };

    let mut llcs: Vec<Option<u32>> = m.cpus.iter().map(|c| app.host.llc_of(c.cpu)).collect();
    llcs.sort_unstable();
    llcs.dedup();
    let mut lines: Vec<Line> = Vec::new();
    for llc in llcs {
        let cpus: Vec<_> = m
            .cpus
            .iter()
            .filter(|c| app.host.llc_of(c.cpu) == llc)
            .collect();
        let ids: Vec<usize> = cpus.iter().map(|c| c.cpu).collect();
        let name = llc.map_or("LLC ?".to_string(), |l| format!("LLC {l}"));
        lines.push(Line::styled(
            format!("{name}  cpus {}", format_cpu_list(&ids)),
            Style::new().add_modifier(Modifier::BOLD),
        ));
        for c in cpus {
            let (pct, shown) = match &field {
                Some(f) => {
                    let v = c.fields.get(f).copied().unwrap_or(0.0);
                    (v * 100.0 / load_max, format!("{v:>6.1}"))
                }
                None => match app.host.busy_pct.get(&c.cpu) {
                    Some(&b) => (b, format!("{b:>5.1}%")),
                    None => (0.0, "     -".into()),
                },
            };
            let irq = if c.irq {
                let nics = app.nics_of(c.cpu);
                let nics = if nics.is_empty() {
                    "?".into()
                } else {
                    nics.join(",")
                };
                format!("IRQ {nics}")
            } else {
                String::new()
            };
            let tasks: Vec<String> = m
                .tasks
                .iter()
                .filter(|t| t.cpu == c.cpu as i32)
                .map(|t| format!("{}/{}", t.comm, t.tid))
                .collect();
            let style = if c.irq {
                Style::new().fg(Color::Cyan)
            } else {
                Style::new()
            };
            lines.push(Line::from(vec![
                Span::styled(format!("  cpu {:>3} {irq:<16} ", c.cpu), style),
                Span::raw(format!("{} {shown}  ", bar(pct, BAR))),
                Span::styled(
                    if tasks.is_empty() {
                        String::new()
                    } else {
                        format!("net: {}", tasks.join(" "))
                    },
                    Style::new().fg(Color::Magenta),
                ),
            ]));
        }
    }
    frame.render_widget(
        Paragraph::new(lines)
            .scroll((app.scroll, 0))
            .block(block(format!("CPUs by LLC - {source}"))),
        area,
    );
}

fn task_cells(t: &TaskRow) -> Vec<String> {
    vec![
        format!("{}/{}", t.tgid, t.tid),
        t.comm.clone(),
        t.intens.to_string(),
        t.class.clone(),
        t.tier.clone(),
        if t.irq_cpu < 0 {
            "-".into()
        } else {
            t.irq_cpu.to_string()
        },
        t.cpu.to_string(),
        t.nic.clone(),
        format!("{} ms", t.age_ms),
    ]
}

/// The Network tasks view: the task table in the chosen order.
fn draw_tasks(frame: &mut Frame, area: Rect, app: &App) {
    if app.metrics.is_none() {
        return waiting(frame, area, "Network tasks");
    }
    let rows = app.sorted_tasks();
    let header = Row::new(
        [
            "PID/TID",
            "COMM",
            "INTENS",
            "CLASS",
            "TIER",
            "IRQ CPU",
            "CPU",
            "NIC",
            "LAST COMM",
        ]
        .map(Cell::from),
    )
    .style(Style::new().add_modifier(Modifier::BOLD));
    let widths = [
        Constraint::Length(15),
        Constraint::Length(16),
        Constraint::Length(8),
        Constraint::Length(7),
        Constraint::Length(6),
        Constraint::Length(8),
        Constraint::Length(4),
        // As wide as the longest label: one of another namespace reads "if3@netns:[4026532281]".
        Constraint::Length(
            rows.iter()
                .map(|t| t.nic.len())
                .max()
                .unwrap_or(0)
                .clamp(4, 32) as u16,
        ),
        Constraint::Length(10),
    ];
    let n = rows.len();
    let table = Table::new(rows.iter().map(|t| Row::new(task_cells(t))), widths)
        .header(header)
        .block(block(format!(
            "Network tasks ({n}) - sort: {} (s)",
            app.sort.name()
        )));
    frame.render_widget(table, area);
}

/// The Policy view: class boundaries over time, tier shares, agent moves against the cap and
/// other fields the scheduler adds, IRQ map changes.
fn draw_policy(frame: &mut Frame, area: Rect, app: &App) {
    let Some(m) = &app.metrics else {
        return waiting(frame, area, "Policy");
    };
    let extras: Vec<(&str, f64)> = m.extra_fields().collect();
    let [bounds_area, tiers_area, agent_area, irq_area] = Layout::vertical([
        Constraint::Length(8),
        Constraint::Length(5),
        Constraint::Length(5 + extras.len().min(8) as u16),
        Constraint::Min(4),
    ])
    .areas(area);

    // Class boundaries: a label and a sparkline each, the newest sample on the right.
    let outer = block(format!(
        "Class boundaries on intensiveness ({} samples)",
        app.bounds.len()
    ));
    let inner = outer.inner(bounds_area);
    frame.render_widget(outer, bounds_area);
    let rows =
        Layout::vertical([Constraint::Length(1), Constraint::Length(2)].repeat(2)).split(inner);
    let width = inner.width as usize;
    let (high, middle): (Vec<u64>, Vec<u64>) = app.bounds.iter().copied().unzip();
    for (i, (label, series, color)) in [
        ("high   >=", &high, Color::Red),
        ("middle >=", &middle, Color::Yellow),
    ]
    .into_iter()
    .enumerate()
    {
        let last = series.last().copied().unwrap_or(0);
        let lo = series.iter().copied().min().unwrap_or(0);
        let hi = series.iter().copied().max().unwrap_or(0);
        frame.render_widget(
            Paragraph::new(format!("{label} {last}  (min {lo}, max {hi})")),
            rows[i * 2],
        );
        let tail = &series[series.len().saturating_sub(width)..];
        frame.render_widget(
            Sparkline::default()
                .data(tail)
                .max(hi.max(1))
                .style(Style::new().fg(color)),
            rows[i * 2 + 1],
        );
    }

    let shares: Vec<Line> = ["core", "cache", "other"]
        .iter()
        .map(|t| {
            let v = m.num(&format!("tier_share_{t}")).unwrap_or(0.0);
            Line::raw(format!("{t:<6} {} {v:>5.1}%", bar(v, 30)))
        })
        .collect();
    frame.render_widget(
        Paragraph::new(shares).block(block(
            "Tier shares of network-task runtime (last interval)".into(),
        )),
        tiers_area,
    );

    let mut agent: Vec<Line> = match m.moves_vs_cap() {
        Some((moves, Some(cap), name)) => vec![Line::raw(format!(
            "moves per round {moves:.1} of cap {cap:.0} {} ({name})",
            bar(if cap > 0.0 { moves * 100.0 / cap } else { 0.0 }, 20)
        ))],
        Some((moves, None, name)) => vec![Line::raw(format!(
            "moves per round {moves:.1} ({name}; no cap field)"
        ))],
        None => vec![Line::raw("no policy moves / cap fields in these stats")],
    };
    // Every migration of a network task, whatever moved it: --max-migrations caps only the
    // agent's targets (net_migrations is the increase over the last refresh).
    if let Some(mig) = m.num("net_migrations") {
        agent.push(Line::raw(format!(
            "network-task migrations {:.1}/s (all causes), {} network tasks, round {} us",
            mig / app.refresh.as_secs_f64(),
            m.num("nr_net_tasks").unwrap_or(0.0),
            m.num("agent_cost_us").unwrap_or(0.0)
        )));
    }
    if extras.is_empty() {
        agent.push(Line::raw("no fields beyond the stats table"));
    }
    agent.extend(
        extras
            .iter()
            .take(8)
            .map(|(k, v)| Line::raw(format!("{k:<24} {v}"))),
    );
    frame.render_widget(
        Paragraph::new(agent).block(block("Policy agent".into())),
        agent_area,
    );

    let total = m.num("nr_irq_changes").map(|v| v as u64);
    let seen = match (total, app.irq_changes_seen_first) {
        (Some(t), Some(f)) => t.saturating_sub(f).to_string(),
        _ => "-".into(),
    };
    let last = match app.samples_since_irq_change {
        Some(s) => format!(
            "{s} samples ago (~{:.0} s)",
            s as f64 * app.refresh.as_secs_f64()
        ),
        None => "not while watching".into(),
    };
    let irq_map: Vec<String> = m
        .irq_cpus
        .iter()
        .map(|&c| {
            let nics = app.nics_of(c);
            if nics.is_empty() {
                format!("{c}")
            } else {
                format!("{c}:{}", nics.join(","))
            }
        })
        .collect();
    let lines = vec![
        Line::raw(format!("IRQ CPUs now: {}", irq_map.join(" "))),
        Line::raw(format!(
            "changes since the scheduler started: {}   while watching: {seen}   last: {last}",
            total.map_or("-".into(), |t| t.to_string())
        )),
    ];
    frame.render_widget(
        Paragraph::new(lines).block(block("IRQ map".into())),
        irq_area,
    );
}

/// The Help view: every key, then where the data comes from.
fn draw_help(frame: &mut Frame, area: Rect, app: &App) {
    let mut lines: Vec<Line> = vec![Line::styled(
        "Keys",
        Style::new().add_modifier(Modifier::BOLD),
    )];
    lines.extend(
        KEYS.iter()
            .map(|(k, what)| Line::raw(format!("  {k:<14} {what}"))),
    );
    lines.extend(
        [
            "",
            "Views",
            "  CPUs           CPUs grouped by LLC; IRQ CPUs marked with their NICs; network tasks",
            "                 by the CPU they last ran on",
            "  Network tasks  the most intensive network tasks (see scx_miami --help-stats)",
            "  Policy         class boundaries over time, tier shares, agent fields, IRQ map",
            "",
        ]
        .map(Line::raw),
    );
    lines.push(Line::raw(format!(
        "Stats from {} every {:.2} s; LLCs, NIC names and /proc/stat load from this host.",
        app.socket,
        app.refresh.as_secs_f64()
    )));
    frame.render_widget(Paragraph::new(lines).block(block("Help".into())), area);
}
