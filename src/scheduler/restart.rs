// SPDX-License-Identifier: GPL-2.0
//! Restarts the kernel asks for (a CPU went offline or came online, or a restart-coded exit):
//! attach the loaded BPF object again while the topology it was loaded with holds, and the
//! kernel's hotplug check, which init() moves to user space so that such a re-attach is allowed.

use anyhow::{bail, Context, Result};
use log::info;
use scx_utils::Topology;
use std::collections::BTreeSet;
use std::time::Instant;

use super::{running_ops, Scheduler};
use crate::config::Config;
use crate::cpulist::parse_cpu_list;
use crate::topology::{self, LlcMap};

/// The text of sysfs file @path, trimmed.
fn read_sys(path: &str) -> Result<String> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    Ok(text.trim().to_string())
}

/// sched_ext's count of CPU hotplug events.
pub(super) fn hotplug_seq() -> Result<u64> {
    const PATH: &str = "/sys/kernel/sched_ext/hotplug_seq";
    let text = read_sys(PATH)?;
    text.parse()
        .with_context(|| format!("{PATH}: '{text}' is not a number"))
}

/// The online CPUs, as the kernel lists them.
fn online_cpus() -> Result<BTreeSet<usize>> {
    const PATH: &str = "/sys/devices/system/cpu/online";
    Ok(parse_cpu_list(&read_sys(PATH)?)
        .context(PATH)?
        .into_iter()
        .collect())
}

impl Scheduler<'_> {
    /// Restart after the kernel asked for one (CPU hotplug, a restart-coded exit) by attaching
    /// the loaded struct_ops again: a new load is mostly the verifier, 4-6 s in an idle TCG
    /// guest and 15-20 s under load, where the attach alone is the kernel's enable. Only while
    /// the topology BPF was loaded with still holds; false when not, and the caller loads
    /// anew. A CPU's LLC does not change while it is offline, so only CPUs whose LLC the
    /// loaded map lacks (offline at load) need the topology read, 0.25-0.42 s in a TCG guest:
    /// a CPU going offline and one coming back restart without it. The TCP probes stay
    /// attached throughout, so no call goes uncounted; ops.init() runs again and rebuilds the
    /// DSQs and CPU masks, and the IRQ CPUs are marked again in the fresh non-IRQ mask. @cfg:
    /// the configuration to go on with (a --config file may have changed; only its run-time
    /// knobs can, RUNTIME_OPTIONS).
    pub fn reattach(&mut self, cfg: &Config) -> Result<bool> {
        let t0 = Instant::now();
        // Before the CPUs are read: a hotplug from here on shows in run()'s check.
        self.hotplug_seq = hotplug_seq()?;
        let online = online_cpus()?;
        if !online.is_subset(&self.known_cpus) {
            let topo = Topology::new().context("reading the CPU topology")?;
            let loaded = LlcMap {
                cpu_llc: self.cpu_llc.clone(),
            };
            if !loaded.holds_for(&topo) {
                info!("the CPU topology changed since the BPF load; loading again");
                return Ok(false);
            }
            self.known_cpus.extend(topology::online_cpus(&topo));
        }
        if let Some(ops) = running_ops() {
            bail!("another sched_ext scheduler took over meanwhile: {ops}; not restarting");
        }
        // A fresh exit record, and no injected fault left over (--test-inject-error fires once
        // per process).
        let uei = &mut self.skel.maps.data_data.as_mut().unwrap().uei;
        (uei.kind, uei.exit_code) = (0, 0);
        self.skel.maps.bss_data.as_mut().unwrap().test_error = 0;
        let t_attach = Instant::now();
        self.link = Some(
            self.skel
                .maps
                .miami_ops
                .attach_struct_ops()
                .context("attaching the loaded struct_ops again")?,
        );
        let t_irqs = Instant::now();
        self.remark_irq_cpus()?;
        if *cfg != self.cfg {
            self.reconfigure(cfg);
        }
        info!(
            "attached again in {:.2} s (the loaded BPF object: the topology holds): CPUs \
             read {:.2} s, enable {:.2} s, IRQ map {:.2} s",
            t0.elapsed().as_secs_f64(),
            (t_attach - t0).as_secs_f64(),
            (t_irqs - t_attach).as_secs_f64(),
            t_irqs.elapsed().as_secs_f64()
        );
        Ok(true)
    }

    /// The kernel's own check, which init() turns off: true when a CPU came or went between
    /// the CPUs' read (init(), reattach()) and the attach, so the LLC map or the DSQs may miss
    /// it and the caller restarts. Never under --observe (no sched_ext needed there).
    pub(super) fn hotplug_missed(&self) -> Result<bool> {
        if self.cfg.observe {
            return Ok(false);
        }
        let now = hotplug_seq()?;
        if now != self.hotplug_seq {
            info!(
                "CPUs came or went while attaching (hotplug count {} -> {now}): restarting",
                self.hotplug_seq
            );
        }
        Ok(now != self.hotplug_seq)
    }
}
