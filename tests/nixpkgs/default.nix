# Entry point of the stub nixpkgs: `import <stub> { system; config; overlays; }`, like
# nixpkgs' default.nix -> pkgs/top-level/impure.nix -> pkgs/top-level/default.nix.
#
# The package set is a fixed point with overlays applied exactly like nixpkgs does
# (`final: prev:`; later overlays see the results of earlier ones). Unlike nixpkgs, unknown
# top-level arguments are an error (nixpkgs' impure.nix ignores them), because a misplaced
# `cudaSupport = true;` outside `config` is a bug worth catching.
{
  localSystem ? null,
  system ? (if localSystem == null then builtins.currentSystem else localSystem.system or localSystem),
  crossSystem ? null,
  config ? { },
  overlays ? [ ],
  crossOverlays ? [ ],
  ...
}@args:
let
  lib = import ./lib;

  knownArgs = [
    "localSystem"
    "system"
    "crossSystem"
    "config"
    "overlays"
    "crossOverlays"
  ];
  unknownArgs = builtins.filter (n: !(builtins.elem n knownArgs)) (builtins.attrNames args);

  config' = if builtins.isFunction config then config { } else config;

  # Machine paths (compilers, CUDA prefix, rustup, torch) come only from host.nix, which the
  # test harness writes (tests/nixpkgs/make_host.py). Without it everything still
  # evaluates; building fails with a message that names the missing tool.
  host = if builtins.pathExists ./host.nix then import ./host.nix else { };

  hostPlatform = lib.systems.elaborate system;

  parts = [
    ./stdenv.nix
    ./trivial-builders.nix
    ./tools.nix
    ./rust.nix
    ./cuda.nix
    ./rocm.nix
    ./oneapi.nix
    ./darwin.nix
    ./python.nix
    ./native-libraries.nix
  ];

  basePackages =
    final:
    let
      partArgs = {
        inherit
          lib
          final
          host
          hostPlatform
          ;
        config = config';
      };
      fromParts = builtins.foldl' (acc: p: acc // import p partArgs) { } parts;
    in
    fromParts
    // {
      inherit lib;
      config = config';
      # pkgs/top-level/stage.nix (stdenvBootstappingAndPlatforms): `pkgs = self.pkgsHostTarget`,
      # which generated kernel files take through callPackage.
      pkgs = final;
      buildPackages = final;
      pkgsBuildBuild = final;
      pkgsBuildHost = final;
      pkgsBuildTarget = final;
      pkgsHostHost = final;
      pkgsHostTarget = final;
      pkgsTargetTarget = final;
      targetPackages = final;
      path = ./.;
      callPackage = lib.callPackageWith final;
      callPackages = lib.callPackagesWith final;
      newScope = extra: lib.callPackageWith (final // extra);
      appendOverlays =
        extraOverlays:
        import ./. {
          inherit system;
          config = config';
          overlays = overlays ++ extraOverlays;
        };
      extend = overlay: final.appendOverlays [ overlay ];
    }
    # pkgs/top-level/aliases.nix (added when config.allowAliases, the default): `system` is a
    # deprecated alias that warns.
    // lib.optionalAttrs (config'.allowAliases or true) {
      system = lib.warn "'system' has been renamed to/replaced by 'stdenv.hostPlatform.system'" hostPlatform.system;
    };

  checkedOverlays =
    if !builtins.isList overlays then
      throw "The overlays argument to nixpkgs must be a list."
    else
      map (
        o:
        if builtins.isFunction o then
          o
        else
          throw "Overlays must be functions of the form `final: prev: { … }`, got a ${builtins.typeOf o}."
      ) overlays;

  pkgs = lib.fix (builtins.foldl' (f: overlay: lib.extends overlay f) basePackages checkedOverlays);
in
if unknownArgs != [ ] then
  throw "stub nixpkgs: `import nixpkgs { … }` called with unexpected argument '${builtins.head unknownArgs}'${
    lib.optionalString (builtins.elem (builtins.head unknownArgs) [
      "allowUnfree"
      "cudaSupport"
      "cudaCapabilities"
      "cudaForwardCompat"
      "rocmSupport"
    ]) " (it belongs in `config`)"
  }; real nixpkgs silently ignores it. Known arguments: ${builtins.concatStringsSep ", " knownArgs}."
else if crossSystem != null && crossSystem != localSystem then
  throw "stub nixpkgs: cross compilation (crossSystem) is not supported"
else if crossOverlays != [ ] then
  throw "stub nixpkgs: crossOverlays are not supported"
else if !builtins.isAttrs config' then
  throw "stub nixpkgs: `config` must be an attribute set, got a ${builtins.typeOf config'}"
else
  pkgs
