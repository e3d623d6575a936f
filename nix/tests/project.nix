# Tests of `project.nix`: the per-variant package set, composed like the kernels
# toolchain's build sets (nix-builder/lib/mk-build-set.nix), and `toolchains.nix`.
let
  nixgen = import ../.;
  inherit (nixgen) project toolchains;
  variant = backend: backendVersion: {
    name = "v-${backend}";
    inherit backend backendVersion;
    torch = "2.13";
    ptxasVersion = null;
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
    makeSetupHook = args: script: {
      hook = args.name;
      inherit (args) substitutions;
    };
    kernel-builder = "/kernel-builder";
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
      "tpu"
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
      {
        allowUnfree = true;
        tpuSupport = true;
      }
    ];
  };

  testBackendsWithoutABuildSetFailNamingThemselves = {
    expr = map (b: (builtins.tryEval (project.backendConfig b)).success) [
      "neuron"
      "cann"
    ];
    expected = [
      false
      false
    ];
  };

  testAPureVariantKeepsThePackageSetsToolkit = {
    expr = apply (project.buildSetOverlay (variant "cuda" null)) prev;
    expected = prev;
  };

  testTheFormatIsCheckedFirst = {
    expr = map (data: (builtins.tryEval (project.checkFormat data).name).success) [
      {
        # this library's format (its data/format.json)
        formatVersion = (builtins.fromJSON (builtins.readFile ../data/format.json)).format;
        name = "p";
      }
      {
        formatVersion = 0;
        nixgenVersion = "0.0.9";
        name = "p";
      }
      { name = "p"; }
    ];
    expected = [
      true
      false
      false
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

  # nixgen.toml's `[backend.cuda.ptxas]` reaches the variant's `cudaPackages`: the
  # toolkit's set with the pinned set's nvcc tools (`nixgen.cuda.withPtxas`); a pinned
  # set the package set lacks is an error naming it.
  testAPtxasPinOverridesTheToolkitsNvcc =
    let
      scope = version: {
        cudaMajorMinorVersion = version;
        cuda_nvcc = {
          src = "/redist-${version}";
          overrideAttrs = f: f { };
        };
        overrideScope =
          f:
          scope version
          // f { } {
            cuda_nvcc = (scope version).cuda_nvcc;
          };
      };
      sets = prev // {
        cudaPackages_12_6 = scope "12.6";
        cudaPackages_12_8 = scope "12.8";
      };
      pinned = (variant "cuda" "12.6") // {
        ptxasVersion = "12.8";
      };
      result = (apply (project.buildSetOverlay pinned) sets).cudaPackages;
    in
    {
      expr = [
        result.cudaMajorMinorVersion
        (builtins.match ".*cp -f /redist-12.8/bin/ptxas.*" result.cuda_nvcc.postInstall != null)
        (builtins.tryEval (apply (project.buildSetOverlay pinned) prev).cudaPackages).success
      ];
      expected = [
        "12.6"
        true
        false
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

  # As the toolchain's flake-provenance.nix: what its binary cache's kernel-builder is built with.
  testBuilderProvenanceIsTheToolchainInputsRevision = {
    expr = map project.builderProvenance [
      { rev = "8ac69fc5"; }
      { dirtyRev = "8ac69fc5-dirty"; }
      { }
      /tmp
    ];
    expected = [
      {
        sha = "8ac69fc5";
        dirty = false;
      }
      {
        sha = "8ac69fc5";
        dirty = true;
      }
      null
      null
    ];
  };

  testNoToolchainInputIsAnError = {
    expr = project.toolchainOverlays null;
    expectedError = true;
  };

  testLinuxBuildsUseTheManylinuxStdenvsAndCheckTheAbi = {
    expr = map (t: {
      stdenv = t.stdenv.name;
      inherit (t) nativeBuildInputs;
      hook = t.abiCheck.hook;
      kernelBuilder = t.abiCheck.substitutions.kernelBuilder;
      python = t.abiCheck.substitutions.python;
    }) [ (toolchains.cpu linuxPkgs) (toolchains.cuda linuxPkgs) ];
    expected = [
      {
        stdenv = "manylinux";
        nativeBuildInputs = [ ];
        hook = "nixgen-abi-check-hook";
        kernelBuilder = "/kernel-builder/bin/kernel-builder";
        python = "/python3";
      }
      {
        stdenv = "manylinux-cuda";
        nativeBuildInputs = [ ];
        hook = "nixgen-abi-check-hook";
        kernelBuilder = "/kernel-builder/bin/kernel-builder";
        python = "/python3";
      }
    ];
  };

  # nixgen's addition: manylinux_2_28's glibc and libraries, torch's, the backend runtime's.
  # Compared as the file the hook is given (a `builtins.toFile` path is the same for the same
  # text; reading it back would be refused in a flake's pure evaluation, which runs these).
  testTheAdditionsPolicyIsManylinux_2_28sWithTheFrameworkLibraries = {
    expr = (toolchains.cuda linuxPkgs).abiCheck.substitutions.policy;
    expected = builtins.toFile "nixgen-abi-policy.json" (builtins.toJSON {
      name = "manylinux_2_28";
      glibc = "2.28";
      libraries = [
        "libc.so.6"
        "libm.so.6"
        "libstdc++.so.6"
        "libgcc_s.so.1"
        "libpthread.so.0"
        "libdl.so.2"
        "librt.so.1"
        "ld-linux-x86-64.so.2"
        "ld-linux-aarch64.so.1"
        "libtorch*.so*"
        "libc10*.so*"
        "libtvm_ffi.so*"
        "libgomp.so.1"
        "libcudart.so*"
      ];
    });
  };

  # Mach-O extensions get the toolchain's check (macOS minimum, abi3) and no addition.
  testDarwinExtensionsGetTheToolchainsCheckOnly = {
    expr = map (t: t.abiCheck.substitutions) [
      (toolchains.metal (linuxPkgs // { stdenv = fakeStdenv "darwin"; apple-sdk_26 = "sdk"; }))
      (toolchains.cpu (linuxPkgs // { stdenv = fakeStdenv "darwin"; }))
    ];
    expected =
      let
        only = {
          kernelBuilder = "/kernel-builder/bin/kernel-builder";
          python = "";
          checker = "";
          policy = "";
        };
      in
      [
        only
        only
      ];
  };

  # The torch ops check is a setup hook of every toolchain, Linux and darwin alike (the
  # anchor's torch extensions of every backend take `torch-ops-check`).
  testEveryToolchainChecksTheTorchOps = {
    expr = map (t: {
      inherit (t.opsCheck) hook;
      inherit (t.opsCheck.substitutions) python;
    }) [
      (toolchains.cpu linuxPkgs)
      (toolchains.cuda linuxPkgs)
      (toolchains.metal (linuxPkgs // { stdenv = fakeStdenv "darwin"; apple-sdk_26 = "sdk"; }))
    ];
    expected =
      let
        hook = {
          hook = "nixgen-torch-ops-check-hook";
          python = "/python3";
        };
      in
      [
        hook
        hook
        hook
      ];
  };

  testCommunityCiNamesAreEachBackendsAndNeverReadNixpkgs = {
    expr =
      let
        built = project.mkCheckedProject {
          root = ./.;
          extension = ./.;
          noarch = ./.;
          project = {
            name = "p";
            variants = [
              {
                name = "a";
                system = "x86_64-linux";
                backend = "cuda";
                bundle = true;
                ci = true;
              }
              # A backend whose only variant is outside the bundle still has both names.
              {
                name = "b";
                system = "x86_64-linux";
                backend = "tpu";
                bundle = false;
                ci = true;
              }
              {
                name = "c";
                system = "aarch64-linux";
                backend = "cpu";
                bundle = true;
                ci = true;
              }
            ];
          };
        };
        legacy = built.legacyPackages {
          nixpkgs = throw "nixpkgs was read";
          system = "x86_64-linux";
        };
      in
      map builtins.attrNames [
        legacy.backendBundle
        legacy.backendCi
      ];
    expected = [
      [
        "cuda"
        "tpu"
      ]
      [
        "cuda"
        "tpu"
      ]
    ];
  };

  testNoKernelBuilderIsAnError = {
    expr = (toolchains.cpu (removeAttrs linuxPkgs [ "kernel-builder" ])).abiCheck.substitutions.kernelBuilder;
    expectedError = true;
  };
}
