// SPDX-License-Identifier: GPL-2.0
//! scx_miami binary: parse and validate the command line, set up logging and signals, and run
//! the scheduler, restarting it when the kernel asks for a restart, or (--monitor) print the
//! stats of a running one, or (--tui) show them live. The logic lives in the `miami` library.

use std::mem::MaybeUninit;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use log::error;
use miami::config::{self, Config};
use miami::opts::Opts;
use miami::scheduler::{
    check_host, fentry_refused, install_shutdown, install_sighup, ProbeAttach, Scheduler,
};

/// Exit code for a command line that cannot be used.
const EXIT_USAGE: u8 = 2;

fn run(opts: &Opts, cfg: &Config) -> anyhow::Result<()> {
    let shutdown = install_shutdown()?;

    let path = cfg.stats_socket.as_path();
    if let Some(secs) = cfg.monitor_interval_s {
        return miami::stats::monitor(path, Duration::from_secs_f64(secs), cfg.format, &shutdown);
    }
    if let Some(secs) = cfg.tui_interval_s {
        return miami::tui::run(path, Duration::from_secs_f64(secs), &shutdown);
    }
    // Held until we return: no second scx_miami starts meanwhile, restarts included.
    let _lock = check_host(cfg.observe, path)?;
    let sighup = install_sighup()?;

    let reload = || opts.config.as_ref().map(|_| config::load(opts));
    let mut cfg = cfg.clone();
    let mut probes = ProbeAttach::Fentry;
    loop {
        let mut open_object = MaybeUninit::uninit();
        let mut sched = match Scheduler::init(
            &cfg,
            opts.verbose,
            opts.exit_dump_len,
            opts.libbpf.clone().into_bpf_open_opts(),
            probes,
            &mut open_object,
        ) {
            // --observe is meant for any kernel with BTF: where fentry is refused, the same
            // probes on tracepoints (bpf/netmon.bpf.c, section 5).
            Err(e) if cfg.observe && probes == ProbeAttach::Fentry && fentry_refused(&e) => {
                log::warn!(
                    "this kernel refuses fentry programs ({e:#}); probing TCP on the \
                     tracepoints sock_send_length, sock_recv_length and tcp_probe instead: no \
                     tcp_close probe, and the IRQ map is re-read on a period"
                );
                probes = ProbeAttach::Tracepoint;
                continue;
            }
            r => r?,
        };
        // Restarts the kernel asks for attach the loaded object again while they can
        // (Scheduler::reattach()); the outer loop loads anew.
        loop {
            if !sched.run(shutdown.clone(), &sighup, &reload)? {
                return Ok(());
            }
            // The restarted instance starts from the --config file as it is now, if valid.
            match reload() {
                Some(Ok(c)) => cfg = c,
                Some(Err(e)) => log::warn!("{e}; restarting with the previous values"),
                None => {}
            }
            log::info!("the kernel asked for a restart");
            match sched.reattach(&cfg) {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) => log::warn!("{e:#}; loading again"),
            }
            break;
        }
    }
}

fn main() -> ExitCode {
    let opts = Opts::parse();

    if opts.help_stats {
        print!("{}", miami::stats::describe());
        return ExitCode::SUCCESS;
    }

    let level = if opts.verbose {
        simplelog::LevelFilter::Debug
    } else {
        simplelog::LevelFilter::Info
    };
    let _ = simplelog::TermLogger::init(
        level,
        simplelog::ConfigBuilder::new()
            .set_time_level(simplelog::LevelFilter::Off)
            .set_target_level(simplelog::LevelFilter::Off)
            .set_location_level(simplelog::LevelFilter::Off)
            .build(),
        simplelog::TerminalMode::Stderr,
        simplelog::ColorChoice::Never,
    );

    let cfg = match config::load(&opts).and_then(|c| config::check_nics(&c).map(|()| c)) {
        Ok(cfg) => cfg,
        Err(e) => {
            eprintln!("scx_miami: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };

    if opts.list_nics {
        return match miami::irq::discover(&miami::irq::Roots::default(), &cfg.nics) {
            Ok(nics) if !nics.is_empty() => {
                print!("{}", miami::irq::nic_table(&nics));
                ExitCode::SUCCESS
            }
            Ok(_) => {
                eprintln!("scx_miami: no network interface with IRQs here (/sys/class/net)");
                ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("scx_miami: {e:#}");
                ExitCode::FAILURE
            }
        };
    }

    match run(&opts, &cfg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}
