#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest kernels with sched_ext, cached under .cache/kernels/<name>/ (ignored by git).
#
#   scripts/kernels.sh fetch        download what is missing (trixie-backports, sid, 6.12)
#   scripts/kernels.sh path NAME    print the vmlinuz of NAME: 7.3, 7.2, 6.12, a full version
#                                   string, "default", or a path to a kernel image
#   scripts/kernels.sh list         the cached kernels, one "NAME VERSION DIR" per line
#
# Each cache dir holds: vmlinuz, boot/config-<ver> (libbpf reads the kernel config from there in
# the guest, mounted at /boot), usr/lib/modules/<ver>/ (virtme-ng looks for modules there), and
# a VERSION file. Debian's packages are fetched with apt-get download and unpacked with
# dpkg-deb -x: nothing is installed on the host.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${MIAMI_KERNEL_CACHE:-$top/.cache/kernels}
shared612=$top/../shared/kernels

log() { printf 'kernels: %s\n' "$*" >&2; }
die() { printf 'kernels: error: %s\n' "$*" >&2; exit 1; }

# The version of linux-image-amd64 in SUITE, e.g. "7.3.4+deb13".
suite_version() {
	apt-cache depends -t "$1" linux-image-amd64 2>/dev/null |
		sed -n 's/.*Depends: linux-image-\(.*\)-amd64$/\1/p' | head -n1
}

fetch_debian() {
	local suite=$1 ver dir tmp
	ver=$(suite_version "$suite")
	[[ -n $ver ]] || die "no linux-image-amd64 in $suite (is the suite in apt's sources? run scripts/deps.sh)"
	dir=$cache/$ver
	if [[ -f $dir/VERSION ]]; then
		log "$suite: $ver (cached)"
		return
	fi
	log "$suite: downloading $ver"
	tmp=$(mktemp -d) && chmod 755 "$tmp"
	(cd "$tmp" && apt-get download -qq -t "$suite" \
		"linux-binary-$ver-amd64" "linux-modules-$ver-amd64" "linux-base-$ver-amd64" >/dev/null)
	rm -rf "$dir.part" && mkdir -p "$dir.part"
	for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$dir.part"; done
	rm -rf "$tmp"
	local kver img cfg
	kver=$(ls "$dir.part/usr/lib/modules" | head -n1)
	img=$(find "$dir.part" \( -name 'vmlinuz' -o -name "vmlinuz-$kver" \) -type f | head -n1)
	cfg=$(find "$dir.part" \( -name 'config' -o -name "config-$kver" \) -type f | head -n1)
	[[ -n $img && -n $cfg ]] || die "$ver: vmlinuz or config missing in the packages"
	ln -sf "${img#$dir.part/}" "$dir.part/vmlinuz"
	if [[ $cfg != "$dir.part/boot/config-$kver" ]]; then
		mkdir -p "$dir.part/boot" && cp "$cfg" "$dir.part/boot/config-$kver"
	fi
	grep -q '^CONFIG_SCHED_CLASS_EXT=y' "$cfg" || die "$ver has no CONFIG_SCHED_CLASS_EXT"
	depmod -b "$dir.part/usr" "$kver" 2>/dev/null || depmod -b "$dir.part" "$kver"
	echo "$kver" >"$dir.part/VERSION"
	mv "$dir.part" "$dir"
	log "$suite: $ver ready in $dir"
}

# 6.12: the prebuilt image in ../shared/kernels if there is one, else our own build.
fetch_612() {
	local d
	for d in "$shared612"/6.12.* "$cache"/6.12.*; do
		[[ -f $d/bzImage ]] && { log "6.12: $d (prebuilt)"; return; }
	done
	log "6.12: not present; build it with scripts/build-kernel-6.12.sh (~35 min on 2 cores), skipping"
}

# Resolve NAME to a cache dir (7.3 -> newest cached 7.3.*).
kernel_dir() {
	local name=$1 d
	case $name in
	default) name=$(suite_version trixie-backports | cut -d. -f1,2) ;;
	esac
	# ../shared first: a prebuilt 6.12 there wins over one built here (scripts/build-kernel-6.12.sh).
	for d in $(ls -d "$shared612/$name"* 2>/dev/null | sort -V -r) \
		$(ls -d "$cache/$name"* 2>/dev/null | sort -V -r); do
		[[ -f $d/VERSION || -f $d/bzImage ]] && { echo "$d"; return; }
	done
	return 1
}

case ${1:-} in
fetch)
	mkdir -p "$cache"
	fetch_debian trixie-backports
	fetch_debian sid
	fetch_612
	;;
path)
	[[ -n ${2:-} ]] || die "usage: $0 path NAME"
	if [[ -f $2 ]]; then echo "$2"; exit 0; fi
	d=$(kernel_dir "$2") || die "kernel '$2' not in $cache (run scripts/deps.sh)"
	if [[ -f $d/bzImage ]]; then echo "$d/bzImage"; else echo "$d/vmlinuz"; fi
	;;
dir)
	d=$(kernel_dir "$2") || die "kernel '$2' not in $cache"
	echo "$d"
	;;
list)
	for d in "$cache"/*/ "$shared612"/6.12.*/; do
		d=${d%/}
		if [[ -f $d/VERSION ]]; then
			v=$(cat "$d/VERSION"); echo "${v%%.*}.$(echo "$v" | cut -d. -f2) $v $d"
		elif [[ -f $d/bzImage ]]; then
			echo "6.12 $(basename "$d") $d"
		fi
	done
	;;
*)
	sed -n '4,10p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
