# Intel oneAPI / SYCL (evaluation only).
#
# Copies the attribute names of pkgs/development/libraries/intel-oneapi (intel-oneapi.base,
# .hpc, and the oneAPI stdenv whose cc wraps icpx/icx, unfree `issl`), pkgs/by-name/in/intel-llvm
# and `intelLlvmStdenv` (open-source DPC++), level-zero, onetbb, oneDNN (+ onednn, oneDNN_2),
# oneMath, onedpl, intel-compute-runtime. The oneAPI sets nixgen builds with
# (xpuPackages_X_Y_Z) are the kernels toolchain's: see tests/kernel-builder.
# Stand-in: no SYCL compiler exists here (host.nix `icpx` is null), so the stdenvs evaluate
# and any build through them fails with "not available on this machine"; the libraries
# evaluate and fail to build the same way.
{
  lib,
  final,
  host,
  ...
}:
let
  inherit (final.__stub) mkUnavailable mkUnavailableCC mkStdenv;
  linux = lib.platforms.linux;
  unavailable =
    pname: version: extraMeta:
    mkUnavailable {
      inherit pname version;
      reason = "Intel oneAPI / SYCL is not installed (XPU kernels are evaluation-only here)";
      meta = {
        platforms = linux;
      }
      // extraMeta;
    };

  oneapiStdenv = mkStdenv {
    name = "intel-oneapi-stdenv";
    cc = mkUnavailableCC {
      name = "icpx-wrapper-2025.3.2";
      version = "2025.3.2";
      reason = "there is no Intel oneAPI DPC++/C++ compiler (icpx) on this machine";
      platforms = linux;
    };
  };

  intelLlvmStdenv = mkStdenv {
    name = "intel-llvm-stdenv";
    cc = mkUnavailableCC {
      name = "intel-llvm-wrapper-6.2.0";
      version = "6.2.0";
      reason = "there is no open-source DPC++ (clang++ -fsycl) on this machine";
      platforms = linux;
    };
  };

in
{
  intel-oneapi = lib.makeScope final.newScope (self: {
    base = (unavailable "intel-oneapi-base-toolkit" "2025.3.2" { license = lib.licenses.issl; }) // {
      stdenv = oneapiStdenv;
    };
    hpc = unavailable "intel-oneapi-hpc-toolkit" "2025.3.2" { license = lib.licenses.issl; };
    stdenv = oneapiStdenv;
    mkIntelOneApi = _: throw "stub-nixpkgs: intel-oneapi.mkIntelOneApi needs the network and the Intel installers";
  });
  inherit intelLlvmStdenv;
  intel-llvm = unavailable "intel-llvm" "6.2.0" { license = lib.licenses.asl20; };
  level-zero = unavailable "level-zero" "1.24.2" { license = lib.licenses.mit; };
  onetbb = unavailable "onetbb" "2022.2.0" { license = lib.licenses.asl20; };
  tbb = final.onetbb;
  oneDNN = unavailable "oneDNN" "3.9.1" { license = lib.licenses.asl20; };
  onednn = final.oneDNN;
  oneDNN_2 = unavailable "oneDNN" "2.7.5" { license = lib.licenses.asl20; };
  oneMath = unavailable "oneMath" "0.8" { license = lib.licenses.asl20; };
  onedpl = unavailable "onedpl" "2022.9.0" { license = lib.licenses.asl20; };
  intel-compute-runtime = unavailable "intel-compute-runtime" "25.35.35096.9" { license = lib.licenses.mit; };

  # For the kernels toolchain stand-in (tests/kernel-builder: xpuPackages_X_Y_Z), not a
  # nixpkgs attribute.
  __stubOneapi = { inherit unavailable oneapiStdenv; };
}
