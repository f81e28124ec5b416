// SPDX-License-Identifier: GPL-2.0
//! The run loop's half that keeps BPF's view of the NIC IRQ map current: which CPUs take receive
//! IRQs (miami_set_irq_cpu) and each NIC's receive CPUs (the nic_cpus map), re-read cheaply or
//! in a full scan when an IRQ or interface event says it changed (at most once per
//! --irq-refresh-ms), or every --irq-refresh-ms where those events cannot be had.

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags};
use log::{info, warn};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Once;
use std::time::{Duration, Instant};

use super::{as_bytes, run_syscall_prog, thread_cpu_us, Scheduler, CPU_CLOCK_EVERY};
use crate::bpf_intf::{
    miami_consts_MIAMI_MAX_CPUS as MAX_CPUS, nic_cpus, nic_key, set_irq_cpu_arg,
};
use crate::cpulist::format_cpu_list;
use crate::irq::{self, IrqEvents};

/// Every this many IRQ map refreshes (--irq-refresh-ms) a full scan: interfaces, devices in
/// other namespaces, IRQ vectors and their names, RFS/RPS. In between, only the receive IRQs'
/// targets and the interface list are read (irq::reread_rx_affinity()). In a TCG guest a full
/// scan (/proc/interrupts, every interface and PCI device) took 140-290 ms of the loader
/// thread's CPU, a quick refresh 5-30 ms (stats: irq_scan_cpu_us, irq_refresh_cpu_us;
/// docs/results/loader-cost.md). What only a full scan sees: queues added to a NIC in place
/// (ethtool -L, when no receive IRQ goes) and RFS/RPS changes (logged), within 30 s at the
/// default period; a NIC that comes or goes, or loses a receive IRQ, at the next refresh.
pub(super) const FULL_SCAN_EVERY: u32 = 30;

/// With IRQ map events, a full scan after this many --irq-refresh-ms periods without one
/// anyway (5 minutes at the default): a backstop for a change that no event covers, and the
/// RFS/RPS log lines, which follow no event.
const BACKSTOP_EVERY: u32 = 300;

/// The kernel functions whose fexit probes count IRQ map events (bpf/netmon.bpf.c, section 4).
pub(super) const IRQ_EVENT_FUNCS: [&str; 4] = [
    "irq_set_affinity_locked",
    "irq_do_set_affinity",
    "request_threaded_irq",
    "free_irq",
];

/// Interfaces that come, go, are renamed or change namespace: the messages of rtnetlink's link
/// group, counted by a thread that blocks on the socket, so that waiting for them costs no
/// wakeup. One per process: a restart (Scheduler::reattach()) keeps it.
static LINK_EVENTS: AtomicU64 = AtomicU64::new(0);
/// The thread listens (cleared when its socket fails: then the map is re-read on a period).
static LINK_LIVE: AtomicBool = AtomicBool::new(false);

/// Start counting link events, once per process; false when they cannot be counted.
fn watch_links() -> bool {
    static START: Once = Once::new();
    START.call_once(|| match spawn_link_watch() {
        Ok(()) => LINK_LIVE.store(true, Ordering::Relaxed),
        Err(e) => warn!("no rtnetlink link events ({e:#}): the IRQ map is re-read on a period"),
    });
    LINK_LIVE.load(Ordering::Relaxed)
}

fn spawn_link_watch() -> Result<()> {
    use rustix::io::Errno;
    use rustix::net::{
        bind, netlink, recv, socket_with, AddressFamily, RecvFlags, SocketFlags, SocketType,
    };

    // No protocol is NETLINK_ROUTE (0).
    let fd = socket_with(
        AddressFamily::NETLINK,
        SocketType::RAW,
        SocketFlags::CLOEXEC,
        None,
    )
    .context("opening a NETLINK_ROUTE socket")?;
    bind(
        &fd,
        &netlink::SocketAddrNetlink::new(0, libc::RTMGRP_LINK as u32),
    )
    .context("joining rtnetlink's link group")?;
    std::thread::Builder::new()
        .name("miami-links".into())
        .spawn(move || {
            let mut buf = vec![0u8; 32 << 10];
            loop {
                match recv(&fd, &mut buf[..], RecvFlags::empty()) {
                    // ENOBUFS: messages were dropped, so something changed.
                    Ok(_) | Err(Errno::NOBUFS) => {
                        LINK_EVENTS.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(Errno::INTR) => {}
                    Err(e) => {
                        warn!("rtnetlink link events: {e}; the IRQ map is re-read on a period");
                        LINK_LIVE.store(false, Ordering::Relaxed);
                        return;
                    }
                }
            }
        })
        .context("starting the rtnetlink thread")?;
    Ok(())
}

impl Scheduler<'_> {
    fn set_irq_cpu(&mut self, cpu: usize, is_irq: bool) -> Result<()> {
        let arg = set_irq_cpu_arg {
            cpu: cpu as i32,
            is_irq: is_irq as u32,
        };
        run_syscall_prog(&self.skel.progs.miami_set_irq_cpu, arg)
            .with_context(|| format!("marking CPU {cpu}"))
    }

    /// The IRQ map events counted so far, or None where they are not counted (the probes did
    /// not load, or rtnetlink failed): then the map is re-read every period.
    pub(super) fn irq_events(&self) -> Option<IrqEvents> {
        if !self.irq_probes || !watch_links() {
            return None;
        }
        let bss = self.skel.maps.bss_data.as_ref().unwrap();
        // SAFETY: plain loads from the mmapped .bss, which BPF writes concurrently.
        let read = |v: &u64| unsafe { std::ptr::read_volatile(v) };
        Some(IrqEvents {
            affinity: read(&bss.irq_affinity_events),
            vectors: read(&bss.irq_vector_events),
            links: LINK_EVENTS.load(Ordering::Relaxed),
        })
    }

    /// Once --irq-refresh-ms has passed since the last refresh: refresh the IRQ map if it is
    /// due. With events, that is after an event only (a full scan after a handler or interface
    /// event, else only the receive IRQs' targets), or after BACKSTOP_EVERY periods; without,
    /// always. True when it refreshed: the next is a period away.
    pub(super) fn irq_map_tick(&mut self, period: Duration) -> Result<bool> {
        let Some(now) = self.irq_events() else {
            self.refresh_irqs(false)?;
            return Ok(true);
        };
        let backstop = period * BACKSTOP_EVERY;
        let Some(full) = irq::refresh_due(now, self.irq_seen, self.last_scan.elapsed(), backstop)
        else {
            return Ok(false);
        };
        self.refresh_irqs(full)?;
        Ok(true)
    }

    /// Re-read the NIC IRQ map and push changed IRQ CPUs to BPF: with @full a full scan, else
    /// the receive IRQs' targets only, or a full scan every FULL_SCAN_EVERY refreshes, when the
    /// interface list changed, or when a receive IRQ is gone. Its CPU time goes to the stats.
    pub(super) fn refresh_irqs(&mut self, full: bool) -> Result<()> {
        // What this refresh covers, read before it: a change during it is the next one's.
        let events = self.irq_events().unwrap_or_default();
        if full {
            self.refreshes_since_scan = FULL_SCAN_EVERY;
        }
        self.irq_refreshes += 1;
        // A full scan is due (or will be found due): time it; a quick one every CPU_CLOCK_EVERY.
        let timed = self.irq_refreshes % CPU_CLOCK_EVERY == 1
            || self.refreshes_since_scan + 1 >= FULL_SCAN_EVERY;
        let cpu0 = if timed { thread_cpu_us() } else { 0 };
        let ret = self.refresh_irq_map();
        if timed {
            self.agent.irq_refresh_cpu_us = thread_cpu_us() - cpu0;
            if self.refreshes_since_scan == 0 {
                self.agent.irq_scan_cpu_us = self.agent.irq_refresh_cpu_us;
            }
        }
        ret?;
        // A quick refresh covers affinity changes only: handler and link events stay due.
        self.irq_seen.affinity = events.affinity;
        if self.refreshes_since_scan == 0 {
            self.irq_seen = events;
            self.last_scan = Instant::now();
        }
        Ok(())
    }

    /// After ops.init() ran again (Scheduler::reattach()): its non-IRQ mask has every CPU, so
    /// mark the known IRQ CPUs again, then refresh with a full scan, since a CPU hotplug moves
    /// IRQs off an offline CPU (now, not within up to FULL_SCAN_EVERY refreshes).
    pub(super) fn remark_irq_cpus(&mut self) -> Result<()> {
        for cpu in self.irq_cpus.clone() {
            self.set_irq_cpu(cpu, true)?;
        }
        self.refresh_irqs(true)
    }

    fn refresh_irq_map(&mut self) -> Result<()> {
        let ifnames = irq::interface_names(&self.roots);
        self.refreshes_since_scan += 1;
        let quick = (self.refreshes_since_scan < FULL_SCAN_EVERY && ifnames == self.ifnames)
            .then(|| irq::reread_rx_affinity(&self.roots, &self.nics))
            .flatten();
        let nics = match quick {
            Some(nics) => nics,
            None => {
                self.refreshes_since_scan = 0;
                self.ifnames = ifnames;
                self.scan_irqs()?
            }
        };
        self.nics = nics.clone();
        let cpus = irq::irq_cpus(&nics);
        let nic_cpus = irq::nic_cpu_sets(&nics);
        if cpus == self.irq_cpus && nic_cpus == self.nic_cpus && self.irq_cpus_known {
            return Ok(());
        }
        if self.irq_cpus_known {
            self.nr_irq_changes += 1;
        }
        self.irq_cpus_known = true;
        for nic in &nics {
            let rx: Vec<usize> = nic.rx_cpus().into_iter().collect();
            let whose = if nic.elsewhere() {
                "device of an interface in another network namespace".to_string()
            } else {
                format!("ifindex {}", nic.ifindex)
            };
            info!(
                "NIC {} ({whose}): receive IRQs on CPUs {}",
                nic.name,
                format_cpu_list(&rx)
            );
        }
        for cpu in self.irq_cpus.difference(&cpus).copied().collect::<Vec<_>>() {
            self.set_irq_cpu(cpu, false)?;
        }
        for cpu in cpus.difference(&self.irq_cpus).copied().collect::<Vec<_>>() {
            self.set_irq_cpu(cpu, true)?;
        }
        self.push_nic_cpus(&nic_cpus)?;
        info!(
            "IRQ CPUs: {}",
            format_cpu_list(&cpus.iter().copied().collect::<Vec<_>>())
        );
        self.irq_cpus = cpus;
        self.nic_cpus = nic_cpus;
        Ok(())
    }

    /// The full half of an IRQ map refresh: every NIC and its IRQs (irq::discover_present()),
    /// with --nic names gone or back and RFS/RPS changes logged.
    fn scan_irqs(&mut self) -> Result<Vec<irq::Nic>> {
        let (nics, missing) = irq::discover_present(&self.roots, &self.cfg.nics)?;
        if missing != self.missing_nics {
            for name in missing.iter().filter(|n| !self.missing_nics.contains(n)) {
                warn!("--nic {name} is gone: its IRQs count no more until it is back");
            }
            for name in self.missing_nics.iter().filter(|n| !missing.contains(n)) {
                info!("--nic {name} is back");
            }
            self.missing_nics = missing;
        }
        let steering = irq::steering(&self.roots, &nics);
        if self.steering.as_ref() != Some(&steering) {
            let lines = steering.describe();
            if lines.is_empty() && self.steering.is_some() {
                info!("RFS and RPS are off now: softirq runs where the NIC IRQs land");
            }
            for l in lines {
                info!("{l}");
            }
            self.steering = Some(steering);
        }
        Ok(nics)
    }

    /// Bring BPF's nic_cpus map from self.nic_cpus to @new, then tell the receive probe that
    /// its cached verdicts are stale (nic_cpus_gen).
    fn push_nic_cpus(&mut self, new: &BTreeMap<u32, BTreeSet<usize>>) -> Result<()> {
        let key = |ifindex: u32| nic_key {
            netns: self.own_netns,
            ifindex,
        };
        for &ifindex in self.nic_cpus.keys().filter(|i| !new.contains_key(i)) {
            self.skel
                .maps
                .nic_cpus
                .delete(as_bytes(&key(ifindex)))
                .with_context(|| format!("removing ifindex {ifindex} from nic_cpus"))?;
        }
        for (&ifindex, cpus) in new {
            if self.nic_cpus.get(&ifindex) == Some(cpus) {
                continue;
            }
            let mut val = nic_cpus {
                cpus: [0; MAX_CPUS as usize / 64],
            };
            for &cpu in cpus.iter().filter(|&&c| c < MAX_CPUS as usize) {
                val.cpus[cpu / 64] |= 1 << (cpu % 64);
            }
            self.skel
                .maps
                .nic_cpus
                .update(as_bytes(&key(ifindex)), as_bytes(&val), MapFlags::ANY)
                .with_context(|| format!("writing ifindex {ifindex} to nic_cpus"))?;
        }
        let bss = self.skel.maps.bss_data.as_mut().unwrap();
        bss.nic_cpus_gen = bss.nic_cpus_gen.wrapping_add(1);
        Ok(())
    }
}
