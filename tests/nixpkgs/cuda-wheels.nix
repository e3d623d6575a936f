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
# `tree version pname` is the component's unpacked tree `{ prefix; version; }` or null;
# `unavailable version pname` is why a component cannot be built here, or null.
{ host }:
let
  trees = host.cudaWheels or null;
  script = "scripts/cuda_wheels.py";
in
rec {
  # nixpkgs renamed cuda_cccl to cccl; the wheel tree is `cccl` under either name.
  tree =
    cudaMajorMinorVersion: pname:
    ((if trees == null then { } else trees).${cudaMajorMinorVersion} or { }).${
      if pname == "cuda_cccl" then "cccl" else pname
    } or null;

  # The CUDA variants' torch: torch's default Linux wheel from PyPI (a CUDA build).
  torch = (if trees == null then { } else trees).torch.torch or null;

  unavailable =
    cudaMajorMinorVersion: pname:
    if pname == "cuda_nvcc" && builtins.substring 0 3 cudaMajorMinorVersion == "12." then
      "no CUDA ${cudaMajorMinorVersion} compiler exists here: PyPI has the CUDA 12 libraries (-cu12 wheels) but no nvcc (nvidia-cuda-nvcc-cu12 holds only ptxas and libnvvm), and a 13.x nvcc must not pose as ${cudaMajorMinorVersion}; build a CUDA 13.x variant (cu130, cu132) instead"
    else if tree cudaMajorMinorVersion pname == null then
      if trees == null then
        "the CUDA wheels are not unpacked on this machine (host.nix cudaWheels = null): run `python ${script}` (scripts/setup.sh does), then write host.nix again"
      else
        "${script} provides no ${pname} for CUDA ${cudaMajorMinorVersion} (its pins list what each set holds)"
    else
      null;
}
