/**
  Rust kernels: the derivation of a `rust-cpu`, `rust-cuda-oxide` or `rust-cutile` kernel
  from its generated file's data (`kernel`), the checks of what a crate installs, and the
  pieces of a cuda-oxide (`rust-cuda-oxide`) build.
*/
{
  lib,
  cuda,
  sources,
  compile,
}:
let
  inherit (sources) select;
  # nixpkgs' quoting (lib/strings.nix).
  esc = lib.escapeShellArg;
  # A relative path as an argument: one that starts with `-` gets `./` (a crate in `-x/`
  # is `--manifest-path ./-x/Cargo.toml`, not an option).
  pathArg = p: if builtins.substring 0 1 p == "-" then "./${p}" else p;
in
rec {
  /**
    Shell text for a Rust kernel's `postInstall`: the crate must have installed the static
    library the extension links, `$out/lib/lib<library>.a`. Otherwise it stops with what
    was built and the two ways to fix it, instead of a link error in the extension.

    # Type

    ```
    archiveCheck :: { kernel :: String, library :: String } -> String
    ```
  */
  archiveCheck =
    { kernel, library }:
    ''
      if [ ! -e "$out/lib/"${esc "lib${library}.a"} ]; then
        built=$(find "$out/lib" -maxdepth 1 \( -name '*.a' -o -name '*.so' \) -printf '%f ' 2>/dev/null || true)
        {
          echo ${esc "nixgen: kernel ${kernel}: the crate did not build lib${library}.a, the static library the extension links"}
          if [ -n "$built" ]; then
            echo "  it built: $built"
            echo ${esc "  fix: nixgen read the library name ${library} from the crate's Cargo.toml when it rendered; render again (nixgen render) after changing [lib] name or the package name"}
          else
            echo ${esc "  fix: build a static library: crate-type = [\"staticlib\"] under [lib] in the crate's Cargo.toml"}
          fi
        } >&2
        exit 1
      fi
    '';

  /**
    Shell text for a Rust kernel's `preBuild`: the build is offline and vendors exactly what
    `Cargo.lock` lists, so a crate the manifest needs that the lock file lacks stops the
    build here, naming `Cargo.lock`, the crate and what to run, instead of cargo's
    "no matching package" deep inside the build.

    # Type

    ```
    lockCheck :: { kernel :: String, manifest :: String, lockfile :: String } -> String
    ```
  */
  lockCheck =
    {
      kernel,
      manifest,
      lockfile,
    }:
    ''
      if ! cargo metadata --offline --format-version 1 --manifest-path ${esc (pathArg manifest)} >/dev/null 2>"$NIX_BUILD_TOP/nixgen-lock-check"; then
        crate=$(sed -n -e 's/.*no matching package named `\([^`]*\)`.*/\1/p' \
          -e 's/.*failed to load source for dependency `\([^`]*\)`.*/\1/p' \
          -e 's/.*failed to select a version for the requirement `\([^ `=]*\).*/\1/p' \
          "$NIX_BUILD_TOP/nixgen-lock-check" | head -n 1)
        {
          cat "$NIX_BUILD_TOP/nixgen-lock-check"
          echo ${esc "nixgen: kernel ${kernel}: ${lockfile} does not lock every crate ${manifest} needs"}''${crate:+" (missing: $crate)"}
          echo ${esc "  the build is offline and vendors only what Cargo.lock lists; next to ${lockfile}, run \`cargo generate-lockfile\` (or \`cargo check\`) with network access and commit Cargo.lock"}
        } >&2
        exit 1
      fi
    '';

  /**
    The cuda-oxide `rustc` codegen backend (`librustc_codegen_cuda.so`), built the way the
    anchor's `support-rust-kernels` branch builds it (nix-builder/lib/extension/tvm-ffi/arch.nix:
    the drbh/cuda-oxide source at a fixed revision, `crates/rustc-codegen-cuda`, its Cargo.lock
    with `allowBuiltinFetchGit`, libffi, libxml2, zstd and zlib). One difference: it is built
    with the `rustPlatform` of the kernel's own `rust-toolchain.toml`, not of the one inside the
    fetched source (reading that would import from a derivation at evaluation time); a codegen
    backend only loads into the exact rustc it was built with, so the two must name the same
    nightly anyway.

    # Type

    ```
    cudaOxideBackend :: { rustPlatform, fetchFromGitHub, buildInputs :: [ Derivation ] } -> Derivation
    ```
  */
  cudaOxideBackend =
    {
      rustPlatform,
      fetchFromGitHub,
      buildInputs,
    }:
    let
      src = fetchFromGitHub {
        owner = "drbh";
        repo = "cuda-oxide";
        rev = "bc5f33bb1d556671c35e475439bb821d25caa2cb";
        hash = "sha256-ZIpS0XFDI9yDSXk33OyQ3mGB5gRhE7tldmmex226tLA=";
      };
    in
    rustPlatform.buildRustPackage {
      pname = "rustc-codegen-cuda";
      version = "0.2.1";
      inherit src buildInputs;
      sourceRoot = "source/crates/rustc-codegen-cuda";
      cargoLock = {
        lockFile = "${src}/crates/rustc-codegen-cuda/Cargo.lock";
        allowBuiltinFetchGit = true;
      };
      doCheck = false;
    };

  /**
    Shell text building a cuda-oxide device crate to PTX before the host crate (which embeds
    the PTX) is built: the branch's `rust_kernel_component` device step, with
    `CUDA_OXIDE_TARGET` the lowest capability (PTX is JIT-compiled forward).

    # Type

    ```
    deviceBuild :: { manifest :: String, ptxDir :: String, capabilities :: [ String ] } -> String
    ```
  */
  deviceBuild =
    {
      manifest,
      ptxDir,
      capabilities,
    }:
    let
      # `+PTX` dropped (the anchor's `string(REPLACE "+PTX" …)`): cuda-oxide emits PTX anyway.
      bases = map cuda.baseOf capabilities;
      lowest = builtins.head (builtins.sort (a: b: builtins.compareVersions a b < 0) bases);
      target = "sm_${cuda.archName lowest}";
    in
    ''
      mkdir -p -- ${esc ptxDir}
      CUDA_OXIDE_PTX_DIR="$PWD/"${esc ptxDir} CUDA_OXIDE_TARGET=${esc target} \
        RUSTFLAGS="-Zcodegen-backend=$CUDA_OXIDE_BACKEND -Copt-level=3 -Cdebug-assertions=off -Zmir-enable-passes=-JumpThreading -Csymbol-mangling-version=v0" \
        cargo build --release --offline --locked --manifest-path ${esc (pathArg manifest)} \
          --target-dir "$NIX_BUILD_TOP/cuda-oxide-device"
    '';

  /**
    The derivation of a Rust kernel (`rust-cpu`; `rust-cuda-oxide`: a host crate and a
    cuda-oxide device crate; `rust-cutile`: a crate of cuTile kernels, built with the CUDA
    toolkit's Tile IR assembler `tileiras` on `PATH`), built with
    `rustPlatform.buildRustPackage`. Dependencies are vendored from the lock file: registry
    crates by their checksum, git crates with `builtins.fetchGit` at the locked revision,
    so no hash is maintained.

    A `rust-cutile` kernel needs the variant's `cudaPackages.cuda_tileiras` (CUDA 13.2 and
    later); a package set without it fails naming what is missing.

    # Inputs

    The first argument is what the kernel file is called with (`pkgs`, the project `root`);
    the second is the kernel's data:

    `name`, `pname`, `version`, `language`
    : the kernel, its derivation's name and version, `rust-cpu`, `rust-cuda-oxide` or
      `rust-cutile`

    `sources`, `features`
    : as build.toml lists them

    `library`, `manifest`, `lockfile`
    : the static library the extension links, the crate's `Cargo.toml` and the `Cargo.lock`

    `crateDir`, `cargoRoot`, `copyLock`
    : the crate's directory (`buildAndTestSubdir`), where cargo runs, and whether the lock
      file must be copied next to the manifest (all as nixgen planned them)

    `capabilities`, `toolchainFile`, `deviceManifest`, `ptxDir` (`rust-cuda-oxide`)
    : CUDA version → capabilities as nixgen planned them, the `rust-toolchain.toml`, the
      device crate's manifest and where its PTX goes

    # Type

    ```
    kernel :: { pkgs, root :: Path } -> AttrSet -> Derivation
    ```
  */
  kernel =
    { pkgs, root }:
    {
      name,
      pname,
      version,
      language,
      sources,
      features ? [ ],
      library,
      manifest,
      lockfile,
      crateDir ? null,
      cargoRoot ? null,
      copyLock ? false,
      capabilities ? null,
      toolchainFile ? null,
      deviceManifest ? null,
      ptxDir ? null,
    }:
    let
      inherit (pkgs) lib;
      onCuda = language == "rust-cuda-oxide";
      onCutile = language == "rust-cutile";
      # cuTile's compiler ships with the CUDA toolkit from 13.2 on.
      tileiras =
        cudaPackages.cuda_tileiras or (throw (
          "nixgen: kernel ${name} (rust-cutile): the CUDA ${cudaPackages.cudaMajorMinorVersion or "?"} "
          + "package set has no `cuda_tileiras` (`tileiras`, the Tile IR assembler cuTile "
          + "compiles with); the kernels toolchain flake provides no cuTile builder either"
        ));
      cudaPackages = pkgs.cudaPackages;
      # cuda-oxide needs the nightly its `rust-toolchain.toml` names (rust-overlay's
      # `rust-bin`, an overlay of the anchor's build sets).
      nightly = pkgs.rust-bin.fromRustupToolchainFile (root + "/${toolchainFile}");
      rustPlatform =
        if onCuda then
          pkgs.makeRustPlatform {
            cargo = nightly;
            rustc = nightly;
          }
        else
          pkgs.rustPlatform;
      backend = cudaOxideBackend {
        inherit rustPlatform;
        inherit (pkgs) fetchFromGitHub;
        buildInputs = [
          pkgs.libffi
          pkgs.libxml2
          pkgs.zstd
          pkgs.zlib
        ];
      };
      # This variant's toolkit picks its planned list (a toolkit the plan lacks fails).
      picked = cuda.capabilitiesFor capabilities cudaPackages.cudaMajorMinorVersion;
      cudaHome = pkgs.symlinkJoin {
        name = "cuda-home";
        paths = [
          (lib.getDev cudaPackages.cuda_cudart)
          (lib.getLib cudaPackages.cuda_cudart)
          (lib.getDev cudaPackages.cccl)
        ];
      };
      check = lockCheck {
        kernel = name;
        inherit manifest lockfile;
      };
    in
    # A fixed point: the archive check and (rust-cuda-oxide) the device build read the library
    # name and the capabilities from the derivation's `passthru.nixgen`, so `overrideAttrs`
    # that changes them changes what is built.
    rustPlatform.buildRustPackage (
      finalAttrs:
      let
        planned = finalAttrs.passthru.nixgen;
      in
      {
        inherit pname version;
        src = select lib root sources;
        cargoLock = {
          lockFile = root + "/${lockfile}";
          allowBuiltinFetchGit = true;
        };
        buildFeatures = features;
        # A crate missing from the lock file stops the build here; then (rust-cuda-oxide) the
        # device crate: the host crate embeds its PTX.
        preBuild =
          if onCuda then
            check
            + deviceBuild {
              manifest = deviceManifest;
              inherit ptxDir;
              inherit (planned) capabilities;
            }
          else
            check;
        doCheck = false;
        # The extension links `lib<library>.a`: fail here, with the fix, when the crate
        # names it otherwise.
        postInstall = archiveCheck {
          kernel = name;
          inherit (planned) library;
        };
        passthru.nixgen = {
          kernel = name;
          inherit library language;
          # A crate asks nothing of the extension's link.
          linkFlags = [ ];
          targets = if onCuda then picked else [ ];
        }
        // (if onCuda then { capabilities = picked; } else { });
      }
      // (if cargoRoot != null then { inherit cargoRoot; } else { })
      // (if crateDir != null then { buildAndTestSubdir = crateDir; } else { })
      # The lock file sits elsewhere in the project; Cargo wants it next to the manifest.
      // (if copyLock then { prePatch = compile.copyPhase lockfile "${crateDir}/Cargo.lock"; } else { })
      // (
        if onCutile then
          {
            nativeBuildInputs = [ tileiras ];
            env = {
              CUDA_HOME = cudaHome;
              CUDA_TOOLKIT_PATH = cudaHome;
              KERNEL_BUILDER_GPU_LANG = "CUDA";
            };
          }
        else
          { }
      )
      // (
        if onCuda then
          {
            env = {
              CUDA_OXIDE_BACKEND = "${backend}/lib/librustc_codegen_cuda.so";
              CUDA_HOME = cudaHome;
              CUDA_TOOLKIT_PATH = cudaHome;
              LIBRARY_PATH = "${lib.getOutput "stubs" cudaPackages.cuda_cudart}/lib/stubs";
              KERNEL_BUILDER_GPU_LANG = "CUDA";
              KERNEL_BUILDER_CUDA_ARCHS = lib.concatStringsSep ";" planned.capabilities;
            };
          }
        else
          { }
      )
    );
}
