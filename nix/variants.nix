/**
  Build variants of a kernel project, computed from the build-configuration table
  (`data/build-configs.json`) and the project's constraints — without importing nixpkgs,
  so listing variants costs milliseconds.

  This mirrors `nixgen/plan.py` rule for rule; the test suite checks that both give the
  same list for the examples and the corpus.
*/
let
  versions = import ./versions.nix;
  inherit (builtins)
    attrNames
    elem
    filter
    foldl'
    fromJSON
    hasAttr
    head
    readFile
    sort
    ;

  configBackends = [ "cuda" "rocm" "xpu" "metal" "cpu" "tpu" ];
  versionKeys = {
    cuda = "cudaVersion";
    rocm = "rocmVersion";
    xpu = "xpuVersion";
  };
  keyOf = backend: versionKeys.${backend} or backend;
in
rec {
  /**
    The build-configuration table, one attribute set per row with `backend`,
    `backendVersion`, `torch`, `systems`, `bundle` and `tvmFfi` decoded.

    # Type

    ```
    buildConfigs :: [ BuildConfig ]
    ```
  */
  buildConfigs = map decodeConfig (fromJSON (readFile ./data/build-configs.json)).configs;

  /**
    Decode one raw row of `build-configs.json`.

    # Type

    ```
    decodeConfig :: AttrSet -> BuildConfig
    ```

    # Examples

    ```nix
    (decodeConfig { torchVersion = "2.13"; cudaVersion = "13.0"; systems = [ "x86_64-linux" ]; bundleBuild = true; }).backend
    => "cuda"
    ```
  */
  decodeConfig =
    row:
    let
      backend = head (filter (b: (row.${keyOf b} or false) != false) configBackends);
    in
    {
      inherit backend;
      torch = row.torchVersion;
      backendVersion = if hasAttr backend versionKeys then row.${keyOf backend} else null;
      systems = row.systems;
      bundle = row.bundleBuild or false;
      tvmFfi = row.tvmFfiVersion or null;
    };

  /**
    The compute part of a variant name: `cu130`, `rocm71`, `xpu20253`, `cpu`, `metal`.

    # Type

    ```
    computeName :: String -> String | Null -> String
    ```

    # Examples

    ```nix
    computeName "cuda" "12.6"
    => "cu126"
    ```
  */
  computeName =
    backend: version:
    if backend == "cuda" then
      "cu${versions.short version}"
    else if backend == "rocm" || backend == "xpu" then
      "${backend}${versions.short version}"
    else
      backend;

  /**
    Name of a Torch variant; Linux names carry the `cxx11` ABI tag, macOS names do not.

    # Examples

    ```nix
    torchVariantName "2.13" "cuda" "13.0" "x86_64-linux"
    => "torch213-cxx11-cu130-x86_64-linux"
    ```
  */
  torchVariantName =
    torch: backend: version: system:
    let
      darwin = builtins.match ".*-darwin" system != null;
    in
    "torch${versions.short torch}${if darwin then "" else "-cxx11"}-${computeName backend version}-${system}";

  /**
    Name of a variant built against the Torch stable ABI.

    # Examples

    ```nix
    stableAbiVariantName "2.11" "cuda" "12.6" "x86_64-linux"
    => "torch-stable-abi211-cu126-x86_64-linux"
    ```
  */
  stableAbiVariantName =
    abi: backend: version: system:
    "torch-stable-abi${versions.short abi}-${computeName backend version}-${system}";

  /**
    Name of a TVM FFI variant.

    # Examples

    ```nix
    tvmFfiVariantName "0.1" "cpu" null "x86_64-linux"
    => "tvm-ffi01-cpu-x86_64-linux"
    ```
  */
  tvmFfiVariantName =
    tvmFfi: backend: version: system:
    "tvm-ffi${versions.short tvmFfi}-${computeName backend version}-${system}";

  /**
    Name of a variant without compiled code (pure Python) for one backend.

    # Examples

    ```nix
    noarchVariantName "cuda"
    => "torch-cuda"
    ```
  */
  noarchVariantName = backend: "torch-${backend}";

  /**
    Every variant of a project, sorted by system then name.

    The anchor's rules, as in `nixgen/plan.py`: keep the configurations within the
    project's bounds; for a backend built against the torch stable ABI keep only the
    newest torch per (backend version, system); a backend without a compiled kernel gets
    the pure-Python variant `torch-<backend>`; names that coincide are built once, from
    the first configuration in table order, and are bundled when any of them is. nixgen
    adds: a CUDA kernel is left out of configurations older than its `cudaMinver`, a
    configuration left without any kernel of its (kernel-bearing) backend is dropped,
    a torch older than the stable ABI its kernels target is not used, and a `tvm-ffi`
    backend without kernels builds nothing.

    # Inputs

    `project`
    : the project's variant constraints, as written by `nixgen render` in `project.nix`:
      `{ framework; backends; torch = { minver; maxver; stableAbi; }; cuda = { minver;
      maxver; }; kernels = { <name> = { backend; cudaMinver; }; }; }`

    `system`
    : only this system's variants, or `null` for all

    # Type

    ```
    variants :: Project -> String | Null -> [ Variant ]
    ```

    # Examples

    ```nix
    map (v: v.name) (variants {
      framework = "torch-noarch"; backends = [ "cuda" ]; kernels = { };
      torch = { minver = null; maxver = null; stableAbi = { }; };
      cuda = { minver = null; maxver = null; };
    } "x86_64-linux")
    => [ "torch-cuda" ]
    ```
  */
  variants =
    project: system:
    let
      isTorch = project.framework == "torch";
      isTvmFfi = project.framework == "tvm-ffi";
      compiled = isTorch || isTvmFfi;
      stableAbiFor = backend: if isTorch then project.torch.stableAbi.${backend} or null else null;
      kernelNames = sort (a: b: a < b) (attrNames project.kernels);
      hasKernels = backend: builtins.any (name: project.kernels.${name}.backend == backend) kernelNames;
      accepted =
        config:
        elem config.backend project.backends
        && (
          config.backend != "cuda"
          || versions.within {
            low = project.cuda.minver;
            high = project.cuda.maxver;
          } config.backendVersion
        )
        && (!isTvmFfi || config.tvmFfi != null)
        && (
          !isTorch
          || (
            versions.within {
              low = project.torch.minver;
              high = project.torch.maxver;
            } config.torch
            && (
              stableAbiFor config.backend == null
              || !hasKernels config.backend
              || versions.compare config.torch (stableAbiFor config.backend) >= 0
            )
          )
        );
      rows = builtins.concatMap (
        config:
        map (sys: { inherit config sys; }) (
          filter (s: system == null || s == system) config.systems
        )
      ) (filter accepted buildConfigs);
      groupKey = row: "${row.config.backend}/${toString row.config.backendVersion}/${row.sys}";
      newest = foldl' (
        acc: row:
        let
          key = groupKey row;
        in
        acc
        // {
          ${key} = if hasAttr key acc then versions.max acc.${key} row.config.torch else row.config.torch;
        }
      ) { } rows;
      kernelsFor =
        config:
        filter (
          name:
          let
            kernel = project.kernels.${name};
          in
          kernel.backend == config.backend
          && (
            kernel.cudaMinver or null == null
            || config.backendVersion == null
            || versions.compare config.backendVersion kernel.cudaMinver >= 0
          )
        ) kernelNames;
      noarch = config: sys: {
        name = noarchVariantName config.backend;
        system = sys;
        backend = config.backend;
        framework = "torch-noarch";
        torch = null;
        backendVersion = null;
        tvmFfi = null;
        stableAbi = null;
        bundle = config.bundle;
        kernels = [ ];
      };
      toVariant =
        row:
        let
          inherit (row) config sys;
          abi = stableAbiFor config.backend;
          kernels = kernelsFor config;
        in
        if abi != null && config.torch != newest.${groupKey row} then
          [ ]
        else if !compiled || !hasKernels config.backend then
          (if isTvmFfi then [ ] else [ (noarch config sys) ])
        else if kernels == [ ] then
          [ ]
        else
          [
            {
              name =
                if abi != null then
                  stableAbiVariantName abi config.backend config.backendVersion sys
                else if isTvmFfi then
                  tvmFfiVariantName config.tvmFfi config.backend config.backendVersion sys
                else
                  torchVariantName config.torch config.backend config.backendVersion sys;
              system = sys;
              inherit (config) backend torch backendVersion bundle;
              inherit (project) framework;
              tvmFfi = if isTvmFfi then config.tvmFfi else null;
              stableAbi = abi;
              inherit kernels;
            }
          ];
      # The first configuration of a name wins (the anchor's `listToAttrs`); it is
      # bundled when any configuration of that name is.
      merged = foldl' (
        acc: v:
        let
          key = "${v.name}@${v.system}";
        in
        if hasAttr key acc then
          acc // { ${key} = acc.${key} // { bundle = acc.${key}.bundle || v.bundle; }; }
        else
          acc // { ${key} = v; }
      ) { } (builtins.concatMap toVariant rows);
    in
    sort (a: b: if a.system == b.system then a.name < b.name else a.system < b.system) (
      builtins.attrValues merged
    );

  /**
    One variant per (system, backend) for quick pull-request builds: bundled first, then
    the newest torch, then the oldest backend version (the anchor's default-variant
    rule); ties go to the earlier variant. Mirrors `nixgen.plan.select_ci`.

    # Type

    ```
    selectCi :: [ Variant ] -> [ Variant ]
    ```
  */
  selectCi =
    variants':
    let
      # null sorts before every version, as in Python.
      compareOpt =
        a: b:
        if a == b then
          0
        else if a == null then
          -1
        else if b == null then
          1
        else
          versions.compare a b;
      better =
        a: b:
        if a.bundle != b.bundle then
          a.bundle
        else if compareOpt a.torch b.torch != 0 then
          compareOpt a.torch b.torch > 0
        else
          compareOpt a.backendVersion b.backendVersion < 0;
      best = foldl' (
        acc: v:
        let
          key = "${v.system}/${v.backend}";
        in
        if hasAttr key acc && !(better v acc.${key}) then acc else acc // { ${key} = v; }
      ) { } variants';
    in
    sort (a: b: if a.system == b.system then a.name < b.name else a.system < b.system) (
      builtins.attrValues best
    );

  /**
    Variant names only (what `nixgen variants` prints).

    # Type

    ```
    names :: Project -> String | Null -> [ String ]
    ```
  */
  names = project: system: map (v: v.name) (variants project system);
}
