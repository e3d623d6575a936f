# Tests of `rust.nix`: paths named like options stay paths in the shell text it makes, and
# the cuda-oxide device build's target.
let
  # The library with nixpkgs `lib` (the stand-in's copy of it).
  nixgen = (import ../default.nix).withLib (import ../../tests/nixpkgs/lib);
  inherit (nixgen) rust;
  contains = needle: s: builtins.replaceStrings [ needle ] [ "" ] s != s;
  # buildRustPackage returns its attributes, taking `finalAttrs: { … }` and adding
  # `overrideAttrs` (`old: { … }`), as nixpkgs' extendMkDerivation-made builder does.
  fixedPoint =
    rattrs:
    let
      fn = if builtins.isFunction rattrs then rattrs else _: rattrs;
      attrs = fn attrs;
    in
    attrs
    // {
      overrideAttrs =
        f:
        fixedPoint (
          final:
          let
            prev = fn final;
          in
          prev // f prev
        );
    };
  target =
    capabilities:
    builtins.head (
      builtins.match ".*CUDA_OXIDE_TARGET=([^ ]*) .*" (rust.deviceBuild {
        manifest = "device/Cargo.toml";
        ptxDir = "ptx";
        inherit capabilities;
      })
    );
in
{
  testLockCheckPassesACrateInADashDirectoryAsAPath = {
    expr =
      let
        text = rust.lockCheck {
          kernel = "k";
          manifest = "-x/Cargo.toml";
          lockfile = "-x/Cargo.lock";
        };
      in
      {
        path = contains "--manifest-path ./-x/Cargo.toml " text;
        option = contains "--manifest-path -x" text;
      };
    expected = {
      path = true;
      option = false;
    };
  };

  testDeviceBuildEndsMkdirOptionsBeforeThePtxDirectory = {
    expr =
      let
        text = rust.deviceBuild {
          manifest = "-d/Cargo.toml";
          ptxDir = "-v";
          capabilities = [ "9.0" "8.0" ];
        };
      in
      {
        mkdir = contains "mkdir -p -- -v\n" text;
        manifest = contains "--manifest-path ./-d/Cargo.toml " text;
        target = contains "CUDA_OXIDE_TARGET=sm_80 " text;
      };
    expected = {
      mkdir = true;
      manifest = true;
      target = true;
    };
  };

  testDeviceBuildTargetsTheLowestCapability = {
    expr = target [ "9.0" "8.0" "12.0" ];
    expected = "sm_80";
  };

  testDeviceBuildTargetDropsPtx = {
    # The branch's kernel.cmake: `string(REPLACE "+PTX" "" _OXIDE_ARCH ...)`.
    expr = target [ "9.0+PTX" "10.0" ];
    expected = "sm_90";
  };

  # `kernel` (rust-cpu): the crate's attributes from the data; the optional ones only when
  # planned (cargoRoot, buildAndTestSubdir, prePatch), no CUDA environment.
  testRustCpuKernelIsBuildRustPackageOfItsData =
    let
      lib = import ../../tests/nixpkgs/lib;
      pkgs = {
        inherit lib;
        rustPlatform.buildRustPackage = fixedPoint;
      };
      drv = rust.kernel { inherit pkgs; root = ./fixtures/project; } {
        name = "k";
        pname = "p-k";
        version = "1";
        language = "rust-cpu";
        sources = [ "kernel_a/a.cpp" ];
        features = [ "fast" ];
        library = "k_rs";
        manifest = "crate/Cargo.toml";
        lockfile = "Cargo.lock";
        crateDir = "crate";
      };
    in
    {
      expr = {
        inherit (drv) pname buildFeatures doCheck;
        names = builtins.attrNames (removeAttrs drv [ "overrideAttrs" ]);
        lockFile = toString drv.cargoLock.lockFile;
        passthru = drv.passthru.nixgen;
        archive = contains "libk_rs.a" drv.postInstall;
      };
      expected = {
        pname = "p-k";
        buildFeatures = [ "fast" ];
        doCheck = false;
        names = [
          "buildAndTestSubdir"
          "buildFeatures"
          "cargoLock"
          "doCheck"
          "passthru"
          "pname"
          "postInstall"
          "preBuild"
          "src"
          "version"
        ];
        lockFile = toString ./fixtures/project + "/Cargo.lock";
        passthru = {
          kernel = "k";
          library = "k_rs";
          language = "rust-cpu";
        };
        archive = true;
      };
    };

  # A fixed point: the archive check reads the library name from `passthru.nixgen`, so an
  # `overrideAttrs` that renames the library checks for the new archive.
  testOverridingTheLibraryChangesTheArchiveCheck =
    let
      pkgs = {
        lib = import ../../tests/nixpkgs/lib;
        rustPlatform.buildRustPackage = fixedPoint;
      };
      drv = rust.kernel { inherit pkgs; root = ./fixtures/project; } {
        name = "k";
        pname = "p-k";
        version = "1";
        language = "rust-cpu";
        sources = [ "kernel_a/a.cpp" ];
        library = "k_rs";
        manifest = "crate/Cargo.toml";
        lockfile = "Cargo.lock";
      };
      renamed = drv.overrideAttrs (old: {
        passthru = old.passthru // {
          nixgen = old.passthru.nixgen // {
            library = "other_rs";
          };
        };
      });
    in
    {
      expr = {
        new = contains "libother_rs.a" renamed.postInstall;
        old = contains "libk_rs.a" renamed.postInstall;
      };
      expected = {
        new = true;
        old = false;
      };
    };
}
