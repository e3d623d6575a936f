/**
  Assemble a kernel project: its variants, one nixpkgs instance per variant, the kernel
  derivations, the framework extension and the bundles.

  `nixgen render` writes a `default.nix` that calls `entry` (hence `mkProject`) with the
  project's data (`project.nix`), which names the kernel files (`kernels/<name>.nix`), the
  extension file and the pure-Python variant's file.
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
  # One table, read by nixgen too (`data/pins.json`).
  pins = builtins.fromJSON (builtins.readFile ./data/pins.json);
  # The format of the data this library reads: one table, written by nixgen (`data/format.json`).
  format = (builtins.fromJSON (builtins.readFile ./data/format.json)).format;
  # One table, read by nixgen too (`data/languages.json`).
  backends = (builtins.fromJSON (builtins.readFile ./data/languages.json)).backends;
  # The frameworks whose variants compile nothing (pure Python).
  noarchFramework = framework: framework == "torch-noarch" || framework == "mlx-noarch";
in
rec {
  /**
    The revision of the kernels toolchain flake (huggingface/kernels) generated flakes pin,
    and the nixpkgs revision its `flake.lock` holds (one nixpkgs for both: `follows`).
  */
  kernelBuilderUrl = pins.kernel-builder;
  nixpkgsUrl = pins.nixpkgs;

  /**
    nixpkgs `config` of a backend, as the kernels toolchain's build sets set it
    (`nix-builder/lib/mk-build-set.nix`, `backendConfig`): `data/languages.json`'s
    `buildSet`. A backend without a build set (`neuron`, `cann`) fails, naming it.

    # Examples

    ```nix
    backendConfig "tpu"
    => { allowUnfree = true; tpuSupport = true; }
    ```
  */
  backendConfig =
    backend:
    let
      row =
        backends.${backend}
          or (throw "nixgen: `${backend}` is not a backend (${builtins.concatStringsSep ", " (attrNames backends)})");
    in
    if row.buildSet == null then
      throw "nixgen: backend `${backend}` has no build set in the kernels toolchain (no `backendConfig` in its nix-builder/lib/mk-build-set.nix), so no variant is built for it"
    else
      row.buildSet;

  /**
    The overlay that selects a variant's toolkit: `cudaPackages`, `rocmPackages` or
    `xpuPackages` of the variant's backend version, from the versioned sets of nixpkgs
    (`cudaPackages_X_Y`) and of the kernels toolchain's overlay (`rocmPackages_X_Y`,
    `xpuPackages_X_Y_Z`), as `overlayFor{Cuda,Rocm,Xpu}Version` in `mk-build-set.nix`. A
    variant without a backend version (a pure-Python one, such as `torch-cuda`) keeps the
    package set's own. A CUDA variant with a `ptxasVersion` (nixgen.toml's
    `[backend.cuda.ptxas]`) gets its set with the ptxas of that version's set
    (`nixgen.cuda.withPtxas`), as `overlayForCudaVersion` gives a build set's `ptxasVersion`.

    # Type

    ```
    buildSetOverlay :: Variant -> Overlay
    ```
  */
  buildSetOverlay =
    variant: final: prev:
    let
      suffix = builtins.replaceStrings [ "." ] [ "_" ] (toString variant.backendVersion);
      pick = name: pickAt name (if variant.backend == "xpu" then suffix else versions.underscored variant.backendVersion);
      pickAt =
        name: version:
        let
          attr = "${name}_${version}";
        in
        if prev ? ${attr} then
          prev.${attr}
        else
          throw "nixgen: the package set has no `${attr}`, needed by variant ${variant.name}; it comes from the kernels toolchain (the `kernel-builder` flake input, ${kernelBuilderUrl}) or an overlay";
    in
    # A pure-Python variant (`torch-cuda`…) has no toolkit version: the default set.
    if variant.backendVersion == null then
      { }
    else if variant.backend == "cuda" then
      {
        cudaPackages = nixgen.cuda.withPtxas (pick "cudaPackages") (
          if variant.ptxasVersion == null then
            null
          else
            pickAt "cudaPackages" (versions.underscored variant.ptxasVersion)
        );
      }
    else if variant.backend == "rocm" then
      { rocmPackages = pick "rocmPackages"; }
    else if variant.backend == "xpu" then
      { xpuPackages = pick "xpuPackages"; }
    else
      { };

  /**
    The overlay that makes `python3.pkgs.torch` the variant's torch: the kernels
    toolchain's `torch-bin_<major>_<minor>` (`overlayForTorchVersion` in `mk-build-set.nix`).

    # Type

    ```
    torchOverlay :: Variant -> Overlay
    ```
  */
  torchOverlay =
    variant: final: prev:
    let
      attr = "torch-bin_${versions.underscored variant.torch}";
    in
    {
      pythonPackagesExtensions = prev.pythonPackagesExtensions ++ [
        (
          python-final: python-prev: {
            torch =
              python-prev.${attr}
                or (throw "nixgen: python3.pkgs has no `${attr}`, needed by variant ${variant.name}; torch wheels come from the kernels toolchain (the `kernel-builder` flake input, ${kernelBuilderUrl}) or an overlay");
          }
        )
      ];
    };

  /**
    The git provenance of the kernels toolchain flake input, `{ sha, dirty }` or null, as
    the toolchain derives it from its own `self` for its overlay (its
    `nix-builder/lib/flake-provenance.nix`: `rev`, else `dirtyRev` without `-dirty`, else
    null): `provenance.fromSelf`, the rule the kernel's own provenance is read with, under
    the toolchain's key names. The overlay bakes it into `kernel-builder`, so with it the
    overlay's `kernel-builder` (the ABI checker) is the derivation the toolchain's binary
    cache holds.

    # Examples

    ```nix
    builderProvenance { rev = "8ac69fc5"; }
    => { sha = "8ac69fc5"; dirty = false; }
    ```

    # Type

    ```
    builderProvenance :: Flake -> { sha :: String, dirty :: Bool } | null
    ```
  */
  builderProvenance =
    kernel-builder:
    let
      git = nixgen.provenance.fromSelf kernel-builder;
    in
    if git == null then
      null
    else
      {
        sha = git.commit;
        inherit (git) dirty;
      };

  /**
    The overlays of the kernels toolchain flake: its `nix-builder/overlay.nix` and the
    Rust overlay its build sets apply after it (its `rust-overlay` input, when it has one),
    as its `mk-build-set.nix` applies them. A missing toolchain fails with a message that
    names the flake input.

    The overlay is imported by its path in the toolchain's source because the flake's
    public outputs have no overlay (`lib` holds `genKernelFlakeOutputs` and
    `allBuildVariantsJSON`; `packages`, `devShells`, `checks` and `formatter` are per
    system), nor a function that builds one package set (`mk-build-set.nix` is not
    exported either). tests/test_anchor_build_set.py reads the real flake's outputs and
    fails once it exports `overlays`: then this takes that output instead.

    # Type

    ```
    toolchainOverlays :: Flake | null -> [ Overlay ]
    ```
  */
  toolchainOverlays =
    kernel-builder:
    if kernel-builder == null then
      throw ''
        nixgen: the flake input `kernel-builder` is missing. Generated flakes build with the kernels toolchain; add
          inputs.kernel-builder.url = "${kernelBuilderUrl}";
          inputs.kernel-builder.inputs.nixpkgs.follows = "nixpkgs";
        and pass it on: `flakeOutputs { inherit nixpkgs kernel-builder; }`.''
    else
      [
        (import "${kernel-builder}/nix-builder/overlay.nix" {
          builderProvenance = builderProvenance kernel-builder;
        })
      ]
      ++ (
        let
          inputs = kernel-builder.inputs or { };
        in
        if inputs ? rust-overlay then [ inputs.rust-overlay.overlays.default ] else [ ]
      );

  /**
    The nixpkgs instance of one variant, built like the kernels toolchain's build sets:
    `import nixpkgs { system; config = backendConfig; overlays = toolchain overlays ++
    overlays ++ [ buildSetOverlay torchOverlay ]; }`. The caller's `overlays` come before
    nixgen's version selection (they may add or replace versioned sets); `config` is merged
    over the backend's.

    # Type

    ```
    pkgsFor :: { nixpkgs, kernel-builder ? Flake, system :: String, overlays ? [ Overlay ], config ? AttrSet } -> Variant -> Pkgs
    ```
  */
  pkgsFor =
    {
      nixpkgs,
      kernel-builder ? null,
      system,
      overlays ? [ ],
      config ? { },
    }:
    variant:
    import nixpkgs {
      inherit system;
      config = backendConfig variant.backend // config;
      overlays =
        toolchainOverlays kernel-builder
        ++ overlays
        ++ [
          (buildSetOverlay variant)
          (torchOverlay variant)
        ];
    };

  /**
    The torch package of a variant: `python3.pkgs.torch` of its package set (the
    toolchain's `torch-bin_<major>_<minor>`, see `torchOverlay`).

    # Type

    ```
    torchFor :: Pkgs -> Derivation
    ```
  */
  torchFor = pkgs: pkgs.python3.pkgs.torch;

  /**
    `callPackage` that passes only the extra arguments the function declares, so a
    kernel file lists exactly what it uses.

    # Type

    ```
    callWith :: Pkgs -> Path -> AttrSet -> Derivation
    ```
  */
  callWith =
    pkgs: file: extra:
    let
      fn = import file;
    in
    pkgs.callPackage fn (intersectAttrs (functionArgs fn) extra);

  /**
    The extension file of a project without a compiled framework (`[torch-noarch]`):
    every variant is pure Python, so it is never built; calling it fails, saying so.
  */
  noExtension = { }: throw "nixgen: this project has no compiled extension";

  /**
    A generated tree's entry point: its `default.nix` (`import ./nix`) is this call, with
    the paths of the tree's files. `mkProject`'s attributes, plus `nixgen` (this library)
    and `flakeOutputs`, which the project's flake calls:
    `flakeOutputs { nixpkgs, kernel-builder ? null, overlays ? [ ], self ? null }` gives
    `packages.<system>` (one package per variant, `kernels`, `default`,
    `bundle-<backend>`), `legacyPackages.<system>.{backendBundle,backendCi}.<backend>`,
    `variants.<system>` and `githubActions.{matrix,pullRequestMatrix}`.

    # Inputs

    `root`
    : the project root (a path)

    `project`, `extension`, `noarch`
    : the files `project.nix`, `extension.nix` and `noarch.nix` (paths)

    # Type

    ```
    entry :: { root :: Path, project :: Path, extension :: Path, noarch :: Path } -> Project
    ```
  */
  entry =
    {
      root,
      project,
      extension,
      noarch,
    }:
    let
      built = mkProject {
        inherit root extension noarch;
        project = import project;
      };
    in
    built
    // {
      inherit nixgen;
      flakeOutputs =
        {
          nixpkgs,
          kernel-builder ? null,
          overlays ? [ ],
          self ? null,
        }:
        nixgen.flake.kernelOutputs {
          inherit
            nixpkgs
            kernel-builder
            overlays
            self
            ;
          project = built;
        };
    };

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

    # Type

    ```
    mkProject :: { root :: Path, project :: AttrSet, extension :: Path, noarch :: Path } -> Project
    ```
  */
  mkProject = args: mkCheckedProject (args // { project = checkFormat args.project; });

  /**
    The project data, once its format is the one this library reads (`data/format.json`);
    else an error that says which nixgen rendered it, for which format, and to render again.
    Checked before anything else is read of it.

    # Examples

    ```nix
    (checkFormat { formatVersion = 3; nixgenVersion = "0.1.0"; name = "p"; }).name
    => "p"
    ```

    # Type

    ```
    checkFormat :: AttrSet -> AttrSet
    ```
  */
  checkFormat =
    project:
    let
      have = project.formatVersion or null;
      by = if project ? nixgenVersion then "nixgen ${project.nixgenVersion}" else "an older nixgen";
      rendered = if have == null then "with no format version" else "for library format ${toString have}";
    in
    if have == format then
      project
    else
      throw "nixgen: this project's nix/project.nix was rendered by ${by} ${rendered}; this library reads format ${toString format}: run `nixgen render`";

  /**
    `mkProject` of project data whose format `checkFormat` accepted.
  */
  mkCheckedProject =
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
        The derivation of one variant. `args` are `pkgsFor`'s, and `objects`: `"auto"`
        (default: as nixgen planned) or `"ninja"` (every kernel in one derivation), the
        `mode` of `nixgen.compile.withObjects`.
      */
      variantPackage =
        args: variant:
        let
          pkgs = pkgsFor (removeAttrs args [ "objects" ]) variant;
          # The library with the variant's nixpkgs `lib` (its builders quote and match
          # with it), as the kernel files and the extension get it.
          nixgenLib = nixgen.withLib pkgs.lib;
          isNoarch = noarchFramework variant.framework;
          torch = if variant.torch == null then null else torchFor pkgs;
          # The stdenv, compilers and runtime libraries of the variant (nixgen.toolchains):
          # kernels and the extension are compiled with the same (portable) stdenv.
          toolchain = nixgen.toolchains.${variant.backend} pkgs;
          kernels = listToAttrs (
            map (name: {
              inherit name;
              # Large kernels: one derivation per object (`nixgen.compile.withObjects`).
              value = nixgenLib.compile.withObjects {
                inherit (pkgs) lib;
                inherit root;
                mode = args.objects or "auto";
              } (
                callWith pkgs project.kernels.${name}.file {
                  nixgen = nixgenLib;
                  inherit root torch toolchain variant;
                  inherit (toolchain) stdenv;
                  inherit (project) headers;
                }
              );
            }) variant.kernels
          );
        in
        callWith pkgs (if isNoarch then noarch else extension) {
          nixgen = nixgenLib;
          inherit root torch kernels variant toolchain;
          inherit (project) headers;
          projectData = project;
        };

      /**
        The object derivations of one variant (`args` as for `variantPackage`):
        `kernels.<kernel>.<key>` for each of its kernels built one derivation per object
        (`nixgen.compile.withObjects`), keyed by the object keys nixgen planned (`plannedObjects`);
        `whole.<kernel>`: each of its other kernels, built in one derivation (compiled
        and archived together, rust crates too); and `binding`: the derivation of the
        binding's objects, when it has C++ sources. CI shards
        (`nixgen matrix --shards K`) build disjoint sets of them into a binary cache, so
        that building the variant then compiles nothing: it substitutes every object and
        builds only the archives and the link.
      */
      variantObjects =
        args: variant:
        let
          package = variantPackage args variant;
          kernels = package.nixgen.kernels or { };
          binding = package.nixgen.binding or null;
          # Split as nixgen planned it (`plannedObjects`); a Rust kernel has no `objects`.
          isPerObject = name: (kernels.${name}.nixgen.objects or null) != null;
          perObject = filter isPerObject (attrNames kernels);
          whole = filter (name: !isPerObject name) (attrNames kernels);
          keyed =
            kernel:
            let
              inherit (kernel.nixgen) objects plannedObjects;
            in
            # An object derivation's `sources` is its one source.
            listToAttrs (
              map (drv: {
                name = plannedObjects.${builtins.head drv.sources}.key;
                value = drv;
              }) objects
            );
        in
        {
          kernels = listToAttrs (
            map (name: {
              inherit name;
              value = keyed kernels.${name};
            }) perObject
          );
          whole = listToAttrs (
            map (name: {
              inherit name;
              value = kernels.${name};
            }) whole
          );
        }
        // (if binding == null then { } else { inherit binding; });

      /**
        The object derivations of `system`'s variants: `{ <variant> = variantObjects; }`
        (the flake output `objects.<system>.<variant>`). `args` as for
        `variantPackage`.
      */
      objects =
        args@{ system, ... }:
        listToAttrs (
          map (v: {
            inherit (v) name;
            value = variantObjects args v;
          }) (variants system)
        );

      /**
        The Python environment of one variant's shells and tests: torch, the `kernels`
        client, pytest, the project's `python-depends` that its package set has (the
        others, such as `nki`, come from pip) and nixgen.toml's `[test] python-depends`
        (`testPythonDepends`: what a kernel-builder flake's `pythonCheckInputs` listed,
        each a `python3.pkgs` name, which must exist). `pkgs` is the variant's package set.
      */
      pythonEnv =
        pkgs: variant:
        let
          testInput =
            ps: name:
            ps.${name}
              or (throw "nixgen: nixgen.toml's [test] python-depends names `${name}`, which python3.pkgs does not have");
          names =
            project.pythonDepends.${variant.backend};
          framework =
            ps:
            if variant.torch != null then
              [ (torchFor pkgs) ]
            else if variant.framework == "tvm-ffi" then
              [ ps.tvm-ffi ]
            else
              [ ];
        in
        pkgs.python3.withPackages (
          ps:
          framework ps
          ++ [
            ps.kernels
            ps.pytest
          ]
          ++ map (name: ps.${name}) (filter (name: ps ? ${name}) names)
          ++ map (testInput ps) project.testPythonDepends
        );

      /**
        The variables with which the shells and checks find a variant's build, as the
        kernels toolchain's test shell and CI tests set them (its
        `nix-builder/lib/build.nix`, `torchExtensionShells` and `mkCiTests`):

        - `KERNEL_BUILD`: a directory holding the variant as `<variant>/` (what nixgen's
          own tests read, `kernels.get_local_kernel`);
        - `LOCAL_KERNELS`: `<general.hub.repo-id>=<that directory>`, so that
          `kernels.get_kernel("<repo-id>")` loads this build instead of the Hub's (left out
          when build.toml names no Hub repository);
        - `PYTHONPATH`: a directory holding the variant as the project's Python package
          (`<moduleName>/`), so that `import <moduleName>` imports this build.

        `built` is the variant's derivation; `pkgs` its package set.
      */
      testVariables =
        pkgs: variant: built:
        let
          build = pkgs.linkFarm "${project.name}-${variant.name}-build" [
            {
              inherit (variant) name;
              path = built;
            }
          ];
          modules = pkgs.linkFarm "${project.name}-${variant.name}-python" [
            {
              name = project.moduleName;
              path = built;
            }
          ];
        in
        {
          KERNEL_BUILD = "${build}";
          PYTHONPATH = "${modules}";
        }
        // (if project.hubRepoId == null then { } else { LOCAL_KERNELS = "${project.hubRepoId}=${build}"; });

      /**
        Shell lines that export `variables` (each value quoted for the shell).
      */
      exports =
        lib: variables:
        builtins.concatStringsSep "" (
          map (name: "export ${name}=${lib.escapeShellArg variables.${name}}\n") (attrNames variables)
        );

      /**
        The development shell of one variant (`nix develop .#<variant>`; `nixgen shell`):
        its stdenv and compilers, the toolkit's libraries (none for a pure-Python variant)
        and `pythonEnv`. Nothing of the project is built to enter it. `args` are `pkgsFor`'s.
      */
      devShell =
        args: variant:
        let
          pkgs = pkgsFor args variant;
          toolchain = nixgen.toolchains.${variant.backend} pkgs;
          # A pure-Python variant compiles nothing: the stdenv alone, not the toolkit's
          # compilers and libraries (a variant without a backend version has no toolkit:
          # the toolchain's default `xpuPackages` names a set it does not define).
          compiled = !(noarchFramework variant.framework);
          mkShell = pkgs.mkShell.override { inherit (toolchain) stdenv; };
        in
        mkShell {
          name = "${project.name}-${variant.name}";
          packages = [ (pythonEnv pkgs variant) ] ++ (if compiled then toolchain.compilers else [ ]);
          buildInputs = if compiled then toolchain.buildInputs else [ ];
          # Where the project's tests look for built variants (`KERNEL_BUILD`), and the
          # builds `nixgen build` links into build/ under the project's Hub name
          # (`LOCAL_KERNELS`), as the kernels toolchain's development shell sets it.
          shellHook = ''
            export KERNEL_BUILD="''${KERNEL_BUILD:-$PWD/build}"
          ''
          + (
            if project.hubRepoId == null then
              ""
            else
              ''
                export LOCAL_KERNELS=${pkgs.lib.escapeShellArg project.hubRepoId}="$KERNEL_BUILD"
              ''
          );
        };

      /**
        The test shell of one variant (`nix develop .#test-<variant>`; `nixgen shell
        --test`): the development shell with the variant built and found as the kernels
        toolchain's test shell finds its extension (`testVariables`: `KERNEL_BUILD`,
        `LOCAL_KERNELS`, `PYTHONPATH`, which it sets, not extends; `LD_LIBRARY_PATH`
        unset, as there).
      */
      testShell =
        args: variant:
        let
          pkgs = pkgsFor args variant;
          variables = testVariables pkgs variant (variantPackage args variant);
        in
        (devShell args variant).overrideAttrs (old: {
          name = "${project.name}-test-${variant.name}";
          shellHook = "unset LD_LIBRARY_PATH\n" + exports pkgs.lib variables;
        });

      /**
        The check of one variant (`nix flake check`, `nix build .#checks.<system>.<variant>`):
        the project's own tests (`tests/`, pytest) against the built variant. Without a
        `tests/` directory it checks nothing and succeeds.
      */
      check =
        args: variant:
        let
          pkgs = pkgsFor args variant;
          hasTests = builtins.pathExists (root + "/tests");
          tests = if hasTests then pkgs.lib.fileset.toSource {
            inherit root;
            fileset = root + "/tests";
          } else null;
        in
        pkgs.runCommand "${project.name}-${variant.name}-tests"
          (
            {
              nativeBuildInputs = [ (pythonEnv pkgs variant) ];
            }
            // testVariables pkgs variant (variantPackage args variant)
          )
          (
            if hasTests then
              ''
                cp -r ${tests}/tests tests
                chmod -R u+w tests
                export HOME=$TMPDIR
                # Exit status 5: no test was collected (a backend torch cannot use here).
                python -m pytest -p no:cacheprovider -q tests || test $? -eq 5
                touch $out
              ''
            else
              ''
                echo "no tests/ directory: nothing to check"
                touch $out
              ''
          );

      /**
        The shells of `system`: one per variant, `test-<variant>` with the variant built,
        and `default` and `test`: those of the system's best variant, which the plan marks
        `default` (nixgen.planning.variants.best_variant, the kernels toolchain's rule).
        `args` as for `variantPackage`.
      */
      devShells =
        args@{ system, ... }:
        let
          all = variants system;
          first = builtins.head (filter (v: v.default) all);
          shells = listToAttrs (
            map (v: {
              inherit (v) name;
              value = devShell (removeAttrs args [ "objects" ]) v;
            }) all
          );
          tests = listToAttrs (
            map (v: {
              name = "test-${v.name}";
              value = testShell args v;
            }) all
          );
        in
        if all == [ ] then
          { }
        else
          shells
          // tests
          // {
            default = shells.${first.name};
            test = tests."test-${first.name}";
          };

      /**
        The checks of `system`: one per variant (`check`). `args` as for `variantPackage`.
      */
      checks =
        args@{ system, ... }:
        listToAttrs (
          map (v: {
            inherit (v) name;
            value = check args v;
          }) (variants system)
        );

      /**
        The output names the kernels-community CI builds (`nix build
        .#backendBundle.<backend>`, `.#backendCi.<backend>`), kept as aliases with the
        kernels toolchain's meaning (its `nix-builder/lib/gen-flake-outputs.nix`), for
        `system`:

        - `backendBundle.<backend>`: the backend's bundled variants as `<variant>/…` (the
          derivation `packages.<system>.bundle-<backend>`);
        - `backendCi.<backend>`: the backend's one variant a pull request builds (the
          plan's `ci`: bundled first, newest torch, oldest toolkit, the toolchain's rule)
          as `<variant>/…`.

        Every backend with a variant on `system` has both; as in the toolchain, one whose
        variants are all outside the bundle gets empty ones. The flake puts them in
        `legacyPackages.<system>`, which Nix searches after `packages.<system>`, so
        `packages` keeps only derivations. Their names are read without importing
        nixpkgs. `args` as for `packages`.
      */
      legacyPackages =
        args@{ nixpkgs, system, ... }:
        let
          all = variants system;
          built = packages args;
          host = import nixpkgs { inherit system; };
          backends = attrNames (builtins.groupBy (v: v.backend) all);
          bundled = backend: filter (v: v.backend == backend && v.bundle) all;
          bundle =
            name: selected:
            host.linkFarm name (
              map (v: {
                inherit (v) name;
                path = built.${v.name};
              }) selected
            );
          perBackend =
            f:
            listToAttrs (
              map (backend: {
                name = backend;
                value = f backend;
              }) backends
            );
        in
        {
          backendBundle = perBackend (
            backend: built."bundle-${backend}" or (bundle "${project.name}-${backend}" [ ])
          );
          backendCi = perBackend (
            backend: bundle "${project.name}-${backend}-ci" (filter (v: v.ci) (bundled backend))
          );
        };

      /**
        Packages of `system`: one per variant, the bundle of all bundled variants
        (`kernels`, also `default`), and one bundle per backend (`bundle-<backend>`).
        `args` as for `variantPackage`.
      */
      packages =
        args@{ nixpkgs, system, ... }:
        let
          all = variants system;
          host = import nixpkgs { inherit system; };
          # The flake's `self` (`flakeOutputs { self = …; }`): its git revision goes into
          # each variant's `metadata.json` through a small derivation of its own
          # (`nixgen.provenance.stamp`), so a new commit relinks nothing.
          stamp =
            if args ? self then
              nixgen.provenance.stamp {
                pkgs = host;
                provenance = nixgen.provenance.record {
                  inherit (project) nixgenVersion;
                  kernel = nixgen.provenance.fromSelf args.self;
                };
              }
            else
              v: v;
          built = map (v: {
            inherit (v) name backend bundle;
            path = stamp (variantPackage (removeAttrs args [ "self" ]) v);
          }) all;
          bundle =
            name: selected:
            host.linkFarm name (
              map (b: {
                inherit (b) name path;
              }) selected
            );
          bundled = filter (b: b.bundle) built;
          # Grouped by builtins, not nixpkgs' `lib`: the attribute names must not import
          # nixpkgs (`nix eval .#variants` looks in `packages.<system>` first).
          byBackend = builtins.groupBy (b: b.backend) bundled;
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
            value = bundle "${project.name}-${backend}" byBackend.${backend};
          }) (builtins.attrNames byBackend)
        )
        // {
          inherit kernels;
          default = kernels;
        };
    };
}
