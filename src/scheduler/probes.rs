// SPDX-License-Identifier: GPL-2.0
//! Which of the BPF object's probes load: the TCP probes on fentry or, on a kernel that refuses
//! fentry, on tracepoints (bpf/netmon.bpf.c, section 5), and the IRQ map events' fexit probes
//! (section 4) where the kernel has every function they attach to.

use crate::bpf_skel::OpenBpfSkel;

use super::irq_map::IRQ_EVENT_FUNCS;

/// Where the TCP probes attach (bpf/netmon.bpf.c, sections 1-3 and 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeAttach {
    /// fentry on tcp_sendmsg(), tcp_recvmsg(), tcp_close() and tcp_rcv_established(), and the
    /// IRQ map events' fexit probes.
    Fentry,
    /// The tracepoints sock_send_length, sock_recv_length and tcp_probe, for a kernel that
    /// refuses fentry (fentry_refused()); no tcp_close() probe and no IRQ map events.
    Tracepoint,
}

/// Did loading fail because the kernel refuses fentry programs (EPERM at load, as under some
/// kernels' lockdown), so that ProbeAttach::Tracepoint may load where Fentry did not?
pub fn fentry_refused(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<libbpf_rs::Error>()
            .is_some_and(|e| e.kind() == libbpf_rs::ErrorKind::PermissionDenied)
    })
}

impl ProbeAttach {
    /// Set which probes of @skel load. True when the IRQ map events' probes do: fentry mode,
    /// and every function of IRQ_EVENT_FUNCS in this kernel's BTF; without them the IRQ map is
    /// re-read on a period.
    pub(super) fn select(self, skel: &mut OpenBpfSkel) -> bool {
        let fentry = self == ProbeAttach::Fentry;
        skel.progs.miami_tcp_sendmsg.set_autoload(fentry);
        skel.progs.miami_tcp_recvmsg.set_autoload(fentry);
        skel.progs.miami_tcp_close.set_autoload(fentry);
        skel.progs.miami_tcp_rcv_established.set_autoload(fentry);
        skel.progs.miami_tp_send.set_autoload(!fentry);
        skel.progs.miami_tp_recv.set_autoload(!fentry);
        skel.progs.miami_tp_rcv.set_autoload(!fentry);
        let irq_events = fentry
            && IRQ_EVENT_FUNCS
                .iter()
                .all(|f| scx_utils::compat::ksym_exists(f).unwrap_or(false));
        skel.progs.miami_irq_set_affinity.set_autoload(irq_events);
        skel.progs
            .miami_irq_do_set_affinity
            .set_autoload(irq_events);
        skel.progs.miami_irq_request.set_autoload(irq_events);
        skel.progs.miami_irq_free.set_autoload(irq_events);
        irq_events
    }
}
