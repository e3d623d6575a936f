# Tests of `project.nix`: the per-variant package set, composed like the kernels
# toolchain's build sets (nix-builder/lib/mk-build-set.nix), and `toolchains.nix`.
let
  nixgen = import ../.;
  inherit (nixgen) project toolchains;
  variant = backend: backendVersion: {
    name = "v-${backend}";
    inherit backend backendVersion;
    torch = "2.13";
  };
  # A fake package set: an overlay applied to `prev`.
  apply = overlay: prev: prev // overlay (prev // overlay prev prev) prev;
  prev = {
    cudaPackages_13_0 = "cuda 13.0";
    rocmPackages_7_1 = "rocm 7.1";
    xpuPackages_2026_0_0 = "oneapi 2026.0.0";
    pythonPackagesExtensions = [ ];
  };
  fakeStdenv = name: {
    inherit name;
    hostPlatform.isLinux = name != "darwin";
  };
  linuxPkgs = {
    stdenv = fakeStdenv "linux";
    manylinux_2_28 = {
      stdenv = fakeStdenv "manylinux";
      cudaBackendStdenv = fakeStdenv "manylinux-cuda";
    };
    makeSetupHook = args: script: { hook = args.name; };
    buildPackages.python3.interpreter = "/python3";
    cudaPackages.cuda_cudart = "cudart";
  };
in
{
  testBackendConfigIsTheToolchains = {
    expr = map project.backendConfig [
      "cpu"
      "cuda"
      "rocm"
      "xpu"
      "metal"
    ];
    expected = [
      { allowUnfree = true; }
      {
        allowUnfree = true;
        cudaSupport = true;
      }
      {
        allowUnfree = true;
        rocmSupport = true;
      }
      {
        allowUnfree = true;
        xpuSupport = true;
      }
      {
        allowUnfree = true;
        metalSupport = true;
      }
    ];
  };

  testBuildSetOverlaySelectsTheVariantsVersion = {
    expr = map (v: apply (project.buildSetOverlay v) prev) [
      (variant "cuda" "13.0")
      (variant "rocm" "7.1")
      (variant "xpu" "2026.0.0")
    ];
    expected = [
      (prev // { cudaPackages = "cuda 13.0"; })
      (prev // { rocmPackages = "rocm 7.1"; })
      (prev // { xpuPackages = "oneapi 2026.0.0"; })
    ];
  };

  testAMissingVersionedSetIsAnError = {
    expr = (apply (project.buildSetOverlay (variant "rocm" "6.4")) prev).rocmPackages;
    expectedError = true;
  };

  testTorchIsTheToolchainsVersionedWheel = {
    expr =
      let
        ext = builtins.head (project.torchOverlay (variant "cpu" null) prev prev).pythonPackagesExtensions;
      in
      (ext { } { torch-bin_2_13 = "wheel 2.13"; }).torch;
    expected = "wheel 2.13";
  };

  testNoToolchainInputIsAnError = {
    expr = project.toolchainOverlays null;
    expectedError = true;
  };

  testLinuxBuildsUseTheManylinuxStdenvsAndCheckTheAbi = {
    expr = map (t: {
      stdenv = t.stdenv.name;
      hooks = t.nativeBuildInputs;
      policy = t.abiPolicy.name;
    }) [ (toolchains.cpu linuxPkgs) (toolchains.cuda linuxPkgs) ];
    expected = [
      {
        stdenv = "manylinux";
        hooks = [ { hook = "nixgen-abi-check-hook"; } ];
        policy = "manylinux_2_28";
      }
      {
        stdenv = "manylinux-cuda";
        hooks = [ { hook = "nixgen-abi-check-hook"; } ];
        policy = "manylinux_2_28";
      }
    ];
  };

  testAToolchainMayShipItsOwnPolicy = {
    expr =
      (toolchains.cpu (
        linuxPkgs
        // {
          manylinux_2_28 = linuxPkgs.manylinux_2_28 // {
            abiPolicy = {
              name = "own";
              libraries = [ "libc.so.6" ];
            };
          };
        }
      )).abiPolicy;
    expected = {
      name = "own";
      libraries = [
        "libc.so.6"
        "libtorch*.so*"
        "libc10*.so*"
        "libtvm_ffi.so*"
        "libgomp.so.1"
      ];
    };
  };
}
