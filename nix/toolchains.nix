/**
  What the kernels and the framework extension of each backend are built and linked with.

  Each entry takes the variant's package set (nixgen.project.pkgsFor: nixpkgs with the
  kernels toolchain's overlay) and returns
  `{ stdenv, compilers, nativeBuildInputs, buildInputs, linkFlags, abiCheck, opsCheck,
  cxxFamily, linker, linkDriver, torchFlags,
  variantCheck }`: `cxxFamily` is the compiler family of the stdenv's `$CXX`/`$CC`
  (`compile.families`: `"gcc"`, or `"clang"` when `stdenv.cc.isClang`, as on darwin),
  `linker` the linker family the extension's link speaks (`extension.linkers`: `"gnu"`, or
  `"ld64"` on darwin) and `linkDriver` the driver that links it (shell text: `$CXX`, or
  `icpx -fsycl` for XPU, which keeps the SYCL device images).

  The backends are `data/languages.json`'s, the one table nixgen reads too: every backend
  the kernels toolchain has a build set for has an entry here (a backend the table adds
  without one fails here, naming it); the others (`neuron`, `cann`: the toolchain's
  `mk-build-set.nix` has no `backendConfig` for them, and nixgen plans no variant for
  them) fail when used, naming the backend.

  On Linux everything is compiled with the toolchain's `manylinux_2_28` stdenvs (`stdenv`,
  and `cudaBackendStdenv` for CUDA), as the kernels toolchain compiles its own kernels
  (`nix-builder/lib/extension/default.nix`). `abiCheck` is the extension's ABI check, a
  setup hook (support/abi-check-hook.sh) that runs after the install, as the toolchain
  checks its own extensions: the toolchain's `kernel-builder check-abi` (manylinux, Python
  abi3, the torch stable ABI, the macOS minimum version), then on Linux nixgen's addition
  (support/abi_check.py: the libraries an extension may need, and unversioned symbols of a
  newer glibc). `opsCheck` is the torch ops check, a setup hook
  (support/ops-check-hook.sh) that runs after the unpack, as the toolchain's
  `torch-ops-check` does, on the package directory the derivation names
  (`torchOpsCheckDir`). `compilers` are the extra compilers kernels need (oneAPI's `icpx` for XPU).
  `torchFlags` is a function of the variant's torch (null: a variant without torch) giving
  what every compile of a torch extension takes from torch (`{ nvcc, cxx, inputs }`,
  `nixgen.torch.cudaCompileFlags`): for CUDA, the flags torch's CMake config gives, read
  from that torch at build time, as the kernels toolchain's CMake project gets them through
  `find_package(Torch)`; none for the other backends yet.
  `variantCheck` takes the variant's check Python and gives the variant check
  (`nixgen.trust.hook`: the digest, the load by the `kernels` client, symbols.json), the last
  step of every variant's build.

  # Type

  ```
  toolchains.<backend> :: Pkgs -> Toolchain
  ```
*/
let
  inherit (builtins) fromJSON readFile toFile toJSON;
  trust = import ./trust.nix;
  backends = (fromJSON (readFile ./data/languages.json)).backends;
  abiTable = fromJSON (readFile ./data/abi-policies.json);
  policies = removeAttrs abiTable [
    "_comment"
    "_generated"
    "extension"
  ];
  # What the addition also allows an extension (the table's `extension`, which
  # `nixgen check-abi` reads too): every extension's libraries, each backend's runtime.
  extensionLibraries = abiTable.extension;

  isLinux = pkgs: pkgs.stdenv.hostPlatform.isLinux;

  # The torch module of the library, with the variant's `lib`.
  torchLib = pkgs: import ./torch.nix { inherit (pkgs) lib; };

  # What a compile takes from torch on a backend that reads nothing from it.
  noTorchFlags = _: {
    nvcc = [ ];
    cxx = [ ];
    inputs = [ ];
  };

  # The compiler and linker families of a stdenv (see the header).
  families = stdenv: {
    cxxFamily = if stdenv.cc.isClang or false then "clang" else "gcc";
    linker = if stdenv.hostPlatform.isDarwin or false then "ld64" else "gnu";
  };

  /**
    The toolchain's manylinux_2_28 package set (stdenvs built against glibc 2.28).

    # Type

    ```
    manylinux :: Pkgs -> AttrSet
    ```
  */
  manylinux =
    pkgs:
    pkgs.manylinux_2_28
      or (throw "nixgen: the package set has no `manylinux_2_28`; it comes from the kernels toolchain's overlay (the `kernel-builder` flake input)");

  /**
    The toolchain's `kernel-builder` program, whose `check-abi` is the ABI check (the
    anchor's `nix-builder/pkgs/kernel-builder`, in its binary cache like the rest).

    # Type

    ```
    kernelBuilder :: Pkgs -> Derivation
    ```
  */
  kernelBuilder =
    pkgs:
    pkgs.kernel-builder
      or (throw "nixgen: the package set has no `kernel-builder`; it comes from the kernels toolchain's overlay (the `kernel-builder` flake input)");

  /**
    What nixgen's addition holds a Linux extension to: manylinux_2_28's glibc and
    libraries, with the torch and TVM FFI libraries (OpenMP's `libgomp.so.1` among them)
    and the backend's runtime libraries allowed.

    # Type

    ```
    additionPolicy :: [ String ] -> AttrSet
    ```
  */
  additionPolicy =
    runtimeLibraries:
    let
      base = policies.manylinux_2_28;
    in
    base
    // {
      name = "manylinux_2_28";
      # torch's, TVM FFI's and OpenMP's runtime (torch ships torch/lib/libgomp.so.1 and has
      # loaded it before a kernel's extension is imported): data/abi-policies.json.
      libraries = base.libraries ++ extensionLibraries.libraries ++ runtimeLibraries;
    };

  /**
    The ABI check hook; `policy` is nixgen's addition's (null: the toolchain's check only,
    for Mach-O extensions).

    # Type

    ```
    abiCheckHook :: Pkgs -> AttrSet | null -> Derivation
    ```
  */
  abiCheckHook =
    pkgs: policy:
    pkgs.makeSetupHook {
      name = "nixgen-abi-check-hook";
      substitutions = {
        kernelBuilder = "${kernelBuilder pkgs}/bin/kernel-builder";
        python = if policy == null then "" else pkgs.buildPackages.python3.interpreter;
        checker = if policy == null then "" else "${./support/abi_check.py}";
        policy = if policy == null then "" else toFile "nixgen-abi-policy.json" (toJSON policy);
      };
    } ./support/abi-check-hook.sh;

  /**
    The torch ops check hook (support/ops-check-hook.sh): after the unpack, the
    Python package directory the derivation names (`torchOpsCheckDir`) is checked for torch
    ops registered without `add_op_namespace_prefix` (support/torch/ops_check.py), as the
    kernels toolchain's `torch-ops-check` hook checks its extensions.

    # Type

    ```
    opsCheckHook :: Pkgs -> Derivation
    ```
  */
  opsCheckHook =
    pkgs:
    pkgs.makeSetupHook {
      name = "nixgen-torch-ops-check-hook";
      substitutions = {
        python = pkgs.buildPackages.python3.interpreter;
        checker = "${./support/torch/ops_check.py}";
      };
    } ./support/ops-check-hook.sh;

  /**
    A Linux toolchain: the portable stdenv and the ABI check with nixgen's addition (on
    another system: the package set's stdenv and the toolchain's check).

    # Type

    ```
    linux :: Pkgs -> { stdenv, compilers ? [ Derivation ], buildInputs ? [ Derivation ], linkFlags ? [ String ], runtimeLibraries ? [ String ], linkDriver ? String, torchFlags ? (Derivation | null -> AttrSet) } -> Toolchain
    ```
  */
  linux =
    pkgs:
    {
      stdenv,
      compilers ? [ ],
      buildInputs ? [ ],
      linkFlags ? [ ],
      runtimeLibraries ? [ ],
      linkDriver ? "$CXX",
      torchFlags ? noTorchFlags,
    }:
    if isLinux pkgs then
      {
        inherit
          stdenv
          compilers
          buildInputs
          linkFlags
          linkDriver
          torchFlags
          ;
        nativeBuildInputs = compilers;
        abiCheck = abiCheckHook pkgs (additionPolicy runtimeLibraries);
        opsCheck = opsCheckHook pkgs;
        variantCheck = trust.hook pkgs;
      }
      // families stdenv
    else
      {
        inherit (pkgs) stdenv;
        inherit
          compilers
          buildInputs
          linkFlags
          linkDriver
          torchFlags
          ;
        nativeBuildInputs = compilers;
        abiCheck = abiCheckHook pkgs null;
        opsCheck = opsCheckHook pkgs;
        variantCheck = trust.hook pkgs;
      }
      // families pkgs.stdenv;

  # The toolchain of each backend that has a build set.
  toolchains = {
    cpu = pkgs: linux pkgs { stdenv = (manylinux pkgs).stdenv; };

    # TPU variants are pure Python (the toolchain's TPU builds are noarch: its
    # `build-variants.nix` names them `torch-tpu`): the portable stdenv, nothing to compile.
    tpu = pkgs: linux pkgs { stdenv = (manylinux pkgs).stdenv; };

    cuda =
      pkgs:
      linux pkgs {
        stdenv =
          if isLinux pkgs then (manylinux pkgs).cudaBackendStdenv else pkgs.cudaPackages.backendStdenv;
        # The runtime, whose headers (cuda_runtime_api.h, which torch's c10/cuda headers
        # include) include CUDA's `crt/` headers. In nixpkgs those are their own component
        # from CUDA 13.0, `cuda_crt`, whose include output `cuda_cudart` propagates (with
        # CCCL's: pkgs/development/cuda-modules/packages/cuda_cudart.nix); before 13.0 they
        # are in cuda_nvcc's include, which cuda_cudart does not propagate at every revision,
        # so a binding (compiled without nvcc) names it.
        buildInputs = [
          pkgs.cudaPackages.cuda_cudart
        ]
        ++ (
          if pkgs.lib.versionOlder pkgs.cudaPackages.cudaMajorMinorVersion "13.0" then
            [ (pkgs.lib.getOutput "include" pkgs.cudaPackages.cuda_nvcc) ]
          else
            [ ]
        );
        # nvcc names host stubs after its process id (tmpxft_<pid>_…); dropping local
        # symbols keeps the extension's bytes independent of it.
        linkFlags = [
          "-lcudart"
          "-Wl,--discard-all"
        ];
        runtimeLibraries = extensionLibraries.runtime.cuda;
        # nvcc and the host compiler get what torch's CMake config gives a CUDA extension
        # (`--expt-extended-lambda`, …), read from the variant's torch.
        torchFlags =
          torch:
          if torch == null then noTorchFlags torch else (torchLib pkgs).cudaCompileFlags { inherit pkgs torch; };
      };

    rocm =
      pkgs:
      linux pkgs {
        stdenv = (manylinux pkgs).stdenv;
        compilers = [ pkgs.rocmPackages.clr ];
        buildInputs = [ pkgs.rocmPackages.clr ];
        linkFlags = [ "-lamdhip64" ];
        runtimeLibraries = extensionLibraries.runtime.rocm;
      };

    # The variant's oneAPI (`xpuPackages.oneapi-torch-dev`: icpx, SYCL, oneMKL), built with
    # the portable stdenv, as the kernels toolchain's extension builder uses it, and `ocloc`
    # (Intel's offline compiler, which `-fsycl-targets=spir64_gen` runs ahead of time: the
    # anchor's XPU extensions take `xpuPackages.ocloc` too). The extension is linked by
    # `icpx -fsycl`: a plain `$CXX` link would drop the kernels' SYCL device images.
    xpu =
      pkgs:
      let
        stdenv = (manylinux pkgs).stdenv;
        dev = pkgs.xpuPackages.oneapi-torch-dev;
        oneapi = if dev ? override then dev.override { inherit stdenv; } else dev;
      in
      linux pkgs {
        inherit stdenv;
        compilers = [
          oneapi
          pkgs.xpuPackages.ocloc
        ];
        buildInputs = [ oneapi ];
        linkDriver = "icpx -fsycl";
        linkFlags = [ "-lsycl" ];
        runtimeLibraries = extensionLibraries.runtime.xpu;
      };

    metal = pkgs: {
      inherit (pkgs) stdenv;
      # Apple's clang and ld64 (Metal builds only exist on darwin).
      cxxFamily = "clang";
      linker = "ld64";
      linkDriver = "$CXX";
      compilers = [ ];
      nativeBuildInputs = [ ];
      buildInputs = [ pkgs.apple-sdk_26 ];
      linkFlags = [
        "-framework"
        "Metal"
        "-framework"
        "Foundation"
      ];
      abiCheck = abiCheckHook pkgs null;
      opsCheck = opsCheckHook pkgs;
      torchFlags = noTorchFlags;
      variantCheck = trust.hook pkgs;
    };
  };
in
builtins.mapAttrs (
  backend: row:
  if row.buildSet == null then
    pkgs:
    throw "nixgen: backend `${backend}` has no build set in the kernels toolchain (its nix-builder/lib/mk-build-set.nix `backendConfig` has ${builtins.concatStringsSep ", " (builtins.attrNames toolchains)}), so no variant is built for it"
  else
    toolchains.${backend}
      or (throw "nixgen: data/languages.json lists backend `${backend}` with a build set, but toolchains.nix has no toolchain for it")
) backends
