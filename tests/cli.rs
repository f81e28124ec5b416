// SPDX-License-Identifier: GPL-2.0
//! Host tests of the built scx_miami binary: version, help, --help-stats, exit codes.
//!
//! The binary belongs to another workspace member, so CARGO_BIN_EXE_scx_miami is not set here;
//! it is looked up as target/release/scx_miami (or under $CARGO_TARGET_DIR). `make test` builds
//! it first and sets MIAMI_REQUIRE_BIN=1, which turns a missing binary into a failure; a plain
//! `cargo test` without it skips these tests with a note on stderr.

use std::path::PathBuf;
use std::process::{Command, Output};

use miami::stats::{describe, DEFAULT_SOCKET, STATS};

fn binary() -> Option<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let target = if target.is_relative() {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(target)
    } else {
        target
    };
    let bin = target.join("release/scx_miami");
    if bin.is_file() {
        return Some(bin);
    }
    if std::env::var("MIAMI_REQUIRE_BIN").is_ok_and(|v| v == "1") {
        panic!(
            "{} is missing (MIAMI_REQUIRE_BIN=1): run cargo build --release first",
            bin.display()
        );
    }
    eprintln!(
        "SKIP: {} not built; run `cargo build --release` (or `make test`) to test the CLI",
        bin.display()
    );
    None
}

/// Runs the binary with @args; None when it is not built (the test then passes as skipped).
fn run(args: &[&str]) -> Option<Output> {
    let bin = binary()?;
    let out = Command::new(&bin)
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", bin.display()));
    Some(out)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn version() {
    let Some(o) = run(&["--version"]) else { return };
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        format!("scx_miami {}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(stdout(&o).trim(), "scx_miami 0.1.0");
}

#[test]
fn help() {
    let Some(o) = run(&["--help"]) else { return };
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    for needle in [
        "--class-bounds",
        "--slice-us",
        "--release-after-ms",
        "--net-room-pct",
        "--nic",
        "--irq-refresh-ms",
        "--stats",
        "--help-stats",
        "Exit codes",
        "2 invalid command line",
        "sched_ext",
    ] {
        assert!(
            text.contains(needle),
            "--help does not mention {needle}:\n{text}"
        );
    }
}

#[test]
fn short_help() {
    let Some(o) = run(&["-h"]) else { return };
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("--class-bounds"));
}

#[test]
fn help_stats_lists_every_stat() {
    let Some(o) = run(&["--help-stats"]) else {
        return;
    };
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(text, describe());
    for s in STATS {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().next() == Some(s.name)),
            "{} missing:\n{text}",
            s.name
        );
    }
}

#[test]
fn monitor_without_a_scheduler_exits_1() {
    if std::path::Path::new(DEFAULT_SOCKET).exists() {
        eprintln!("SKIP: {DEFAULT_SOCKET} exists (a scheduler may be running)");
        return;
    }
    let Some(o) = run(&["--monitor", "1"]) else {
        return;
    };
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("no scx_miami is running"), "{err}");
    assert!(err.contains(DEFAULT_SOCKET), "{err}");
}

#[test]
fn help_stats_wins_over_invalid_values() {
    // --help-stats needs no valid configuration and no root.
    let Some(o) = run(&["--help-stats", "--slice-us", "1"]) else {
        return;
    };
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn invalid_values_exit_2_naming_the_option() {
    for (args, needle) in [
        (&["--slice-us", "1"][..], "invalid --slice-us: "),
        (
            &["--release-after-ms", "5"][..],
            "invalid --release-after-ms: ",
        ),
        (&["--net-room-pct", "0"][..], "invalid --net-room-pct: "),
        (&["--net-room-pct", "101"][..], "invalid --net-room-pct: "),
        (&["--irq-refresh-ms", "0"][..], "invalid --irq-refresh-ms: "),
        (
            &["--class-bounds", "10,100"][..],
            "invalid --class-bounds: ",
        ),
        (&["--class-bounds", "100"][..], "invalid --class-bounds: "),
        (&["--stats", "0"][..], "invalid --stats: "),
        (&["--format", "openmetrics"][..], "invalid --format: "),
        (&["--monitor", "0"][..], "invalid --monitor: "),
        (
            &["--monitor", "1", "--stats", "1"][..],
            "invalid --monitor: ",
        ),
        (&["--format", "xml"][..], "--format"),
        (&["--nic", "a/b"][..], "invalid --nic: "),
        // clap's own errors also exit 2 and name the option.
        (&["--slice-us", "abc"][..], "--slice-us"),
        (&["--stats", "soon"][..], "--stats"),
        (&["--no-such-option"][..], "--no-such-option"),
    ] {
        let Some(o) = run(args) else { return };
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: stderr lacks '{needle}':\n{err}"
        );
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
    }
}

#[test]
fn tui_invalid_values_exit_2_naming_the_option() {
    let Some(o) = run(&["--help"]) else { return };
    if !stdout(&o).contains("--tui") {
        eprintln!("SKIP: the built binary predates --tui; rebuild it to test --tui");
        return;
    }
    assert!(stdout(&o).contains("0.25..=1"), "{}", stdout(&o));
    for (args, needle) in [
        (&["--tui", "0.1"][..], "invalid --tui: "),
        (&["--tui", "2"][..], "invalid --tui: "),
        (&["--tui", "--stats", "1"][..], "invalid --tui: "),
        (&["--tui", "--monitor", "1"][..], "invalid --tui: "),
        (&["--tui", "1", "--format", "text"][..], "invalid --tui: "),
        (&["--tui", "soon"][..], "--tui"),
    ] {
        let Some(o) = run(args) else { return };
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: stderr lacks '{needle}':\n{err}"
        );
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        == Some("0")
}

#[test]
fn refuses_to_run_without_sched_ext() {
    if std::path::Path::new("/sys/kernel/sched_ext").exists() {
        // Running it here would really load the scheduler; that is the VM tier's job.
        eprintln!("SKIP: this kernel has sched_ext; the no-sched_ext exit is not testable here");
        return;
    }
    let Some(o) = run(&[]) else { return };
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    if is_root() {
        assert!(err.contains("no sched_ext"), "{err}");
        assert!(err.contains("CONFIG_SCHED_CLASS_EXT"), "{err}");
    } else {
        assert!(err.contains("must run as root"), "{err}");
    }
}
