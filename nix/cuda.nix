/**
  CUDA compute capabilities: which ones a toolkit can compile for, and the nvcc flags
  that request them. Reads `data/cuda-capabilities.json` and
  `data/builder-cuda-capabilities.json`, the same tables as `nixgen/tables.py`.
*/
let
  versions = import ./versions.nix;
  inherit (builtins) filter fromJSON head listToAttrs match readFile replaceStrings;

  db = fromJSON (readFile ./data/cuda-capabilities.json);
  ranges = listToAttrs (
    map (row: {
      name = row.capability;
      value = row;
    }) db.capabilities
  );
in
rec {
  /**
    The capabilities built when a kernel lists none (the builder's default set).

    # Type

    ```
    defaultCapabilities :: [ String ]
    ```
  */
  defaultCapabilities = (fromJSON (readFile ./data/builder-cuda-capabilities.json)).capabilities;

  /**
    Whether CUDA `cudaVersion` can compile for `capability` (`8.0`, `9.0a`, `10.0f`).

    # Type

    ```
    supported :: String -> String -> Bool
    ```

    # Examples

    ```nix
    supported "7.0" "13.0"
    => false
    supported "9.0a" "12.6"
    => true
    supported "11.8" "13.0"
    => false
    ```
  */
  supported =
    capability: cudaVersion:
    let
      parts = match "([0-9]+)\\.([0-9]+)([af]?)" capability;
      base = if parts == null then null else "${head parts}.${builtins.elemAt parts 1}";
      suffix = if parts == null then "" else builtins.elemAt parts 2;
      # Anything that is not a known capability (`sm_80`, `11.8`, `8.0a`) is simply not
      # supported: `build.toml` may list capabilities this table does not know (a warning).
      row = if base == null then null else ranges.${base} or null;
      suffixExists =
        suffix == ""
        || (suffix == "a" && versions.compare base db.arch_specific_from >= 0)
        || (suffix == "f" && versions.compare base db.family_specific_from >= 0);
      low =
        if suffix == "a" then
          versions.max row.min db.arch_specific_min
        else if suffix == "f" then
          versions.max row.min db.family_specific_min
        else
          row.min;
    in
    row != null
    && suffixExists
    && versions.within {
      inherit low;
      high = row.max;
    } cudaVersion;

  /**
    The capabilities a kernel is compiled for with one toolkit: its own list (or the
    default set) restricted to what the toolkit supports, in the kernel's order.

    # Inputs

    `requested`
    : the kernel's `cuda-capabilities`, or `null` for the default set

    `cudaVersion`
    : the toolkit version (`cudaPackages.cudaMajorMinorVersion`)

    # Type

    ```
    capabilitiesFor :: [ String ] | Null -> String -> [ String ]
    ```

    # Examples

    ```nix
    capabilitiesFor [ "7.0" "8.0" "9.0" ] "13.0"
    => [ "8.0" "9.0" ]
    ```
  */
  capabilitiesFor =
    requested: cudaVersion:
    filter (c: supported c cudaVersion) (if requested == null then defaultCapabilities else requested);

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
      newest = if plain == [ ] then null else builtins.foldl' versions.max (head plain) plain;
    in
    real ++ (if newest == null then [ ] else [ "-gencode=arch=compute_${archName newest},code=compute_${archName newest}" ]);
}
