/**
  Torch as the framework of an extension: where its headers and libraries are.
*/
{ lib }:
rec {
  /**
    The torch package directory inside a torch derivation (`<site-packages>/torch`).

    # Type

    ```
    dir :: Derivation -> String
    ```
  */
  dir = torch: "${torch}/${torch.pythonModule.sitePackages}/torch";

  /**
    Flags that make torch's C++ headers visible (a kernel with `depends = ["torch"]`).

    # Type

    ```
    includeFlags :: Derivation -> [ String ]
    ```
  */
  includeFlags =
    torch:
    let
      include = "${dir torch}/include";
    in
    [
      "-isystem"
      include
      "-isystem"
      "${include}/torch/csrc/api/include"
      # `__FILE__` in torch's inline headers would otherwise put torch's store path into
      # the objects (a needless runtime reference of the output).
      "-ffile-prefix-map=${include}/=torch/include/"
    ];

  /**
    The flags the kernels toolchain's build of a torch extension takes from `torch`, read
    from that torch when this derivation builds (support/torch/build_flags.py, which runs
    torch's own CMake config files with CMake: support/torch/cmake-flags.cmake). The
    anchor's CMake project calls `find_package(Torch)` and links the `torch` target, so
    every compile gets the usage requirements of `torch` (its compile definitions and
    options) and, for a CUDA build, the flags torch's `share/cmake/Caffe2/public/cuda.cmake`
    appends to CMAKE_CUDA_FLAGS (`--expt-relaxed-constexpr`, `--expt-extended-lambda`,
    `-Xcudafe --diag_suppress=…`, `-DONNX_NAMESPACE=onnx_c2`; never `-gencode`: those come
    from the plan), then the toolchain's flags from `torch.utils.cpp_extension`'s
    `COMMON_NVCC_FLAGS` (`-DENABLE_FP8`). Nothing is copied here: a torch whose config gives
    other flags gives those.

    `$out/nvcc` holds nvcc's flags (`nvcc --options-file`, one per line; a CUDA build:
    `cudaVersion` the toolkit's `major.minor`), `$out/cxx` a C++ compile's (`@file`), and
    `$out/flags.json` where each came from. A torch that is not a CUDA build, given a
    `cudaVersion`, fails the build, saying so.

    # Type

    ```
    buildFlags :: { pkgs, torch :: Derivation, cudaVersion ? String } -> Derivation
    ```
  */
  buildFlags =
    {
      pkgs,
      torch,
      cudaVersion ? null,
    }:
    pkgs.runCommand "${torch.pname or "torch"}-${torch.version or "0"}-build-flags"
      {
        nativeBuildInputs = [
          pkgs.buildPackages.cmake
          pkgs.buildPackages.python3
        ];
        torchDir = dir torch;
        cudaArgs = if cudaVersion == null then "" else "--cuda=${cudaVersion}";
      }
      ''
        python3 ${./support/torch/build_flags.py} --torch "$torchDir" \
          --script ${./support/torch/cmake-flags.cmake} $cudaArgs --out "$out"
      '';

  /**
    The flags that give a CUDA variant's compiles what `buildFlags` read from `torch` (the
    variant's), and the derivation they name (`inputs`, a build input of each compile's
    derivation, so `nixgen compdb` realises it): `nvcc` for nvcc, `cxx` for the host
    compiler's C++ compiles.

    # Type

    ```
    cudaCompileFlags :: { pkgs, torch :: Derivation } -> { nvcc :: [ String ], cxx :: [ String ], inputs :: [ Derivation ] }
    ```
  */
  cudaCompileFlags =
    { pkgs, torch }:
    let
      flags = buildFlags {
        inherit pkgs torch;
        cudaVersion = pkgs.cudaPackages.cudaMajorMinorVersion;
      };
    in
    {
      nvcc = [
        "--options-file"
        "${flags}/nvcc"
      ];
      cxx = [ "@${flags}/cxx" ];
      inputs = [ flags ];
    };

  /**
    No flags from torch: what a compile gets without it (`cudaCompileFlags`'s shape).
  */
  noCompileFlags = {
    nvcc = [ ];
    cxx = [ ];
    inputs = [ ];
  };

  /**
    Compile and link flags of a Torch extension (abi3 Python module, no rpath), and the
    derivations its compile reads (`inputs`). `compileFlags` is what the variant's
    toolchain takes from torch for every compile (`toolchains.<backend>.torchFlags`): its
    `cxx` flags follow torch's and Python's headers.

    # Type

    ```
    framework :: { torch :: Derivation, python :: Derivation, backend ? String, compileFlags ? AttrSet } -> { flags :: [ String ], libs :: [ String ], inputs :: [ Derivation ] }
    ```
  */
  framework =
    {
      torch,
      python,
      backend ? "cpu",
      compileFlags ? noCompileFlags,
    }:
    {
      # Torch's headers (`includeFlags`), then Python's, then what torch's config gives.
      flags =
        includeFlags torch
        ++ [
          "-isystem"
          "${python}/include/${python.libPrefix}"
        ]
        ++ compileFlags.cxx;
      inherit (compileFlags) inputs;
      libs = [
        "-L${dir torch}/lib"
        "-lc10"
        "-ltorch_cpu"
      ]
      ++ (backendLibs.${backend} or [ ]);
    };

  /**
    Torch's own libraries of a GPU backend, which a binding using its device API
    (`CUDAGuard`, `getCurrentCUDAStream`, …) needs besides `c10` and `torch_cpu`: what the
    anchor's build links through torch's CMake `torch` target.

    # Examples

    ```nix
    backendLibs.cuda
    => [ "-lc10_cuda" "-ltorch_cuda" ]
    ```
  */
  backendLibs = {
    cuda = [ "-lc10_cuda" "-ltorch_cuda" ];
    rocm = [ "-lc10_hip" "-ltorch_hip" ];
    xpu = [ "-lc10_xpu" "-ltorch_xpu" ];
  };

  /**
    Defines of a variant's C++ compiles: `-DTORCH_TARGET_VERSION=<hex>` for a variant built
    against the torch stable ABI (`variant.stableAbi`, e.g. "2.11"), none otherwise. The
    value is `(major << 56) | (minor << 48)`, as torch's headers compare it (and as the
    anchor computes it).

    # Type

    ```
    abiDefines :: Variant -> [ String ]
    ```

    # Examples

    ```nix
    abiDefines { stableAbi = "2.11"; }
    => [ "-DTORCH_TARGET_VERSION=0x020b000000000000" ]
    ```
  */
  abiDefines =
    variant:
    let
      abi = variant.stableAbi;
      parts = builtins.filter builtins.isString (builtins.split "\\." abi);
      # One byte as two lowercase hex digits (nixpkgs' `toHexString` is uppercase).
      hex2 =
        n:
        let
          i = builtins.fromJSON n;
        in
        assert i >= 0 && i < 256;
        lib.toLower (lib.fixedWidthString 2 "0" (lib.toHexString i));
    in
    if abi == null then
      [ ]
    else
      [
        "-DTORCH_TARGET_VERSION=0x${hex2 (builtins.elemAt parts 0)}${hex2 (builtins.elemAt parts 1)}000000000000"
      ];
}
