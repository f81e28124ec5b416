// SPDX-License-Identifier: GPL-2.0
//! `scx_miami --tui`: a live terminal view of a running scx_miami, a client of its stats
//! socket like --monitor. Views: CPUs by LLC, network tasks, policy, help.
//!
//! Split for testing: `app` is the state and the keys, `view` renders an `App` into any
//! ratatui backend, `host` reads what the stats do not carry (LLCs, NIC names, /proc/stat).
//! This file does the I/O: a reader thread polls the socket once per refresh period and sends
//! samples or the reason it failed; the main thread draws and reads keys. A missing or
//! restarted scheduler does not end the TUI: it shows "disconnected: <reason>, retrying" and
//! the reader reconnects every period. The terminal is restored on every exit: a guard's Drop
//! for returns and errors, a panic hook for panics.

use std::collections::BTreeMap;
use std::io::{ErrorKind, IsTerminal, Stdout};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event};
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::Terminal;
use scx_stats::prelude::{StatsClient, StatsMeta};

use crate::stats::META_TOP;

pub mod app;
pub mod host;
pub mod view;

pub use app::{App, Link, Metrics, SortKey, View, KEYS};
pub use host::HostInfo;
pub use view::{draw, render};

/// Allowed refresh periods in seconds (1 to 4 Hz).
pub const MIN_REFRESH_S: f64 = 0.25;
pub const MAX_REFRESH_S: f64 = 1.0;

/// What the reader thread sends.
enum Feed {
    Sample {
        metrics: Box<Metrics>,
        busy_pct: BTreeMap<usize, f64>,
        /// Re-read after a (re)connect or when the IRQ CPU set changed.
        nic_cpus: Option<BTreeMap<usize, Vec<String>>>,
    },
    Down(String),
}

/// Raw mode, alternate screen and hidden cursor off again. Safe to call twice.
fn restore_terminal() {
    let _ = terminal::disable_raw_mode();
    let _ = execute!(
        std::io::stdout(),
        terminal::LeaveAlternateScreen,
        cursor::Show
    );
}

/// Restores the terminal when dropped: on return, on `?` and while unwinding.
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Restore the terminal before the default panic message, so the message is readable and the
/// shell is usable even when a panic does not unwind through the guard (another thread).
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            prev(info);
        }));
    });
}

/// Connect with a timeout of one refresh period, and check it is scx_miami's socket.
fn connect(path: &Path, timeout: Duration) -> Result<StatsClient> {
    let ms = timeout.as_millis().max(100) as u64;
    let mut client = StatsClient::new()
        .set_path(path)
        .connect(Some(ms))
        .map_err(|e| {
            anyhow!(match e.downcast_ref::<std::io::Error>().map(|e| e.kind()) {
                Some(ErrorKind::NotFound) => "no scx_miami is running (no socket)".to_string(),
                Some(ErrorKind::ConnectionRefused) =>
                    "no scx_miami is running (stale socket)".to_string(),
                Some(ErrorKind::PermissionDenied) =>
                    "permission denied (the socket is root-only; try sudo)".to_string(),
                _ => format!("{e:#}"),
            })
        })?;
    let metas: BTreeMap<String, StatsMeta> = client
        .request("stats_meta", vec![])
        .context("reading stats metadata")?;
    if !metas.contains_key(META_TOP) {
        return Err(crate::stats::not_ours(path));
    }
    Ok(client)
}

/// The reader thread: one sample per @period until @stop, reconnecting after any failure.
fn reader(path: PathBuf, period: Duration, tx: Sender<Feed>, stop: Arc<AtomicBool>) {
    let mut client: Option<StatsClient> = None;
    let mut irq_cpus: Option<Vec<usize>> = None;
    let mut load = crate::load::LoadReader::default();
    host::read_busy_pct(&mut load);
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now < next {
            std::thread::sleep((next - now).min(Duration::from_millis(50)));
            continue;
        }
        next += period;
        if next < now {
            next = now + period;
        }
        let reconnected = client.is_none();
        let result = match client.take() {
            Some(c) => Ok(c),
            None => connect(&path, period),
        }
        .and_then(|mut c| {
            let v: serde_json::Value = c.request("stats", vec![("target".into(), "top".into())])?;
            let m = Metrics::from_json(&v)?;
            Ok((c, m))
        });
        let feed = match result {
            Ok((c, metrics)) => {
                client = Some(c);
                let nic_cpus = (reconnected || irq_cpus.as_ref() != Some(&metrics.irq_cpus))
                    .then(host::read_nic_cpus);
                irq_cpus = Some(metrics.irq_cpus.clone());
                let busy_pct = host::read_busy_pct(&mut load);
                Feed::Sample {
                    metrics: Box::new(metrics),
                    busy_pct,
                    nic_cpus,
                }
            }
            Err(e) => Feed::Down(format!("{e:#}")),
        };
        if tx.send(feed).is_err() {
            return;
        }
    }
}

/// Run the TUI on @path, refreshing every @refresh, until q / Ctrl-C or @shutdown (SIGTERM).
pub fn run(path: &Path, refresh: Duration, shutdown: &AtomicBool) -> Result<()> {
    if !std::io::stdout().is_terminal() {
        return Err(anyhow!(
            "--tui needs a terminal (stdout is not one); --monitor prints to a pipe or file"
        ));
    }
    let host = HostInfo {
        cpu_llc: host::read_cpu_llc(),
        ..Default::default()
    };
    let mut app = App::new(&path.display().to_string(), refresh, host);

    install_panic_hook();
    terminal::enable_raw_mode().context("setting the terminal to raw mode")?;
    let _guard = TerminalGuard;
    execute!(
        std::io::stdout(),
        terminal::EnterAlternateScreen,
        cursor::Hide
    )?;
    let mut term = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;

    let (tx, rx) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let (path, stop) = (path.to_path_buf(), stop.clone());
        std::thread::Builder::new()
            .name("miami-tui-reader".into())
            .spawn(move || reader(path, refresh, tx, stop))?
    };
    let res = event_loop(&mut term, &mut app, &rx, shutdown);
    stop.store(true, Ordering::Relaxed);
    let _ = thread.join();
    res
}

fn event_loop(
    term: &mut Terminal<CrosstermBackend<Stdout>>,
    app: &mut App,
    rx: &Receiver<Feed>,
    shutdown: &AtomicBool,
) -> Result<()> {
    let mut dirty = true;
    while !shutdown.load(Ordering::Relaxed) {
        if dirty {
            render(term, app)?;
            dirty = false;
        }
        // Keys and resizes first, then at most 100 ms of waiting for the reader.
        while event::poll(Duration::ZERO)? {
            match event::read()? {
                Event::Key(k) => {
                    if app.on_key(k) {
                        return Ok(());
                    }
                    dirty = true;
                }
                Event::Resize(..) => dirty = true,
                _ => {}
            }
        }
        if dirty {
            continue;
        }
        if event::poll(Duration::from_millis(100))? {
            continue;
        }
        match rx.try_recv() {
            Ok(Feed::Sample {
                metrics,
                busy_pct,
                nic_cpus,
            }) => {
                if let Some(n) = nic_cpus {
                    app.host.nic_cpus = n;
                }
                app.on_sample(*metrics, busy_pct);
                dirty = true;
            }
            Ok(Feed::Down(reason)) => {
                app.on_disconnect(reason);
                dirty = true;
            }
            Err(TryRecvError::Empty) => {}
            Err(TryRecvError::Disconnected) => {
                return Err(anyhow!("the stats reader thread ended"));
            }
        }
    }
    Ok(())
}
