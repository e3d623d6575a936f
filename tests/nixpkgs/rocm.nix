# ROCm package set (evaluation only): rocmPackages (pkgs/development/rocm-modules; nixpkgs
# at the pin has one unversioned set, ROCm 7.x). nixgen never reads it: a ROCm variant's
# `rocmPackages` is the kernels toolchain's versioned RPM set (rocmPackages_7_1 / _7_2, in
# tests/kernel-builder, with the toolchain's own names such as hipcub-devel).
#
# Copies a subset of the attribute names of pkgs/development/rocm-modules/default.nix (clr
# with passthru gpuTargets, hipcc, rocm-core, hipcub, rocprim, …, llvm.{clang,llvm,lld,
# rocmClangStdenv}); NAMES.tsv cites the file for each.
# Stand-in: this machine has no ROCm, so every component evaluates (name, version,
# meta.platforms = x86_64-linux) and fails to build with "not available on this machine".
{
  lib,
  final,
  config,
  ...
}:
let
  components = [
    "clr"
    "hipcc"
    "hip-common"
    "rocm-core"
    "rocm-cmake"
    "rocm-comgr"
    "rocm-device-libs"
    "rocm-runtime"
    "rocm-smi"
    "rocminfo"
    "hipcub"
    "rocprim"
    "rocthrust"
    "rocwmma"
    "rocblas"
    "rocsparse"
    "rocrand"
    "rocsolver"
    "rocfft"
    "hipblas"
    "hipblaslt"
    "hipsparse"
    "hiprand"
    "hipfft"
    "hipsolver"
    "hipify"
    "rccl"
    "miopen"
    "composable_kernel"
  ];

  defaultGpuTargets = [
    "gfx908"
    "gfx90a"
    "gfx942"
    "gfx950"
    "gfx1030"
    "gfx1100"
    "gfx1101"
    "gfx1200"
    "gfx1201"
  ];

  mkRocmPackages =
    rocmVersion:
    lib.makeScope final.newScope (
      self:
      let
        mk =
          pname:
          final.__stub.mkUnavailable {
            inherit pname;
            version = rocmVersion;
            reason = "ROCm ${rocmVersion} is not installed (ROCm kernels are evaluation-only here)";
            meta = {
              license = lib.licenses.mit;
              platforms = [ "x86_64-linux" ];
            };
            passthru.gpuTargets = config.rocmTargets or defaultGpuTargets;
          };
      in
      lib.genAttrs components mk
      // {
        llvm = {
          clang = mk "rocm-llvm-clang";
          llvm = mk "rocm-llvm";
          lld = mk "rocm-llvm-lld";
          rocmClangStdenv = final.__stub.mkStdenv {
            cc = final.__stub.mkUnavailableCC {
              name = "rocm-llvm-clang-wrapper-${rocmVersion}";
              version = rocmVersion;
              reason = "ROCm ${rocmVersion} is not installed";
            };
          };
        };
        clr = (mk "clr") // {
          gpuTargets = config.rocmTargets or defaultGpuTargets;
          localGpuTargets = null;
        };
      }
    );
in
{
  rocmPackages = mkRocmPackages "7.2.0";
}
