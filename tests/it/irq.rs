// SPDX-License-Identifier: GPL-2.0
//! Host tests of `miami::irq`: CPU lists, /proc/interrupts parsing, queue kinds, and NIC IRQ
//! discovery and RFS/RPS detection on the fixture sysfs/procfs trees under tests/fixtures.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use miami::cpulist::{format_cpu_list, parse_cpu_list};
use miami::irq::{
    discover, discover_present, interface_names, irq_affinity, irq_cpus, nic_cpu_sets, nic_table,
    parse_proc_interrupts, refresh_due, reread_rx_affinity, steering, IrqEvents, Nic, NicNames,
    QueueKind, Roots, Steering,
};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

fn roots(tree: &str) -> Roots {
    Roots {
        sys: fixture(tree).join("sys"),
        proc: fixture(tree).join("proc"),
    }
}

fn interrupts(name: &str) -> String {
    std::fs::read_to_string(fixture("interrupts").join(name)).unwrap()
}

fn set(cpus: &[usize]) -> BTreeSet<usize> {
    cpus.iter().copied().collect()
}

fn nic<'a>(nics: &'a [Nic], name: &str) -> &'a Nic {
    nics.iter()
        .find(|n| n.name == name)
        .unwrap_or_else(|| panic!("{name} not discovered; got {nics:?}"))
}

// ---- CPU lists ----

#[test]
fn cpu_list_parses_singles_and_ranges() {
    assert_eq!(parse_cpu_list("0").unwrap(), vec![0]);
    assert_eq!(parse_cpu_list("0-3").unwrap(), vec![0, 1, 2, 3]);
    assert_eq!(
        parse_cpu_list("0-3,8,10-11").unwrap(),
        vec![0, 1, 2, 3, 8, 10, 11]
    );
    assert_eq!(parse_cpu_list("5-5").unwrap(), vec![5]);
    // sysfs files end in a newline; spaces around items are tolerated.
    assert_eq!(parse_cpu_list("1,3\n").unwrap(), vec![1, 3]);
    assert_eq!(parse_cpu_list(" 2 , 4-5 ").unwrap(), vec![2, 4, 5]);
}

#[test]
fn cpu_list_empty_is_empty() {
    assert_eq!(parse_cpu_list("").unwrap(), Vec::<usize>::new());
    assert_eq!(parse_cpu_list("\n").unwrap(), Vec::<usize>::new());
    assert_eq!(parse_cpu_list(",").unwrap(), Vec::<usize>::new());
}

#[test]
fn cpu_list_rejects_bad_input() {
    for bad in [
        "x", "1,x", "3-1", "1-", "-1", "1-2-3", "a-b", "0x1", "1.5", "-",
    ] {
        assert!(
            parse_cpu_list(bad).is_err(),
            "'{bad}' parsed as {:?}",
            parse_cpu_list(bad)
        );
    }
    let e = parse_cpu_list("3-1").unwrap_err().to_string();
    assert!(e.contains("3-1"), "{e}");
    let e = format!("{:#}", parse_cpu_list("0,zz").unwrap_err());
    assert!(e.contains("zz"), "{e}");
}

#[test]
fn cpu_list_formats_ranges() {
    assert_eq!(format_cpu_list(&[]), "");
    assert_eq!(format_cpu_list(&[4]), "4");
    assert_eq!(format_cpu_list(&[0, 1, 2, 3]), "0-3");
    assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
    assert_eq!(format_cpu_list(&[1, 3, 5]), "1,3,5");
    // Unsorted input with duplicates is normalised.
    assert_eq!(format_cpu_list(&[3, 1, 2, 2, 7, 0]), "0-3,7");
}

#[test]
fn cpu_list_round_trips() {
    for s in ["0", "0-3", "0-3,8,10-11", "1,3,5", "0-1023", "2,4-6,9"] {
        let cpus = parse_cpu_list(s).unwrap();
        assert_eq!(format_cpu_list(&cpus), s);
        assert_eq!(parse_cpu_list(&format_cpu_list(&cpus)).unwrap(), cpus);
    }
}

// ---- /proc/interrupts ----

#[test]
fn proc_interrupts_virtio_guest() {
    let names = parse_proc_interrupts(&interrupts("virtio-8cpu"));
    assert_eq!(names[&43], "virtio1-input.0");
    assert_eq!(names[&44], "virtio1-output.0");
    assert_eq!(names[&45], "virtio1-input.1");
    assert_eq!(names[&42], "virtio1-config");
    assert_eq!(names[&0], "timer");
    assert_eq!(
        names.keys().copied().collect::<Vec<_>>(),
        vec![0, 4, 42, 43, 44, 45, 46, 47],
        "NMI/LOC/RES/ERR/MIS rows must be skipped"
    );
}

#[test]
fn proc_interrupts_i40e() {
    let names = parse_proc_interrupts(&interrupts("i40e-4cpu"));
    assert_eq!(names[&120], "i40e-0000:3b:00.0:misc");
    for q in 0..4u32 {
        assert_eq!(names[&(121 + q)], format!("i40e-eth0-TxRx-{q}"));
    }
    assert_eq!(names[&130], "eth1-TxRx-0");
    assert_eq!(names[&131], "eth1-TxRx-1");
    assert_eq!(names.len(), 8);
}

#[test]
fn proc_interrupts_mlx5() {
    let names = parse_proc_interrupts(&interrupts("mlx5-4cpu"));
    assert_eq!(names[&98], "mlx5_async0@pci:0000:3b:00.0");
    assert_eq!(names[&99], "mlx5_comp0@pci:0000:3b:00.0");
    assert_eq!(names[&102], "mlx5_comp3@pci:0000:3b:00.0");
    assert_eq!(names.len(), 5);
}

#[test]
fn proc_interrupts_legacy_shared_line_keeps_last_name() {
    let names = parse_proc_interrupts(&interrupts("legacy-2cpu"));
    assert_eq!(names[&10], "eth0");
    // "uhci_hcd:usb1, eth1": the last action on the line.
    assert_eq!(names[&11], "eth1");
    assert_eq!(names.len(), 3);
}

#[test]
fn proc_interrupts_degenerate_input() {
    assert!(parse_proc_interrupts("").is_empty());
    assert!(parse_proc_interrupts("           CPU0       CPU1\n").is_empty());
    // A row with counts but nothing after them has no name.
    let names = parse_proc_interrupts("   CPU0\n  7:   3\n  8:   1  IO-APIC  8-edge  rtc0\n");
    assert_eq!(names.len(), 1);
    assert_eq!(names[&8], "rtc0");
}

// ---- queue kinds ----

#[test]
fn queue_kind_from_real_names() {
    use QueueKind::*;
    let cases = [
        ("virtio1-input.0", Rx),
        ("virtio0-input.15", Rx),
        ("virtio1-output.0", Tx),
        ("virtio1-config", Other),
        ("virtio0-virtqueues", Other),
        ("i40e-eth0-TxRx-0", Combined),
        ("ice-ens1f0-TxRx-12", Combined),
        ("eth0-TxRx-3", Combined),
        ("mlx5_comp0@pci:0000:3b:00.0", Combined),
        ("mlx5_comp23@pci:0000:af:00.1", Combined),
        ("mlx5_async0@pci:0000:3b:00.0", Other),
        ("eth0-rx-0", Rx),
        ("eth0-tx-0", Tx),
        ("enp1s0-rx-1", Rx),
        ("rx-0", Rx),
        ("tx-0", Tx),
        ("enp5s0-combined-0", Combined),
        ("i40e-0000:3b:00.0:misc", Other),
        ("eth0", Other),
        ("timer", Other),
        ("", Other),
    ];
    for (name, kind) in cases {
        assert_eq!(QueueKind::from_name(name), kind, "{name}");
    }
}

#[test]
fn queue_kind_receives() {
    assert!(QueueKind::Rx.receives());
    assert!(QueueKind::Combined.receives());
    assert!(!QueueKind::Tx.receives());
    assert!(!QueueKind::Other.receives());
}

#[test]
fn queue_kinds_of_every_fixture_name() {
    // Every queue vector in the samples is classified; only management vectors are Other.
    for (file, receivers) in [
        ("virtio-8cpu", vec![43, 45]),
        ("i40e-4cpu", vec![121, 122, 123, 124, 130, 131]),
        ("mlx5-4cpu", vec![99, 100, 101, 102]),
    ] {
        let got: Vec<u32> = parse_proc_interrupts(&interrupts(file))
            .into_iter()
            .filter(|(_, n)| QueueKind::from_name(n).receives())
            .map(|(irq, _)| irq)
            .collect();
        assert_eq!(got, receivers, "{file}");
    }
}

// ---- discovery on the fixture tree ----

#[test]
fn discover_finds_nics_with_irqs_and_skips_virtual() {
    let nics = discover(&roots("host"), &[]).unwrap();
    let names: Vec<&str> = nics.iter().map(|n| n.name.as_str()).collect();
    // Sorted by name; lo and veth0 have no device and are left out.
    assert_eq!(names, ["enp0s10", "eth0", "eth1"]);
    assert_eq!(nic(&nics, "enp0s10").ifindex, 3);
    assert_eq!(nic(&nics, "eth0").ifindex, 2);
    assert_eq!(nic(&nics, "eth1").ifindex, 4);
}

#[test]
fn discover_virtio_uses_parent_msi_irqs() {
    let nics = discover(&roots("host"), &[]).unwrap();
    let v = nic(&nics, "enp0s10");
    let irqs: Vec<(u32, &str, QueueKind)> = v
        .irqs
        .iter()
        .map(|i| (i.irq, i.name.as_str(), i.kind))
        .collect();
    assert_eq!(
        irqs,
        [
            (42, "virtio1-config", QueueKind::Other),
            (43, "virtio1-input.0", QueueKind::Rx),
            (44, "virtio1-output.0", QueueKind::Tx),
            (45, "virtio1-input.1", QueueKind::Rx),
            (46, "virtio1-output.1", QueueKind::Tx),
        ]
    );
    // input.0 -> CPU 1 (effective), input.1 -> 2-3 (smp_affinity_list only).
    assert_eq!(v.rx_cpus(), set(&[1, 2, 3]));
}

#[test]
fn discover_multiqueue_nic() {
    let nics = discover(&roots("host"), &[]).unwrap();
    let e = nic(&nics, "eth0");
    assert_eq!(
        e.irqs.iter().map(|i| i.irq).collect::<Vec<_>>(),
        [120, 121, 122, 123, 124]
    );
    assert_eq!(e.irqs[0].kind, QueueKind::Other, "misc vector is no queue");
    assert_eq!(e.irqs[0].cpus, [0]);
    for (q, i) in e.irqs[1..].iter().enumerate() {
        assert_eq!(i.name, format!("i40e-eth0-TxRx-{q}"));
        assert_eq!(i.kind, QueueKind::Combined);
        // effective_affinity_list (one CPU) wins over smp_affinity_list (4-7).
        assert_eq!(i.cpus, [4 + q]);
    }
    assert_eq!(e.rx_cpus(), set(&[4, 5, 6, 7]));
}

#[test]
fn discover_legacy_irq_is_combined() {
    let nics = discover(&roots("host"), &[]).unwrap();
    let l = nic(&nics, "eth1");
    assert_eq!(l.irqs.len(), 1);
    assert_eq!(l.irqs[0].irq, 10);
    assert_eq!(l.irqs[0].name, "eth1");
    // No queue names at all: the single vector carries receives.
    assert_eq!(l.irqs[0].kind, QueueKind::Combined);
    // Empty effective_affinity_list falls back to smp_affinity_list.
    assert_eq!(l.irqs[0].cpus, [6]);
    assert_eq!(l.rx_cpus(), set(&[6]));
}

/// --list-nics on the fixture host: every IRQ of every NIC, receive kinds rx and rx+tx, CPUs as
/// placement reads them (effective, else smp_affinity_list; see the tests above), the
/// /proc/interrupts name last (tests/fixtures/README.md lists the tree).
#[test]
fn nic_table_lists_every_irq_with_kind_and_cpus() {
    let nics = discover(&roots("host"), &[]).unwrap();
    let want = "\
NIC      IRQ  QUEUE  CPUS  NAME
enp0s10   42  other  0     virtio1-config
enp0s10   43  rx     1     virtio1-input.0
enp0s10   44  tx     1     virtio1-output.0
enp0s10   45  rx     2-3   virtio1-input.1
enp0s10   46  tx     3     virtio1-output.1
eth0     120  other  0     i40e-0000:3b:00.0:misc
eth0     121  rx+tx  4     i40e-eth0-TxRx-0
eth0     122  rx+tx  5     i40e-eth0-TxRx-1
eth0     123  rx+tx  6     i40e-eth0-TxRx-2
eth0     124  rx+tx  7     i40e-eth0-TxRx-3
eth1      10  rx+tx  6     eth1
";
    assert_eq!(nic_table(&nics), want);
    // Only the NICs asked for; the receive rows are what `awk '$3 ~ /^rx/'` picks.
    let only = nic_table(&discover(&roots("host"), &["eth1".into()]).unwrap());
    assert_eq!(
        only,
        "NIC   IRQ  QUEUE  CPUS  NAME\neth1   10  rx+tx  6     eth1\n"
    );
}

#[test]
fn affinity_prefers_effective_and_falls_back() {
    let r = roots("host");
    assert_eq!(irq_affinity(&r, 43), [1], "effective over smp 0-7");
    assert_eq!(irq_affinity(&r, 45), [2, 3], "no effective file");
    assert_eq!(irq_affinity(&r, 10), [6], "empty effective file");
    assert_eq!(irq_affinity(&r, 9999), Vec::<usize>::new(), "no such IRQ");
}

/// A re-pin that has not taken effect yet: x86 moves a vector at its next interrupt, so until
/// then effective_affinity_list names the CPU the IRQ left. Numbers from a 7.2 guest right
/// after pinning (NIC A's input IRQ: smp 1, effective 2; NIC B's: smp 5, effective 0).
#[test]
fn affinity_believes_the_mask_while_a_repin_is_pending() {
    let t = tempfile::tempdir().unwrap();
    let r = Roots {
        sys: t.path().join("sys"),
        proc: t.path().join("proc"),
    };
    for (irq, smp, eff) in [
        (30, "1", "2"),   // pinned to 1, still routed to 2: pending
        (31, "5", "0"),   // pinned to 5, still routed to 0: pending
        (32, "4-7", "2"), // pinned to 4-7 from 2: pending, the next one lands somewhere in 4-7
        (33, "4-7", "6"), // settled: one CPU of the mask
        (34, "3", "3"),   // settled
    ] {
        put(t.path(), &format!("proc/irq/{irq}/smp_affinity_list"), smp);
        put(
            t.path(),
            &format!("proc/irq/{irq}/effective_affinity_list"),
            eff,
        );
    }
    assert_eq!(irq_affinity(&r, 30), [1]);
    assert_eq!(irq_affinity(&r, 31), [5]);
    assert_eq!(irq_affinity(&r, 32), [4, 5, 6, 7]);
    assert_eq!(irq_affinity(&r, 33), [6]);
    assert_eq!(irq_affinity(&r, 34), [3]);
}

/// Between full scans, a refresh re-reads the targets of receive IRQs only. On the fixture,
/// enp0s10 has config 42 (0), input.0 43 (1), output.0 44, input.1 45 (2-3). Re-pinning 43 to
/// 5 and 45 to 6 shows; moving config vector 42 to 7 does not (no receive IRQ, never re-read);
/// a receive IRQ that is gone (its /proc/irq entry removed) asks for a full scan.
#[test]
fn reread_rx_affinity_follows_receive_irqs_only() {
    let t = tempfile::tempdir().unwrap();
    copy_tree(&fixture("host"), t.path());
    let r = Roots {
        sys: t.path().join("sys"),
        proc: t.path().join("proc"),
    };
    let nics = discover(&r, &[]).unwrap();
    assert_eq!(nic(&nics, "enp0s10").rx_cpus(), set(&[1, 2, 3]));
    put(t.path(), "proc/irq/43/smp_affinity_list", "5");
    put(t.path(), "proc/irq/43/effective_affinity_list", "5");
    put(t.path(), "proc/irq/45/smp_affinity_list", "6");
    put(t.path(), "proc/irq/42/effective_affinity_list", "7");
    let again = reread_rx_affinity(&r, &nics).unwrap();
    let v = nic(&again, "enp0s10");
    assert_eq!(v.rx_cpus(), set(&[5, 6]));
    assert_eq!((v.irqs[0].irq, v.irqs[0].cpus.as_slice()), (42, &[0][..]));
    assert_eq!(nic(&again, "eth0").rx_cpus(), set(&[4, 5, 6, 7]));
    std::fs::remove_dir_all(t.path().join("proc/irq/45")).unwrap();
    assert_eq!(reread_rx_affinity(&r, &nics), None);
}

#[test]
fn interface_names_lists_class_net() {
    let names: Vec<String> = interface_names(&roots("host")).into_iter().collect();
    assert_eq!(names, ["enp0s10", "eth0", "eth1", "lo", "veth0"]);
    let nowhere = Roots {
        sys: "/nonexistent".into(),
        proc: "/nonexistent".into(),
    };
    assert!(interface_names(&nowhere).is_empty());
}

#[test]
fn discover_with_nic_filter() {
    let r = roots("host");
    let only = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();

    let nics = discover(&r, &only(&["eth0"])).unwrap();
    assert_eq!(nics.len(), 1);
    assert_eq!(nics[0].name, "eth0");
    assert_eq!(irq_cpus(&nics), set(&[4, 5, 6, 7]));

    let nics = discover(&r, &only(&["enp0s10", "eth1"])).unwrap();
    assert_eq!(
        nics.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(),
        ["enp0s10", "eth1"]
    );
    assert_eq!(irq_cpus(&nics), set(&[1, 2, 3, 6]));

    // A known interface without IRQs is accepted and simply contributes nothing.
    assert!(discover(&r, &only(&["lo"])).unwrap().is_empty());
}

#[test]
fn discover_unknown_nic_is_named_in_the_error() {
    let r = roots("host");
    let e = discover(&r, &["eth0".into(), "bogus9".into()]).unwrap_err();
    let msg = format!("{e:#}");
    assert!(msg.contains("--nic bogus9"), "{msg}");
    // The message lists what does exist so the user can correct the name.
    for have in ["enp0s10", "eth0", "eth1", "lo", "veth0"] {
        assert!(msg.contains(have), "{msg}");
    }
}

/// A NIC hot-unplugged under a running scheduler (t_nic_hotplug): while it is unregistered its
/// /sys/class/net entry can still be listed with its ifindex unreadable, and then it is gone.
/// Neither may keep its IRQ CPUs in the set, and a --nic that names it is no error at runtime.
#[test]
fn discover_present_drops_a_nic_being_unplugged() {
    let t = tempfile::tempdir().unwrap();
    copy_tree(&fixture("host"), t.path());
    let r = tree_roots(&t);
    let all = discover(&r, &[]).unwrap();
    assert!(all.iter().any(|n| n.name == "eth0"));
    let only = vec!["eth0".to_string(), "eth1".to_string()];
    let eth1_cpus = nic(&discover(&r, &only).unwrap(), "eth1").rx_cpus();

    std::fs::remove_file(t.path().join("sys/class/net/eth0/ifindex")).unwrap();
    let (nics, missing) = discover_present(&r, &only).unwrap();
    assert!(missing.is_empty(), "{missing:?}");
    assert_eq!(
        nics.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(),
        ["eth1"]
    );
    assert_eq!(irq_cpus(&nics), eth1_cpus);
    assert!(nics.iter().all(|n| !n.elsewhere()));
    // Without a filter too: every NIC but eth0, none of them taken for one elsewhere.
    let rest = discover(&r, &[]).unwrap();
    assert_eq!(rest.len(), all.len() - 1);
    assert!(rest.iter().all(|n| n.name != "eth0" && !n.elsewhere()));

    std::fs::remove_dir_all(t.path().join("sys/class/net/eth0")).unwrap();
    let (nics, missing) = discover_present(&r, &only).unwrap();
    assert_eq!(missing, ["eth0"]);
    assert_eq!(irq_cpus(&nics), eth1_cpus);
    // At startup the same name is a bad --nic.
    let msg = format!("{:#}", discover(&r, &only).unwrap_err());
    assert!(msg.contains("--nic eth0"), "{msg}");
}

#[test]
fn discover_missing_roots_is_an_error() {
    let r = Roots {
        sys: fixture("does-not-exist/sys"),
        proc: fixture("does-not-exist/proc"),
    };
    let msg = format!("{:#}", discover(&r, &[]).unwrap_err());
    assert!(msg.contains("interrupts"), "{msg}");
}

#[test]
fn irq_cpus_is_the_union_of_receive_cpus() {
    let nics = discover(&roots("host"), &[]).unwrap();
    // Tx-only (virtio output, CPU 3 is also an rx CPU via input.1) and management vectors
    // (CPU 0) do not count.
    assert_eq!(irq_cpus(&nics), set(&[1, 2, 3, 4, 5, 6, 7]));
    assert!(irq_cpus(&[]).is_empty());
}

#[test]
fn roots_default_is_the_live_system() {
    let r = Roots::default();
    assert_eq!(r.sys, Path::new("/sys"));
    assert_eq!(r.proc, Path::new("/proc"));
}

/// An INTx NIC behind a PCIe root port: the port's own MSI vector (PME/hotplug) sits in the
/// NIC's parent directory and must not be taken for the NIC's IRQ; the NIC's legacy `irq`
/// file is the right answer.
#[test]
fn discover_intx_nic_behind_pcie_port() {
    let nics = discover(&roots("intx-behind-port"), &[]).unwrap();
    let e = nic(&nics, "eth2");
    assert_eq!(e.irqs.iter().map(|i| i.irq).collect::<Vec<_>>(), [16]);
    assert_eq!(e.rx_cpus(), set(&[1]));
}

// ---- interfaces in other network namespaces ----

/// Recursive copy that keeps symlinks as symlinks.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let ft = e.file_type().unwrap();
        if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if ft.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

fn put(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn link(root: &Path, rel: &str, target: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, p).unwrap();
}

/// The `host` tree plus what sysfs shows once interfaces moved to another namespace (as seen
/// in the test guest after `ip link set enp0s12 netns cli`): their devices keep an empty
/// `net/` directory. Built at run time because git keeps no empty directories.
/// - virtio3 (PCI 0000:00:0c.0): moved; vectors 50 (input.0 -> CPU 7) and 51 (config);
///   52 is in msi_irqs but requested by no driver (not in /proc/interrupts).
/// - 0000:3b:00.1: an i40e VF, moved; vector 130 (TxRx-0 -> CPU 3).
/// - 0000:3b:00.2: a NIC bound to vfio-pci (no `net/` at all): its IRQs belong to a VM.
/// - virtio1 (enp0s10, visible here) is on the virtio bus too and must not be listed twice.
fn netns_tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    copy_tree(&fixture("host"), r);
    let dev = "sys/devices/pci0000:00";
    let mut irqs = std::fs::read_to_string(r.join("proc/interrupts")).unwrap();
    let row = |irq: u32, cpu: usize, chip: &str, name: &str| {
        let counts: String = (0..8)
            .map(|c| format!(" {:>10}", if c == cpu { 5 } else { 0 }))
            .collect();
        format!("{irq:>4}:{counts}  {chip}      0-edge      {name}\n")
    };
    let tail = irqs.split_off(irqs.find(" NMI:").unwrap());
    irqs += &row(50, 7, "PCI-MSIX-0000:00:0c.0", "virtio3-input.0");
    irqs += &row(51, 0, "PCI-MSIX-0000:00:0c.0", "virtio3-config");
    irqs += &row(130, 3, "IR-PCI-MSIX-0000:3b:00.1", "iavf-eth5-TxRx-0");
    irqs += &row(
        140,
        2,
        "IR-PCI-MSIX-0000:3b:00.2",
        "vfio-msix[0](0000:3b:00.2)",
    );
    irqs += &tail;
    std::fs::write(r.join("proc/interrupts"), irqs).unwrap();
    for (irq, cpu) in [(50, "7"), (51, "0"), (52, "0"), (130, "3"), (140, "2")] {
        put(r, &format!("proc/irq/{irq}/smp_affinity_list"), cpu);
    }
    for irq in [50, 51, 52] {
        put(r, &format!("{dev}/0000:00:0c.0/msi_irqs/{irq}"), "msix");
    }
    put(r, &format!("{dev}/0000:00:0c.0/class"), "0x020000");
    put(r, &format!("{dev}/0000:00:0c.0/virtio3/device"), "0x0001");
    std::fs::create_dir_all(r.join(format!("{dev}/0000:00:0c.0/virtio3/net"))).unwrap();
    put(r, &format!("{dev}/0000:3b:00.1/msi_irqs/130"), "msix");
    put(r, &format!("{dev}/0000:3b:00.1/class"), "0x020000");
    std::fs::create_dir_all(r.join(format!("{dev}/0000:3b:00.1/net"))).unwrap();
    put(r, &format!("{dev}/0000:3b:00.2/msi_irqs/140"), "msix");
    put(r, &format!("{dev}/0000:3b:00.2/class"), "0x020000");
    // enp0s10's device, visible: its net/ names it.
    put(r, &format!("{dev}/0000:00:0a.0/virtio1/device"), "0x0001");
    put(
        r,
        &format!("{dev}/0000:00:0a.0/virtio1/net/enp0s10/ifindex"),
        "3",
    );
    put(r, &format!("{dev}/0000:00:0a.0/class"), "0x020000");
    for (bus, name, target) in [
        ("virtio", "virtio1", "0000:00:0a.0/virtio1"),
        ("virtio", "virtio3", "0000:00:0c.0/virtio3"),
        ("pci", "0000:00:0a.0", "0000:00:0a.0"),
        ("pci", "0000:00:0c.0", "0000:00:0c.0"),
        ("pci", "0000:3b:00.1", "0000:3b:00.1"),
        ("pci", "0000:3b:00.2", "0000:3b:00.2"),
    ] {
        link(
            r,
            &format!("sys/bus/{bus}/devices/{name}"),
            &format!("../../../devices/pci0000:00/{target}"),
        );
    }
    t
}

fn tree_roots(t: &tempfile::TempDir) -> Roots {
    Roots {
        sys: t.path().join("sys"),
        proc: t.path().join("proc"),
    }
}

#[test]
fn discover_finds_devices_of_interfaces_in_other_namespaces() {
    let t = netns_tree();
    let nics = discover(&tree_roots(&t), &[]).unwrap();
    let names: Vec<&str> = nics.iter().map(|n| n.name.as_str()).collect();
    // Ours first, by name; then the others by bus (virtio, pci) and device. No vfio NIC, no
    // second enp0s10, no virtio-pci function beside its virtio child.
    assert_eq!(
        names,
        ["enp0s10", "eth0", "eth1", "virtio3", "0000:3b:00.1"]
    );
    let v = nic(&nics, "virtio3");
    assert!(v.elsewhere() && v.ifindex == 0);
    assert!(!nic(&nics, "enp0s10").elsewhere());
    // Only the vectors a driver requested: 52 has no /proc/interrupts row.
    assert_eq!(v.irqs.iter().map(|i| i.irq).collect::<Vec<_>>(), [50, 51]);
    assert_eq!(v.rx_cpus(), set(&[7]));
    assert_eq!(nic(&nics, "0000:3b:00.1").rx_cpus(), set(&[3]));
    // They are IRQ CPUs like any other: 1-3 (enp0s10), 4-7 (eth0), 6 (eth1), 7, 3.
    assert_eq!(irq_cpus(&nics), set(&[1, 2, 3, 4, 5, 6, 7]));
}

/// BPF's per-NIC sets are keyed by ifindex, which only our own interfaces have: the moved ones
/// make IRQ CPUs (above) but get no entry, and a filtered-out NIC gets none either.
#[test]
fn nic_cpu_sets_key_our_nics_by_ifindex() {
    let t = netns_tree();
    let nics = discover(&tree_roots(&t), &[]).unwrap();
    let sets = nic_cpu_sets(&nics);
    assert_eq!(
        sets.into_iter().collect::<Vec<_>>(),
        [
            (2, set(&[4, 5, 6, 7])),
            (3, set(&[1, 2, 3])),
            (4, set(&[6]))
        ]
    );
    let nics = discover(&tree_roots(&t), &["eth1".into(), "virtio3".into()]).unwrap();
    assert_eq!(
        nic_cpu_sets(&nics).into_iter().collect::<Vec<_>>(),
        [(4, set(&[6]))]
    );
}

#[test]
fn discover_nic_filter_names_devices_in_other_namespaces() {
    let t = netns_tree();
    let r = tree_roots(&t);
    let nics = discover(&r, &["eth1".into(), "virtio3".into()]).unwrap();
    assert_eq!(
        nics.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(),
        ["eth1", "virtio3"]
    );
    let nics = discover(&r, &["eth1".into()]).unwrap();
    assert_eq!(nics.len(), 1, "{nics:?}");
    let msg = format!("{:#}", discover(&r, &["virtio9".into()]).unwrap_err());
    assert!(
        msg.contains("--nic virtio9") && msg.contains("virtio3"),
        "{msg}"
    );
}

// ---- RFS / RPS ----

#[test]
fn steering_reports_rfs_and_nonempty_rps_masks_only() {
    let r = roots("host");
    let nics = discover(&r, &[]).unwrap();
    let st = steering(&r, &nics);
    // eth0 rx-0 "00" and enp0s10 rx-0 "00000000,00000000" are off; tx queues are not RPS.
    assert_eq!(
        st,
        Steering {
            rfs_flow_entries: 32768,
            rps: vec![("eth0".into(), "rx-1".into(), "0f".into())],
        }
    );
    let lines = st.describe();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("RFS is on (net.core.rps_sock_flow_entries = 32768)"));
    assert!(lines[0].contains("sk_incoming_cpu"), "{}", lines[0]);
    assert!(
        lines[1].starts_with("RPS on eth0 rx-1 (rps_cpus 0f)"),
        "{}",
        lines[1]
    );
    // Only the NICs asked for are looked at.
    let only_virtio = discover(&r, &["enp0s10".into()]).unwrap();
    assert!(steering(&r, &only_virtio).rps.is_empty());
}

#[test]
fn steering_off_when_the_files_are_absent() {
    let r = roots("intx-behind-port");
    let nics = discover(&r, &[]).unwrap();
    let st = steering(&r, &nics);
    assert_eq!(st, Steering::default());
    assert!(st.describe().is_empty());
}

#[test]
fn nic_labels_name_the_namespace_of_the_ifindex() {
    use std::os::unix::fs::MetadataExt;
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    put(r, "class/net/eth0/ifindex", "2");
    put(r, "class/net/lo/ifindex", "1");
    // Stand-ins for /proc/self/ns/net and the /run/netns bind mounts: files whose inode numbers
    // play the namespaces' inode numbers.
    put(r, "self_ns", "");
    put(r, "netns/cli", "");
    // Namespace inode numbers are 32-bit (BPF reads ns.inum); these files' must be too.
    let ino = |p: &str| {
        u32::try_from(std::fs::metadata(r.join(p)).unwrap().ino())
            .expect("this test needs a temp file system with 32-bit inode numbers")
    };
    let (own, cli) = (ino("self_ns"), ino("netns/cli"));
    let n = NicNames::read(&r.join("class/net"), &r.join("self_ns"), &r.join("netns"));
    assert_eq!(n.label(2, own), "eth0");
    assert_eq!(n.label(2, 0), "eth0", "unknown namespace is taken as ours");
    assert_eq!(n.label(7, own), "if7");
    // Index 2 in another namespace is not our eth0.
    assert_eq!(n.label(2, cli), "if2@cli");
    let other = own.max(cli) + 1;
    assert_eq!(n.label(2, other), format!("if2@netns:[{other}]"));
    // Nothing readable: numbers only.
    let none = NicNames::read(&r.join("nope"), &r.join("nope"), &r.join("nope"));
    assert_eq!(none.label(2, 0), "if2");
}

/// The IRQ map is re-read only when an event says it may have changed: an affinity change asks
/// for the receive IRQs' targets (quick), a handler requested or freed or a link message for a
/// full scan, and so does the backstop once the last scan is that old; nothing else refreshes.
#[test]
fn refresh_due_follows_events() {
    use std::time::Duration;
    let seen = IrqEvents {
        affinity: 10,
        vectors: 4,
        links: 7,
    };
    let young = Duration::from_secs(1);
    let backstop = Duration::from_secs(300);
    let due = |now: IrqEvents, age| refresh_due(now, seen, age, backstop);
    assert_eq!(due(seen, young), None, "no event");
    let affinity = IrqEvents {
        affinity: 12,
        ..seen
    };
    assert_eq!(due(affinity, young), Some(false), "affinity: quick");
    let vectors = IrqEvents { vectors: 5, ..seen };
    assert_eq!(due(vectors, young), Some(true), "handler: full");
    let links = IrqEvents { links: 8, ..seen };
    assert_eq!(due(links, young), Some(true), "link: full");
    let both = IrqEvents {
        affinity: 11,
        vectors: 5,
        ..seen
    };
    assert_eq!(due(both, young), Some(true), "affinity and handler: full");
    assert_eq!(due(seen, backstop), Some(true), "backstop: full");
    assert_eq!(
        due(seen, backstop - Duration::from_millis(1)),
        None,
        "just before the backstop"
    );
}
