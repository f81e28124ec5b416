#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build a 6.12 LTS guest kernel with sched_ext (Debian's 6.12 has none) from Debian's
# linux-source-6.12, into .cache/kernels/6.12.<patch>/ (bzImage, config, VERSION). On a 2-core
# machine 6.12.107-1 took 35m24s in all (download, configure, build). scripts/kernels.sh uses
# ../shared/kernels/6.12.* instead when that exists, so this only runs where no prebuilt image
# is present.
#
#   scripts/build-kernel-6.12.sh [--force]
#
# Config: virtme-ng's `vng --kconfig` minimal guest config plus the fragment below (sched_ext,
# BPF + BTF, fentry, virtio-net built in, IKCONFIG so libbpf finds the config, NUMA, SCHED_MC).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cache=$top/.cache/kernels
force=0
[[ ${1:-} == --force ]] && force=1
log() { printf 'build-kernel-6.12: %s\n' "$*" >&2; }

FRAGMENT=(BPF BPF_SYSCALL BPF_JIT BPF_JIT_ALWAYS_ON DEBUG_INFO_BTF SCHED_CLASS_EXT FTRACE
	FUNCTION_TRACER DYNAMIC_FTRACE FPROBE KALLSYMS_ALL DEBUG_INFO DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT
	SCHED_MC NUMA VIRTIO_NET NET_NS VETH IKCONFIG IKCONFIG_PROC CGROUPS CGROUP_SCHED
	EXT_GROUP_SCHED SCHED_DEBUG BPF_EVENTS KPROBES TUN)

ver=$(apt-cache policy -t trixie linux-source-6.12 | awk '/Candidate:/ { print $2 }')
[[ -n $ver && $ver != "(none)" ]] || { log "no linux-source-6.12 in trixie (run scripts/deps.sh)"; exit 1; }
kver=${ver%%-*}
out=$cache/$kver
if [[ -f $out/bzImage && $force == 0 ]]; then
	log "$out/bzImage exists (use --force to rebuild)"
	exit 0
fi

DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t trixie dwarves flex bison bc \
	libssl-dev libelf-dev xz-utils >/dev/null
work=$top/.cache/build-6.12
rm -rf "$work" && mkdir -p "$work" && chmod 755 "$work"
log "downloading linux-source-6.12 $ver"
# Into a world-readable temp dir, as scripts/kernels.sh does: apt's _apt user downloads there.
dl=$(mktemp -d) && chmod 755 "$dl"
(cd "$dl" && apt-get download -qq -t trixie linux-source-6.12)
dpkg-deb -x "$dl"/linux-source-6.12_*.deb "$work/pkg"
rm -rf "$dl"
tar -C "$work" -xaf "$work"/pkg/usr/src/linux-source-6.12.tar.*
src=$work/linux-source-6.12
args=()
for c in "${FRAGMENT[@]}"; do args+=(--configitem "CONFIG_$c=y"); done
log "configuring with vng --kconfig + ${#FRAGMENT[@]} items"
# vng runs virtme-configkernel from PATH: the venv's bin must be on it.
(cd "$src" && PATH="$top/.venv/bin:$PATH" vng --kconfig "${args[@]}")
for c in SCHED_CLASS_EXT DEBUG_INFO_BTF FPROBE VIRTIO_NET IKCONFIG; do
	grep -q "^CONFIG_$c=y" "$src/.config" || { log "CONFIG_$c did not stick"; exit 1; }
done
log "make bzImage (about 35 minutes on 2 cores)"
make -C "$src" -j"$(($(nproc) + 1))" bzImage >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
mkdir -p "$out"
cp "$src/arch/x86/boot/bzImage" "$out/bzImage"
cp "$src/.config" "$out/config"
echo "$kver" >"$out/VERSION"
rm -rf "$work"
log "ready: $out/bzImage"
