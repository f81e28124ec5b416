// SPDX-License-Identifier: GPL-2.0
//! Host tests of the built scx_miami binary: version, help, --help-stats, exit codes.
//!
//! The binary belongs to another workspace member, so CARGO_BIN_EXE_scx_miami is not set here;
//! it is looked up as target/release/scx_miami (or under $CARGO_TARGET_DIR), which `make test`
//! and `cargo test --release --workspace` build. Without it these tests fail: a test that did
//! not run must not count as passed.

use std::path::PathBuf;
use std::process::{Command, Output};

use miami::stats::{DEFAULT_SOCKET, STATS};

fn binary() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let target = if target.is_relative() {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(target)
    } else {
        target
    };
    let bin = target.join("release/scx_miami");
    // A test that cannot run must not count as passed: no binary is a failure, not a skip.
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo build --release` (or `make test`) first",
        bin.display()
    );
    bin
}

/// Runs the binary with @args.
fn run(args: &[&str]) -> Output {
    let bin = binary();
    Command::new(&bin)
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", bin.display()))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn version() {
    let o = run(&["--version"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // "scx_miami 0.1.0-g<commit> x86_64-unknown-linux-gnu": a bug report names the build. The
    // commit is this checkout's (git), the target the one cargo built for.
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let out = stdout(&o);
    let words: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(words.len(), 3, "{out}");
    assert_eq!(words[0], "scx_miami");
    match head {
        // The binary may be a commit behind the checkout's HEAD (built, then committed):
        // the version is 0.1.0-g followed by 12 hex digits either way.
        Some(_) => {
            let v = words[1]
                .strip_prefix("0.1.0-g")
                .unwrap_or_else(|| panic!("{out}"));
            assert!(
                v.len() == 12 && v.chars().all(|c| c.is_ascii_hexdigit()),
                "{out}"
            );
        }
        None => assert_eq!(words[1], "0.1.0", "{out}"),
    }
    assert!(
        words[2].starts_with("x86_64-") || words[2].contains("-linux"),
        "{out}"
    );
}

#[test]
fn help() {
    let o = run(&["--help"]);
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
    let o = run(&["-h"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("--class-bounds"));
}

#[test]
fn help_stats_lists_every_stat() {
    let o = run(&["--help-stats"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    // docs/stats.md holds the --help-stats text in its code block (`make docs`): the binary must
    // print what the documentation says, whatever describe() does.
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/stats.md")).unwrap();
    let block = doc
        .split("```")
        .nth(1)
        .expect("docs/stats.md has a code block");
    assert_eq!(
        text,
        block.trim_start_matches('\n'),
        "docs/stats.md is stale: run `make docs`"
    );
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
    assert!(
        !std::path::Path::new(DEFAULT_SOCKET).exists(),
        "cannot test: {DEFAULT_SOCKET} exists (a scheduler runs here); stop it first"
    );
    let o = run(&["--monitor", "1"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("no scx_miami is running"), "{err}");
    assert!(err.contains(DEFAULT_SOCKET), "{err}");
}

#[test]
fn help_stats_wins_over_invalid_values() {
    // --help-stats needs no valid configuration and no root.
    let o = run(&["--help-stats", "--slice-us", "1"]);
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
        (
            &["--list-nics", "--nic", "no-such-nic0"][..],
            "--nic no-such-nic0: no such interface",
        ),
        (&["--list-nics", "--stats", "1"][..], "--list-nics"),
        (&["--list-nics", "--observe"][..], "--list-nics"),
        // An interface that does not exist: found before the host check (this host has no
        // sched_ext, and that is not what the message says) and before anything is loaded.
        (
            &["--nic", "no-such-nic0"][..],
            "invalid --nic: --nic no-such-nic0: no such interface",
        ),
        // A negative number is a bad value for its option, not an unknown option "-5".
        (
            &["--release-after-ms", "-5"][..],
            "'-5' for '--release-after-ms",
        ),
        (
            &["--max-migrations", "-1"][..],
            "'-1' for '--max-migrations",
        ),
        // clap's own errors also exit 2 and name the option.
        (&["--slice-us", "abc"][..], "--slice-us"),
        (&["--stats", "soon"][..], "--stats"),
        (&["--no-such-option"][..], "--no-such-option"),
    ] {
        let o = run(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: stderr lacks '{needle}':\n{err}"
        );
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
    }
}

/// --list-nics on this host: no root, no sched_ext needed; a row per IRQ of every interface in
/// /sys/class/net that has a device (a host without one must say so and exit 1).
#[test]
fn list_nics_reads_this_host() {
    let o = run(&["--list-nics"]);
    let with_device = std::fs::read_dir("/sys/class/net")
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().join("device").exists())
        .count();
    if with_device == 0 {
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("no network interface with IRQs"));
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(head, ["NIC", "IRQ", "QUEUE", "CPUS", "NAME"]);
    for l in lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(f.len(), 5, "{l}");
        assert!(f[1].parse::<u32>().is_ok(), "{l}");
        assert!(["rx", "tx", "rx+tx", "other"].contains(&f[2]), "{l}");
        // The IRQ's CPUs are those of /proc/irq/N: the effective ones while inside the mask
        // (outside it a re-pin is pending), else the mask.
        let irq = std::path::Path::new("/proc/irq").join(f[1]);
        let list = |name: &str| {
            std::fs::read_to_string(irq.join(name))
                .ok()
                .and_then(|t| miami::cpulist::parse_cpu_list(&t).ok())
                .unwrap_or_default()
        };
        let (eff, mask) = (list("effective_affinity_list"), list("smp_affinity_list"));
        let want = if !eff.is_empty() && eff.iter().all(|c| mask.contains(c)) {
            eff
        } else {
            mask
        };
        let want = miami::cpulist::format_cpu_list(&want);
        assert_eq!(f[3], if want.is_empty() { "-" } else { &want }, "{l}");
    }
}

#[test]
fn tui_invalid_values_exit_2_naming_the_option() {
    let o = run(&["--help"]);
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
        let o = run(args);
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
    // Running it where sched_ext exists would really load the scheduler: that is the VM tier's
    // job (t_sched_basic). The host tier runs on kernels without it, as this project's do.
    assert!(
        !std::path::Path::new("/sys/kernel/sched_ext").exists(),
        "cannot test: this kernel has sched_ext; the no-sched_ext exit is tested in the VM"
    );
    let o = run(&[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    if is_root() {
        assert!(err.contains("no sched_ext"), "{err}");
        assert!(err.contains("CONFIG_SCHED_CLASS_EXT"), "{err}");
    } else {
        assert!(err.contains("must run as root"), "{err}");
    }
}
