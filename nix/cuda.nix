/**
  CUDA compute capabilities: the nvcc flags that request them, and the lookup of a
  kernel's planned capabilities for the variant's toolkit.

  Which capabilities a toolkit can compile for is planned by nixgen (`nixgen/planning/kernels.py`,
  from `data/cuda-capabilities.json`) and written into each kernel's file as a table
  from CUDA version to capabilities; nothing here recomputes it.
*/
let
  inherit (builtins) attrNames concatStringsSep foldl' head match replaceStrings;
in
rec {
  /**
    The capabilities a kernel is compiled for with the toolkit `cudaVersion`: its entry
    in the kernel's planned table, read as it is. Whether that entry may be empty is a
    planning rule with one home, `nixgen.plan.unbuildable_capabilities`, which refuses the
    render first; the library does not check it again. A toolkit the table lacks fails,
    naming the ones it has.

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
    A capability without its `+PTX` suffix: `9.0+PTX` → `9.0`, `8.0` → `8.0`.

    # Examples

    ```nix
    baseOf "9.0+PTX"
    => "9.0"
    ```
  */
  baseOf =
    capability:
    let
      m = match "(.*)\\+PTX" capability;
    in
    if m == null then capability else head m;

  /**
    Whether a capability asks for its PTX too (`9.0+PTX`, the anchor's spelling).

    # Examples

    ```nix
    map withPtx [ "9.0+PTX" "9.0" ]
    => [ true false ]
    ```
  */
  withPtx = capability: baseOf capability != capability;

  /**
    The nvcc architecture name of a capability: `8.0` → `80`, `9.0a` → `90a`,
    `9.0+PTX` → `90`.

    # Examples

    ```nix
    archName "9.0a"
    => "90a"
    ```
  */
  archName = capability: replaceStrings [ "." ] [ "" ] (baseOf capability);

  /**
    nvcc `-gencode` flags, one per capability in the given order: real code (SASS) for
    each, and for a `+PTX` capability its PTX as well (`code=[sm_90,compute_90]`), which
    newer GPUs JIT-compile. PTX only where a capability asks for it, as the anchor's
    `set_gencode_flags_for_srcs` does.

    # Type

    ```
    gencodeFlags :: [ String ] -> [ String ]
    ```

    # Examples

    ```nix
    gencodeFlags [ "8.0" "9.0+PTX" ]
    => [ "-gencode=arch=compute_80,code=sm_80" "-gencode=arch=compute_90,code=[sm_90,compute_90]" ]
    ```
  */
  gencodeFlags = map (
    c:
    let
      a = archName c;
    in
    "-gencode=arch=compute_${a},code=" + (if withPtx c then "[sm_${a},compute_${a}]" else "sm_${a}")
  );

  /**
    How many device codes nvcc produces for the capabilities: one per capability, two for
    a `+PTX` one (SASS and PTX), which `--threads` compiles side by side.

    # Type

    ```
    targetCount :: [ String ] -> Int
    ```

    # Examples

    ```nix
    targetCount [ "8.0" "9.0+PTX" ]
    => 3
    ```
  */
  targetCount = capabilities: foldl' (n: c: n + (if withPtx c then 2 else 1)) 0 capabilities;

  /**
    The CUDA package set `cudaPackages` whose nvcc assembles and links device code with
    the ptxas and nvlink of another CUDA set, `ptxasPackages` (nixgen.toml's
    `[backend.cuda.ptxas]`; a kernel-builder flake's `ptxasVersion`): its `cuda_nvcc`
    with those tools copied over its own from the other set's unpacked redistributable
    (`cuda_nvcc.src`) at the start of its `postInstall`, before the package's own steps,
    as the kernels toolchain's `overlayForCudaVersion` (nix-builder/lib/mk-build-set.nix)
    does. NVVM (`nvvm/bin`, cicc) comes along from a set older than 13.0, whose nvcc
    redistributable holds it; from 13.0 on nixpkgs' `cuda_nvcc` takes NVVM from the
    separate `libnvvm`, and the toolkit's own stays. `null`: `cudaPackages` as it is.

    # Type

    ```
    withPtxas :: CudaPackages -> CudaPackages | Null -> CudaPackages
    ```

    # Examples

    ```nix
    withPtxas { cudaMajorMinorVersion = "12.6"; } null
    => { cudaMajorMinorVersion = "12.6"; }
    ```
  */
  withPtxas =
    cudaPackages: ptxasPackages:
    if ptxasPackages == null then
      cudaPackages
    else
      let
        src = ptxasPackages.cuda_nvcc.src;
        nvvm = builtins.compareVersions ptxasPackages.cudaMajorMinorVersion "13.0" < 0;
      in
      cudaPackages.overrideScope (
        final: prev: {
          cuda_nvcc = prev.cuda_nvcc.overrideAttrs (old: {
            postInstall =
              ''
                cp -f ${src}/bin/ptxas "$out/bin/ptxas"
                cp -f ${src}/bin/nvlink "$out/bin/nvlink"
              ''
              + (if nvvm then "cp -f ${src}/nvvm/bin/* \"$out/nvvm/bin/\"\n" else "")
              + (old.postInstall or "");
          });
        }
      );
}
