#!/usr/bin/env bash
# Lay out nixgen's offline stand-ins of the two flake inputs of every generated project
# (nixpkgs and the kernels toolchain, `kernel-builder`) in DIR, for trying nixgen on a
# machine without network: a copy of tests/nixpkgs and tests/kernel-builder with the
# host.nix that names this machine's compilers, CUDA and Python (tests/nixpkgs/make_host.py).
# They build with the host's tools, not the real toolchain: for trying nixgen, not for
# publishing kernels. Prints the nixgen.toml table (or the flags) that points a project
# at them, and on stderr the host paths the Nix sandbox must let those builds see
# (`extra-sandbox-paths`), which it also writes to DIR/nix.conf for NIX_CONFIG:
#
#   scripts/offline-inputs.sh ~/nixgen-offline >> my-kernel/nixgen.toml
#   export NIX_CONFIG="$(cat ~/nixgen-offline/nix.conf)"   # or add its line to nix.conf
#   cd my-kernel && nixgen build --offline
#
# On a merged-/usr system the shell is bound as /bin/sh, not /bin (a link there): a Nix
# whose own `sandbox-paths` holds `/bin/sh=…` (Debian 13's, the upstream installer's)
# fails every build given the /bin link (tests/nixpkgs/make_host.py `system_dirs`).
#
# DIR must be outside a git work tree (a flake there sees only tracked files). PYTHON
# (default: the checkout's .venv, else python3) is the interpreter whose torch the
# stand-ins use.
set -euo pipefail
if [ $# -ne 1 ] || [ "${1#-}" != "$1" ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$repo/.venv/bin/python}
[ -x "$py" ] || py=$(command -v python3)
mkdir -p "$1"
dir=$(cd "$1" && pwd)
cd "$repo"
"$py" - "$dir" <<'PY'
import json
import sys
from pathlib import Path

from tests.nixtools import kernel_builder, make_stub, sandbox_paths

try:
    stub = make_stub(Path(sys.argv[1]))
except ValueError as exc:
    sys.exit(f"offline-inputs.sh: error: {exc}")
inputs = {"nixpkgs": f"path:{stub}", "kernel-builder": f"path:{kernel_builder(stub)}"}
print(f"laid out the stand-ins in {sys.argv[1]}; for a project's nixgen.toml:", file=sys.stderr)
print("[override-input]")
for name, ref in inputs.items():
    print(f"{name} = {json.dumps(ref)}")
flags = " ".join(f"--override-input {name} {ref}" for name, ref in inputs.items())
print(f"or: nixgen build --offline {flags}", file=sys.stderr)
# The stand-ins build with this machine's compilers, CUDA and Python: the Nix sandbox (on,
# as it should be) must let builds see those host paths, and only those.
line = "extra-sandbox-paths = " + " ".join(sandbox_paths(sys.executable))
conf = Path(sys.argv[1]) / "nix.conf"
conf.write_text(line + "\n")
print(f"and, for the sandbox, in nix.conf or NIX_CONFIG ({conf} holds it): {line}", file=sys.stderr)
PY
