// SPDX-License-Identifier: GPL-2.0
//! Command line of scx_miami. Every knob is validated in one place (`config.rs`) before
//! anything is loaded; this file only declares them and their help.

use clap::Parser;

use crate::config::OutputFormat;

/// scx_miami: MiAMI network-affinity scheduler for sched_ext.
///
/// Places each TCP task near the CPU that handles its NIC's interrupts and softirq (tier
/// "core"), else on a CPU sharing that CPU's last-level cache (tier "cache"), else anywhere
/// ("other"). How hard a task pulls depends on its communication intensiveness, 10^6 / mean
/// interval between its send/recv calls in microseconds, split into classes high / middle /
/// low by two boundaries. Everything else is scheduled fairly by vtime, away from IRQ CPUs.
///
/// Needs root and a kernel with sched_ext (Linux 6.12+, CONFIG_SCHED_CLASS_EXT=y). Exit codes:
/// 0 clean exit, 1 runtime error (no sched_ext, load failure, kernel ejected the scheduler),
/// 2 invalid command line.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "scx_miami",
    version = crate::version(),
    verbatim_doc_comment,
    // `--release-after-ms -5` is a bad value for that option, not an unknown option "-5".
    allow_negative_numbers = true
)]
pub struct Opts {
    /// Time slice of every task, in microseconds.
    ///
    /// Longer slices favour throughput; a network task queued behind a CPU hog waits at most
    /// one slice. Range 100..=100000.
    #[arg(long, default_value_t = 5000)]
    pub slice_us: u64,

    /// Longest a runnable task waits in the queues before it runs out of turn, in milliseconds.
    ///
    /// Tasks wait in vtime order. A nice 19 task that ran one slice is 6.7 slices ahead and
    /// waits for the clock, which moves only as tasks run: beside a flood of short wakers
    /// that took seconds (under EEVDF too), and the kernel's watchdog ejects a scheduler whose
    /// task waited 30 s. Every half of this, each CPU runs the task of its queues that has been
    /// runnable longest, if that is at least half of this, ahead of the order (stat starved).
    /// Range 100..=10000.
    #[arg(long, default_value_t = 1000)]
    pub starve_ms: u64,

    /// Release a network task after this many milliseconds without a send/recv call.
    ///
    /// MiAMI step 1: a released task is placed like any other task until it communicates
    /// again. Range 10..=3600000.
    #[arg(long, default_value_t = 1000)]
    pub release_after_ms: u64,

    /// Class boundaries on intensiveness: auto, or HIGH_MIN,MIDDLE_MIN.
    ///
    /// A task with intensiveness >= HIGH_MIN is class high (claims its IRQ CPU), >= MIDDLE_MIN
    /// middle (IRQ CPU when it has room, else its LLC), below that low. Intensiveness is
    /// 10^6 / mean call interval in us: 100000,10000 means high = calls at most 10 us apart,
    /// middle = at most 100 us apart. Both in 1..=1000000, HIGH_MIN > MIDDLE_MIN. auto (the
    /// default) follows the machine: high within a factor 4 of the most intensive task,
    /// middle within a factor 64, low below, so a bulk flow and a light one differ in class
    /// on a 1 Gbit/s host as on a 100 Gbit/s one. Either way the agent raises a boundary
    /// under overload and brings it back after.
    #[arg(long, default_value = "auto", value_name = "auto|HIGH_MIN,MIDDLE_MIN")]
    pub class_bounds: String,

    /// Window over which a connection's intensiveness is averaged, in milliseconds.
    ///
    /// Intensiveness = 10^6 / (window length / calls in it, in us). Longer windows are steadier
    /// under bursty traffic; shorter ones follow a change of pattern sooner. Range 10..=10000.
    #[arg(long, default_value_t = 100)]
    pub intens_window_ms: u64,

    /// Network load, in percent of one CPU, up to which a CPU takes one more network task.
    ///
    /// Higher packs more network tasks onto an IRQ CPU before spilling to its LLC siblings;
    /// lower spreads them sooner. Range 1..=100.
    #[arg(long, default_value_t = 80)]
    pub net_room_pct: u32,

    /// Period of the agent (MiAMI III-D), in milliseconds.
    ///
    /// Each round re-reads the CPU loads, then releases silent tasks from its view, upgrades
    /// intensive tasks to a better tier, sheds tasks off overloaded CPUs and moves the class
    /// boundaries. The rounds run in a BPF timer, as the paper's kernel timers did; only where
    /// BPF cannot read the kernel's CPU time counters does the loader wake for each round (the
    /// start-up log says which). A longer period reacts more slowly. Range 10..=10000.
    #[arg(long, default_value_t = 100)]
    pub interval_ms: u64,

    /// CPU load, in percent busy (hard and soft IRQ time included), below which the agent
    /// moves tasks onto a CPU.
    ///
    /// Step 2 upgrades a class-high task to its IRQ CPU, or into its LLC, only where the load
    /// is below this; step 3 sheds tasks only onto such CPUs, and out of a task's LLC only
    /// into an LLC whose mean load is below this too. Range 1..=99, below --high-load-pct.
    #[arg(long, default_value_t = 50)]
    pub low_load_pct: u32,

    /// CPU load, in percent busy, above which a CPU is overloaded.
    ///
    /// Step 3 then moves its least affinity-hungry network task away (low class and other
    /// tier first, core-tier high-class tasks last) and raises the lower boundary of the
    /// lowest class running there. Range 2..=100, above --low-load-pct.
    #[arg(long, default_value_t = 90)]
    pub high_load_pct: u32,

    /// Most task moves the agent makes per round (steps 2 and 3 together).
    ///
    /// Enforced in BPF, where moves are applied. The paper caps migrations per round because
    /// each one costs a cold cache. 0 leaves only the boundary adaptation. Range 0..=256.
    #[arg(long, default_value_t = 4)]
    pub max_migrations: u32,

    /// Only treat these interfaces' IRQ CPUs as IRQ CPUs (comma-separated, e.g. eth0,eth1).
    ///
    /// Only their traffic then pulls a task: a connection on another interface pulls its task
    /// only toward a CPU that one of these NICs' IRQs target (a container's veth traffic
    /// arriving on them is processed there), else the task is placed like any other.
    ///
    /// Default: every interface that has a device with IRQs (lo, veth, bridges are skipped),
    /// including interfaces moved into other network namespaces: their IRQs land on our CPUs
    /// too. Those go by their device's name (virtio10, 0000:3b:00.1), as the start-up log
    /// lists them. An unknown name is an error.
    #[arg(long, value_delimiter = ',', value_name = "IF,...")]
    pub nic: Vec<String>,

    /// Re-read the NIC IRQ map at most every this many milliseconds.
    ///
    /// irqbalance or an administrator may move IRQs at any time. BPF probes count IRQ
    /// affinity changes and IRQ handlers requested or freed, and rtnetlink reports interfaces
    /// that come or go; the map is re-read only after such an event (the receive IRQs'
    /// affinity, or a rescan of the NICs and their IRQs), and rescanned every 300 periods
    /// anyway. Where a kernel lacks those probes' functions, every period: the affinity, and
    /// every 30th (or when an interface came or went) a rescan. The start-up log says which.
    /// Range 10..=60000.
    #[arg(long, default_value_t = 1000)]
    pub irq_refresh_ms: u64,

    /// Read the agent's tunables from FILE at start, and again on every SIGHUP.
    ///
    /// One `NAME = VALUE` per line, NAME a long option of this list: interval-ms,
    /// release-after-ms, low-load-pct, high-load-pct, max-migrations, class-bounds,
    /// irq-refresh-ms. `#` starts a comment. A value in the file overrides the same option on
    /// the command line. On SIGHUP the file is validated like the command line; a bad file is
    /// logged and the running values stay. Replaces the paper's /proc tuning files: retune
    /// without a restart with `kill -HUP $(pidof scx_miami)`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,

    /// Watch, do not schedule: load only the TCP monitor and a context-switch probe.
    ///
    /// Needs root, BTF and fentry, not sched_ext: the host keeps its scheduler. Where the
    /// kernel refuses fentry (EPERM, as under some lockdown setups), the same probes attach to
    /// the tracepoints sock_send_length, sock_recv_length and tcp_probe (a warning says so).
    /// The stats, --monitor and the TUI then show each network task's intensiveness, class and
    /// IRQ CPU as MiAMI sees them, and the tier it really runs in (tier shares): what
    /// scx_miami would change. The agent computes class boundaries but moves nothing.
    #[arg(long)]
    pub observe: bool,

    /// Print statistics every N seconds while running.
    #[arg(long, value_name = "SECS")]
    pub stats: Option<f64>,

    /// Print the statistics of a running scx_miami every N seconds, instead of scheduling.
    ///
    /// Reads the stats socket (/var/run/scx/root/stats, root only); exits 1 if no scx_miami is
    /// running. Cannot be combined with --stats.
    #[arg(long, value_name = "SECS")]
    pub monitor: Option<f64>,

    /// Output format of --monitor: text (the --stats report) or openmetrics.
    ///
    /// openmetrics prints counters as totals since the scheduler started, `# EOF` after each
    /// scrape; only valid with --monitor.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<OutputFormat>,

    /// Show a live terminal view of a running scx_miami, refreshed every SECS seconds.
    ///
    /// A client of the stats socket like --monitor (root only), instead of scheduling: CPUs
    /// grouped by LLC with IRQ CPUs and their NICs, the network-task table, class boundaries
    /// and tier shares, and a help view listing the keys (q quits). SECS is in seconds,
    /// default 1, range 0.25..=1 (1 to 4 refreshes a second). While no scx_miami runs it shows
    /// why and retries every SECS. Cannot be combined with --stats, --monitor or --format.
    #[arg(
        long,
        value_name = "SECS",
        num_args = 0..=1,
        default_missing_value = "1"
    )]
    pub tui: Option<f64>,

    /// The stats socket: where the scheduler (or --observe) serves its statistics, and where
    /// --monitor and --tui read them.
    ///
    /// Default /var/run/scx/root/stats, the path every sched_ext scheduler of the scx project
    /// serves on. While such a scheduler runs, --observe needs another one (scx_miami refuses
    /// to take a socket someone answers on); give --monitor or --tui the same PATH to read it.
    /// An absolute path of at most 107 bytes; created 0600 (root only), removed on exit.
    #[arg(long, value_name = "PATH")]
    pub stats_socket: Option<std::path::PathBuf>,

    /// Print every statistic with its description, then exit.
    #[arg(long)]
    pub help_stats: bool,

    /// Print the NICs scx_miami would use (every one with IRQs, or those of --nic), then exit.
    ///
    /// One row per IRQ: the NIC, the IRQ number, its queue kind (rx and rx+tx are receive
    /// IRQs: their CPUs are the IRQ CPUs of the core tier), the CPUs it targets now and its
    /// name in /proc/interrupts. Reads /sys and /proc as the scheduler does at start; needs
    /// neither root nor sched_ext. Use it to see the IRQ CPUs before switching schedulers, or
    /// to find the IRQ to pin: `echo CPU > /proc/irq/IRQ/smp_affinity_list`.
    #[arg(long, conflicts_with_all = ["stats", "monitor", "tui", "observe", "format", "stats_socket"])]
    pub list_nics: bool,

    /// Bytes of the BPF debug dump printed when the scheduler is ejected (0: kernel default).
    #[arg(long, default_value_t = 0)]
    pub exit_dump_len: u32,

    /// Verbose output, including libbpf's messages while loading.
    #[arg(short, long)]
    pub verbose: bool,

    /// Test only: make the BPF side fail after SECS seconds, once per process.
    ///
    /// `error@SECS` calls scx_bpf_error() (the scheduler is ejected, scx_miami exits 1),
    /// `restart@SECS` exits with a restart request (scx_miami loads again). For the VM tests
    /// of the exit paths.
    #[arg(long, value_name = "error|restart@SECS", hide = true)]
    pub test_inject_error: Option<String>,

    /// Test only: time ops.dispatch() by what it did (the dsp_*_ns counters): two clock reads
    /// per call more. For `make bench`, which reports the time per outcome.
    #[arg(long, hide = true)]
    pub test_time_dispatch: bool,

    /// Test only: --observe without its context-switch probe, so without the tier figures: the
    /// TCP probes and the agent's rounds alone, which is what scx_miami runs besides its ops. For
    /// `make bench`'s eevdf-pin-obs, which measures placement with a probe of its own.
    #[arg(long, hide = true, requires = "observe")]
    pub test_observe_no_switch: bool,

    /// libbpf's object open options (the scx schedulers' common set).
    #[command(flatten, next_help_heading = "Libbpf options")]
    pub libbpf: scx_utils::libbpf_clap_opts::LibbpfOpts,
}
