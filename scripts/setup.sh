#!/usr/bin/env bash
# Set up everything nixgen and its test suite need on a fresh Debian-like machine:
#   - Nix (Debian's nix-bin) when `nix` is missing and apt is available,
#   - .venv with nixgen (editable) and its test dependencies,
#   - torch 2.13.0 (CPU wheel) and the PyPI `kernels` client, to load built kernels.
# Idempotent: a second run only checks. Set NIXGEN_SKIP_NIX=1 / NIXGEN_SKIP_TORCH=1 to skip.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*" >&2; }

if ! command -v nix-instantiate >/dev/null 2>&1 && [[ ${NIXGEN_SKIP_NIX:-0} != 1 ]]; then
  if command -v apt-get >/dev/null 2>&1 && [[ $(id -u) == 0 ]]; then
    say "installing Nix (Debian nix-bin)"
    apt-get install -y -q nix-bin >/dev/null 2>&1 || {
      apt-get update -q >/dev/null
      apt-get install -y -q nix-bin >/dev/null
    }
  else
    say "Nix is not installed and cannot be installed here; Nix-backed tests will be skipped"
  fi
fi

PYTHON=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
  say "creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
pip() { .venv/bin/python -m pip -q --disable-pip-version-check "$@" 2>&1 | grep -v "^WARNING: Location" || true; }

if [[ ${NIXGEN_SKIP_TORCH:-0} != 1 ]]; then
  # torch first and pinned: anything later that asks for torch is then already satisfied
  # (an unpinned torch would pull a multi-GB CUDA build).
  .venv/bin/python -c 'import torch, sys; sys.exit(torch.__version__.split("+")[0] != "2.13.0")' 2>/dev/null \
    || { say "installing torch 2.13.0 (CPU)"; pip install torch==2.13.0; }
fi
say "installing nixgen and its test dependencies"
pip install -e '.[test]'
# Bytecode for the editable install, as a wheel install would have (startup time).
.venv/bin/python -m compileall -q nixgen >/dev/null
if [[ ${NIXGEN_SKIP_TORCH:-0} != 1 ]]; then
  pip install 'kernels>=0.17.2' numpy
fi
say "ready: $(.venv/bin/nixgen --version)"
