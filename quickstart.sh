#!/usr/bin/env bash
# nixgen in one command: set up, then run nixgen on the shipped example examples/relu-cpu:
# validate it, list its build variants, render its Nix and — where Nix is installed — build
# the torch 2.13 CPU variant offline through the test stand-ins of nixpkgs and of the kernels
# toolchain (host compilers) and load the
# result with the PyPI `kernels` client.
set -euo pipefail
cd "$(dirname "$0")"
# Everything the test suite needs too (the second README command), the CUDA wheels the CUDA
# build tests use included; NIXGEN_CUDA_WHEELS=0 skips those (their tests are then skipped).
scripts/setup.sh

repo=$(pwd)
py="$repo/.venv/bin/python"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r examples/relu-cpu "$work/relu-cpu"
rm -rf "$work/relu-cpu/nix" "$work/relu-cpu/flake.nix"
nixgen="$repo/.venv/bin/nixgen"

echo "== nixgen validate"
"$nixgen" validate "$work/relu-cpu"
echo "== nixgen variants --system x86_64-linux"
"$nixgen" variants --system x86_64-linux "$work/relu-cpu" 2>/dev/null || true
echo "== nixgen render"
"$nixgen" render "$work/relu-cpu"
find "$work/relu-cpu/nix" -maxdepth 2 -name '*.nix' -not -path '*/lib/*' | sed "s|$work/||" | sort

if ! command -v nix >/dev/null 2>&1; then
  echo "Nix is not installed: stopping after render."
  exit 0
fi
# The tests' settings: flakes, no substituters, and the sandbox with the stand-ins' host paths.
NIX_CONFIG=$("$py" -c 'from tests.nixtools import NIX_CONFIG; print(NIX_CONFIG)')
export NIX_CONFIG
# The stand-ins laid out as a user would (README "Building offline").
PYTHON="$py" scripts/offline-inputs.sh "$work" >/dev/null 2>&1
stub="$work/nixpkgs"
variant=torch213-cxx11-cpu-$(uname -m)-linux
echo "== nix build .#$variant (offline, test nixpkgs + test kernels toolchain)"
out=$(cd "$work/relu-cpu" && nix build ".#$variant" --override-input nixpkgs "path:$stub" \
  --override-input kernel-builder "path:$(dirname "$stub")/kernel-builder" \
  --no-link --json | "$py" -c 'import json,sys; print(json.load(sys.stdin)[0]["outputs"]["out"])')
ls "$out"
mkdir -p "$work/load" && ln -s "$out" "$work/load/$variant"
echo "== kernels.get_local_kernel + check against torch.relu"
"$py" -W ignore - "$work/load" <<'PY'
import sys
from pathlib import Path

import kernels
import torch

relu = kernels.get_local_kernel(Path(sys.argv[1]), backend="cpu")
x = torch.randn(1024, 33)
assert torch.equal(relu.relu(x), torch.relu(x))
print(f"ok: {relu.__name__}.relu matches torch.relu on {tuple(x.shape)}")
PY
