#!/usr/bin/env bash
# Set up everything nixgen and its test suite need on a fresh Debian-like machine:
#   - Nix (Debian's nix-bin, Nix 2.8) and ninja (ninja-build) when missing and apt is usable,
#   - .venv with nixgen (editable), its test extras and its dev extras (ruff, mypy, import-linter),
#   - torch 2.13.0+cpu, installed first and pinned so nothing pulls a CUDA torch,
#     the PyPI `kernels` client and numpy (to load built kernels),
#   - cuobjdump (PyPI nvidia-cuda-cuobjdump; optional: its test skips without it),
#   - Debian's openssh-server when missing and apt is usable (the loopback remote builder of
#     tests/test_remote_builders.py and bench/scale.py; skipped without it),
#   - Debian's clang, lld and hipcc (ROCm 5.2) when missing and apt is usable: the other
#     compiler families' drivers (clang for darwin/ROCm/XPU flags, ld64.lld for the darwin
#     link, hipcc for real ROCm builds; tests/test_compilers.py skips without them). About
#     0.8 GB on disk, 15-60 s from a Debian mirror. Also Debian's clangd (tests/test_compdb.py).
#   - the CUDA pieces the test stand-ins build CUDA kernels with (scripts/cuda_wheels.py:
#     NVIDIA's pinned PyPI wheels for CUDA 13.0, 13.2 and 12.6, torch 2.11.0's CUDA wheel
#     and CUTLASS 3.8's headers, unpacked once into ~/.cache/nixgen/cuda, never installed;
#     about 2.9 GB fetched, 4.7 GB on disk, under a minute here; optional: the CUDA build
#     tests skip without them; NIXGEN_CUDA_WHEELS=0 skips this step).
# Idempotent. Used by quickstart.sh and .ci/run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
started=$SECONDS
step() { printf '== %s (%ds)\n' "$*" "$((SECONDS - started))" >&2; }

step "Nix"
if ! command -v nix-build >/dev/null || ! command -v nix-instantiate >/dev/null; then
  if command -v apt-get >/dev/null && [[ $(id -u) == 0 ]]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq nix-bin >/dev/null 2>&1 || {
      apt-get update -qq
      apt-get install -y -qq nix-bin
    }
  else
    echo "Nix is missing and cannot be installed here: Nix-backed tests will be skipped" >&2
  fi
fi
command -v nix >/dev/null && nix --version

# ninja runs every kernel's generated build.ninja (the test stand-ins take the host's).
if ! command -v ninja >/dev/null && command -v apt-get >/dev/null && [[ $(id -u) == 0 ]]; then
  apt-get install -y -qq ninja-build >/dev/null 2>&1 || {
    apt-get update -qq
    apt-get install -y -qq ninja-build
  }
fi

# OpenSSH's server: tests/test_remote_builders.py and bench/scale.py start a loopback
# ssh-ng builder with its own store (tests/remote_builder.py; about 6 MB, a few seconds).
if ! [[ -x /usr/sbin/sshd ]] && command -v apt-get >/dev/null && [[ $(id -u) == 0 ]]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq openssh-server >/dev/null 2>&1 || {
    apt-get update -qq
    apt-get install -y -qq openssh-server || echo "warning: openssh-server could not be installed; the remote-builder tests will be skipped" >&2
  }
fi

# The other compiler families (tests/test_compilers.py): clang (clang++ -target …), lld
# (ld64.lld, an ld64-compatible linker) and hipcc (HIP_PLATFORM=amd, with its clang 15 and
# the ROCm device libraries).
# clangd checks `nixgen compdb`'s compile_commands.json (tests/test_compdb.py).
if { ! command -v clang++ >/dev/null || ! command -v hipcc >/dev/null || ! command -v clangd >/dev/null || ! compgen -G '/usr/bin/ld64.lld*' >/dev/null; } \
  && command -v apt-get >/dev/null && [[ $(id -u) == 0 ]]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq clang clangd lld hipcc >/dev/null 2>&1 || {
    apt-get update -qq
    apt-get install -y -qq clang clangd lld hipcc || echo "warning: clang/clangd/lld/hipcc could not be installed; their tests will be skipped" >&2
  }
fi

step "Python environment"
if [[ ! -x .venv/bin/python ]]; then
  python=$(command -v python3.11 || command -v python3)
  "$python" -m venv .venv
fi
pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
# torch first, pinned to the CPU build: the machine's wheel directory (pip's find-links)
# has it; elsewhere PyTorch's CPU index does.
torch_pin='torch==2.13.0+cpu'
if ! "${pip[@]}" --no-index --no-deps "$torch_pin" 2>/dev/null; then
  "${pip[@]}" --no-deps --extra-index-url https://download.pytorch.org/whl/cpu "$torch_pin"
fi
"${pip[@]}" "$torch_pin" numpy
.venv/bin/python - <<'PY'
import torch

assert torch.__version__.startswith("2.13.0"), torch.__version__
assert torch.version.cuda is None, f"a CUDA torch was installed ({torch.version.cuda})"
print("torch", torch.__version__)
PY
"${pip[@]}" -e '.[test,dev]' "$torch_pin"
# Bytecode for the editable install, as a wheel install would have (startup time).
.venv/bin/python -m compileall -q nixgen >/dev/null
if ! "${pip[@]}" --no-deps 'nvidia-cuda-cuobjdump==13.4.92' 2>/dev/null; then
  echo "warning: could not install cuobjdump; its test will be skipped" >&2
fi
# NIXGEN_CUDA_WHEELS=0 skips them (quickstart.sh, which builds a CPU kernel only).
if [[ ${NIXGEN_CUDA_WHEELS:-1} != 0 ]]; then
  step "CUDA wheels for the test stand-ins"
  if ! .venv/bin/python scripts/cuda_wheels.py; then
    echo "warning: could not fetch the CUDA wheels; the CUDA build tests will be skipped" >&2
  fi
fi
step "ready: $(.venv/bin/nixgen --version)"
