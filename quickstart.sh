#!/usr/bin/env bash
# nixgen in one command, as a new user meets it. Sets up this checkout (scripts/setup.sh: the
# locked .venv with nixgen, torch 2.13 CPU and the `kernels` client, and a current Nix in
# .venv/bin), then tries nixgen on a copy of the shipped example examples/relu-cpu: validate
# it, list its variants, render its Nix, build its torch 2.13 CPU variant with
# `nixgen build --offline` through nixgen's offline stand-ins of nixpkgs and of the kernels
# toolchain (scripts/offline-inputs.sh: they build with this machine's compilers, for trying
# nixgen, not for publishing kernels; README "Building offline"), and load the build with the
# `kernels` client, checking it against torch.relu.
#
# What it makes stays in NIXGEN_QUICKSTART_DIR (default ~/nixgen-quickstart; outside any git
# work tree, as a flake's inputs must be), for you to look at and build again:
#   relu-cpu/   the project: its nixgen.toml names the stand-ins, build/ holds the build
#   offline/    the stand-ins, and nix.conf: the sandbox setting their builds need
#   env.sh      `. env.sh`: nixgen and its Nix on PATH, that setting in NIX_CONFIG
# A step that fails says so in one line after its own output, and the script exits non-zero.
set -uo pipefail
cd "$(dirname "$0")" || exit 1
repo=$(pwd)
bin=$repo/.venv/bin
variant=torch213-cxx11-cpu-$(uname -m)-linux

fail() {
  printf 'quickstart.sh: error: %s\n' "$*" >&2
  exit 1
}
step() { printf '== %s\n' "$*"; }

# Everything the test suite needs too (the second README command), the CUDA wheels the CUDA
# build tests use included; NIXGEN_CUDA_WHEELS=0 skips those (their tests are then skipped).
# (NIXGEN_QUICKSTART_SETUP=0 skips the setup: tests/test_quickstart.py, in a set-up venv.)
if [[ ${NIXGEN_QUICKSTART_SETUP:-1} != 0 ]]; then
  scripts/setup.sh || fail "scripts/setup.sh failed (its messages are above); fix that and rerun ./quickstart.sh"
fi
[[ -x $bin/nixgen && -x $bin/nix ]] || fail "scripts/setup.sh left no nixgen or nix in $bin; rerun it"

dest=${NIXGEN_QUICKSTART_DIR:-$HOME/nixgen-quickstart}
mkdir -p "$dest" || fail "cannot create $dest: set NIXGEN_QUICKSTART_DIR to a directory you can write"
dest=$(cd "$dest" && pwd) || fail "cannot enter $dest"
if git -C "$dest" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  fail "$dest is inside a git work tree, where a flake sees only tracked files: set NIXGEN_QUICKSTART_DIR to a directory outside it"
fi
project=$dest/relu-cpu
if [[ -e $project ]]; then
  echo "using the copy of examples/relu-cpu already in $project (delete it for a fresh one)"
else
  cp -r examples/relu-cpu "$project" || fail "cannot copy examples/relu-cpu to $project"
  # Generated files: `nixgen render` writes them again below. The example's nixgen.toml
  # only names this repository's library by a relative path (`library = "path:../../nix"`),
  # which leads nowhere from the copy: it goes, so the render vendors the library into
  # nix/lib, and the copy's own nixgen.toml is written below.
  rm -rf "$project/nix" "$project/flake.nix" "$project/build" "$project/nixgen.toml"
fi

# The offline stand-ins, laid out as README "Building offline" says; the project's nixgen.toml
# names them, so a plain `nixgen build` in the project uses them.
step "scripts/offline-inputs.sh $dest/offline"
log=$dest/offline-inputs.log
table=$(PYTHON=$bin/python scripts/offline-inputs.sh "$dest/offline" 2>"$log") || {
  cat "$log" >&2
  fail "scripts/offline-inputs.sh failed (its message is above)"
}
echo "laid out the stand-ins of nixpkgs and of the kernels toolchain in $dest/offline"
if [[ ! -e $project/nixgen.toml ]]; then
  printf 'offline = true\n%s\n' "$table" >"$project/nixgen.toml" || fail "cannot write $project/nixgen.toml"
fi
# nixgen and its Nix on PATH, and the host paths the stand-ins' sandboxed builds read.
{
  echo "# Source this file (. $dest/env.sh): nixgen and its Nix ($bin) on PATH, and the"
  echo "# sandbox setting the offline stand-ins in $dest/offline need, in NIX_CONFIG."
  printf 'export PATH=%q:"$PATH"\n' "$bin"
  printf 'export NIX_CONFIG=%q\n' "$(cat "$dest/offline/nix.conf")"
} >"$dest/env.sh" || fail "cannot write $dest/env.sh"
# shellcheck source=/dev/null
. "$dest/env.sh"
cd "$project" || fail "cannot enter $project"

step "nixgen validate"
nixgen validate || fail "nixgen validate failed (its message is above)"
step "nixgen variants --system x86_64-linux"
nixgen variants --system x86_64-linux || fail "nixgen variants failed (its message is above)"
step "nixgen render"
nixgen render || fail "nixgen render failed (its message is above)"
step "nixgen build --variant $variant (offline: nixgen.toml names the stand-ins)"
nixgen build --variant "$variant" || fail "nixgen build failed (its message is above)"
ls "build/$variant"

step "kernels.get_local_kernel + check against torch.relu"
python -W ignore - "$project" <<'PY' || exit 1
import sys
from pathlib import Path

try:
    import kernels
    import torch

    relu = kernels.get_local_kernel(Path(sys.argv[1]), backend="cpu")
    x = torch.randn(1024, 33)
    if not torch.equal(relu.relu(x), torch.relu(x)):
        raise ValueError("relu differs from torch.relu")
except Exception as error:  # one line, never a traceback
    sys.exit(f"quickstart.sh: error: loading the build failed: {type(error).__name__}: {error}")
print(f"ok: {relu.__name__}.relu matches torch.relu on {tuple(x.shape)}")
PY

echo "done: the project is $project (nixgen.toml, build/$variant); the stand-ins are in $dest/offline"
printf 'next: . %q && cd %q && nixgen build   # after you edit relu_cpu/relu_cpu.cpp\n' \
  "$dest/env.sh" "$project"
