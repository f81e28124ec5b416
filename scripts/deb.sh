#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build a Debian package of scx_miami from the release build (`make deb`):
#   target/debian/scx-miami_<version>_amd64.deb
# holding
#   /usr/bin/scx_miami
#   /lib/systemd/system/scx_miami.service   (the repo's unit, ExecStart from /usr/bin)
#   /etc/default/scx_miami                  (the flags file, a conffile: upgrades keep edits)
#   /usr/share/doc/scx-miami/               (README, design, operations, stats, testing)
# The library dependencies come from dpkg-shlibdeps on the binary. The unit is installed but
# not enabled: `systemctl enable --now scx_miami` after choosing the flags.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bin=target/release/scx_miami
[[ -x $bin ]] || { echo "deb: no $bin (cargo build --release first)" >&2; exit 1; }

# 0.1.0 from Cargo.toml; +g<commit> when built from a checkout, as --version says.
ver=$(awk -F'"' '/^version = / { print $2; exit }' Cargo.toml)
sha=$(git rev-parse --short=12 HEAD 2>/dev/null || true)
[[ -n $sha ]] && ver="$ver+g$sha"
arch=$(dpkg --print-architecture)
out=target/debian
root=$out/root
# One package in target/debian: t_ops installs the one it finds.
rm -rf "$root" "$out"/scx-miami_*.deb && mkdir -p "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" \
	"$root/etc/default" "$root/usr/share/doc/scx-miami"

install -m 755 "$bin" "$root/usr/bin/scx_miami"
strip --strip-unneeded "$root/usr/bin/scx_miami"
sed 's|^ExecStart=/usr/local/bin/scx_miami|ExecStart=/usr/bin/scx_miami|' \
	scheds/scx_miami/systemd/scx_miami.service >"$root/lib/systemd/system/scx_miami.service"
grep -q '^ExecStart=/usr/bin/scx_miami ' "$root/lib/systemd/system/scx_miami.service" ||
	{ echo "deb: the unit's ExecStart was not rewritten" >&2; exit 1; }
install -m 644 scheds/scx_miami/systemd/scx_miami.default "$root/etc/default/scx_miami"
for f in README.md docs/design.md docs/operations.md docs/stats.md docs/testing.md; do
	install -m 644 "$f" "$root/usr/share/doc/scx-miami/$(basename "$f")"
done
printf 'scx_miami is licensed under the GNU General Public License, version 2 only.\nOn Debian systems the full text is in /usr/share/common-licenses/GPL-2.\n' \
	>"$root/usr/share/doc/scx-miami/copyright"

# dpkg-shlibdeps wants a source package's debian/control next to it.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/debian"
printf 'Source: scx-miami\n\nPackage: scx-miami\nArchitecture: any\n' >"$tmp/debian/control"
cp "$root/usr/bin/scx_miami" "$tmp/scx_miami"
deps=$(cd "$tmp" && dpkg-shlibdeps -O scx_miami 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[[ -n $deps ]] || { echo "deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

size=$(du -sk "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOF
Package: scx-miami
Version: $ver
Architecture: $arch
Maintainer: scx_miami developers <root@localhost>
Installed-Size: $size
Depends: $deps
Section: admin
Priority: optional
Description: MiAMI network-affinity sched_ext scheduler
 Places each TCP task near the CPU that handles its NIC's interrupts and softirq, else on a
 CPU sharing that CPU's last-level cache, by communication intensiveness (Jang & Jin, MiAMI).
 Needs Linux 6.12 or newer with CONFIG_SCHED_CLASS_EXT=y. Run as root; the systemd unit
 scx_miami.service is installed but not enabled.
EOF
echo /etc/default/scx_miami >"$root/DEBIAN/conffiles"
mkdir -p "$out"
deb=$out/scx-miami_${ver}_$arch.deb
dpkg-deb --root-owner-group --build "$root" "$deb" >/dev/null
echo "$deb"
