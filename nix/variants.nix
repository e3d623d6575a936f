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
    all
    attrNames
    elem
    filter
    foldl'
    fromJSON
    hasAttr
    head
    length
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
  */
  variants =
    project: system:
    let
      forSystem = config: filter (s: system == null || s == system) config.systems;
      wanted = filter (c: elem c.backend project.backends) buildConfigs;
      noarch = config: sys: {
        name = noarchVariantName config.backend;
        system = sys;
        backend = config.backend;
        framework = "torch-noarch";
        torch = null;
        backendVersion = null;
        tvmFfi = null;
        stableAbi = null;
        bundle = true;
        kernels = [ ];
      };
      compiled = project.framework == "torch" || project.framework == "tvm-ffi";
      stableAbiFor = backend: project.torch.stableAbi.${backend} or null;
      accepted =
        config:
        (config.backend != "cuda" || versions.within {
          low = project.cuda.minver;
          high = project.cuda.maxver;
        } config.backendVersion)
        && (project.framework != "tvm-ffi" || config.tvmFfi != null)
        && (
          project.framework != "torch"
          || (
            versions.within {
              low = project.torch.minver;
              high = project.torch.maxver;
            } config.torch
            && (stableAbiFor config.backend == null || versions.compare config.torch (stableAbiFor config.backend) >= 0)
          )
        );
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
        ) (sort (a: b: a < b) (attrNames project.kernels));
      candidates = builtins.concatMap (
        config: map (sys: { inherit config sys; kernels = kernelsFor config; }) (forSystem config)
      ) (filter accepted wanted);
      groupKey = c: "${c.config.backend}/${toString c.config.backendVersion}/${c.sys}";
      newest = foldl' (
        acc: c:
        acc
        // {
          ${groupKey c} =
            if hasAttr (groupKey c) acc then versions.max acc.${groupKey c} c.config.torch else c.config.torch;
        }
      ) { } candidates;
      toVariant =
        c:
        let
          inherit (c) config sys kernels;
          abi = if project.framework == "torch" then stableAbiFor config.backend else null;
        in
        if kernels == [ ] then
          # A backend without any kernel ships pure Python; one whose kernels all need a
          # newer toolkit (cuda-minver) is not built for this configuration at all.
          (
            if project.framework == "torch" && !(builtins.any (k: k.backend == config.backend) (builtins.attrValues project.kernels)) then
              [ (noarch config sys) ]
            else
              [ ]
          )
        else if abi != null && config.torch != newest.${groupKey c} then
          [ ]
        else
          [
            {
              name =
                if abi != null then
                  stableAbiVariantName abi config.backend config.backendVersion sys
                else if project.framework == "tvm-ffi" then
                  tvmFfiVariantName config.tvmFfi config.backend config.backendVersion sys
                else
                  torchVariantName config.torch config.backend config.backendVersion sys;
              system = sys;
              inherit (config) backend torch backendVersion bundle;
              inherit (project) framework;
              tvmFfi = if project.framework == "tvm-ffi" then config.tvmFfi else null;
              stableAbi = abi;
              inherit kernels;
            }
          ];
      all' =
        if compiled then
          builtins.concatMap toVariant candidates
        else
          builtins.concatMap (config: map (noarch config) (forSystem config)) wanted;
      # Two configurations can map to one name: the first in table order wins.
      deduped =
        (foldl' (
          acc: v:
          let
            key = "${v.name}@${v.system}";
          in
          if hasAttr key acc.seen then
            acc
          else
            {
              seen = acc.seen // { ${key} = true; };
              list = acc.list ++ [ v ];
            }
        ) { seen = { }; list = [ ]; } all').list;
    in
    sort (a: b: if a.system == b.system then a.name < b.name else a.system < b.system) deduped;

  /**
    Variant names only (what `nixgen variants` prints).

    # Type

    ```
    names :: Project -> String | Null -> [ String ]
    ```
  */
  names = project: system: map (v: v.name) (variants project system);
}
