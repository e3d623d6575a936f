#!/usr/bin/env bash
# Run a CUDA kernel built by nixgen on a real GPU: examples/relu-cuda, variant
# torch211-cxx11-cu130-x86_64-linux, loaded with the PyPI `kernels` client
# (kernels.get_local_kernel) and compared with torch.relu on `cuda` for several shapes and
# dtypes, non-contiguous inputs and `out=` included.
#
#   bench/gpu-check.sh prepare   here (Nix, the test stand-ins, scripts/cuda_wheels.py):
#                                build the variant against torch 2.11.0's CUDA wheel and
#                                CUDA 13.0 from NVIDIA's wheels, and fetch the `kernels`
#                                client's wheels, into bench/gpu-check/ (git-ignored)
#   bench/gpu-check.sh run       on the GPU machine (torch 2.11+cu130, no Nix, no registry):
#                                install `kernels` from bench/gpu-check/wheels into
#                                bench/gpu-check/site (nothing system-wide) and check
#
# The build table (nix/data/build-configs.json, the anchor's versions.nix) has no torch 2.11
# CUDA configuration, so `prepare` builds the variant through nixgen's library directly: the
# project's torch213-cxx11-cu130 variant record with torch 2.11 (nixgen.project.variantPackage).
# With the device tool: run `bench/gpu-check.sh run` with carry = ["bench/gpu-check"] and a
# timeout of 300 s; the check itself takes well under a minute once Python is up.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
out=$repo/bench/gpu-check
variant=torch211-cxx11-cu130-x86_64-linux
# The device's Python is not known here: the client's wheels are fetched for these.
python_versions=${GPU_CHECK_PYTHONS:-3.10 3.11 3.12 3.13}

prepare() {
  local py=${PYTHON:-$repo/.venv/bin/python}
  [[ -x $py ]] || py=/work/main/.venv/bin/python
  export NIX_CONFIG=$'experimental-features = nix-command flakes\nsubstituters =\nbuild-users-group ='
  local started=$SECONDS
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  "$py" scripts/cuda_wheels.py --only 13.0 torch >/dev/null
  local stub
  stub=$(PYTHONPATH=$repo "$py" -c "from pathlib import Path; from tests.nixtools import make_stub; print(make_stub(Path('$work')))")
  local built
  built=$(nix-build --no-out-link --max-jobs 2 -E "
    let
      p = import $repo/examples/relu-cuda/nix;
      base = builtins.head (builtins.filter (v: v.name == \"torch213-cxx11-cu130-x86_64-linux\") (p.variants \"x86_64-linux\"));
    in
    p.variantPackage {
      nixpkgs = $stub;
      kernel-builder = $work/kernel-builder;
      system = \"x86_64-linux\";
    } (base // { name = \"$variant\"; torch = \"2.11\"; })
  ")
  rm -rf "$out"
  mkdir -p "$out/relu-cuda" "$out/wheels"
  cp -rL "$built" "$out/relu-cuda/$variant"
  chmod -R u+w "$out/relu-cuda"
  local kernels_version
  kernels_version=$("$py" -c 'from importlib.metadata import version; print(version("kernels"))')
  for v in $python_versions; do
    "$py" -m pip download -qq --only-binary=:all: --python-version "$v" \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 --platform linux_x86_64 \
      -d "$out/wheels" "kernels==$kernels_version"
  done
  printf '%s\n' "$built" > "$out/store-path"
  echo "prepared $out in $((SECONDS - started)) s: $(du -sh "$out" | cut -f1)" \
    "(variant $(du -sh "$out/relu-cuda" | cut -f1), wheels $(du -sh "$out/wheels" | cut -f1))"
}

run() {
  local py=${PYTHON:-python3}
  [[ -d $out/relu-cuda/$variant ]] || {
    echo "gpu-check: $out/relu-cuda/$variant is missing: run \`bench/gpu-check.sh prepare\` where Nix is" >&2
    exit 2
  }
  local site=$out/site
  if ! PYTHONPATH=$site "$py" -c 'import kernels' 2>/dev/null; then
    "$py" -m pip install --quiet --no-index --find-links "$out/wheels" --target "$site" kernels
  fi
  PYTHONPATH=$site timeout 240 "$py" - "$out/relu-cuda" <<'PY'
import sys
import time
from pathlib import Path

import torch

started = time.monotonic()
print("torch", torch.__version__, "CUDA", torch.version.cuda)
if not torch.__version__.startswith("2.11"):
    sys.exit(f"gpu-check: torch {torch.__version__} cannot load a torch211 variant")
if not torch.cuda.is_available():
    sys.exit("gpu-check: no CUDA device is available")
print("device", torch.cuda.get_device_name(0), "capability", torch.cuda.get_device_capability(0))

import kernels

relu = kernels.get_local_kernel(Path(sys.argv[1]), backend="cuda")
print("loaded", Path(relu.__file__).resolve().parent)
generator = torch.Generator(device="cuda").manual_seed(22)
shapes = [(0,), (1,), (7,), (1000,), (3, 5), (17, 33, 9), (2, 3, 4, 5), (1 << 20,), (4097, 3)]
dtypes = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
checked = 0


def check(x: torch.Tensor, what: str) -> None:
    global checked
    before = x.clone()
    y = relu.relu(x)
    exact = {"rtol": 0, "atol": 0, "equal_nan": True}
    torch.testing.assert_close(y, torch.relu(x), **exact, msg=lambda m: f"{what}: {m}")
    torch.testing.assert_close(x, before, **exact, msg=lambda m: f"{what} input: {m}")
    assert y.dtype == x.dtype and y.shape == x.shape and y.device == x.device, what
    checked += 1


for dtype in dtypes:
    for shape in shapes:
        x = torch.randn(shape, generator=generator, device="cuda").to(dtype)
        check(x, f"{dtype} {shape}")
    base = torch.randn(64, 48, generator=generator, device="cuda").to(dtype)
    for name, x in [
        ("strided", base[:, ::3]),
        ("transposed", base.t()),
        ("expanded", torch.randn(5, 1, device="cuda").to(dtype).expand(5, 9)),
        ("permuted", base.reshape(4, 12, 64).permute(2, 0, 1)[1:, :, 2:]),
    ]:
        assert not x.is_contiguous(), name
        check(x, f"{dtype} {name}")
    special = torch.tensor([float("nan"), -0.0, 0.0, -1.0, 1.0, float("inf"), -float("inf")])
    check(special.to(dtype).cuda(), f"{dtype} special values")
    out = torch.empty(1000, dtype=dtype, device="cuda")
    x = torch.randn(1000, generator=generator, device="cuda").to(dtype)
    assert relu.relu(x, out=out) is out
    torch.testing.assert_close(out, torch.relu(x), rtol=0, atol=0)
    checked += 1
# On a non-default stream too.
stream = torch.cuda.Stream()
with torch.cuda.stream(stream):
    x = torch.randn(1 << 16, generator=generator, device="cuda")
    y = relu.relu(x)
stream.synchronize()
torch.testing.assert_close(y, torch.relu(x), rtol=0, atol=0)
checked += 1
torch.cuda.synchronize()
print(f"gpu-check: OK, {checked} comparisons with torch.relu in {time.monotonic() - started:.1f} s")
PY
}

case ${1:-} in
  prepare) prepare ;;
  run) run ;;
  *)
    echo "usage: bench/gpu-check.sh prepare|run" >&2
    exit 2
    ;;
esac
