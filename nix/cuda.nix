/**
  CUDA compute capabilities: the nvcc flags that request them, and the lookup of a
  kernel's planned capabilities for the variant's toolkit.

  Which capabilities a toolkit can compile for is planned by nixgen (`nixgen/plan.py`,
  from `data/cuda-capabilities.json`) and written into each kernel's file as a table
  from CUDA version to capabilities; nothing here recomputes it.
*/
let
  versions = import ./versions.nix;
  inherit (builtins) attrNames concatStringsSep filter foldl' head match replaceStrings;
in
rec {
  /**
    The capabilities a kernel is compiled for with the toolkit `cudaVersion`: its entry
    in the kernel's planned table.

    # Inputs

    `planned`
    : CUDA version → capabilities, as `nixgen render` writes it

    `cudaVersion`
    : the toolkit version (`cudaPackages.cudaMajorMinorVersion`)

    # Type

    ```
    capabilitiesFor :: { ${version} :: [ String ] } -> String -> [ String ]
    ```

    # Examples

    ```nix
    capabilitiesFor { "12.6" = [ "8.0" ]; "13.0" = [ "8.0" "9.0" ]; } "13.0"
    => [ "8.0" "9.0" ]
    ```
  */
  capabilitiesFor =
    planned: cudaVersion:
    planned.${cudaVersion} or (throw (
      "nixgen: CUDA ${cudaVersion} is not in the build table this project was rendered with "
      + "(${concatStringsSep ", " (attrNames planned)}); render again with a nixgen that knows it"
    ));

  /**
    The capabilities kernel `name` compiles for with CUDA `cudaVersion`
    (`capabilitiesFor`); none fails, naming the kernel and the toolkit.

    # Type

    ```
    kernelCapabilities :: String -> { ${version} :: [ String ] } -> String -> [ String ]
    ```

    # Examples

    ```nix
    kernelCapabilities "gemm" { "13.0" = [ "9.0" ]; } "13.0"
    => [ "9.0" ]
    ```
  */
  kernelCapabilities =
    name: planned: cudaVersion:
    let
      capabilities = capabilitiesFor planned cudaVersion;
    in
    if capabilities == [ ] then
      throw "nixgen: kernel ${name}: none of its CUDA capabilities can be built with CUDA ${cudaVersion}"
    else
      capabilities;

  /**
    The nvcc architecture name of a capability: `8.0` → `80`, `9.0a` → `90a`.

    # Examples

    ```nix
    archName "9.0a"
    => "90a"
    ```
  */
  archName = capability: replaceStrings [ "." ] [ "" ] capability;

  /**
    nvcc `-gencode` flags: real code (SASS) for every capability, in the given order, plus
    PTX for the newest plain capability (whatever its position in the list) so newer GPUs
    can JIT-compile it (nixpkgs' `cudaForwardCompat`). `9.0a`/`10.0f` code runs only on
    its own architecture (family), so it never provides the PTX.

    # Type

    ```
    gencodeFlags :: [ String ] -> [ String ]
    ```

    # Examples

    ```nix
    gencodeFlags [ "8.0" "9.0" ]
    => [ "-gencode=arch=compute_80,code=sm_80" "-gencode=arch=compute_90,code=sm_90" "-gencode=arch=compute_90,code=compute_90" ]
    ```
  */
  gencodeFlags =
    capabilities:
    let
      real = map (
        c: "-gencode=arch=compute_${archName c},code=sm_${archName c}"
      ) capabilities;
      plain = filter (c: match ".*[af]" c == null) capabilities;
      newest = if plain == [ ] then null else foldl' versions.max (head plain) plain;
    in
    real ++ (if newest == null then [ ] else [ "-gencode=arch=compute_${archName newest},code=compute_${archName newest}" ]);
}
