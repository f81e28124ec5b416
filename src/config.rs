// SPDX-License-Identifier: GPL-2.0
//! One validation step from the command line to the values the BPF side takes: units are
//! converted here (us/ms -> ns) and nowhere else. A bad value is an `Invalid` error whose
//! message names the option; the binary exits 2 on it.

use crate::opts::Opts;
use std::fmt;

pub const INTENS_MAX: u32 = crate::bpf_intf::miami_consts_MIAMI_INTENS_MAX as u32;

/// How --monitor prints a sample. Here, below both the CLI (opts) and the stats module, so that
/// neither reaches into the other for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OutputFormat {
    /// The report --stats prints.
    #[default]
    Text,
    /// OpenMetrics text exposition, `# EOF` after each scrape.
    Openmetrics,
}

/// A command-line value that cannot be used, with the option it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub option: &'static str,
    pub reason: String,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid --{}: {}", self.option, self.reason)
    }
}

impl std::error::Error for Invalid {}

/// Class boundaries on intensiveness (high >= high_min > middle >= middle_min > low).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassBounds {
    pub high_min: u32,
    pub middle_min: u32,
}

impl ClassBounds {
    /// A --class-bounds value: `auto` (None: each agent round derives them, bpf/policy.bpf.c) or
    /// HIGH_MIN,MIDDLE_MIN.
    pub fn parse_setting(s: &str) -> Result<Option<Self>, Invalid> {
        if s.trim() == "auto" {
            return Ok(None);
        }
        Self::parse(s).map(Some)
    }

    pub fn parse(s: &str) -> Result<Self, Invalid> {
        let bad = |reason: String| Invalid {
            option: "class-bounds",
            reason,
        };
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        if parts.len() != 2 {
            return Err(bad(format!(
                "'{s}' is not auto or HIGH_MIN,MIDDLE_MIN (two numbers separated by a comma)"
            )));
        }
        let num = |p: &str| -> Result<u32, Invalid> {
            let v: u64 = p
                .parse()
                .map_err(|_| bad(format!("'{p}' is not a number")))?;
            if v < 1 || v > INTENS_MAX as u64 {
                return Err(bad(format!("{v} is outside 1..={INTENS_MAX}")));
            }
            Ok(v as u32)
        };
        let (high_min, middle_min) = (num(parts[0])?, num(parts[1])?);
        if high_min <= middle_min {
            return Err(bad(format!(
                "HIGH_MIN ({high_min}) must be greater than MIDDLE_MIN ({middle_min})"
            )));
        }
        Ok(Self {
            high_min,
            middle_min,
        })
    }
}

/// Validated configuration, in the units the BPF side uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub slice_ns: u64,
    /// --starve-ms: the starvation guard's bound (run_starved() in main.bpf.c).
    pub starve_ns: u64,
    pub release_ns: u64,
    pub intens_win_ns: u64,
    /// --class-bounds: None for auto.
    pub bounds: Option<ClassBounds>,
    pub net_room_pct: u32,
    pub nics: Vec<String>,
    pub irq_refresh_ms: u64,
    pub stats_interval_s: Option<f64>,
    /// --monitor: read a running instance's stats instead of scheduling.
    pub monitor_interval_s: Option<f64>,
    pub format: OutputFormat,
    /// --tui: the refresh period of the live terminal view of another running instance.
    pub tui_interval_s: Option<f64>,
    /// The agent: its period, load thresholds and move cap per round.
    pub interval_ms: u64,
    pub low_load_pct: u32,
    pub high_load_pct: u32,
    pub max_moves: u32,
    /// --observe: the monitor and a context-switch probe, no struct_ops.
    pub observe: bool,
    /// --stats-socket: served by the scheduler and --observe, read by --monitor and --tui.
    pub stats_socket: std::path::PathBuf,
    /// --test-inject-error: (1 error / 2 restart, after this long).
    pub inject_error: Option<(u32, std::time::Duration)>,
    /// --test-time-dispatch: ops.dispatch() timed by outcome.
    pub time_dispatch: bool,
    /// --observe's context-switch probe (off with --test-observe-no-switch).
    pub observe_switch: bool,
}

fn positive_secs(option: &'static str, v: Option<f64>) -> Result<(), Invalid> {
    match v {
        Some(s) if !(s.is_finite() && s > 0.0) => Err(Invalid {
            option,
            reason: format!("{s} is not a positive number of seconds"),
        }),
        _ => Ok(()),
    }
}

fn in_range(option: &'static str, v: u64, lo: u64, hi: u64, unit: &str) -> Result<u64, Invalid> {
    if v < lo || v > hi {
        return Err(Invalid {
            option,
            reason: format!("{v} {unit} is outside {lo}..={hi}"),
        });
    }
    Ok(v)
}

impl Config {
    pub fn from_opts(o: &Opts) -> Result<Self, Invalid> {
        let slice_us = in_range("slice-us", o.slice_us, 100, 100_000, "us")?;
        let starve_ms = in_range("starve-ms", o.starve_ms, 100, 10_000, "ms")?;
        let release_ms = in_range("release-after-ms", o.release_after_ms, 10, 3_600_000, "ms")?;
        let win_ms = in_range("intens-window-ms", o.intens_window_ms, 10, 10_000, "ms")?;
        let room = in_range("net-room-pct", o.net_room_pct as u64, 1, 100, "%")? as u32;
        let irq_refresh_ms = in_range("irq-refresh-ms", o.irq_refresh_ms, 10, 60_000, "ms")?;
        let interval_ms = in_range("interval-ms", o.interval_ms, 10, 10_000, "ms")?;
        let low = in_range("low-load-pct", o.low_load_pct.into(), 1, 99, "%")?;
        let high = in_range("high-load-pct", o.high_load_pct.into(), 2, 100, "%")?;
        if low >= high {
            return Err(Invalid {
                option: "low-load-pct",
                reason: format!("{low}% must be below --high-load-pct ({high}%)"),
            });
        }
        let max_moves = in_range("max-migrations", o.max_migrations.into(), 0, 256, "moves")?;
        positive_secs("stats", o.stats)?;
        positive_secs("monitor", o.monitor)?;
        if o.monitor.is_some() && o.stats.is_some() {
            return Err(Invalid {
                option: "monitor",
                reason: "cannot be combined with --stats (--stats prints from the scheduler \
                         itself; --monitor reads another running instance)"
                    .into(),
            });
        }
        if let Some(s) = o.tui {
            let range = crate::tui::MIN_REFRESH_S..=crate::tui::MAX_REFRESH_S;
            if !range.contains(&s) {
                return Err(Invalid {
                    option: "tui",
                    reason: format!(
                        "{s} s is outside {}..={} (1 to 4 refreshes a second)",
                        range.start(),
                        range.end()
                    ),
                });
            }
            let other = [
                (o.stats.is_some(), "--stats"),
                (o.monitor.is_some(), "--monitor"),
                (o.format.is_some(), "--format"),
            ];
            if let Some((_, name)) = other.iter().find(|(set, _)| *set) {
                return Err(Invalid {
                    option: "tui",
                    reason: format!(
                        "cannot be combined with {name} (--tui is its own view of a running \
                         instance)"
                    ),
                });
            }
        }
        let format = o.format.unwrap_or_default();
        if format == OutputFormat::Openmetrics && o.monitor.is_none() {
            return Err(Invalid {
                option: "format",
                reason: "openmetrics is only valid with --monitor SECS".into(),
            });
        }
        if let Some(n) = o
            .nic
            .iter()
            .find(|n| n.is_empty() || n.len() > 15 || n.contains('/'))
        {
            return Err(Invalid {
                option: "nic",
                reason: format!("'{n}' is not an interface name"),
            });
        }
        let inject_error = match &o.test_inject_error {
            None => None,
            Some(s) => {
                let bad = || Invalid {
                    option: "test-inject-error",
                    reason: format!("'{s}' is not error@SECS or restart@SECS"),
                };
                let (kind, secs) = s.split_once('@').ok_or_else(bad)?;
                let kind = match kind {
                    "error" => 1,
                    "restart" => 2,
                    _ => return Err(bad()),
                };
                let secs: f64 = secs.parse().map_err(|_| bad())?;
                if !(secs.is_finite() && secs >= 0.0) {
                    return Err(bad());
                }
                Some((kind, std::time::Duration::from_secs_f64(secs)))
            }
        };
        if o.observe && (o.monitor.is_some() || o.tui.is_some()) {
            return Err(Invalid {
                option: "observe",
                reason: "cannot be combined with --monitor or --tui (those read a running \
                         instance; --observe is one)"
                    .into(),
            });
        }
        let stats_socket = match &o.stats_socket {
            None => std::path::PathBuf::from(crate::stats::DEFAULT_SOCKET),
            Some(p) => {
                let bad = |reason: String| Invalid {
                    option: "stats-socket",
                    reason: format!("'{}' {reason}", p.display()),
                };
                if !p.is_absolute() || p.file_name().is_none() {
                    return Err(bad("is not an absolute path to a file".into()));
                }
                // sun_path holds 108 bytes with the terminating NUL.
                let len = p.as_os_str().len();
                if len > 107 {
                    return Err(bad(format!(
                        "is {len} bytes; a socket path holds at most 107"
                    )));
                }
                if p.is_dir() {
                    return Err(bad("is a directory".into()));
                }
                p.clone()
            }
        };
        Ok(Self {
            observe: o.observe,
            stats_socket,
            inject_error,
            time_dispatch: o.test_time_dispatch,
            observe_switch: !o.test_observe_no_switch,
            slice_ns: slice_us * 1000,
            starve_ns: starve_ms * 1_000_000,
            release_ns: release_ms * 1_000_000,
            intens_win_ns: win_ms * 1_000_000,
            bounds: ClassBounds::parse_setting(&o.class_bounds)?,
            net_room_pct: room,
            nics: o.nic.clone(),
            irq_refresh_ms,
            stats_interval_s: o.stats,
            monitor_interval_s: o.monitor,
            format,
            tui_interval_s: o.tui,
            interval_ms,
            low_load_pct: low as u32,
            high_load_pct: high as u32,
            max_moves: max_moves as u32,
        })
    }
}

/// What a --config file may set: the agent's tunables, the knobs that change without a reload
/// of the BPF program. The rest (slice, starvation bound, intensiveness window, net room, NIC
/// list) shape the loaded program or its maps and need a restart.
pub const RUNTIME_OPTIONS: [&str; 7] = [
    "interval-ms",
    "release-after-ms",
    "low-load-pct",
    "high-load-pct",
    "max-migrations",
    "class-bounds",
    "irq-refresh-ms",
];

/// @opts with the settings of a --config file's @text on top. Only the file's shape is checked
/// here; the values go through Config::from_opts like the command line's.
pub fn overlay(opts: &Opts, text: &str) -> Result<Opts, Invalid> {
    let mut o = opts.clone();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let bad = |reason: String| Invalid {
            option: "config",
            reason: format!("line {}: {reason}", i + 1),
        };
        let (name, value) = line
            .split_once('=')
            .ok_or_else(|| bad(format!("'{line}' is not NAME = VALUE")))?;
        let (name, value) = (name.trim().trim_start_matches("--"), value.trim());
        let num = || -> Result<u64, Invalid> {
            value
                .parse()
                .map_err(|_| bad(format!("{name}: '{value}' is not a whole number")))
        };
        let num32 = || num().map(|v| v.min(u32::MAX.into()) as u32);
        match name {
            "interval-ms" => o.interval_ms = num()?,
            "release-after-ms" => o.release_after_ms = num()?,
            "irq-refresh-ms" => o.irq_refresh_ms = num()?,
            "low-load-pct" => o.low_load_pct = num32()?,
            "high-load-pct" => o.high_load_pct = num32()?,
            "max-migrations" => o.max_migrations = num32()?,
            "class-bounds" => o.class_bounds = value.to_string(),
            _ => {
                return Err(bad(format!(
                    "unknown setting '{name}' (a --config file may set: {})",
                    RUNTIME_OPTIONS.join(", ")
                )))
            }
        }
    }
    Ok(o)
}

/// --nic names interfaces that exist (here or, as devices, in another network namespace): an
/// unknown one is a bad command line, found before anything is loaded. Only when scheduling:
/// --monitor and --tui read another instance and take no --nic.
pub fn check_nics(cfg: &Config) -> Result<(), Invalid> {
    if cfg.nics.is_empty() || cfg.monitor_interval_s.is_some() || cfg.tui_interval_s.is_some() {
        return Ok(());
    }
    crate::irq::discover(&crate::irq::Roots::default(), &cfg.nics)
        .map(|_| ())
        .map_err(|e| Invalid {
            option: "nic",
            reason: format!("{e:#}"),
        })
}

/// The configuration: @opts validated, with its --config file (if any) on top. An error from a
/// value of the file names the file.
pub fn load(opts: &Opts) -> Result<Config, Invalid> {
    let Some(path) = &opts.config else {
        return Config::from_opts(opts);
    };
    let text = std::fs::read_to_string(path).map_err(|e| Invalid {
        option: "config",
        reason: format!("cannot read {}: {e}", path.display()),
    })?;
    Config::from_opts(&overlay(opts, &text)?).map_err(|e| Invalid {
        reason: format!("{} (set in {})", e.reason, path.display()),
        ..e
    })
}
