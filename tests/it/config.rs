// SPDX-License-Identifier: GPL-2.0
//! Host tests of the command line (clap) and its one validation step (`Config::from_opts`):
//! every rejected value names its option, and units are converted once (us/ms -> ns). Also the
//! --config file that SIGHUP re-reads.

use clap::Parser;
use miami::config::OutputFormat;
use miami::config::{load, overlay, ClassBounds, Config, Invalid, INTENS_MAX, RUNTIME_OPTIONS};
use miami::opts::Opts;
use miami::scheduler::loop_sleep;
use std::time::{Duration, Instant};

fn opts(args: &[&str]) -> Opts {
    let argv = std::iter::once("scx_miami").chain(args.iter().copied());
    Opts::try_parse_from(argv).unwrap_or_else(|e| panic!("clap rejected {args:?}: {e}"))
}

fn config(args: &[&str]) -> Result<Config, Invalid> {
    Config::from_opts(&opts(args))
}

/// Asserts that @args fail validation on --@option and that the message says so and contains
/// every string in @mentions.
fn rejects(args: &[&str], option: &str, mentions: &[&str]) {
    let e = config(args).expect_err(&format!("{args:?} was accepted"));
    assert_eq!(e.option, option, "{args:?}: {e}");
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("invalid --{option}: ")),
        "{args:?}: {msg}"
    );
    for m in mentions {
        assert!(msg.contains(m), "{args:?}: '{msg}' does not mention '{m}'");
    }
}

// ---- defaults and unit conversion ----

#[test]
fn defaults() {
    let o = opts(&[]);
    assert_eq!(o.slice_us, 5000);
    assert_eq!(o.starve_ms, 1000);
    assert_eq!(o.release_after_ms, 1000);
    assert_eq!(o.class_bounds, "auto");
    assert_eq!(o.net_room_pct, 80);
    assert!(o.nic.is_empty());
    assert_eq!(o.irq_refresh_ms, 1000);
    assert_eq!(o.stats, None);
    assert!(!o.help_stats);
    assert_eq!(o.exit_dump_len, 0);
    assert!(!o.verbose);

    let c = Config::from_opts(&o).unwrap();
    assert_eq!(
        c,
        Config {
            slice_ns: 5_000_000,
            starve_ns: 1_000_000_000,
            release_ns: 1_000_000_000,
            intens_win_ns: 100_000_000,
            // --class-bounds auto: the agent derives them (tests/it/policy.rs).
            bounds: None,
            net_room_pct: 80,
            nics: vec![],
            irq_refresh_ms: 1000,
            stats_interval_s: None,
            monitor_interval_s: None,
            format: OutputFormat::Text,
            tui_interval_s: None,
            interval_ms: 100,
            low_load_pct: 50,
            high_load_pct: 90,
            max_moves: 4,
            observe: false,
            // The scx project's schedulers' path (scx_stats), where --monitor finds them.
            stats_socket: "/var/run/scx/root/stats".into(),
            inject_error: None,
            time_dispatch: false,
            observe_switch: true,
        }
    );
}

#[test]
fn stats_socket_is_an_absolute_socket_path() {
    let c = config(&["--observe", "--stats-socket", "/run/miami-observe/stats"]).unwrap();
    assert_eq!(
        c.stats_socket,
        std::path::Path::new("/run/miami-observe/stats")
    );
    // A path no one else uses: a directory of that name is refused (below), and a run once
    // failed here because a scratch directory /tmp/s existed.
    let mine = format!("/tmp/miami-config-test-{}.sock", std::process::id());
    let c = config(&["--monitor", "1", "--stats-socket", &mine]).unwrap();
    assert_eq!(c.stats_socket, std::path::Path::new(&mine));

    rejects(
        &["--stats-socket", "stats"],
        "stats-socket",
        &["'stats'", "absolute"],
    );
    rejects(
        &["--stats-socket", "/"],
        "stats-socket",
        &["absolute path to a file"],
    );
    rejects(
        &["--stats-socket", "/tmp"],
        "stats-socket",
        &["'/tmp'", "directory"],
    );
    // sun_path: 108 bytes with the NUL, so 107 pass and 108 do not.
    let path = |n: usize| format!("/{}", "s".repeat(n - 1));
    assert!(config(&["--stats-socket", &path(107)]).is_ok());
    rejects(
        &["--stats-socket", &path(108)],
        "stats-socket",
        &["108 bytes", "at most 107"],
    );
}

#[test]
fn observe_and_test_injection_parse() {
    let c = config(&["--observe"]).unwrap();
    assert!(c.observe);
    let e = config(&["--observe", "--monitor", "1"]).unwrap_err();
    assert_eq!(e.option, "observe", "{e}");
    let c = config(&["--test-inject-error", "restart@2.5"]).unwrap();
    assert_eq!(
        c.inject_error,
        Some((2, std::time::Duration::from_millis(2500)))
    );
    assert_eq!(
        config(&["--test-inject-error", "error@0"])
            .unwrap()
            .inject_error
            .unwrap()
            .0,
        1
    );
    for bad in ["error", "boom@1", "error@-1", "error@x", "restart@inf"] {
        let e = config(&["--test-inject-error", bad]).unwrap_err();
        assert_eq!(e.option, "test-inject-error", "{bad}: {e}");
    }
    // Hidden: a test hook, not an operator's option.
    let help = <Opts as clap::CommandFactory>::command()
        .render_long_help()
        .to_string();
    assert!(!help.contains("test-inject-error"), "{help}");
}

#[test]
fn units_are_converted_once() {
    let c = config(&[
        "--slice-us",
        "250",
        "--starve-ms",
        "2500",
        "--release-after-ms",
        "20",
        "--irq-refresh-ms",
        "500",
        "--net-room-pct",
        "55",
        "--stats",
        "0.5",
        "--class-bounds",
        "5000,50",
        "--nic",
        "eth0,enp0s10",
        "--nic",
        "eth1",
    ])
    .unwrap();
    assert_eq!(c.slice_ns, 250_000);
    assert_eq!(c.starve_ns, 2_500_000_000);
    assert_eq!(c.release_ns, 20_000_000);
    assert_eq!(c.irq_refresh_ms, 500);
    assert_eq!(c.net_room_pct, 55);
    assert_eq!(c.stats_interval_s, Some(0.5));
    assert_eq!(
        c.bounds,
        Some(ClassBounds {
            high_min: 5000,
            middle_min: 50
        })
    );
    assert_eq!(c.nics, ["eth0", "enp0s10", "eth1"]);
}

#[test]
fn range_limits_are_inclusive() {
    let lo = config(&[
        "--slice-us=100",
        "--starve-ms=100",
        "--release-after-ms=10",
        "--net-room-pct=1",
        "--irq-refresh-ms=10",
        "--class-bounds=2,1",
    ])
    .unwrap();
    assert_eq!(lo.slice_ns, 100_000);
    assert_eq!(lo.starve_ns, 100_000_000);
    assert_eq!(lo.release_ns, 10_000_000);
    assert_eq!(lo.net_room_pct, 1);
    assert_eq!(lo.irq_refresh_ms, 10);
    assert_eq!(lo.bounds.unwrap().middle_min, 1);

    let hi = config(&[
        "--slice-us=100000",
        "--starve-ms=10000",
        "--release-after-ms=3600000",
        "--net-room-pct=100",
        "--irq-refresh-ms=60000",
        "--class-bounds=1000000,999999",
    ])
    .unwrap();
    assert_eq!(hi.slice_ns, 100_000_000);
    assert_eq!(hi.starve_ns, 10_000_000_000);
    assert_eq!(hi.release_ns, 3_600_000_000_000);
    assert_eq!(hi.net_room_pct, 100);
    assert_eq!(hi.irq_refresh_ms, 60_000);
    assert_eq!(hi.bounds.unwrap().high_min, INTENS_MAX);
}

#[test]
fn other_flags_parse() {
    let o = opts(&["-v", "--exit-dump-len", "65536", "--help-stats"]);
    assert!(o.verbose);
    assert!(o.help_stats);
    assert_eq!(o.exit_dump_len, 65536);
}

// ---- --class-bounds ----

#[test]
fn class_bounds_parse_ok() {
    assert_eq!(
        ClassBounds::parse("100000,10000").unwrap(),
        ClassBounds {
            high_min: 100_000,
            middle_min: 10_000
        }
    );
    assert_eq!(
        ClassBounds::parse(" 20 , 10 ").unwrap(),
        ClassBounds {
            high_min: 20,
            middle_min: 10
        }
    );
    assert_eq!(INTENS_MAX, 1_000_000);
    assert_eq!(ClassBounds::parse_setting(" auto ").unwrap(), None);
    assert_eq!(
        ClassBounds::parse_setting("20,10").unwrap(),
        Some(ClassBounds {
            high_min: 20,
            middle_min: 10
        })
    );
    assert_eq!(config(&["--class-bounds", "auto"]).unwrap().bounds, None);
}

#[test]
fn class_bounds_errors() {
    let cases: &[(&str, &[&str])] = &[
        // out of order and equal
        ("10,100", &["HIGH_MIN (10)", "MIDDLE_MIN (100)", "greater"]),
        ("500,500", &["HIGH_MIN (500)", "MIDDLE_MIN (500)"]),
        // zero and above 10^6
        ("100,0", &["0 is outside 1..=1000000"]),
        ("0,0", &["0 is outside 1..=1000000"]),
        ("1000001,10", &["1000001 is outside 1..=1000000"]),
        ("99999999999999999999,1", &["is not a number"]),
        // not numbers
        ("abc,10", &["'abc' is not a number"]),
        ("100,1e3", &["'1e3' is not a number"]),
        ("-5,1", &["'-5' is not a number"]),
        ("100,", &["'' is not a number"]),
        // wrong count
        ("100", &["'100' is not auto or HIGH_MIN,MIDDLE_MIN"]),
        ("Auto", &["'Auto' is not auto or HIGH_MIN,MIDDLE_MIN"]),
        ("", &["is not auto or HIGH_MIN,MIDDLE_MIN"]),
        ("3,2,1", &["'3,2,1' is not auto or HIGH_MIN,MIDDLE_MIN"]),
        ("100;10", &["'100;10' is not auto or HIGH_MIN,MIDDLE_MIN"]),
    ];
    for (s, mentions) in cases {
        let e = ClassBounds::parse(s).expect_err(s);
        assert_eq!(e.option, "class-bounds");
        let msg = e.to_string();
        assert!(msg.starts_with("invalid --class-bounds: "), "{s}: {msg}");
        for m in *mentions {
            assert!(msg.contains(m), "{s}: '{msg}' does not mention '{m}'");
        }
        // The same error surfaces through the CLI.
        rejects(&[&format!("--class-bounds={s}")], "class-bounds", mentions);
    }
}

// ---- ranges ----

#[test]
fn slice_us_out_of_range() {
    rejects(
        &["--slice-us", "99"],
        "slice-us",
        &["99 us", "100..=100000"],
    );
    rejects(&["--slice-us", "0"], "slice-us", &["0 us"]);
    rejects(&["--slice-us", "100001"], "slice-us", &["100001 us"]);
}

#[test]
fn starve_ms_out_of_range() {
    rejects(
        &["--starve-ms", "99"],
        "starve-ms",
        &["99 ms", "100..=10000"],
    );
    rejects(&["--starve-ms", "10001"], "starve-ms", &["10001 ms"]);
}

#[test]
fn release_after_ms_out_of_range() {
    rejects(
        &["--release-after-ms", "9"],
        "release-after-ms",
        &["9 ms", "10..=3600000"],
    );
    rejects(
        &["--release-after-ms", "3600001"],
        "release-after-ms",
        &["3600001 ms"],
    );
}

#[test]
fn net_room_pct_out_of_range() {
    rejects(
        &["--net-room-pct", "0"],
        "net-room-pct",
        &["0 %", "1..=100"],
    );
    rejects(&["--net-room-pct", "101"], "net-room-pct", &["101 %"]);
}

#[test]
fn irq_refresh_ms_out_of_range() {
    rejects(
        &["--irq-refresh-ms", "9"],
        "irq-refresh-ms",
        &["9 ms", "10..=60000"],
    );
    rejects(
        &["--irq-refresh-ms", "60001"],
        "irq-refresh-ms",
        &["60001 ms"],
    );
}

#[test]
fn stats_must_be_positive_and_finite() {
    for v in ["0", "-1", "-0.5", "NaN", "inf", "-inf"] {
        rejects(
            &[&format!("--stats={v}")],
            "stats",
            &["not a positive number of seconds"],
        );
    }
    assert_eq!(
        config(&["--stats", "2"]).unwrap().stats_interval_s,
        Some(2.0)
    );
    assert_eq!(
        config(&["--stats", "0.001"]).unwrap().stats_interval_s,
        Some(0.001)
    );
}

#[test]
fn bad_nic_names() {
    rejects(
        &["--nic", "eth0/1"],
        "nic",
        &["'eth0/1' is not an interface name"],
    );
    // IFNAMSIZ is 16 including the NUL: 15 characters is the longest name.
    rejects(
        &["--nic", "abcdefghijklmnop"],
        "nic",
        &["'abcdefghijklmnop'"],
    );
    rejects(
        &["--nic", "eth0,,eth1"],
        "nic",
        &["'' is not an interface name"],
    );
    rejects(&["--nic", "eth0,x/y"], "nic", &["'x/y'"]);
    assert_eq!(
        config(&["--nic", "abcdefghijklmno"]).unwrap().nics,
        ["abcdefghijklmno"]
    );
}

#[test]
fn first_error_wins_and_names_its_option() {
    // Several bad values: the report is about one option, not a blend.
    let e = config(&["--slice-us", "1", "--net-room-pct", "0"]).unwrap_err();
    assert_eq!(e.option, "slice-us");
}

// ---- clap itself ----

#[test]
fn clap_rejects_malformed_values_naming_the_option() {
    for (args, option) in [
        (&["--slice-us", "abc"][..], "--slice-us"),
        (&["--slice-us=-5"][..], "--slice-us"),
        (&["--net-room-pct", "1.5"][..], "--net-room-pct"),
        (&["--stats", "soon"][..], "--stats"),
        (&["--irq-refresh-ms", ""][..], "--irq-refresh-ms"),
        (&["--exit-dump-len=-1"][..], "--exit-dump-len"),
    ] {
        let argv = std::iter::once("scx_miami").chain(args.iter().copied());
        let e = Opts::try_parse_from(argv).expect_err(&format!("{args:?}"));
        assert_eq!(e.exit_code(), 2, "{args:?}");
        let msg = e.to_string();
        assert!(msg.contains(option), "{args:?}: {msg}");
    }
}

#[test]
fn clap_rejects_unknown_options_and_positionals() {
    for args in [&["--bogus"][..], &["extra"][..], &["--slice-us"][..]] {
        let argv = std::iter::once("scx_miami").chain(args.iter().copied());
        let e = Opts::try_parse_from(argv).expect_err(&format!("{args:?}"));
        assert_eq!(e.exit_code(), 2, "{args:?}");
    }
}

#[test]
fn clap_definition_is_consistent() {
    use clap::CommandFactory;
    Opts::command().debug_assert();
}

#[test]
fn monitor_and_format() {
    for v in ["0", "-1", "NaN", "inf"] {
        rejects(
            &[&format!("--monitor={v}")],
            "monitor",
            &["not a positive number of seconds"],
        );
    }
    rejects(
        &["--format", "openmetrics"],
        "format",
        &["openmetrics", "--monitor"],
    );
    rejects(
        &["--format", "openmetrics", "--stats", "1"],
        "format",
        &["--monitor"],
    );
    rejects(&["--monitor", "1", "--stats", "1"], "monitor", &["--stats"]);

    let c = config(&["--monitor", "2", "--format", "openmetrics"]).unwrap();
    assert_eq!(c.monitor_interval_s, Some(2.0));
    assert_eq!(c.format, OutputFormat::Openmetrics);
    let c = config(&["--monitor", "0.5"]).unwrap();
    assert_eq!(c.format, OutputFormat::Text);
    // text is the --stats format too, so it needs no --monitor.
    assert_eq!(
        config(&["--format", "text", "--stats", "1"])
            .unwrap()
            .format,
        OutputFormat::Text
    );
    assert!(Opts::try_parse_from(["scx_miami", "--format", "json"]).is_err());
}

#[test]
fn tui_refresh_range_and_conflicts() {
    // Bare --tui: 1 s.
    assert_eq!(opts(&["--tui"]).tui, Some(1.0));
    assert_eq!(opts(&[]).tui, None);
    assert_eq!(config(&[]).unwrap().tui_interval_s, None);
    assert_eq!(config(&["--tui"]).unwrap().tui_interval_s, Some(1.0));
    for (v, want) in [("0.25", 0.25), ("0.5", 0.5), ("1", 1.0)] {
        assert_eq!(config(&["--tui", v]).unwrap().tui_interval_s, Some(want));
        assert_eq!(
            config(&[&format!("--tui={v}")]).unwrap().tui_interval_s,
            Some(want)
        );
    }
    for v in ["0", "0.2", "0.249", "1.01", "2", "-1", "NaN", "inf"] {
        rejects(
            &[&format!("--tui={v}")],
            "tui",
            &["is outside 0.25..=1", "refreshes a second"],
        );
    }
    for (other, name) in [
        (&["--stats", "1"][..], "--stats"),
        (&["--monitor", "1"][..], "--monitor"),
        (&["--format", "openmetrics"][..], "--format"),
        (&["--format", "text"][..], "--format"),
    ] {
        let mut args = vec!["--tui"];
        args.extend_from_slice(other);
        rejects(&args, "tui", &["cannot be combined with", name]);
        // Either order.
        let mut args = other.to_vec();
        args.extend(["--tui", "0.5"]);
        rejects(&args, "tui", &[name]);
    }
    let argv = ["scx_miami", "--tui", "soon"];
    let e = Opts::try_parse_from(argv).expect_err("--tui soon");
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("--tui"), "{e}");
}

/// The run loop sleeps until its next job, at least 1 ms and at most a second: the agent's
/// period at the defaults (100 ms), no more often than the slowest job asks with a longer one
/// (loader-cost.md: a loop woken every 100 ms whatever the period), and no round waits on it.
#[test]
fn the_run_loop_sleeps_until_its_next_job() {
    let now = Instant::now();
    let ms = Duration::from_millis;
    // Defaults: a round in 100 ms, the IRQ map's events looked at within 1000 ms.
    assert_eq!(loop_sleep(now, [now + ms(100), now + ms(1000)]), ms(100));
    // --interval-ms 10000 --irq-refresh-ms 60000: once a second, for the flags and exit.
    assert_eq!(
        loop_sleep(now, [now + ms(10_000), now + ms(60_000)]),
        ms(1000)
    );
    // --interval-ms 1000 --irq-refresh-ms 250 (t_repin): the IRQ map's look comes first.
    assert_eq!(loop_sleep(now, [now + ms(1000), now + ms(250)]), ms(250));
    // A round overdue, or nothing due at all.
    assert_eq!(loop_sleep(now + ms(5), [now]), ms(1));
    assert_eq!(loop_sleep(now, []), ms(1000));
}

#[test]
fn agent_knobs() {
    let c = config(&[
        "--interval-ms",
        "250",
        "--low-load-pct",
        "30",
        "--high-load-pct",
        "70",
        "--max-migrations",
        "0",
    ])
    .unwrap();
    assert_eq!(
        (c.interval_ms, c.low_load_pct, c.high_load_pct, c.max_moves),
        (250, 30, 70, 0)
    );
    rejects(
        &["--interval-ms", "0"],
        "interval-ms",
        &["0 ms", "10..=10000"],
    );
    rejects(&["--interval-ms", "10001"], "interval-ms", &["10001 ms"]);
    rejects(
        &["--high-load-pct", "101"],
        "high-load-pct",
        &["101 %", "2..=100"],
    );
    rejects(&["--low-load-pct", "0"], "low-load-pct", &["0 %", "1..=99"]);
    rejects(
        &["--low-load-pct", "80", "--high-load-pct", "80"],
        "low-load-pct",
        &["80% must be below --high-load-pct (80%)"],
    );
    rejects(
        &["--low-load-pct", "95", "--high-load-pct", "60"],
        "low-load-pct",
        &["95%", "(60%)"],
    );
    rejects(
        &["--max-migrations", "257"],
        "max-migrations",
        &["257 moves", "0..=256"],
    );
}

// ---- --config FILE (re-read on SIGHUP) ----

/// A --config file with @text in @dir (a temporary directory, removed when the test drops it);
/// returns its path.
fn config_file(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn config_file_sets_every_runtime_option_over_the_command_line() {
    let text = "# agent tunables
interval-ms = 250
release-after-ms=2000   # trailing comment
--low-load-pct = 30
high-load-pct = 70

max-migrations = 0
class-bounds = 5000, 400
irq-refresh-ms = 500
";
    let base = opts(&["--interval-ms", "100", "--slice-us", "2000"]);
    let o = overlay(&base, text).unwrap();
    let c = Config::from_opts(&o).unwrap();
    assert_eq!(
        (
            c.interval_ms,
            c.release_ns,
            c.low_load_pct,
            c.high_load_pct,
            c.max_moves
        ),
        (250, 2_000_000_000, 30, 70, 0)
    );
    assert_eq!(
        c.bounds,
        Some(ClassBounds {
            high_min: 5000,
            middle_min: 400
        })
    );
    assert_eq!(c.irq_refresh_ms, 500);
    // What the file does not set stays as on the command line.
    assert_eq!(c.slice_ns, 2_000_000);
    // Every option the file may set is named in --help's text of --config.
    let help = {
        use clap::CommandFactory;
        Opts::command().render_long_help().to_string()
    };
    let cfg_help = &help[help.find("--config").unwrap()..];
    for name in RUNTIME_OPTIONS {
        let help = &cfg_help[..cfg_help.find("--stats").unwrap()];
        assert!(help.contains(name), "--config help does not name {name}");
    }

    // load() reads the file named by --config; an empty file changes nothing.
    let dir = tempfile::tempdir().unwrap();
    let p = config_file(&dir, "ok.conf", "interval-ms = 300\n");
    let c = load(&opts(&["--config", p.to_str().unwrap()])).unwrap();
    assert_eq!(c.interval_ms, 300);
    let p = config_file(&dir, "empty.conf", "# nothing\n\n");
    assert_eq!(
        load(&opts(&["--config", p.to_str().unwrap()])).unwrap(),
        config(&[]).unwrap()
    );
}

#[test]
fn config_file_errors_name_the_line_or_the_file() {
    let base = opts(&[]);
    let shape = |text: &str, mentions: &[&str]| {
        let e = overlay(&base, text).expect_err(text);
        assert_eq!(e.option, "config", "{e}");
        let msg = e.to_string();
        for m in mentions {
            assert!(msg.contains(m), "'{msg}' does not mention '{m}'");
        }
    };
    shape("interval-ms 200", &["line 1", "not NAME = VALUE"]);
    shape(
        "\n# c\nslice-us = 100",
        &["line 3", "unknown setting 'slice-us'", "interval-ms"],
    );
    shape(
        "max-migrations = many",
        &["line 1", "'many' is not a whole number"],
    );
    shape("low-load-pct = -5", &["'-5' is not a whole number"]);

    // Values are validated like the command line's, and the message names the file.
    let dir = tempfile::tempdir().unwrap();
    let p = config_file(&dir, "bad.conf", "low-load-pct = 95\nhigh-load-pct = 60\n");
    let e = load(&opts(&["--config", p.to_str().unwrap()])).unwrap_err();
    assert_eq!(e.option, "low-load-pct");
    let msg = e.to_string();
    assert!(msg.contains("must be below --high-load-pct"), "{msg}");
    assert!(msg.contains(&format!("(set in {})", p.display())), "{msg}");
    let p = config_file(&dir, "bounds.conf", "class-bounds = 10,20\n");
    let e = load(&opts(&["--config", p.to_str().unwrap()])).unwrap_err();
    assert_eq!(e.option, "class-bounds", "{e}");

    // A file that cannot be read.
    let e = load(&opts(&["--config", "/nonexistent/miami.conf"])).unwrap_err();
    assert_eq!(e.option, "config");
    assert!(
        e.to_string()
            .contains("cannot read /nonexistent/miami.conf"),
        "{e}"
    );
}
