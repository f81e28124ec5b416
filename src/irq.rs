// SPDX-License-Identifier: GPL-2.0
//! NIC IRQ discovery: which interfaces have IRQs, which of those are receive queues, and which
//! CPUs they target. Reads sysfs and procfs under configurable roots, so tests run on fixture
//! trees.
//!
//! Not scx_utils' `netdev::read_netdevs()`: that one reads the interfaces of our own namespace
//! and their IRQs' smp_affinity. Placement needs more: effective affinity (and a pending re-pin),
//! virtio NICs whose vectors belong to the parent PCI device, the queue kind of each vector (a
//! transmit or config vector is no receive IRQ CPU), and interfaces moved into other network
//! namespaces, whose IRQs still land on our CPUs. Keep it.
//!
//! - Interfaces: /sys/class/net/IF with a `device` link (lo, veth, bridges have none).
//! - IRQs: the device's `msi_irqs/` directory; for virtio the MSI-X vectors belong to the
//!   parent PCI device (`device/../msi_irqs`); a legacy `device/irq` file as the last resort.
//! - Queue kind: from the IRQ's name in /proc/interrupts (`virtio0-input.0`, `eth0-TxRx-3`,
//!   `mlx5_comp3@pci:...`, `i40e-eth0-TxRx-0`); config/link IRQs are not queues.
//! - Target CPUs: /proc/irq/N/effective_affinity_list (where the kernel routes it), unless a
//!   re-pin is still pending (effective outside smp_affinity_list), else smp_affinity_list.

use anyhow::{bail, Context, Result};

use crate::cpulist::parse_cpu_list;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Where sysfs and procfs are mounted ("/sys", "/proc" on a live system).
#[derive(Debug, Clone)]
pub struct Roots {
    pub sys: PathBuf,
    pub proc: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Self {
            sys: "/sys".into(),
            proc: "/proc".into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKind {
    Rx,
    Tx,
    Combined,
    Other,
}

impl QueueKind {
    /// Guess from an IRQ name. Combined names mention both directions or a completion queue.
    pub fn from_name(name: &str) -> Self {
        let n = name.to_ascii_lowercase();
        if n.contains("txrx")
            || n.contains("rx-tx")
            || n.contains("tx-rx")
            || n.contains("comp")
            || n.contains("combined")
        {
            QueueKind::Combined
        } else if n.contains("input") || n.contains("-rx") || n.contains("rx-") {
            QueueKind::Rx
        } else if n.contains("output") || n.contains("-tx") || n.contains("tx-") {
            QueueKind::Tx
        } else {
            QueueKind::Other
        }
    }

    /// Does this IRQ carry received packets (and so start softirq receive work)?
    pub fn receives(self) -> bool {
        matches!(self, QueueKind::Rx | QueueKind::Combined)
    }

    /// The kind as --list-nics prints it.
    pub fn label(self) -> &'static str {
        match self {
            QueueKind::Rx => "rx",
            QueueKind::Tx => "tx",
            QueueKind::Combined => "rx+tx",
            QueueKind::Other => "other",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicIrq {
    pub irq: u32,
    pub name: String,
    pub kind: QueueKind,
    pub cpus: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nic {
    /// The interface name, or for an interface in another network namespace its device's
    /// ("virtio10", "0000:3b:00.1"): names and ifindexes are per namespace.
    pub name: String,
    /// 0 for an interface in another network namespace.
    pub ifindex: u32,
    pub irqs: Vec<NicIrq>,
}

impl Nic {
    /// Is the interface in another network namespace than ours?
    pub fn elsewhere(&self) -> bool {
        self.ifindex == 0
    }

    /// CPUs targeted by this NIC's receive IRQs.
    pub fn rx_cpus(&self) -> BTreeSet<usize> {
        self.irqs
            .iter()
            .filter(|i| i.kind.receives())
            .flat_map(|i| i.cpus.iter().copied())
            .collect()
    }
}

/// IRQ number -> name (the last column) from /proc/interrupts. Non-numeric rows (NMI, LOC...)
/// are skipped.
pub fn parse_proc_interrupts(text: &str) -> BTreeMap<u32, String> {
    let mut lines = text.lines();
    let nr_cpus = lines.next().map_or(0, |h| h.split_whitespace().count());
    let mut names = BTreeMap::new();
    for line in lines {
        let Some((irq, rest)) = line.trim_start().split_once(':') else {
            continue;
        };
        let Ok(irq) = irq.parse::<u32>() else {
            continue;
        };
        // After the per-CPU counts come the chip, the hw irq and the name(s).
        let fields: Vec<&str> = rest.split_whitespace().skip(nr_cpus).collect();
        if let Some(name) = fields.last() {
            names.insert(irq, name.to_string());
        }
    }
    names
}

fn read_trim(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

/// IRQ numbers of a net device: its own msi_irqs, else its legacy irq. A virtio device has
/// neither: its virtio-pci parent owns the vectors (or the INTx line), so look there instead.
/// Any other parent is a bridge or root port whose own MSI (PME, AER, hotplug) is not the NIC's.
fn device_irqs(dev: &Path) -> Vec<u32> {
    let is_virtio = fs::canonicalize(dev)
        .ok()
        .and_then(|p| Some(p.file_name()?.to_str()?.starts_with("virtio")))
        .unwrap_or(false);
    let owner = if is_virtio {
        dev.join("..")
    } else {
        dev.to_path_buf()
    };
    if let Ok(rd) = fs::read_dir(owner.join("msi_irqs")) {
        let mut irqs: Vec<u32> = rd
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        if !irqs.is_empty() {
            irqs.sort_unstable();
            return irqs;
        }
    }
    match read_trim(&owner.join("irq")).and_then(|s| s.parse::<u32>().ok()) {
        Some(irq) if irq > 0 => vec![irq],
        _ => vec![],
    }
}

/// The CPUs IRQ @irq targets now: effective_affinity_list (where the kernel routed it, one CPU
/// of the mask on x86), unless that lies outside smp_affinity_list. Then a re-pin is pending:
/// x86 moves a vector only when its next interrupt arrives, and until then the effective list
/// keeps naming the CPU it left (seen in a 7.2 guest: a NIC pinned to CPU 5 read effective 0
/// until traffic came, and its next interrupt but one landed on 5). The next interrupt goes to
/// the new mask, so the mask is what to believe. Without an effective list (older kernels,
/// some chips) the mask is all there is.
pub fn irq_affinity(roots: &Roots, irq: u32) -> Vec<usize> {
    live_irq_affinity(roots, irq).unwrap_or_default()
}

/// irq_affinity(), or None when /proc/irq/@irq has no readable smp_affinity_list: the IRQ was
/// freed (its device unbound or unplugged, its queues re-created).
fn live_irq_affinity(roots: &Roots, irq: u32) -> Option<Vec<usize>> {
    let base = roots.proc.join("irq").join(irq.to_string());
    let mask = read_trim(&base.join("smp_affinity_list"))?;
    let list = |s: &str| parse_cpu_list(s).ok().filter(|cpus| !cpus.is_empty());
    let mask = list(&mask);
    let eff = read_trim(&base.join("effective_affinity_list")).and_then(|s| list(&s));
    Some(match (eff, mask) {
        (Some(eff), Some(mask)) if !eff.iter().all(|c| mask.contains(c)) => mask,
        (Some(eff), _) => eff,
        (None, mask) => mask.unwrap_or_default(),
    })
}

/// IRQ map events counted so far (bpf/netmon.bpf.c section 4, and rtnetlink's link group):
/// IRQ affinity changes, IRQ handlers requested or freed, link messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IrqEvents {
    pub affinity: u64,
    pub vectors: u64,
    pub links: u64,
}

/// What an IRQ map refresh must do, given the events counted @now and those the last
/// refreshes covered (@seen): a full scan after a handler or link event (only a scan sees new
/// vectors and interfaces), a quick re-read of the receive IRQs' targets after an affinity
/// change, a full scan once @scan_age (since the last one) reaches @backstop, else nothing.
/// Some(true) for a full scan, Some(false) for a quick one.
pub fn refresh_due(
    now: IrqEvents,
    seen: IrqEvents,
    scan_age: std::time::Duration,
    backstop: std::time::Duration,
) -> Option<bool> {
    if now.vectors != seen.vectors || now.links != seen.links || scan_age >= backstop {
        Some(true)
    } else if now.affinity != seen.affinity {
        Some(false)
    } else {
        None
    }
}

/// The cheap half of an IRQ map refresh: @nics (from discover_present()) with the target CPUs
/// of their receive IRQs read again, two small files per IRQ, and nothing else (why:
/// FULL_SCAN_EVERY in scheduler.rs). None when one of those IRQs is gone: the device changed
/// in a way only a full scan sees.
pub fn reread_rx_affinity(roots: &Roots, nics: &[Nic]) -> Option<Vec<Nic>> {
    let mut out = nics.to_vec();
    for irq in out.iter_mut().flat_map(|n| n.irqs.iter_mut()) {
        if irq.kind.receives() {
            irq.cpus = live_irq_affinity(roots, irq.irq)?;
        }
    }
    Some(out)
}

/// The interfaces listed in /sys/class/net: one that comes, goes, or moves to another network
/// namespace changes the list, and then the IRQ map needs a full scan.
pub fn interface_names(roots: &Roots) -> BTreeSet<String> {
    fs::read_dir(roots.sys.join("class/net"))
        .map(|rd| {
            rd.filter_map(|e| Some(e.ok()?.file_name().to_str()?.to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// The IRQs of the net device at @dev, named and classified from /proc/interrupts (@names).
fn nic_irqs(roots: &Roots, names: &BTreeMap<u32, String>, dev: &Path) -> Vec<NicIrq> {
    let mut irqs: Vec<NicIrq> = device_irqs(dev)
        .into_iter()
        .map(|irq| {
            let qname = names.get(&irq).cloned().unwrap_or_default();
            NicIrq {
                irq,
                kind: QueueKind::from_name(&qname),
                name: qname,
                cpus: irq_affinity(roots, irq),
            }
        })
        .collect();
    // A NIC whose vectors carry no queue names (one shared IRQ, INTx) receives on all of
    // them except the obvious management ones.
    if !irqs.iter().any(|i| i.kind.receives()) {
        for i in irqs.iter_mut() {
            let n = i.name.to_ascii_lowercase();
            if !(n.contains("config") || n.contains("link") || n.contains("async")) {
                i.kind = QueueKind::Combined;
            }
        }
    }
    irqs
}

fn is_empty_dir(p: &Path) -> bool {
    fs::read_dir(p).is_ok_and(|mut rd| rd.next().is_none())
}

/// Net devices whose interface lives in another network namespace (a container's NIC, an
/// SR-IOV VF given to a pod): /sys/class/net here does not list them, yet their IRQs land on
/// this machine's CPUs. Sysfs hides other namespaces' interfaces, so such a device shows an
/// empty `net/` directory: a virtio device of type net (0x0001), or a PCI function of class
/// network (0x02xxxx) whose driver made it a net device (`net/` exists; not vfio-pci). A
/// virtio-pci function is left to its virtio child. Returns (device name, device path).
fn devices_elsewhere(sys: &Path) -> Vec<(String, PathBuf)> {
    let list = |bus: &str| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = fs::read_dir(sys.join("bus").join(bus).join("devices"))
            .map(|rd| rd.filter_map(|e| Some(e.ok()?.path())).collect())
            .unwrap_or_default();
        v.sort();
        v
    };
    let mut out = Vec::new();
    for dev in list("virtio") {
        if read_trim(&dev.join("device")).as_deref() == Some("0x0001")
            && is_empty_dir(&dev.join("net"))
        {
            out.push(dev);
        }
    }
    for dev in list("pci") {
        let has_virtio = fs::read_dir(&dev).is_ok_and(|rd| {
            rd.filter_map(|e| e.ok())
                .any(|e| e.file_name().to_string_lossy().starts_with("virtio"))
        });
        if read_trim(&dev.join("class")).is_some_and(|c| c.starts_with("0x02"))
            && !has_virtio
            && is_empty_dir(&dev.join("net"))
        {
            out.push(dev);
        }
    }
    out.into_iter()
        .filter_map(|dev| Some((dev.file_name()?.to_str()?.to_string(), dev)))
        .collect()
}

/// What --list-nics prints: a header, then one row per IRQ of each NIC: the NIC, the IRQ number,
/// its queue kind (receive IRQs are rx or rx+tx: those make IRQ CPUs), the CPUs it targets now
/// (as placement reads them) and its name in /proc/interrupts. Columns are separated by
/// spaces, so `awk '$3 ~ /^rx/'` picks the receive IRQs.
pub fn nic_table(nics: &[Nic]) -> String {
    let rows: Vec<[String; 5]> = nics
        .iter()
        .flat_map(|n| {
            n.irqs.iter().map(|i| {
                [
                    n.name.clone(),
                    i.irq.to_string(),
                    i.kind.label().to_string(),
                    crate::cpulist::format_cpu_list(&i.cpus),
                    i.name.clone(),
                ]
            })
        })
        .collect();
    let head = ["NIC", "IRQ", "QUEUE", "CPUS", "NAME"].map(String::from);
    let width = |col: usize| {
        std::iter::once(&head)
            .chain(&rows)
            .map(|r| r[col].len())
            .max()
            .unwrap_or(0)
    };
    let (w0, w1, w2, w3) = (width(0), width(1), width(2), width(3));
    std::iter::once(&head)
        .chain(&rows)
        .map(|r| {
            let cpus = if r[3].is_empty() { "-" } else { r[3].as_str() };
            format!(
                "{:<w0$}  {:>w1$}  {:<w2$}  {:<w3$}  {}\n",
                r[0], r[1], r[2], cpus, r[4]
            )
        })
        .collect()
}

/// Every interface with IRQs, or only those named in @only (an unknown name is an error).
/// Interfaces in other network namespaces count too (see devices_elsewhere()), under their
/// device's name, since the IRQs they take are ours.
pub fn discover(roots: &Roots, only: &[String]) -> Result<Vec<Nic>> {
    let (nics, seen) = scan(roots, only)?;
    if let Some(missing) = only.iter().find(|n| !seen.contains(*n)) {
        bail!(
            "--nic {missing}: no such interface in {}, nor a net device in another network \
             namespace (have: {})",
            roots.sys.join("class/net").display(),
            seen.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(nics)
}

/// discover() for a running scheduler: a NIC named in @only that is gone (hot-unplugged, its
/// driver unbound, moved away) is no error but one of the names returned beside the NICs
/// found. Its IRQs no longer land anywhere; the rest of the map must still be right.
pub fn discover_present(roots: &Roots, only: &[String]) -> Result<(Vec<Nic>, Vec<String>)> {
    let (nics, seen) = scan(roots, only)?;
    let missing = only
        .iter()
        .filter(|n| !seen.contains(*n))
        .cloned()
        .collect();
    Ok((nics, missing))
}

/// The NICs (filtered by @only) and every interface or device name seen.
fn scan(roots: &Roots, only: &[String]) -> Result<(Vec<Nic>, BTreeSet<String>)> {
    let net = roots.sys.join("class/net");
    let names = parse_proc_interrupts(
        &fs::read_to_string(roots.proc.join("interrupts")).context("reading /proc/interrupts")?,
    );
    let mut nics = Vec::new();
    let mut seen = BTreeSet::new();
    // (name, device, ifindex file: None for an interface in another namespace)
    let mut entries: Vec<(String, PathBuf, Option<PathBuf>)> = fs::read_dir(&net)
        .with_context(|| format!("reading {}", net.display()))?
        .filter_map(|e| e.ok())
        .map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            (
                name,
                e.path().join("device"),
                Some(e.path().join("ifindex")),
            )
        })
        .collect();
    entries.sort();
    entries.extend(
        devices_elsewhere(&roots.sys)
            .into_iter()
            .map(|(name, dev)| (name, dev, None)),
    );
    for (name, dev, ifindex_file) in entries {
        seen.insert(name.clone());
        if (!only.is_empty() && !only.contains(&name)) || !dev.exists() {
            continue;
        }
        let mut irqs = nic_irqs(roots, &names, &dev);
        // Away from /sys/class/net, only the vectors a driver requested (named ones) count.
        if ifindex_file.is_none() {
            irqs.retain(|q| !q.name.is_empty());
        }
        if irqs.is_empty() {
            continue;
        }
        let ifindex = match ifindex_file {
            None => 0,
            // Listed but its ifindex unreadable: the interface is being unregistered. Taken
            // for one in another namespace (ifindex 0), its IRQ CPUs stayed in the IRQ set
            // after a hot-unplug (t_nic_hotplug saw CPU 5 kept with NIC B gone).
            Some(f) => match read_trim(&f).and_then(|s| s.parse().ok()) {
                Some(i) => i,
                None => continue,
            },
        };
        nics.push(Nic {
            name,
            ifindex,
            irqs,
        });
    }
    Ok((nics, seen))
}

/// CPUs that take a receive IRQ of any of @nics.
pub fn irq_cpus(nics: &[Nic]) -> BTreeSet<usize> {
    nics.iter().flat_map(|n| n.rx_cpus()).collect()
}

/// The receive IRQ CPUs of each of @nics that lives in our network namespace, by ifindex: what
/// BPF's `nic_cpus` map holds. Interfaces elsewhere have no ifindex we could key them by.
pub fn nic_cpu_sets(nics: &[Nic]) -> BTreeMap<u32, BTreeSet<usize>> {
    nics.iter()
        .filter(|n| !n.elsewhere())
        .map(|n| (n.ifindex, n.rx_cpus()))
        .collect()
}

/// Receive steering done in software, which decouples protocol work from the NIC IRQ: RFS
/// (net.core.rps_sock_flow_entries > 0) runs a flow's softirq on the CPU of the task that
/// consumes it, and RPS (a non-empty rx-N/rps_cpus mask) hashes flows onto the CPUs of the mask.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Steering {
    /// net.core.rps_sock_flow_entries; 0 when RFS is off or the file is missing.
    pub rfs_flow_entries: u64,
    /// (interface, rx queue, rps_cpus mask as the kernel shows it) with a non-empty mask.
    pub rps: Vec<(String, String, String)>,
}

/// A hex CPU mask as sysfs shows it ("00000000,0000000f"); true when any bit is set.
fn mask_nonzero(mask: &str) -> bool {
    mask.chars().any(|c| c.is_ascii_hexdigit() && c != '0')
}

/// RFS and RPS settings for @nics.
pub fn steering(roots: &Roots, nics: &[Nic]) -> Steering {
    let rfs_flow_entries = read_trim(&roots.proc.join("sys/net/core/rps_sock_flow_entries"))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut rps = Vec::new();
    for nic in nics {
        let dir = roots.sys.join("class/net").join(&nic.name).join("queues");
        let Ok(rd) = fs::read_dir(&dir) else {
            continue;
        };
        let mut queues: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|q| q.starts_with("rx-"))
            .collect();
        queues.sort();
        for q in queues {
            if let Some(mask) = read_trim(&dir.join(&q).join("rps_cpus")) {
                if mask_nonzero(&mask) {
                    rps.push((nic.name.clone(), q, mask));
                }
            }
        }
    }
    Steering {
        rfs_flow_entries,
        rps,
    }
}

impl Steering {
    /// What the settings mean for MiAMI's placement, one line each; empty when both are off.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.rfs_flow_entries > 0 {
            lines.push(format!(
                "RFS is on (net.core.rps_sock_flow_entries = {}): a flow's softirq follows the \
                 CPU of the task that reads it, so a task's IRQ CPU (sk_incoming_cpu) is where \
                 its protocol work really runs; the NIC IRQ map only says where hardirqs land",
                self.rfs_flow_entries
            ));
        }
        for (nic, q, mask) in &self.rps {
            lines.push(format!(
                "RPS on {nic} {q} (rps_cpus {mask}): its flows' softirq runs on the CPUs of that \
                 mask, not on the IRQ CPU; sk_incoming_cpu follows it, the NIC IRQ map does not"
            ));
        }
        lines
    }
}

/// Names the interface of a task's representative connection for the task table. BPF records
/// its ifindex and the inode number of the socket's network namespace, because an ifindex means
/// something only inside its namespace: a container's eth0 and a host NIC may share one.
/// Interfaces of our own namespace are named from /sys/class/net; others as `if<N>@<ns>`,
/// where `<ns>` is the `ip netns` name bound under /run/netns, or `netns:[<inode>]`.
#[derive(Debug)]
pub struct NicNames {
    own_netns: u64,
    /// ifindex -> name, in our own namespace.
    names: BTreeMap<u32, String>,
    /// namespace inode -> `ip netns` name.
    netns_names: BTreeMap<u64, String>,
}

impl NicNames {
    /// Read the names: @class_net (/sys/class/net), @own_ns (/proc/self/ns/net), @netns_dir
    /// (/run/netns). Whatever cannot be read is left out; labels then fall back to numbers.
    pub fn read(class_net: &Path, own_ns: &Path, netns_dir: &Path) -> Self {
        use std::os::unix::fs::MetadataExt;
        let entries = |dir: &Path| {
            std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok())
                .collect::<Vec<_>>()
        };
        let names = entries(class_net)
            .iter()
            .filter_map(|e| {
                let idx = read_trim(&e.path().join("ifindex"))?.parse().ok()?;
                Some((idx, e.file_name().to_string_lossy().into_owned()))
            })
            .collect();
        let netns_names = entries(netns_dir)
            .iter()
            .filter_map(|e| {
                let ino = std::fs::metadata(e.path()).ok()?.ino();
                Some((ino, e.file_name().to_string_lossy().into_owned()))
            })
            .collect();
        Self {
            own_netns: std::fs::metadata(own_ns).map_or(0, |m| m.ino()),
            names,
            netns_names,
        }
    }

    /// The label of @ifindex in the namespace with inode @netns (0: unknown, taken as ours).
    pub fn label(&self, ifindex: u32, netns: u32) -> String {
        if netns == 0 || u64::from(netns) == self.own_netns {
            return self
                .names
                .get(&ifindex)
                .cloned()
                .unwrap_or_else(|| format!("if{ifindex}"));
        }
        match self.netns_names.get(&u64::from(netns)) {
            Some(ns) => format!("if{ifindex}@{ns}"),
            None => format!("if{ifindex}@netns:[{netns}]"),
        }
    }
}
