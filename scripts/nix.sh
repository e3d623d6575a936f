#!/usr/bin/env bash
# A current Nix for nixgen and its test suite, without touching the system.
#
#   scripts/nix.sh BIN_DIR
#
# Puts `nix`, `nix-build`, `nix-instantiate`, `nix-store`, … into BIN_DIR (the venv's bin/):
#   - the machine's own Nix, linked, when it is 2.18 or newer;
#   - otherwise Debian 13's nix-bin 2.26.3, unpacked into a private prefix
#     (${XDG_CACHE_HOME:-~/.cache}/nixgen/nix-2.26.3): its .deb and its library closure fetched
#     with `apt-get download` from Debian 13 (trixie) through a private apt state (the host's
#     /etc/apt is only read for its keyrings), checked by apt against trixie's signed index,
#     unpacked with `dpkg-deb -x`, the binary pointed at the private loader and libraries
#     with patchelf (interpreter + DT_RPATH, so re-executions through /proc/self/exe work),
#     with its own nix.conf. The store is the usual /nix/store.
# The packages fetched, with versions and sha256, are recorded in PREFIX/manifest.tsv.
# Idempotent: a prefix that already answers `nix --version` is reused.
set -euo pipefail
bin_dir=$1
mkdir -p "$bin_dir"
tools=(nix nix-build nix-instantiate nix-store nix-env nix-shell nix-hash nix-prefetch-url
  nix-collect-garbage nix-copy-closure nix-channel nix-daemon)
# The Nix nixgen supports (nixgen/building/nixcheck.py: the pinned nixpkgs needs 2.18).
min_major=2 min_minor=18
nix_version=2.26.3
deb_version=2.26.3+dfsg-1

version_ok() { # "nix (Nix) 2.26.3" → true when >= 2.18
  local v=${1##* } major minor
  IFS=. read -r major minor _ <<<"$v"
  [[ $major =~ ^[0-9]+$ && $minor =~ ^[0-9]+$ ]] || return 1
  ((major > min_major || (major == min_major && minor >= min_minor)))
}

# 1. The machine's Nix, when it is current. (A BIN_DIR wrapper from an earlier run is not it.)
host_nix=$(PATH=$(tr ':' '\n' <<<"$PATH" | grep -vxF "$bin_dir" | paste -sd:) command -v nix || true)
if [[ -n $host_nix ]] && host_version=$("$host_nix" --version 2>/dev/null) && version_ok "$host_version"; then
  for tool in "${tools[@]}"; do
    if target=$(PATH=$(dirname "$host_nix") command -v "$tool"); then ln -sfn "$target" "$bin_dir/$tool"; fi
  done
  echo "Nix: the machine's, $host_version ($host_nix)" >&2
  exit 0
fi

# 2. Debian 13's nix-bin in a private prefix.
prefix=${XDG_CACHE_HOME:-$HOME/.cache}/nixgen/nix-$nix_version
root=$prefix/root
if ! "$prefix/bin/nix" --version >/dev/null 2>&1; then
  [[ $(uname -m) == x86_64 ]] || {
    echo "scripts/nix.sh: no Nix >= $min_major.$min_minor here and no private install for $(uname -m): install Nix (https://nixos.org/download)" >&2
    exit 1
  }
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || {
    echo "scripts/nix.sh: no Nix >= $min_major.$min_minor and no apt-get to fetch one: install Nix (https://nixos.org/download)" >&2
    exit 1
  }
  if ! command -v patchelf >/dev/null; then
    if [[ $(id -u) == 0 ]]; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq patchelf >/dev/null 2>&1 || {
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq patchelf
      }
    else
      echo "scripts/nix.sh: patchelf is missing: sudo apt-get install patchelf" >&2
      exit 1
    fi
  fi
  started=$SECONDS
  work=$(mktemp -d "${prefix%/*}/.nix-install.XXXXXX" 2>/dev/null || { mkdir -p "${prefix%/*}" && mktemp -d "${prefix%/*}/.nix-install.XXXXXX"; })
  trap 'rm -rf "$work"' EXIT
  apt_dir=$work/apt
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$work/debs"
  mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)\/* *$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  mirror=${mirror:-http://deb.debian.org/debian}
  printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s trixie main\n' "$mirror" >"$apt_dir/sources.list"
  apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o Dir::Etc::sourceparts=/dev/null
    -o "Dir::State=$apt_dir" -o "Dir::State::lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
    -o Dir::State::status=/dev/null -o APT::Architecture=amd64 -o Debug::NoLocking=1
    -o APT::Sandbox::User=root)
  apt-get "${apt_opts[@]}" update -qq >/dev/null
  # nix-bin pinned, its library closure as trixie has it today: the Depends of nix-bin and,
  # transitively, of each library (Pre-Depends included), resolved by apt itself.
  mapfile -t packages < <(
    apt-cache "${apt_opts[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
      --no-breaks --no-replaces --no-enhances "nix-bin=$deb_version" bash-static 2>/dev/null |
      grep -v '^ ' | grep -v '^<' | sort -u
  )
  # Keep the libraries and the two programs; leave out what a package merely depends on to be
  # installed (debconf, dpkg, perl …) that the binary never loads.
  keep=()
  for p in "${packages[@]}"; do
    case $p in
      bash-static | lib* | zlib1g) keep+=("$p") ;;
    esac
  done
  (cd "$work/debs" && apt-get "${apt_opts[@]}" download "nix-bin=$deb_version" "${keep[@]}" >/dev/null) || {
    echo "scripts/nix.sh: could not download Debian 13's nix-bin $deb_version (is deb.debian.org reachable?)" >&2
    exit 1
  }
  printf '# package\tversion\tfile\tsha256\n' >"$work/manifest.tsv"
  for deb in "$work"/debs/*.deb; do
    printf '%s\t%s\t%s\t%s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" \
      "${deb##*/}" "$(sha256sum "$deb" | cut -d' ' -f1)" >>"$work/manifest.tsv"
  done
  mkdir -p "$work/root"
  for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$work/root"; done
  rm -rf "$work/root/usr/share/doc" "$work/root/usr/share/man" "$work/root/usr/share/locale"
  # Swap the finished prefix in (no half-made prefix is ever at its path).
  rm -rf "$prefix.old"
  [[ -e $prefix ]] && mv "$prefix" "$prefix.old"
  mkdir -p "$prefix"
  mv "$work/root" "$prefix/root"
  mv "$work/manifest.tsv" "$prefix/manifest.tsv"
  rm -rf "$prefix.old"
  lib=$root/usr/lib/x86_64-linux-gnu
  patchelf --set-interpreter "$lib/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$lib" "$root/usr/bin/nix"
  mkdir -p "$prefix/etc/nix" "$prefix/bin"
  # Its own settings (the host's /etc/nix is never read). The sandbox keeps Debian 13's default
  # `sandbox-paths` (/bin/sh, its static bash), as a stock Nix has one.
  cat >"$prefix/etc/nix/nix.conf" <<EOF
experimental-features = nix-command flakes
build-users-group =
sandbox = true
sandbox-paths = /bin/sh=$root/usr/bin/bash-static
EOF
  for tool in "${tools[@]}"; do
    cat >"$prefix/bin/$tool" <<EOF
#!/bin/sh
# Nix $nix_version (Debian 13's nix-bin) from a private prefix: its own nix.conf, its own binary
# for the re-executions (the build hook). Made by nixgen's scripts/nix.sh.
export NIX_CONF_DIR="$prefix/etc/nix" NIX_BIN_DIR="$root/usr/bin" NIX_LIBEXEC_DIR="$root/usr/libexec"
exec "$root/usr/bin/$tool" "\$@"
EOF
    chmod +x "$prefix/bin/$tool"
  done
  echo "Nix: installed Debian 13's nix-bin $deb_version into $prefix in $((SECONDS - started))s ($(du -sh "$root" | cut -f1))" >&2
fi
for tool in "${tools[@]}"; do ln -sfn "$prefix/bin/$tool" "$bin_dir/$tool"; done
echo "Nix: $("$bin_dir/nix" --version) ($prefix)" >&2
