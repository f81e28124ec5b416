#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Host tier, the short form of `make overhead` (scripts/overhead.sh): one round of 1-second runs
# on this machine's own kernel. Root. Traffic: iperf3 over 127.0.0.1 only. It checks that the
# harness works end to end, not the figures (those are `make overhead`'s, on a quiet machine):
#   - it exits 0 and prints a throughput above zero for each kind of run, 1 and 8 streams and
#     1 stream of 64-byte writes;
#   - each TCP probe of scx_miami has a paired figure, and in the paired runs scx_miami's probe
#     and the floor's at the same place saw the same calls (within 1%: a count that differs
#     means the two were not attached to the same place or not for the same runs, and their
#     difference would not be the probe's cost);
#   - the loader's CPU per second with --observe is printed, above 0 and below a tenth of a CPU,
#     and so is the share of the CPUs that BPF and the loader took (above 0, below half);
#   - nothing stays behind: no miami_ or floor_ program, no bpffs of its own mounted, no iperf3
#     server, and kernel.bpf_stats_enabled as it was.
# Prints PASS/FAIL lines and "N passed, N failed"; exits 1 on any failure.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/host/lib.sh"

stats0=$(cat /proc/sys/kernel/bpf_stats_enabled)
out=$("$top/scripts/overhead.sh" 1 1 2>&1)
rc=$?
echo "$out"
check_eq "exit status" "$rc" 0
for p in 1 8 1x64B; do
	# "  1 stream(s): 0.966, floor 0.841  (20.30 -> 19.62 Gbit/s)"
	line=$(grep -E "^  $p stream\(s\): " <<<"$out")
	check_eq "$p stream(s): without and with --observe, both above 0 Gbit/s" \
		"$(awk -F'[(> ]+' '{ print ($(NF - 3) > 0 && $(NF - 1) > 0) ? "yes" : "no" }' <<<"${line:-x}")" yes
	for mode in off on floor paired; do
		check_eq "$p stream(s), observe $mode: above 0 Gbit/s" \
			"$(awk -v p="$p" -v m="$mode" '$3 == p && $6 == m { print ($7 > 0) ? "yes" : "no" }' <<<"$out")" yes
	done
done
# "  1.03 CPU-ms per s over 30.2 s of the runs with --observe": the loader ran its rounds (one
# every 100 ms takes some CPU) and the figure is one of a loader, not of a spinning one (below a
# tenth of a CPU; 1 ms per s on this project's build host).
ms=$(grep -A1 '^the loader ' <<<"$out" | awk '/CPU-ms per s over/ { print $1 }')
check_eq "the loader's CPU-ms per s with --observe: above 0 and below 100" \
	"$(awk -v v="${ms:-0}" 'BEGIN { print (v > 0 && v < 100) ? "yes" : "no" }')" yes
# "  together 1.65% of the 2 CPUs (goal: ...)": BPF time and the loader's, a share of the CPUs.
share=$(awk '/^  together .*% of the/ { sub("%", "", $2); print $2 }' <<<"$out")
check_eq "the CPU share of BPF and the loader with --observe: above 0% and below 50%" \
	"$(awk -v v="${share:-0}" 'BEGIN { print (v > 0 && v < 50) ? "yes" : "no" }')" yes
# "  miami_tp_send                 36.8 ns per call over 33317700 calls; the floor 29.5 over 33317700 calls; above it 7.4 ns"
paired=$(grep -E '^  miami_(tp|tcp)_.*; the floor ' <<<"$out")
check_eq "TCP probes with a paired figure" "$(grep -c . <<<"$paired")" 3
check_eq "paired runs: scx_miami's and the floor's calls within 1% of each other, per probe" \
	"$(awk '{ m = $7; f = $13; d = m - f; if (d < 0) d = -d
		print (m > 0 && d * 100 <= m) ? "yes" : "no" }' <<<"$paired" | sort -u | paste -sd,)" yes
wait_progs_gone 'miami_|floor_'
check_eq "programs left (10 s)" "$progs_left" 0
check_eq "its bpffs left mounted" "$(grep -c ' /tmp/miami-overhead-bpffs' /proc/mounts)" 0
check_eq "iperf3 server left" "$(pgrep -f 'iperf3 -s -B 127.0.0.1 -p 5390' >/dev/null && echo yes || echo no)" no
check_eq "kernel.bpf_stats_enabled" "$(cat /proc/sys/kernel/bpf_stats_enabled)" "$stats0"
echo "$passed passed, $failed failed"
((failed == 0))
