/**
  Assemble a kernel project: its variants, one nixpkgs instance per variant, the kernel
  derivations, the framework extension and the bundles.

  `nixgen render` writes a `default.nix` that calls `mkProject` with the project's data
  (`project.nix`), the kernel files (`kernels/<name>.nix`) and the extension file.
*/
{ nixgen }:
let
  inherit (builtins)
    attrNames
    filter
    functionArgs
    intersectAttrs
    listToAttrs
    map
    ;
  versions = nixgen.versions;
in
rec {
  /**
    The overlay that selects a variant's toolkit: `cudaPackages`, `rocmPackages` or
    `xpuPackages` of the variant's backend version.

    # Type

    ```
    buildSetOverlay :: Variant -> Overlay
    ```
  */
  buildSetOverlay =
    variant: final: prev:
    let
      suffix = builtins.replaceStrings [ "." ] [ "_" ] (toString variant.backendVersion);
      pick =
        name:
        let
          attr = "${name}_${if variant.backend == "xpu" then suffix else versions.underscored variant.backendVersion}";
        in
        if final ? ${attr} then
          final.${attr}
        else
          throw "nixgen: nixpkgs has no `${attr}`, needed by variant ${variant.name}; add it with an overlay";
    in
    if variant.backend == "cuda" then
      { cudaPackages = pick "cudaPackages"; }
    else if variant.backend == "rocm" then
      { rocmPackages = pick "rocmPackages"; }
    else if variant.backend == "xpu" then
      { xpuPackages = pick "xpuPackages"; }
    else
      { };

  /**
    The nixpkgs instance of one variant: unfree packages allowed (CUDA), the backend's
    support flag set, and `buildSetOverlay` before the caller's overlays.
  */
  pkgsFor =
    {
      nixpkgs,
      system,
      overlays ? [ ],
      config ? { },
    }:
    variant:
    import nixpkgs {
      inherit system;
      config = {
        allowUnfree = true;
        cudaSupport = variant.backend == "cuda";
        rocmSupport = variant.backend == "rocm";
      }
      // config;
      overlays = [ (buildSetOverlay variant) ] ++ overlays;
    };

  /**
    The torch package of a variant: `python3Packages.torch-bin_<major>_<minor>`.
  */
  torchFor =
    pkgs: variant:
    let
      attr = "torch-bin_${versions.underscored variant.torch}";
    in
    pkgs.python3Packages.${attr}
      or (throw "nixgen: nixpkgs has no `python3Packages.${attr}` for variant ${variant.name}; add it with an overlay");

  /**
    `callPackage` that passes only the extra arguments the function declares, so a
    kernel file lists exactly what it uses.
  */
  callWith =
    pkgs: file: extra:
    let
      fn = import file;
    in
    pkgs.callPackage fn (intersectAttrs (functionArgs fn) extra);

  /**
    A project's outputs.

    # Inputs

    `root`
    : the project root (a path)

    `project`
    : the data `nixgen render` wrote to `project.nix`

    `extension`
    : the extension file (`extension.nix`)

    `noarch`
    : the file of the pure-Python variant (`noarch.nix`)
  */
  mkProject =
    {
      root,
      project,
      extension,
      noarch,
    }:
    rec {
      inherit project;

      /**
        Variants for `system` (or all when `null`); cheap: no nixpkgs is imported.
      */
      variants = system: nixgen.variants.variants project system;

      /**
        The derivation of one variant.
      */
      variantPackage =
        args: variant:
        let
          pkgs = pkgsFor args variant;
          isNoarch = variant.framework == "torch-noarch";
          torch = if variant.torch == null then null else torchFor pkgs variant;
          kernels = listToAttrs (
            map (name: {
              inherit name;
              value = callWith pkgs project.kernels.${name}.file {
                inherit nixgen root torch variant;
              };
            }) variant.kernels
          );
        in
        callWith pkgs (if isNoarch then noarch else extension) {
          inherit nixgen root torch kernels variant;
          projectData = project;
          toolchain = nixgen.toolchains.${variant.backend} pkgs;
        };

      /**
        Packages of `system`: one per variant, the bundle of all bundled variants
        (`kernels`, also `default`), and one bundle per backend (`bundle-<backend>`).
      */
      packages =
        args@{ nixpkgs, system, ... }:
        let
          all = variants system;
          host = import nixpkgs { inherit system; };
          built = map (v: {
            inherit (v) name backend bundle;
            path = variantPackage args v;
          }) all;
          bundle =
            name: selected:
            host.linkFarm name (
              map (b: {
                inherit (b) name path;
              }) selected
            );
          bundled = filter (b: b.bundle) built;
          backends = nixgen.unique (map (b: b.backend) bundled);
          kernels = bundle "${project.name}-kernels" bundled;
        in
        listToAttrs (
          map (b: {
            inherit (b) name;
            value = b.path;
          }) built
        )
        // listToAttrs (
          map (backend: {
            name = "bundle-${backend}";
            value = bundle "${project.name}-${backend}" (filter (b: b.backend == backend) bundled);
          }) backends
        )
        // {
          inherit kernels;
          default = kernels;
        };
    };
}
