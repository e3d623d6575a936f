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
          linkFlags = [ ];
          targets = [ ];
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

  # `kernel` (rust-cutile): a crate built like a rust-cpu one, with the variant's
  # `cudaPackages.cuda_tileiras` (the Tile IR assembler) among its build inputs and the CUDA
  # environment set.
  testRustCutileKernelBuildsWithTileiras =
    let
      lib = import ../../tests/nixpkgs/lib;
      pkg = name: {
        inherit name;
        outPath = "/nix/store/${name}";
      };
      pkgs = {
        inherit lib;
        rustPlatform.buildRustPackage = fixedPoint;
        symlinkJoin = { name, paths }: { inherit name paths; };
        cudaPackages = {
          cudaMajorMinorVersion = "13.2";
          cuda_tileiras = pkg "cuda_tileiras-13.2";
          cuda_cudart = pkg "cuda_cudart-13.2";
          cccl = pkg "cccl-13.2";
        };
      };
      drv = rust.kernel { inherit pkgs; root = ./fixtures/project; } {
        name = "k";
        pname = "p-k";
        version = "1";
        language = "rust-cutile";
        sources = [ "kernel_a/a.cpp" ];
        library = "k_tile";
        manifest = "crate/Cargo.toml";
        lockfile = "Cargo.lock";
      };
    in
    {
      expr = {
        tools = map (d: d.name) drv.nativeBuildInputs;
        cudaHome = drv.env.CUDA_HOME.name;
        inherit (drv.env) KERNEL_BUILDER_GPU_LANG;
        passthru = drv.passthru.nixgen;
      };
      expected = {
        tools = [ "cuda_tileiras-13.2" ];
        cudaHome = "cuda-home";
        KERNEL_BUILDER_GPU_LANG = "CUDA";
        passthru = {
          kernel = "k";
          library = "k_tile";
          language = "rust-cutile";
          linkFlags = [ ];
          targets = [ ];
        };
      };
    };

  # A CUDA package set without `cuda_tileiras` (before 13.2, or a nixpkgs without it) stops
  # the evaluation naming the package and the kernel.
  testRustCutileWithoutTileirasSaysWhatIsMissing =
    let
      lib = import ../../tests/nixpkgs/lib;
      pkgs = {
        inherit lib;
        rustPlatform.buildRustPackage = fixedPoint;
        symlinkJoin = { name, paths }: { inherit name paths; };
        cudaPackages.cudaMajorMinorVersion = "13.0";
      };
      drv = rust.kernel { inherit pkgs; root = ./fixtures/project; } {
        name = "k";
        pname = "p-k";
        version = "1";
        language = "rust-cutile";
        sources = [ "kernel_a/a.cpp" ];
        library = "k_tile";
        manifest = "crate/Cargo.toml";
        lockfile = "Cargo.lock";
      };
    in
    {
      expr = (builtins.tryEval (builtins.deepSeq drv.nativeBuildInputs true)).success;
      expected = false;
    };
}
