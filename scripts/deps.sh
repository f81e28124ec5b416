#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Bring a fresh Debian 12 machine to the state the build and the VM tests need. Idempotent:
# when everything is present it only checks and returns in seconds.
#
#   scripts/deps.sh            apt packages, virtme-ng + prometheus_client venv, guest kernels
#   scripts/deps.sh --no-kernels
#   scripts/deps.sh --peers    also scx_bpfland, the peer `make bench` and `make loader-cost`
#                              compare against (4m41s of compiling, once; `make test` needs none)
#
# What it touches on the host: one extra apt .sources file (trixie, trixie-backports, sid,
# copied from the machine's own Debian entry, so no mirror is named here) with an apt pin that
# keeps those suites at priority 100 (nothing on the host moves unless asked for with -t), the
# packages below, and the ignored folders .venv/ and .cache/ in the repo.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
want_kernels=1 want_peers=0
for a in "$@"; do
	case $a in
	--no-kernels) want_kernels=0 ;;
	--peers) want_peers=1 ;;
	*) printf 'deps: unknown option %s (usage: scripts/deps.sh [--no-kernels] [--peers])\n' "$a" >&2; exit 2 ;;
	esac
done

log() { printf 'deps: %s\n' "$*" >&2; }
die() { printf 'deps: error: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "run as root (it installs apt packages)"

# --- apt suites -----------------------------------------------------------------------------
src=/etc/apt/sources.list.d/miami-next.sources
pin=/etc/apt/preferences.d/miami-next
if [[ ! -f $src ]]; then
	base=/etc/apt/sources.list.d/debian.sources
	[[ -f $base ]] || die "no $base to copy the Debian mirror from"
	# The first stanza whose Suites name a plain release (not -security) gives URIs/Signed-By.
	uris=$(awk '/^URIs:/ {u=$2} /^Suites:/ && $2 !~ /security/ && u {print u; exit}' "$base")
	keyring=$(awk '/^Signed-By:/ {print $2; exit}' "$base")
	[[ -n $uris && -n $keyring ]] || die "could not read URIs/Signed-By from $base"
	log "adding trixie, trixie-backports, sid from the existing Debian entry"
	cat >"$src" <<SRC
Types: deb
URIs: $uris
Suites: trixie trixie-backports sid
Components: main
Signed-By: $keyring
SRC
	cat >"$pin" <<PIN
Package: *
Pin: release n=trixie
Pin-Priority: 100

Package: *
Pin: release n=sid
Pin-Priority: 100
PIN
	rm -f /var/lib/apt/lists/.miami-updated
fi
if [[ ! -f /var/lib/apt/lists/.miami-updated ]]; then
	log "apt-get update"
	apt-get update -qq
	touch /var/lib/apt/lists/.miami-updated
fi

pkgs=(clang-19 llvm-19 libelf-dev zlib1g-dev pkg-config make qemu-system-x86 qemu-utils kmod
      virtiofsd udev busybox-static iperf3 netperf sockperf sysstat stress-ng ethtool iproute2
      irqbalance tmux python3 python3-venv gcc libc6-dev lighttpd apache2-utils bpftool dpkg-dev)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
	log "installing from trixie: ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t trixie \
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}" >/dev/null
	# irqbalance and lighttpd must not run on the host: the VM tests start them inside guests
	# only (the packages enable their services where systemd runs).
	systemctl disable --now irqbalance lighttpd >/dev/null 2>&1 || true
fi

# From the machine's own release: gnuplot-nox from trixie pulls trixie's python3 and apt along,
# which breaks a virtme-ng venv made with the old python (seen here).
if ! dpkg-query -W -f='${Status}' gnuplot-nox 2>/dev/null | grep -q 'ok installed'; then
	log "installing gnuplot-nox (bench plots)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gnuplot-nox >/dev/null
fi

# --- virtme-ng ------------------------------------------------------------------------------
venv=$top/.venv
if [[ -x $venv/bin/vng ]] && ! "$venv/bin/python3" -c 'import virtme_ng' 2>/dev/null; then
	log "$venv no longer works with $(/usr/bin/python3 --version): making it again"
	rm -rf "$venv"
fi
if [[ ! -x $venv/bin/vng ]]; then
	log "virtme-ng 1.42 into $venv"
	/usr/bin/python3 -m venv "$venv"
	"$venv/bin/pip" install -q virtme-ng==1.42
fi
# The OpenMetrics parser that t_stats checks --format openmetrics against.
if ! "$venv/bin/python3" -c 'import prometheus_client' 2>/dev/null; then
	log "prometheus_client 0.21.1 into $venv"
	"$venv/bin/pip" install -q prometheus_client==0.21.1
fi

# --- peer schedulers (the bench compares against them) -------------------------------------
# scx_bpfland from the crate registry, pinned, built once into .cache/peers (ignored by git).
BPFLAND_VERSION=1.1.4
if ((want_peers)) && [[ ! -x $top/.cache/peers/bin/scx_bpfland ]]; then
	log "scx_bpfland $BPFLAND_VERSION into $top/.cache/peers (a few minutes, once)"
	BPF_CLANG=${BPF_CLANG:-clang-19} cargo install --locked --quiet --root "$top/.cache/peers" \
		"scx_bpfland@$BPFLAND_VERSION"
fi

# --- guest kernels --------------------------------------------------------------------------
((want_kernels)) || exit 0
"$top/scripts/kernels.sh" fetch
