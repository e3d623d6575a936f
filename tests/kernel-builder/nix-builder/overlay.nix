# Stand-in (test only) for the kernels toolchain's overlay: huggingface/kernels
# nix-builder/overlay.nix at 8ac69fc542a4306eade0759ef7c45b4f2ae57df0, same path, same
# argument (`{ builderProvenance ? null }`), same attribute names for what nixgen uses:
#
#   python3.pkgs.torch-bin_2_11/_2_12/_2_13  anchor: pythonPackagesExtensions, mkTorch
#   python3.pkgs.tvm-ffi                     anchor: pkgs/python-modules/tvm-ffi
#   manylinux_2_28.{stdenv,cudaBackendStdenv} anchor: pkgs/manylinux (default.nix, stdenv.nix,
#                                              cuda-backend-stdenv.nix)
#   kernel-builder (`check-abi` only)          anchor: pkgs/kernel-builder
#   rocmPackages_7_1, rocmPackages_7_2        anchor: pkgs/rocm-packages (7.1.1, 7.2.1), the
#                                              real RPM names (rocm-packages.nix here)
#   xpuPackages_2025_3_2, _2026_0_0, xpuPackages
#                                              anchor: pkgs/xpu-packages (oneapi-torch-dev,
#                                              onednn-xpu, ocloc, sycl-tla)
#   cutlass_2_10 … cutlass_4_5                anchor: pkgs/cutlass/default.nix
#   metal-cpp                                 anchor: pkgs/metal-cpp (outputs out, dev, doc)
#
# Every name here is one the real overlay defines, checked by tests/test_real_toolchain.py
# (it evaluates the real overlay.nix beside this one), except `manylinux_2_28.abiPolicy`
# (allow-listed there, with its reason below).
#
# What differs (README.md): everything is built from the host tools the way the nixpkgs
# stand-in builds (tests/nixpkgs, whose internal `__stub*` helpers this file uses); every
# torch-bin_X_Y is the ONE host torch wheel; manylinux_2_28's stdenvs are the host compiler,
# which cannot meet manylinux_2_28, so the stand-in's `kernel-builder check-abi` holds
# binaries to the manylinux policy the host can meet (pkgs/kernel-builder/default.nix);
# ROCm's clr/hipcc wrap Debian's hipcc (rocm-hip.nix), oneAPI and metal-cpp evaluate only;
# CUTLASS 3.8 is NVIDIA's real headers (PyPI nvidia-cutlass 3.8.0.0, unpacked by
# scripts/cuda_wheels.py), the other CUTLASS versions and sycl-tla are empty header
# directories; `kernels` is the host's PyPI client. The anchor's other attributes (triton,
# ruff, ucx, …) are not provided. `rust-bin` is not here: as for real, it comes from the
# flake input `rust-overlay` (../rust-overlay). As in the anchor, the default `xpuPackages`
# names `xpuPackages_2025_3_1`, which the overlay does not define (forcing it fails); nixgen
# always selects a version.
{
  builderProvenance ? null,
}:

final: prev:
let
  inherit (prev) lib;
  host = if builtins.pathExists ../host.nix then import ../host.nix else { };
  oneapi = prev.__stubOneapi;
  rocmHip = import ./rocm-hip.nix { inherit lib final host; };
  rocmPackages = import ./rocm-packages.nix {
    inherit lib final;
    stub = prev.__stub;
  };

  # Header-only packages (CUTLASS, sycl-tla) with EMPTY include directories, made with
  # callPackage so that `.override { stdenv = …; }` works as in the anchor.
  mkHeaderOnly =
    callPackage: pname: version: dirs:
    callPackage (
      { stdenv }:
      stdenv.mkDerivation (finalAttrs: {
        inherit pname version;
        dontUnpack = true;
        installPhase = ''
          runHook preInstall
          mkdir -p $out/nix-support ${lib.concatMapStringsSep " " (d: "$out/include/${d}") dirs}
          echo "empty stand-in for ${pname} ${version} (kernel-builder stand-in)" > $out/nix-support/stub-note
          runHook postInstall
        '';
        passthru.dev = finalAttrs.finalPackage;
        meta = {
          description = "kernel-builder stand-in: empty header-only ${pname} ${version}";
          license = lib.licenses.bsd3;
          platforms = lib.platforms.all;
        };
      })
    ) { };
  # A CUTLASS whose real headers scripts/cuda_wheels.py unpacked (PyPI `nvidia-cutlass`,
  # host.nix cudaWheels.cutlass) links them; the others are empty.
  cutlassWheels = (host.cudaWheels or { }).cutlass or { };
  cutlass =
    version:
    let
      wheel = cutlassWheels."cutlass_${lib.versions.major version}_${lib.versions.minor version}" or null;
    in
    if wheel != null && lib.versionAtLeast wheel.version version then
      final.callPackage (
        { stdenv }:
        stdenv.mkDerivation (finalAttrs: {
          pname = "cutlass";
          inherit version;
          dontUnpack = true;
          env.cutlassInclude = "${wheel.prefix}/include";
          installPhase = ''
            runHook preInstall
            mkdir -p $out
            ln -s "$cutlassInclude" $out/include
            runHook postInstall
          '';
          passthru.dev = finalAttrs.finalPackage;
          meta = {
            description = "kernel-builder stand-in: CUTLASS ${version} headers from PyPI nvidia-cutlass ${wheel.version}";
            license = lib.licenses.bsd3;
            platforms = lib.platforms.all;
          };
        })
      ) { }
    else
      mkHeaderOnly final.callPackage "cutlass" version [
        "cutlass"
        "cute"
      ];

  mkXpuPackages =
    xpuVersion:
    lib.makeScope final.newScope (self: {
      # icpx/icx, SYCL and oneMKL in one package (anchor: pkgs/xpu-packages/oneapi-torch-dev.nix).
      oneapi-torch-dev = self.callPackage (
        { stdenv }: oneapi.unavailable "oneapi-torch-dev" xpuVersion { license = lib.licenses.issl; }
      ) { };
      onednn-xpu = self.callPackage (
        { stdenv }: oneapi.unavailable "onednn-xpu" xpuVersion { license = lib.licenses.asl20; }
      ) { };
      ocloc = oneapi.unavailable "ocloc" xpuVersion { license = lib.licenses.mit; };
      sycl-tla = mkHeaderOnly self.callPackage "sycl-tla" "0.5" [
        "cutlass"
        "cute"
      ];
    });

  mkTorch =
    python-prev: version: extra:
    python-prev.__stubMkTorchBin version (
      {
        rocmPackages = final.rocmPackages;
        xpuSupport = final.config.xpuSupport or false;
      }
      // extra
    );
in
{
  # anchor: overlay.nix `kernel-builder = final.callPackage ./pkgs/kernel-builder { … }`;
  # here only its `check-abi` (pkgs/kernel-builder/default.nix, which states the stand-in's
  # manylinux policy).
  kernel-builder = final.callPackage ./pkgs/kernel-builder { inherit builderProvenance; };

  pythonPackagesExtensions = prev.pythonPackagesExtensions ++ [
    (python-final: python-prev: {
      torch-bin_2_11 = mkTorch python-prev "2.11.0" { xpuPackages = null; };
      torch-bin_2_12 = mkTorch python-prev "2.12.0" { xpuPackages = final.xpuPackages_2025_3_2; };
      torch-bin_2_13 = mkTorch python-prev "2.13.0" { xpuPackages = final.xpuPackages_2026_0_0; };
      # The anchor builds its own tvm-ffi (pkgs/python-modules/tvm-ffi); the stand-in is the
      # host's PyPI apache-tvm-ffi wheel, the package real nixpkgs calls apache-tvm-ffi.
      tvm-ffi = python-prev.apache-tvm-ffi;
      # The anchor's pkgs/python-modules/kernels (the `kernels` client, built from the
      # toolchain's own kernels/ at its revision: 0.17.0.dev0 at 8ac69fc5, with
      # kernels-data); here the host interpreter's PyPI client (in its site-packages: the
      # tests' locked environment has kernels 0.19.1), like torch. Every variant's build
      # runs it (nixgen.trust: the load check).
      kernels = python-prev.__stubMkEmptyPythonPackage "kernels" "0.17.2";
    })
  ];

  manylinux_2_28 = lib.makeScope final.newScope (self: {
    stdenv = final.stdenv;
    gcc14Stdenv = self.stdenv;
    cudaBackendStdenv = final.cudaPackages.backendStdenv;
  });

  # `clr` and `hipcc` wrap the machine's Debian hipcc (rocm-hip.nix).
  rocmPackages_7_1 = rocmHip "7.1.1" (rocmPackages "7.1.1");
  rocmPackages_7_2 = rocmHip "7.2.1" (rocmPackages "7.2.1");

  xpuPackages_2025_3_2 = mkXpuPackages "2025.3.2";
  xpuPackages_2026_0_0 = mkXpuPackages "2026.0.0";
  xpuPackages = final.xpuPackages_2025_3_1;

  cutlass_2_10 = cutlass "2.10.0";
  cutlass_3_5 = cutlass "3.5.1";
  cutlass_3_6 = cutlass "3.6.0";
  cutlass_3_8 = cutlass "3.8.0";
  cutlass_3_9 = cutlass "3.9.2";
  cutlass_4_0 = cutlass "4.0.0";
  cutlass_4_4 = cutlass "4.4.2";
  cutlass_4_5 = cutlass "4.5.2";

  # pkgs/metal-cpp: Apple's C++ Metal headers (real outputs out, dev, doc; here out and dev),
  # Darwin only.
  metal-cpp =
    let
      drv = prev.__stub.mkUnavailable {
        pname = "metal-cpp";
        version = "26";
        reason = "metal-cpp is a Darwin package";
        meta = {
          platforms = lib.platforms.darwin;
          license = lib.licenses.asl20;
        };
      };
    in
    drv
    // {
      out = drv;
      dev = drv;
    };
}
