// SPDX-License-Identifier: GPL-2.0
//! Benchmark: the CPU time `scx_miami --tui` takes, on this machine, against a stats server
//! that answers with a full synthetic sample (every counter moving, the task table full, one
//! load per CPU). Prints figures and asserts nothing: `make bench`, or
//!
//!     cargo bench -p scx_miami --bench tui_cpu -- [SECS] [REFRESH_SECS] [NR_CPUS]
//!
//! defaults 10, 0.25 (the fastest refresh) and 64. The server binds a socket of its own in a
//! temporary directory and the TUI reads it there (--stats-socket), so neither root nor a host
//! without a scheduler is needed. The TUI runs on a 50x200 pseudo-terminal from script(1); its
//! CPU time is utime + stime from /proc over SECS, after one second for startup.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use miami::config::ClassBounds;
use miami::stats::{launch_server, AgentState, Counters, Snapshot, TaskRow, STATS, TOP_TASKS};

fn snapshot(round: u64, nr_cpus: usize) -> Snapshot {
    let mut counters = Counters::default();
    for s in STATS {
        counters.0[s.id as usize] = round * (u64::from(s.id) + 1) * 1000;
    }
    let tasks = (0..TOP_TASKS as i32)
        .map(|i| TaskRow {
            tid: 1000 + i,
            tgid: 1000,
            comm: format!("worker{i}"),
            intens: 200_000 / (i as u32 + 1),
            class: ["high", "middle", "low"][i as usize % 3].into(),
            tier: ["core", "cache", "other"][i as usize % 3].into(),
            irq_cpu: (i as usize % 4 * nr_cpus / 4) as i32,
            cpu: ((i as usize * 7 + round as usize) % nr_cpus) as i32,
            nic: format!("eth{}", i % 4),
            age_ms: round % 50,
        })
        .collect();
    Snapshot {
        counters,
        tasks,
        irq_cpus: (0..4).map(|n| n * nr_cpus / 4).collect(),
        nr_cpus,
        nr_irq_changes: round / 10,
        nr_irq_refreshes: round,
        bounds: ClassBounds {
            high_min: 100_000,
            middle_min: 10_000,
        },
        agent: AgentState {
            max_moves: 4,
            round_max: round % 5,
            loads: (0..nr_cpus)
                .map(|c| ((c as u64 * 13 + round * 7) % 100) as f64)
                .collect(),
            nr_tasks: nr_cpus as u64,
            round_us: 100 + round % 50,
            ..Default::default()
        },
        loader_cpu_ms: 0,
    }
}

/// CPU seconds (utime + stime) of @pid so far.
fn cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised comm: state is field 3, utime 14, stime 15.
    let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = rest.get(11)?.parse::<u64>().ok()? + rest.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf only reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some(ticks as f64 / hz)
}

/// The scx_miami process under script(1): its pid is a child of @script.
fn tui_pid(script: u32) -> Option<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let children =
            std::fs::read_to_string(format!("/proc/{script}/task/{script}/children")).ok()?;
        for pid in children.split_whitespace().filter_map(|p| p.parse().ok()) {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if comm.trim() == "scx_miami" {
                return Some(pid);
            }
            // script runs the command through a shell: look one level further.
            if let Ok(grand) = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")) {
                if let Some(g) = grand.split_whitespace().find_map(|p| p.parse().ok()) {
                    return Some(g);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let arg = |i: usize, default: f64| -> f64 {
        args.get(i).map_or(default, |a| {
            a.parse().unwrap_or_else(|_| {
                eprintln!("tui_cpu: argument {} must be a number, got {a:?}", i + 1);
                eprintln!("usage: cargo bench -p scx_miami --bench tui_cpu -- [SECS] [REFRESH_SECS] [NR_CPUS]");
                std::process::exit(2);
            })
        })
    };
    let (secs, refresh, nr_cpus) = (arg(0, 10.0), arg(1, 0.25), arg(2, 64.0) as usize);
    let dir = std::env::temp_dir().join(format!("miami-tui-cpu.{}", std::process::id()));
    std::fs::create_dir(&dir).unwrap_or_else(|e| {
        eprintln!("tui_cpu: cannot create {}: {e}", dir.display());
        std::process::exit(1);
    });
    let path = dir.join("stats");
    let server = launch_server(&path).unwrap_or_else(|e| {
        eprintln!("tui_cpu: cannot serve {}: {e:#}", path.display());
        let _ = std::fs::remove_dir(&dir);
        std::process::exit(1);
    });

    // Answer every request with a newer sample, like the scheduler's run loop.
    let (res_ch, req_ch) = server.channels();
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let (flag, count) = (stop.clone(), reads.clone());
    let answer = std::thread::spawn(move || {
        while !flag.load(Ordering::Relaxed) {
            if req_ch.recv_timeout(Duration::from_millis(20)).is_ok() {
                let n = count.fetch_add(1, Ordering::Relaxed) + 1;
                let _ = res_ch.send(snapshot(n, nr_cpus));
            }
        }
    });

    let cmd = format!(
        "stty rows 50 cols 200; exec {} --tui {refresh} --stats-socket {}",
        env!("CARGO_BIN_EXE_scx_miami"),
        path.display()
    );
    let mut script = Command::new("script")
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .env("TERM", "xterm-256color")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("script(1) from util-linux");
    let pid = tui_pid(script.id()).expect("the TUI did not start");
    // Startup (the first connect and draw) is left out: one second, then the steady state.
    std::thread::sleep(Duration::from_secs(1));
    let (c0, n0, t0) = (
        cpu_secs(pid).expect("the TUI exited"),
        reads.load(Ordering::Relaxed),
        Instant::now(),
    );
    std::thread::sleep(Duration::from_secs_f64(secs));
    let cpu = cpu_secs(pid).expect("the TUI exited early") - c0;
    let wall = t0.elapsed().as_secs_f64();
    let n = reads.load(Ordering::Relaxed) - n0;
    // SAFETY: plain kill(2) of the child we started.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let _ = script.wait();
    stop.store(true, Ordering::Relaxed);
    let _ = answer.join();
    drop(server);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_dir(&dir);

    println!(
        "tui_cpu: {:.3} s CPU in {wall:.1} s = {:.2}% of one CPU; refresh {refresh} s, {n} samples \
         read ({:.1}/s), {nr_cpus} CPUs, {} task rows",
        cpu,
        100.0 * cpu / wall,
        n as f64 / wall,
        TOP_TASKS
    );
}
