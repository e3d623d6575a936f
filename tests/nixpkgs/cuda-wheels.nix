# Where the stand-in CUDA components' files come from: NVIDIA's PyPI wheels, unpacked once
# by scripts/cuda_wheels.py (pins there) into a cache that host.nix `cudaWheels` names.
#
#   cudaPackages_13_0, _13_2: the 13.x wheels of their own version, each component from its
#     own wheels (cuda_nvcc = nvidia-cuda-nvcc + nvidia-nvvm + nvidia-cuda-crt unpacked
#     together under nvidia/cu13/, as nvcc's nvcc.profile expects them; cuda_cudart =
#     nvidia-cuda-runtime; cccl = nvidia-cuda-cccl; libcublas, libcusparse, libcusolver,
#     cuda_nvtx; cuda_cuobjdump for 13.2 only: PyPI has no 13.0 cuobjdump);
#   cudaPackages_12_6: the `-cu12` library wheels of CUDA 12.6 (runtime, CCCL, cuBLAS,
#     cuSPARSE, cuSOLVER, NVTX) and NO compiler: PyPI's nvidia-cuda-nvcc-cu12 holds only
#     ptxas and libnvvm, so its cuda_nvcc fails to build, saying so (never a 13.x nvcc
#     posing as 12.x).
#
# The pins (and so every component's version) are data: ./cuda-wheels.json, which the script
# reads too. `version set pname` is the pinned version or null; `tree set pname` the
# component's unpacked tree `{ prefix; version; }` when the cache holds the pinned version,
# else null; `unavailable set pname` why a component cannot be built here, or null.
{ host }:
let
  trees = host.cudaWheels or null;
  script = "scripts/cuda_wheels.py";
  pins = (builtins.fromJSON (builtins.readFile ./cuda-wheels.json)).sets;
  # nixpkgs renamed cuda_cccl to cccl; the wheel tree is `cccl` under either name.
  wheelName = pname: if pname == "cuda_cccl" then "cccl" else pname;
  cached = set: pname: ((if trees == null then { } else trees).${set} or { }).${wheelName pname} or null;
in
rec {
  version =
    set: pname:
    let
      wheels = (pins.${set} or { }).${wheelName pname} or null;
    in
    if wheels == null then null else builtins.elemAt (builtins.split "==" (builtins.head wheels)) 2;

  # The pinned version of one wheel among a component's (`nvidia-cuda-crt` of cuda_nvcc's
  # wheels: cuda_crt is unpacked with nvcc, as nvcc.profile expects), or null.
  wheelVersion =
    set: pname: wheel:
    let
      componentPins = (pins.${set} or { }).${wheelName pname} or [ ];
      found = builtins.filter (
        pin: builtins.substring 0 (builtins.stringLength wheel + 2) pin == "${wheel}=="
      ) componentPins;
    in
    if found == [ ] then null else builtins.elemAt (builtins.split "==" (builtins.head found)) 2;

  tree =
    set: pname:
    let
      found = cached set pname;
    in
    if found != null && found.version == version set pname then found else null;

  # The CUDA variants' torch: torch's default Linux wheel from PyPI (a CUDA build).
  torch = tree "torch" "torch";

  unavailable =
    set: pname:
    if pname == "cuda_nvcc" && builtins.substring 0 3 set == "12." then
      "no CUDA ${set} compiler exists here: PyPI has the CUDA 12 libraries (-cu12 wheels) but no nvcc (nvidia-cuda-nvcc-cu12 holds only ptxas and libnvvm), and a 13.x nvcc must not pose as ${set}; build a CUDA 13.x variant (cu130, cu132) instead"
    else if version set pname == null then
      "${script} pins no ${wheelName pname} for CUDA ${set} (tests/nixpkgs/cuda-wheels.json)"
    else if trees == null then
      "the CUDA wheels are not unpacked on this machine (host.nix cudaWheels = null): run `python ${script}` (scripts/setup.sh does), then write host.nix again"
    else if tree set pname == null then
      "the cache holds no ${wheelName pname} ${version set pname} for CUDA ${set} (${
        (cached set pname).version or "none"
      } found): run `python ${script}` again, then write host.nix again"
    else
      null;
}
