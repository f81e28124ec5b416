// SPDX-License-Identifier: GPL-2.0
//! What must hold on the host before anything loads: root, sched_ext (unless --observe), no
//! other sched_ext scheduler, no other scx_miami (InstanceLock), and a stats socket nobody else
//! serves on.

use anyhow::{bail, Context, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

/// Held by the one scx_miami that schedules or observes on this host (flock). A second one,
/// --observe included, would run every TCP probe twice and take the first one's stats socket
/// over. The kernel drops the lock with the process, however it ends, so nothing stale stays.
const LOCK_PATH: &str = "/run/scx_miami.lock";

/// The instance lock, held until dropped. Created by check_host().
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
}

/// The name of the sched_ext scheduler the kernel runs, if it runs one.
pub(super) fn running_ops() -> Option<String> {
    let state = std::fs::read_to_string("/sys/kernel/sched_ext/state").ok()?;
    (state.trim() == "enabled").then(|| {
        std::fs::read_to_string("/sys/kernel/sched_ext/root/ops")
            .map(|o| o.trim().to_string())
            .unwrap_or_else(|_| "(name unknown)".into())
    })
}

/// Is @text a pid whose process lives?
fn live_pid(text: &str) -> bool {
    let p = text.trim();
    !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && Path::new("/proc").join(p).exists()
}

/// Take the instance lock at @path and write our pid into it, for the message a second
/// instance prints. An error names the instance that holds it.
pub fn lock_instance(path: &Path) -> Result<InstanceLock> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .with_context(|| format!("opening the instance lock {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            // Written just after the lock was taken: two instances started together found it
            // empty, or holding the pid of an earlier holder (gone). The holder writes its own
            // within microseconds; give it 200 ms.
            let mut pid = String::new();
            for _ in 0..20 {
                pid.clear();
                let _ = file.rewind().and_then(|()| file.read_to_string(&mut pid));
                if live_pid(&pid) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let pid = if live_pid(&pid) {
                format!(" (pid {})", pid.trim())
            } else {
                String::new()
            };
            bail!(
                "another scx_miami is running{pid}: it holds {}. Stop it first, or watch it \
                 with --monitor or --tui",
                path.display()
            );
        }
        Err(TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("locking {}", path.display()))
        }
    }
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "{}", std::process::id()))
        .with_context(|| format!("writing our pid into {}", path.display()))?;
    Ok(InstanceLock { _file: file })
}

/// Refuse early, with a message a user can act on, where loading cannot work: not root, no
/// sched_ext, another scheduler running, another scx_miami running, or @socket served by
/// another program. --observe (@observe) needs no sched_ext and runs beside any scheduler.
/// Returns the instance lock, to be held while running.
pub fn check_host(observe: bool, socket: &Path) -> Result<InstanceLock> {
    if !rustix::process::geteuid().is_root() {
        bail!("scx_miami must run as root (it loads a BPF scheduler); try: sudo scx_miami");
    }
    if !observe && !Path::new("/sys/kernel/sched_ext").is_dir() {
        bail!(
            "this kernel ({}) has no sched_ext: /sys/kernel/sched_ext is missing. scx_miami \
             needs Linux 6.12 or newer built with CONFIG_SCHED_CLASS_EXT=y; --observe watches \
             network tasks here without scheduling",
            std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap_or_default()
                .trim()
        );
    }
    // Before the BPF load (5 s under TCG), and naming it: scx_ops_attach!() refuses too (and
    // still does for a restart the kernel asked for), but only after the load and without
    // saying which one runs.
    let ops = running_ops();
    if let Some(ops) = ops.as_ref().filter(|_| !observe) {
        bail!(
            "another sched_ext scheduler is already running: {ops} \
             (/sys/kernel/sched_ext/root/ops); stop it first"
        );
    }
    // A scx_miami --observe is no sched_ext scheduler, so nothing above sees it.
    let lock = lock_instance(Path::new(LOCK_PATH))?;
    // We hold the lock, so whoever answers on the socket is no scx_miami: the scx project's
    // schedulers all serve on the default path, and --observe beside one must not take its
    // socket over (nor remove it on exit). A socket file nobody answers on is what a killed
    // instance left: launch_server() replaces it.
    if std::os::unix::net::UnixStream::connect(socket).is_ok() {
        let whose = match &ops {
            Some(ops) => format!("the running sched_ext scheduler's ({ops})"),
            None => "another program's".into(),
        };
        bail!(
            "the stats socket {} answers, and it is {whose}, not a scx_miami's. Serve ours \
             elsewhere with --stats-socket PATH, and read it with --monitor or --tui and the \
             same --stats-socket PATH",
            socket.display()
        );
    }
    Ok(lock)
}
