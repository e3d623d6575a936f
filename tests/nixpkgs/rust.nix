# Rust: `rustc`, `cargo`, `rustPlatform` with `buildRustPackage`, `importCargoLock` and the
# cargo setup/build/check/install hooks.
#
# Copies: pkgs/build-support/rust/build-rust-package/default.nix (lib.extendMkDerivation,
# argument names and defaults, the cargoVendorDir -> cargoDeps -> cargoLock -> cargoHash
# resolution and its message, env RUST_LOG/RUSTFLAGS/PKG_CONFIG_ALLOW_CROSS, doCheck default),
# pkgs/build-support/rust/import-cargo-lock.nix (arguments, lockFile xor lockFileContents,
# vendor dir layout, missing git hash message, parseGit, mkGitCrate with allowBuiltinFetchGit
# and its "Cannot find path for crate" message, the .cargo-config merge),
# pkgs/build-support/rust/hooks/*.sh.
# Stand-ins: rustc and cargo are the host rustup toolchain (host.nix `rust`); crates from a
# registry would need the network, so vendoring them fails at build time; git crates come
# through builtins.fetchGit (allowBuiltinFetchGit), which works offline for a local repository
# (file:// URL). Difference from real: no replaceWorkspaceValues for `workspace = true` keys.
{
  lib,
  final,
  host,
  hostPlatform,
  ...
}:
let
  hostRust = host.rust or null;
  rustVersion = hostRust.version or "0";
  rustcTarget = hostPlatform.rust.rustcTargetSpec;

  mkToolchainBin =
    pname: bins:
    final.stdenvNoCC.mkDerivation {
      inherit pname;
      version = rustVersion;
      env = {
        toolchainBin = hostRust.toolchainBin or "";
        rustupHome = hostRust.rustupHome or "";
        rustupToolchain = hostRust.toolchain or "";
        toolBins = toString bins;
        wrapperShell = final.runtimeShell;
      };
      buildCommand = ''
        if [ -z "$toolchainBin" ]; then
          echo "stub-nixpkgs: ${pname}: no Rust toolchain was found on this machine (host.nix rust = null)" >&2
          exit 1
        fi
        mkdir -p $out/bin
        for t in $toolBins; do
          if [ ! -x "$toolchainBin/$t" ]; then
            echo "stub-nixpkgs: ${pname}: $toolchainBin/$t does not exist" >&2
            exit 1
          fi
          {
            printf '#!%s\n' "$wrapperShell"
            printf 'export RUSTUP_HOME=%q RUSTUP_TOOLCHAIN=%q\n' "$rustupHome" "$rustupToolchain"
            printf 'exec %q "$@"\n' "$toolchainBin/$t"
          } >"$out/bin/$t"
          chmod +x "$out/bin/$t"
        done
      '';
      passthru = {
        targetPlatforms = lib.platforms.all;
        badTargetPlatforms = [ ];
        tier1TargetPlatforms = lib.platforms.all;
      };
      meta.description = "stub-nixpkgs stand-in for ${pname} (the host rustup toolchain)";
    };

  rustc = mkToolchainBin "rustc" [
    "rustc"
    "rustdoc"
  ];
  cargo = mkToolchainBin "cargo" [ "cargo" ];

  makeHook =
    name: script:
    final.makeSetupHook {
      inherit name;
      substitutions = {
        rustcTargetSpec = rustcTarget;
        targetSubdirectory = rustcTarget;
      };
    } script;

  cargoSetupHook = makeHook "cargo-setup-hook.sh" ./hooks/cargo-setup-hook.sh;
  cargoBuildHook = makeHook "cargo-build-hook.sh" ./hooks/cargo-build-hook.sh;
  cargoCheckHook = makeHook "cargo-check-hook.sh" ./hooks/cargo-check-hook.sh;
  cargoInstallHook = makeHook "cargo-install-hook.sh" ./hooks/cargo-install-hook.sh;

  importCargoLockArgs = [
    "lockFile"
    "lockFileContents"
    "allowBuiltinFetchGit"
    "extraRegistries"
    "outputHashes"
  ];

  importCargoLock =
    args:
    assert final.__stub.checkArgNames "importCargoLock" importCargoLockArgs args;
    let
      lockFile = args.lockFile or null;
      outputHashes = args.outputHashes or { };
      allowBuiltinFetchGit = args.allowBuiltinFetchGit or false;
      lockFileContents =
        if (lockFile == null) == (args.lockFileContents or null == null) then
          throw "importCargoLock: exactly one of `lockFile` or `lockFileContents` must be set (real nixpkgs: assert (lockFile == null) != (lockFileContents == null) failed)"
        else if lockFile != null then
          builtins.readFile lockFile
        else
          args.lockFileContents;
      parsed = builtins.fromTOML lockFileContents;
      depPackages = builtins.filter (p: p ? source) (parsed.package or [ ]);
      # import-cargo-lock.nix parseGit: git+URL[?rev|tag|branch=VALUE]#SHA
      parseGit =
        src:
        let
          parts = builtins.match "git\\+([^?]+)(\\?(rev|tag|branch)=(.*))?#(.*)" src;
          type = builtins.elemAt parts 2;
          value = builtins.elemAt parts 3;
        in
        if parts == null then
          null
        else
          {
            url = builtins.elemAt parts 0;
            sha = builtins.elemAt parts 4;
          }
          // lib.optionalAttrs (type != null) { inherit type value; };
      missingHash =
        nameVer:
        throw ''
          No hash was found while vendoring the git dependency ${nameVer}. You can add
          a hash through the `outputHashes` argument of `importCargoLock`:

          outputHashes = {
            "${nameVer}" = "<hash>";
          };

          If you use `buildRustPackage`, you can add this attribute to the `cargoLock`
          attribute set.
        '';
      # import-cargo-lock.nix mkGitCrate: the repository at the locked commit (fetchgit with
      # an output hash, else builtins.fetchGit when allowed), then the crate's directory in it
      # found with `cargo metadata`, with the `.cargo-config` that points cargo's git source
      # at the vendor directory. A local repository (file:// URL) works offline.
      mkGitCrate =
        pkg:
        let
          nameVer = "${pkg.name}-${pkg.version}";
          gitParts = parseGit pkg.source;
          urlParams = lib.optionalString (gitParts ? type) "?${gitParts.type}=${gitParts.value}";
          tree =
            if outputHashes ? ${nameVer} then
              final.__stub.mkNetworkFetch {
                name = "source";
                what = "fetchgit ${gitParts.url}@${gitParts.sha}";
                hash = outputHashes.${nameVer};
                recursive = true;
              }
            else if allowBuiltinFetchGit then
              builtins.fetchGit {
                inherit (gitParts) url;
                rev = gitParts.sha;
                allRefs = true;
                submodules = true;
              }
            else
              missingHash nameVer;
        in
        final.runCommand nameVer { nativeBuildInputs = [ final.cargo final.jq ]; } ''
          tree=${tree}
          export CARGO_HOME="$TMPDIR/cargo-home"
          if [[ -f $tree/Cargo.toml ]]; then
            crateCargoTOML=$(cargo metadata --format-version 1 --no-deps --manifest-path $tree/Cargo.toml | \
              jq -r '.packages[] | select(.name == "${pkg.name}") | .manifest_path')
          fi
          if [[ -z $crateCargoTOML ]]; then
            for manifest in $(find $tree -name "Cargo.toml"); do
              echo Looking at $manifest
              crateCargoTOML=$(cargo metadata --format-version 1 --no-deps --manifest-path "$manifest" | jq -r '.packages[] | select(.name == "${pkg.name}") | .manifest_path' || :)
              if [[ ! -z $crateCargoTOML ]]; then
                break
              fi
            done
            if [[ -z $crateCargoTOML ]]; then
              >&2 echo "Cannot find path for crate '${nameVer}' in the tree in: $tree"
              exit 1
            fi
          fi
          echo Found crate ${pkg.name} at $crateCargoTOML
          tree=$(dirname $crateCargoTOML)
          cp -prvL "$tree/" $out
          chmod u+w $out
          printf '{"files":{},"package":null}' > "$out/.cargo-checksum.json"
          cat > $out/.cargo-config <<EOF
          [source."${gitParts.url}${urlParams}"]
          git = "${gitParts.url}"
          ${lib.optionalString (gitParts ? type) "${gitParts.type} = \"${gitParts.value}\""}
          replace-with = "vendored-sources"
          EOF
        '';
      mkCrate =
        pkg:
        let
          nameVer = "${pkg.name}-${pkg.version}";
        in
        if lib.hasPrefix "git+" pkg.source then
          mkGitCrate pkg
        else
          final.__stub.mkNetworkFetch {
            name = "crate-${nameVer}";
            what = "importCargoLock: crate ${nameVer} from ${pkg.source}";
            hash = pkg.checksum or lib.fakeHash;
          };
      depCrates = map mkCrate depPackages;
    in
    final.runCommand "cargo-vendor-dir"
      (
        {
          lockFileText = lockFileContents;
          passAsFile = [ "lockFileText" ];
          crates = depCrates;
        }
        // lib.optionalAttrs (lockFile != null) { passthru = { inherit lockFile; }; }
      )
      ''
        mkdir -p $out/.cargo
        cp "$lockFileTextPath" $out/Cargo.lock
        cat > $out/.cargo/config.toml <<EOF
        [source.crates-io]
        replace-with = "vendored-sources"

        [source.vendored-sources]
        directory = "cargo-vendor-dir"
        EOF
        declare -A keysSeen
        for crate in $crates; do
          # Link the crate directory, removing the output path hash from the destination.
          ln -s "$crate" $out/$(basename "$crate" | cut -c 34-)
          if [ -e "$crate/.cargo-config" ]; then
            key=$(sed 's/\[source\."\(.*\)"\]/\1/; t; d' < "$crate/.cargo-config")
            if [[ -z ''${keysSeen[$key]:-} ]]; then
              keysSeen[$key]=1
              cat "$crate/.cargo-config" >> $out/.cargo/config.toml
            fi
          fi
        done
      '';

  # Argument names of buildRustPackage beyond mkDerivation's (default.nix + the hooks).
  rustArgNames = [
    "auditable"
    "buildAndTestSubdir"
    "buildFeatures"
    "buildNoDefaultFeatures"
    "buildType"
    "cargoDeps"
    "cargoDepsHook"
    "cargoDepsName"
    "cargoHash"
    "cargoLock"
    "cargoPatches"
    "cargoRoot"
    "cargoUpdateHook"
    "cargoVendorDir"
    "checkFeatures"
    "checkNoDefaultFeatures"
    "checkType"
    "depsExtraArgs"
    "logLevel"
    "useFetchCargoVendor"
    "useNextest"
    "RUSTFLAGS"
    "cargoBuildFlags"
    "cargoTestFlags"
    "cargoCheckFlags"
    "cargoBuildType"
    "cargoCheckType"
    "cargoBuildFeatures"
    "cargoCheckFeatures"
    "cargoBuildNoDefaultFeatures"
    "cargoCheckNoDefaultFeatures"
    "dontCargoBuild"
    "dontCargoCheck"
    "dontCargoInstall"
    "dontCargoSetupPostUnpack"
    "checkFlagsArray"
    "useNextestFlags"
  ];

  makeRustPlatform =
    { rustc, cargo, ... }:
    let
      buildRustPackage = lib.extendMkDerivation {
        constructDrv = final.stdenv.mkDerivation;
        excludeDrvArgNames = [
          "depsExtraArgs"
          "cargoUpdateHook"
          "cargoLock"
          "useFetchCargoVendor"
          "RUSTFLAGS"
        ];
        extendDrvArgs =
          finalAttrs:
          {
            auditable ? true,
            buildAndTestSubdir ? null,
            buildFeatures ? [ ],
            buildInputs ? [ ],
            buildNoDefaultFeatures ? false,
            buildType ? "release",
            cargoDeps ? null,
            cargoDepsHook ? "",
            cargoDepsName ? null,
            cargoLock ? null,
            cargoPatches ? [ ],
            cargoRoot ? null,
            cargoUpdateHook ? "",
            cargoVendorDir ? null,
            checkFeatures ? buildFeatures,
            checkNoDefaultFeatures ? buildNoDefaultFeatures,
            checkType ? buildType,
            depsExtraArgs ? { },
            logLevel ? "",
            meta ? { },
            nativeBuildInputs ? [ ],
            patches ? [ ],
            sourceRoot ? null,
            useFetchCargoVendor ? true,
            useNextest ? false,
            ...
          }@args:
          assert
            useFetchCargoVendor
            || throw "buildRustPackage: `useFetchCargoVendor` is non‐optional and enabled by default as of 25.05, remove it";
          assert lib.warnIf (args ? useFetchCargoVendor)
            "buildRustPackage: `useFetchCargoVendor` is non‐optional and enabled by default as of 25.05, remove it"
            true;
          assert
            cargoLock == null
            || builtins.isAttrs cargoLock
            || throw "buildRustPackage: `cargoLock` must be an attribute set like `{ lockFile = ./Cargo.lock; }`, got a ${builtins.typeOf cargoLock}";
          assert
            builtins.isList buildFeatures
            || throw "buildRustPackage: `buildFeatures` must be a list of strings, got a ${builtins.typeOf buildFeatures}";
          {
            __stub = {
              function = "rustPlatform.buildRustPackage";
              extraArgNames = rustArgNames;
            };
            inherit buildAndTestSubdir;
            patches = cargoPatches ++ patches;
            strictDeps = true;

            nativeBuildInputs = nativeBuildInputs ++ [
              cargoBuildHook
              cargoCheckHook
              cargoInstallHook
              cargoSetupHook
              rustc
              cargo
            ];

            inherit buildInputs;

            env = {
              ${if args ? RUSTFLAGS then "RUSTFLAGS" else null} =
                if lib.isList args.RUSTFLAGS then toString args.RUSTFLAGS else args.RUSTFLAGS;
              PKG_CONFIG_ALLOW_CROSS = 0;
              RUST_LOG = logLevel;
            }
            // args.env or { };

            doCheck = args.doCheck or true;
            cargoBuildFeatures = buildFeatures;
            cargoBuildNoDefaultFeatures = buildNoDefaultFeatures;
            cargoBuildType = buildType;
            cargoCheckFeatures = checkFeatures;
            cargoCheckNoDefaultFeatures = checkNoDefaultFeatures;
            cargoCheckType = checkType;

            cargoDeps =
              if cargoVendorDir != null then
                null
              else if cargoDeps != null then
                cargoDeps
              else if cargoLock != null then
                importCargoLock cargoLock
              else if args.cargoHash or null == null then
                throw "cargoHash, cargoVendorDir, cargoDeps, or cargoLock must be set"
              else
                final.__stub.mkNetworkFetch {
                  name = if cargoDepsName != null then cargoDepsName else "${finalAttrs.pname or "cargo"}-vendor";
                  what = "fetchCargoVendor";
                  hash = args.cargoHash;
                  recursive = true;
                };

            configurePhase =
              args.configurePhase or ''
                runHook preConfigure
                runHook postConfigure
              '';

            meta = meta // {
              platforms = lib.intersectLists (meta.platforms or lib.platforms.all) rustc.targetPlatforms;
              badPlatforms = meta.badPlatforms or [ ] ++ rustc.badTargetPlatforms;
            };
          };
      };
    in
    {
      inherit
        buildRustPackage
        importCargoLock
        cargoSetupHook
        cargoBuildHook
        cargoCheckHook
        cargoInstallHook
        ;
      cargoNextestHook = cargoCheckHook;
      fetchCargoVendor =
        args:
        final.__stub.mkNetworkFetch {
          name = args.name or "cargo-vendor";
          what = "fetchCargoVendor";
          hash = args.hash or null;
          recursive = true;
        };
      rust = {
        inherit rustc cargo;
      };
    };
in
{
  inherit rustc cargo makeRustPlatform;
  rustPlatform = makeRustPlatform { inherit rustc cargo; };
  rustPackages = {
    inherit rustc cargo;
    rustPlatform = final.rustPlatform;
  };
}
