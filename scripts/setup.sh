#!/usr/bin/env bash
# Set up everything nixgen and its test suite need on a fresh Debian-like machine:
#   - .venv: exactly the locked development and test environment (requirements/dev.txt, with
#     hashes: torch 2.13.0+cpu, the `kernels` client, the Hub client, pytest, hypothesis, ruff,
#     mypy, import-linter, …), then nixgen itself, editable;
#   - the older `kernels` clients of the compatibility tier, each in its own small venv under
#     .venv/clients/ that shares the main one's torch (requirements/kernels-<version>.txt);
#   - a current Nix in .venv/bin (scripts/nix.sh: the machine's Nix when it is 2.18 or newer,
#     else Debian 13's nix-bin 2.26.3 unpacked into a private prefix; the system is not
#     touched) and ninja (ninja-build) when missing and apt is usable,
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
# clangd checks `nixgen compdb`'s compile_commands.json (tests/test_compdb.py); zsh, fish and
# elvish run `nixgen completion`'s scripts on a terminal (tests/test_completion.py).
if { ! command -v clang++ >/dev/null || ! command -v hipcc >/dev/null || ! command -v clangd >/dev/null || ! compgen -G '/usr/bin/ld64.lld*' >/dev/null \
  || ! command -v zsh >/dev/null || ! command -v fish >/dev/null || ! command -v elvish >/dev/null; } \
  && command -v apt-get >/dev/null && [[ $(id -u) == 0 ]]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq clang clangd lld hipcc zsh fish elvish >/dev/null 2>&1 || {
    apt-get update -qq
    apt-get install -y -qq clang clangd lld hipcc zsh fish elvish || echo "warning: clang/clangd/lld/hipcc/zsh/fish/elvish could not be installed; their tests will be skipped" >&2
  }
fi

step "Python environment"
if [[ ! -x .venv/bin/python ]]; then
  python=$(command -v python3.11 || command -v python3)
  "$python" -m venv .venv
fi
pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
# Exactly the lock: every package pinned and hashed, nothing resolved here. torch's CPU build
# comes from the machine's wheel directory (pip's find-links) or PyTorch's CPU index.
"${pip[@]}" --require-hashes --no-deps -r requirements/dev.txt 2>/dev/null ||
  "${pip[@]}" --require-hashes --no-deps --extra-index-url https://download.pytorch.org/whl/cpu -r requirements/dev.txt
"${pip[@]}" --no-deps --no-build-isolation -e .
.venv/bin/python -m pip check --disable-pip-version-check >/dev/null || {
  .venv/bin/python -m pip check --disable-pip-version-check >&2
  exit 1
}
.venv/bin/python - <<'PY'
import torch

assert torch.__version__.startswith("2.13.0"), torch.__version__
assert torch.version.cuda is None, f"a CUDA torch was installed ({torch.version.cuda})"
print("torch", torch.__version__)
PY
# Bytecode for the editable install, as a wheel install would have (startup time).
.venv/bin/python -m compileall -q nixgen >/dev/null
# The older clients (tests/test_client_versions.py): a venv each, holding only that `kernels`,
# that reads the main venv's site-packages after its own (a .pth line) for torch and the rest.
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
for lock in requirements/kernels-*.txt; do
  version=${lock#requirements/kernels-}
  version=${version%.txt}
  client=.venv/clients/kernels-$version
  if [[ ! -x $client/bin/python ]]; then
    .venv/bin/python -m venv --without-pip "$client"
  fi
  client_site=$("$client/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  "${pip[@]}" --require-hashes --no-deps --target "$client_site" --upgrade -r "$lock" >/dev/null
  printf '%s\n' "$site" >"$client_site/_nixgen_main_venv.pth"
  "$client/bin/python" -c "import importlib.metadata as m; v = m.version('kernels'); assert v == '$version', v"
done

step "Nix"
scripts/nix.sh .venv/bin
.venv/bin/nix --version

# NIXGEN_CUDA_WHEELS=0 skips them (quickstart.sh, which builds a CPU kernel only).
if [[ ${NIXGEN_CUDA_WHEELS:-1} != 0 ]]; then
  step "CUDA wheels for the test stand-ins"
  if ! .venv/bin/python scripts/cuda_wheels.py; then
    echo "warning: could not fetch the CUDA wheels; the CUDA build tests will be skipped" >&2
  fi
fi
step "ready: $(.venv/bin/nixgen --version)"
