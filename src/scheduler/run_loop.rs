// SPDX-License-Identifier: GPL-2.0
//! The scheduler's run loop: the signals that end or reconfigure it, and run(), which takes the
//! agent's rounds, the IRQ map's events, stats reports and stats requests in turn, sleeping
//! until the next one is due, until shutdown or until the kernel ejects the scheduler.

use anyhow::{Context, Result};
use log::{info, warn};
use scx_utils::{uei_exited, uei_report};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Scheduler;
use crate::config::{Config, Invalid};
use crate::stats::Sampler;

/// Longest the run loop sleeps: it looks at the shutdown and reload flags, the scheduler's exit
/// and IRQ map events only when it wakes. Otherwise it sleeps until the next agent round, stats
/// report or look at the IRQ map events (--irq-refresh-ms), whichever comes first (run()).
const MAX_SLEEP: Duration = Duration::from_secs(1);

/// How long the run loop sleeps at @now: until the earliest of @due (the next agent round,
/// stats report, look at the IRQ map events, injected error), at least 1 ms, at most MAX_SLEEP.
pub fn loop_sleep(now: Instant, due: impl IntoIterator<Item = Instant>) -> Duration {
    due.into_iter()
        .min()
        .map_or(MAX_SLEEP, |at| at.saturating_duration_since(now))
        .clamp(Duration::from_millis(1), MAX_SLEEP)
}

/// A stats request within this long keeps the run loop blocked on the request channel (run()).
const STATS_ACTIVE: Duration = Duration::from_secs(2);

/// SIGINT and SIGTERM set the returned flag instead of ending the process: the run loop (or
/// --monitor, --tui) sees it, detaches and reports. Not ctrlc: its "termination" feature takes
/// SIGHUP too, which is the reload signal below, and signal-hook chains to earlier handlers, so a
/// SIGHUP would have stopped the scheduler.
pub fn install_shutdown() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, flag.clone())
            .context("installing the SIGINT/SIGTERM handler")?;
    }
    Ok(flag)
}

/// Route SIGHUP to a reload of the --config file instead of its default action, which would
/// end the scheduler: the returned flag is set on each SIGHUP, and the run loop re-reads the file.
pub fn install_sighup() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, flag.clone())
        .context("installing the SIGHUP handler")?;
    Ok(flag)
}

impl Scheduler<'_> {
    /// Has the BPF side exited (an error, a restart request, the kernel's unregistration)?
    fn exited(&mut self) -> bool {
        uei_exited!(&self.skel, uei)
    }

    /// Run until @shutdown or until the kernel ejects the scheduler; detach and report why.
    /// True when the kernel asked for a restart.
    /// When @reload_flag is set (SIGHUP, install_sighup()), @reload gives the configuration to
    /// switch to: None without a --config file, an error for a file that does not validate.
    pub fn run(
        &mut self,
        shutdown: Arc<AtomicBool>,
        reload_flag: &AtomicBool,
        reload: &dyn Fn() -> Option<Result<Config, Invalid>>,
    ) -> Result<bool> {
        let stats_period = self.cfg.stats_interval_s.map(Duration::from_secs_f64);
        let irq_period = |cfg: &Config| Duration::from_millis(cfg.irq_refresh_ms);
        let agent_period = |cfg: &Config| Duration::from_millis(cfg.interval_ms);
        let mut next_irq = Instant::now() + irq_period(&self.cfg);
        let mut next_stats = Instant::now();
        let mut next_agent = Instant::now();
        // --test-inject-error: once per process, so that a restart does not inject again.
        static INJECTED: AtomicBool = AtomicBool::new(false);
        let mut inject_at = self
            .cfg
            .inject_error
            .filter(|_| !INJECTED.swap(true, Ordering::Relaxed))
            .map(|(kind, after)| (kind, Instant::now() + after));
        let mut sampler = Sampler::default();
        let channels = self.stats_server.as_ref().map(|s| s.channels());
        let mut last_req = Instant::now() - STATS_ACTIVE;

        if self.hotplug_missed()? {
            let _ = self.link.take();
            return Ok(true);
        }

        while !shutdown.load(Ordering::Relaxed) && !self.exited() {
            if reload_flag.swap(false, Ordering::Relaxed) {
                match reload() {
                    Some(Ok(cfg)) => self.reconfigure(&cfg),
                    Some(Err(e)) => warn!("SIGHUP: {e}; the running values stay"),
                    None => warn!("SIGHUP: no --config file to re-read; nothing changed"),
                }
            }
            let now = Instant::now();
            if let Some((kind, _)) = inject_at.filter(|&(_, at)| now >= at) {
                warn!("--test-inject-error: injecting {kind} now");
                self.skel.maps.bss_data.as_mut().unwrap().test_error = kind;
                inject_at = None;
            }
            if now >= next_irq {
                // Not due (no event): look again at the next wakeup, at most a period away.
                match self.irq_map_tick(irq_period(&self.cfg)) {
                    Ok(false) => {}
                    Ok(true) => next_irq = now + irq_period(&self.cfg),
                    Err(e) => {
                        warn!("IRQ map refresh failed: {e:#}");
                        next_irq = now + irq_period(&self.cfg);
                    }
                }
            }
            if self.agent_in_user_space() && now >= next_agent {
                if let Err(e) = self.agent_round() {
                    warn!("agent round failed: {e:#}");
                }
                next_agent = now + agent_period(&self.cfg);
            }
            self.agent_report();
            if let Some(p) = stats_period {
                if now >= next_stats {
                    // The same Sample and report a --monitor client prints. A closed stdout
                    // must not take the scheduler down (print! would panic): the report is
                    // dropped, scheduling goes on.
                    let report = sampler.sample(&self.snapshot()).report(p.as_secs_f64());
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(report.as_bytes()).and_then(|_| out.flush());
                    next_stats = now + p;
                }
            }
            // Wait until the next round (where user space runs them), stats report or look at
            // the IRQ map events, at most MAX_SLEEP: with the rounds in the BPF timer and the
            // defaults, a second (the loop woke every 100 ms for the rounds, whose wakeups alone
            // cost more than scx_bpfland's whole loader under TCG: docs/results/loader-cost.md).
            // With no
            // stats client lately, sleep and then answer what came meanwhile (a request waits
            // at most that long): not recv_timeout(), because crossbeam spins and then calls
            // sched_yield() several times before it blocks, and again when the timeout ends,
            // which in a TCG guest made a quiet loop cost about three times as much. While
            // clients are asking (one within STATS_ACTIVE), block on the channel instead and
            // answer each request at once: the server's proxy hands over one request at a time,
            // the next only once the answer is out, so 100 clients at once were served one per
            // agent period and a CI run's last one gave up after 10 s.
            let now = Instant::now();
            let wait = loop_sleep(
                now,
                [
                    self.agent_in_user_space().then_some(next_agent),
                    Some(now + irq_period(&self.cfg)),
                    stats_period.map(|_| next_stats),
                    inject_at.map(|(_, at)| at),
                ]
                .into_iter()
                .flatten(),
            );
            let Some((res_ch, req_ch)) = &channels else {
                std::thread::sleep(wait);
                continue;
            };
            let deadline = Instant::now() + wait;
            let active = last_req.elapsed() < STATS_ACTIVE;
            let mut answer = || {
                let _ = res_ch.send(self.snapshot());
                last_req = Instant::now();
            };
            if active {
                // Not past the deadline even while requests keep coming: the round is due.
                while Instant::now() < deadline && req_ch.recv_deadline(deadline).is_ok() {
                    answer();
                }
            } else {
                std::thread::sleep(wait);
                while req_ch.try_recv().is_ok() {
                    answer();
                }
            }
        }

        self.agent_report();
        let total = self.counters();
        let _ = self.link.take();
        info!("totals since start:\n{}", total.report().trim_end());
        let b = crate::policy::bounds(self.skel.maps.data_data.as_ref().unwrap());
        info!(
            "agent: most moves in one round {} (cap {}), classes now high >= {}, middle >= {}",
            self.agent.round_max, self.agent.max_moves, b.high_min, b.middle_min
        );
        let bss = self.skel.maps.bss_data.as_ref().unwrap();
        info!(
            "agent: {} rounds, {:.1} ms in BPF in all",
            bss.agent_round_no,
            bss.agent_round_ns_total as f64 / 1e6
        );
        if self.cfg.observe {
            return Ok(false);
        }
        Ok(uei_report!(&self.skel, uei)?.should_restart())
    }
}
