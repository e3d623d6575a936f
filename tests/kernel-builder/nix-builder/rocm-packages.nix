# Stand-in (test only) for the kernels toolchain's ROCm package sets: huggingface/kernels
# nix-builder/pkgs/rocm-packages at 8ac69fc542a4306eade0759ef7c45b4f2ae57df0, one
# `lib.makeScope` per ROCm release (overlay.nix calls it for 7.1.1 and 7.2.1).
#
# The names are the real scope's: the RPM package names of
# pkgs/rocm-packages/rocm-<version>-metadata.json (components.nix makes one package per
# key), `clr` (joins.nix: the HIP runtime joined with hipcc, whose `bin/hipcc` nixgen runs)
# and `llvm.{bintools, bintools-unwrapped, clang}` (llvm.nix). This is a subset: the 156
# names of each real scope are not all modelled, and none here is missing from the real one
# (tests/test_real_toolchain.py evaluates the real overlay beside this file and checks).
#
# Stand-in: this machine has no ROCm, so every package evaluates (pname, version,
# meta.platforms = x86_64-linux) and fails to build saying so. `clr` is its own binding so
# that a real HIP compiler can replace its body without touching the names.
{
  lib,
  final,
  stub,
}:
rocmVersion:
let
  unavailable =
    pname:
    stub.mkUnavailable {
      inherit pname;
      version = rocmVersion;
      reason = "ROCm ${rocmVersion} is not installed (ROCm kernels are evaluation-only here)";
      meta = {
        license = lib.licenses.mit;
        platforms = [ "x86_64-linux" ];
      };
    };

  # RPM package names present in both rocm-7.1.1- and rocm-7.2.1-metadata.json.
  rpmPackages = [
    "comgr"
    "composablekernel-devel"
    "hip-devel"
    "hip-runtime-amd"
    "hipblas"
    "hipblas-common-devel"
    "hipblaslt"
    "hipcc"
    "hipcub-devel"
    "hipfft"
    "hipify-clang"
    "hiprand"
    "hipsolver"
    "hipsparse"
    "hipsparselt"
    "hsa-rocr"
    "miopen-hip"
    "rccl"
    "rocblas"
    "rocfft"
    "rocm-cmake"
    "rocm-core"
    "rocm-device-libs"
    "rocm-smi-lib"
    "rocminfo"
    "rocprim-devel"
    "rocrand"
    "rocshmem-devel"
    "rocsolver"
    "rocsparse"
    "rocthrust-devel"
    "rocwmma-devel"
  ];
in
lib.makeScope final.newScope (
  self:
  lib.genAttrs rpmPackages unavailable
  // {
    # joins.nix `clr`: hipcc, hip-devel, hip-runtime-amd, rocm-core, rocm-opencl joined, with
    # `bin/hipcc` wrapped to find the ROCm clang (HIP_CLANG_PATH).
    clr = unavailable "rocm-clr";

    # llvm.nix
    llvm = {
      clang = unavailable "rocm-llvm-clang";
      bintools = unavailable "rocm-llvm-bintools";
      bintools-unwrapped = unavailable "rocm-llvm-bintools-unwrapped";
    };
  }
)
