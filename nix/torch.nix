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
    Compile and link flags of a Torch extension (abi3 Python module, no rpath).

    # Type

    ```
    framework :: { torch :: Derivation, python :: Derivation, backend ? String } -> { flags :: [ String ], libs :: [ String ] }
    ```
  */
  framework =
    {
      torch,
      python,
      backend ? "cpu",
    }:
    {
      # Torch's headers (`includeFlags`), then Python's.
      flags = includeFlags torch ++ [
        "-isystem"
        "${python}/include/${python.libPrefix}"
      ];
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
