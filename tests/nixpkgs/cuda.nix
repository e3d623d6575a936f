# CUDA package sets: cudaPackages_12_6, cudaPackages_12_8, cudaPackages_12_9, cudaPackages_13_0,
# cudaPackages_13_2 and the defaults as in all-packages.nix at the pin: cudaPackages =
# cudaPackages_12 = cudaPackages_12_9, cudaPackages_13 = cudaPackages_13_2.
#
# Copies: the scope shape and attribute names of pkgs/top-level/cuda-packages.nix
# (cudaMajorMinorVersion, cudaMajorVersion, cudaOlder, cudaAtLeast, callPackage,
# overrideScope), pkgs/development/cuda-modules/packages/cudaFlags.nix (`flags`, same
# formatting), packages/backendStdenv.nix (passthru cudaCapabilities, cudaForwardCompat,
# supported/default capabilities, the capability assertions and their messages), the
# component names cuda_nvcc, cuda_cudart, cuda_crt, cccl, libcublas, … (cuda_cudart
# propagating cuda_crt from CUDA 13.0 and cccl, as packages/cuda_cudart.nix does) with
# meta.license = nvidiaCudaRedist (so the unfree gate refuses them without
# config.allowUnfree) and meta.platforms = Linux; cuda-modules/aliases.nix: `cuda_cccl` is
# a deprecated alias of `cccl` that warns when evaluated (with config.allowAliases, the
# default). NAMES.tsv cites the file of every name.
#
# nvcc behaves like the real wrapper (cuda_nvcc.nix, NixOS/nixpkgs#465329: `wrapProgramBinary
# nvcc --prefix PATH : ${backendStdenv.cc}/bin`): its PATH starts with a compiler directory
# of its own. Here that directory holds a decoy gcc/g++/cc/c++ that fails loudly, so a build
# whose host compiler nvcc finds by name (no -ccbin, or `-ccbin g++`) fails, and one that
# passes the stdenv's compiler by full path works.
#
# Stand-in: each set's components link NVIDIA's PyPI wheels of that CUDA version, unpacked
# by scripts/cuda_wheels.py (./cuda-wheels.nix says which: 13.0 and 13.2 have their own nvcc,
# 12.6 has the real -cu12 libraries and a cuda_nvcc that fails, PyPI having no CUDA 12
# compiler). Libraries no kernel build reads (cuFFT, cuRAND, cuDNN, NCCL, …) are empty
# directories. The capability table below is a transcription of the facts nixpkgs' _cuda.db
# holds for these capabilities.
{
  lib,
  final,
  host,
  config,
  hostPlatform,
  ...
}:
let
  wheels = import ./cuda-wheels.nix { inherit host; };

  # capability -> { archName; min; max; isJetson; isArchitectureSpecific; isFamilySpecific;
  #                 dontDefaultAfter }
  cap =
    archName: min: max: extra:
    {
      inherit archName min max;
      isJetson = false;
      isArchitectureSpecific = false;
      isFamilySpecific = false;
      dontDefaultAfter = null;
    }
    // extra;
  capabilityDb = {
    "5.0" = cap "Maxwell" "10.0" "12.9" { dontDefaultAfter = "11.0"; };
    "5.2" = cap "Maxwell" "10.0" "12.9" { dontDefaultAfter = "11.0"; };
    "5.3" = cap "Maxwell" "10.0" "12.9" { isJetson = true; };
    "6.0" = cap "Pascal" "10.0" "12.9" { dontDefaultAfter = "11.0"; };
    "6.1" = cap "Pascal" "10.0" "12.9" { dontDefaultAfter = "11.0"; };
    "6.2" = cap "Pascal" "10.0" "12.9" { isJetson = true; };
    "7.0" = cap "Volta" "10.0" "12.9" { dontDefaultAfter = "11.0"; };
    "7.2" = cap "Volta" "10.0" "12.9" { isJetson = true; };
    "7.5" = cap "Turing" "10.0" null { };
    "8.0" = cap "Ampere" "11.2" null { };
    "8.6" = cap "Ampere" "11.2" null { };
    "8.7" = cap "Ampere" "11.5" null { isJetson = true; };
    "8.9" = cap "Ada" "11.8" null { };
    "9.0" = cap "Hopper" "11.8" null { };
    "9.0a" = cap "Hopper" "12.0" null { isArchitectureSpecific = true; };
    "10.0" = cap "Blackwell" "12.8" null { };
    "10.0a" = cap "Blackwell" "12.8" null { isArchitectureSpecific = true; };
    "10.0f" = cap "Blackwell" "12.9" null { isFamilySpecific = true; };
    "10.1" = cap "Blackwell" "12.8" "12.9" { };
    "10.1a" = cap "Blackwell" "12.8" "12.9" { isArchitectureSpecific = true; };
    "10.3" = cap "Blackwell" "12.9" null { };
    "10.3a" = cap "Blackwell" "12.9" null { isArchitectureSpecific = true; };
    "11.0" = cap "Blackwell" "13.0" null { };
    "11.0a" = cap "Blackwell" "13.0" null { isArchitectureSpecific = true; };
    "12.0" = cap "Blackwell" "12.8" null { };
    "12.0a" = cap "Blackwell" "12.8" null { isArchitectureSpecific = true; };
    "12.0f" = cap "Blackwell" "12.9" null { isFamilySpecific = true; };
    "12.1" = cap "Blackwell" "12.9" null { };
    "12.1a" = cap "Blackwell" "12.9" null { isArchitectureSpecific = true; };
  };
  allSortedCudaCapabilities = lib.sort (a: b: builtins.compareVersions a b < 0) (
    builtins.attrNames capabilityDb
  );

  dropDot = ver: builtins.replaceStrings [ "." ] [ "" ] ver;

  mkCudaPackages =
    {
      cudaMajorMinorVersion,
    }:
    let
      isSupported =
        c:
        let
          info = capabilityDb.${c};
        in
        lib.versionAtLeast cudaMajorMinorVersion info.min
        && (info.max == null || !(lib.versionOlder info.max cudaMajorMinorVersion));
      isDefault =
        c:
        let
          info = capabilityDb.${c};
        in
        isSupported c
        && !info.isJetson
        && !info.isArchitectureSpecific
        && !info.isFamilySpecific
        && (info.dontDefaultAfter == null || lib.versionAtLeast info.dontDefaultAfter cudaMajorMinorVersion);
      supportedCudaCapabilities = builtins.filter isSupported allSortedCudaCapabilities;
      defaultCudaCapabilities = builtins.filter isDefault allSortedCudaCapabilities;
      requestedCapabilities =
        if config.cudaCapabilities or [ ] != [ ] then config.cudaCapabilities else defaultCudaCapabilities;
      cudaForwardCompat = config.cudaForwardCompat or true;

      # cudaFlags.nix
      cudaComputeCapabilityToName = lib.genAttrs supportedCudaCapabilities (c: capabilityDb.${c}.archName);
      archMapper = feat: map (c: "${feat}_${dropDot c}");
      gencodeMapper = feat: map (c: "-gencode=arch=compute_${dropDot c},code=${feat}_${dropDot c}");
      formatCapabilities =
        {
          cudaCapabilities,
          enableForwardCompat ? true,
        }:
        rec {
          inherit cudaCapabilities enableForwardCompat;
          archNames = lib.unique (map (c: cudaComputeCapabilityToName.${c} or "sm_${dropDot c}") cudaCapabilities);
          realArches = archMapper "sm" cudaCapabilities;
          virtualArches = archMapper "compute" cudaCapabilities;
          arches = realArches ++ lib.optional enableForwardCompat (lib.last virtualArches);
          gencode =
            gencodeMapper "sm" cudaCapabilities
            ++ lib.optionals enableForwardCompat (gencodeMapper "compute" [ (lib.last cudaCapabilities) ]);
          gencodeString = lib.concatStringsSep " " gencode;
          cmakeCudaArchitecturesString = lib.concatMapStringsSep ";" dropDot cudaCapabilities;
          isJetsonBuild =
            let
              jetson = builtins.filter (c: capabilityDb.${c}.isJetson or false) cudaCapabilities;
            in
            jetson != [ ] && hostPlatform.isAarch64;
        };
      flags =
        {
          inherit formatCapabilities cudaComputeCapabilityToName dropDot;
          defaultCapabilities = defaultCudaCapabilities;
          supportedCapabilities = supportedCudaCapabilities;
          cudaArchNameToVersions = lib.groupBy' (vs: c: vs ++ [ c ]) [ ] (
            c: capabilityDb.${c}.archName
          ) supportedCudaCapabilities;
          jetsonComputeCapabilities = builtins.filter (c: capabilityDb.${c}.isJetson) allSortedCudaCapabilities;
        }
        // formatCapabilities {
          cudaCapabilities = requestedCapabilities;
          enableForwardCompat = cudaForwardCompat;
        };

      # backendStdenv.nix
      jetsonRequested = builtins.filter (c: capabilityDb.${c}.isJetson or false) requestedCapabilities;
      unrecognized = lib.subtractLists allSortedCudaCapabilities requestedCapabilities;
      known = lib.intersectLists allSortedCudaCapabilities requestedCapabilities;
      tooOld = builtins.filter (
        c: capabilityDb.${c}.max != null && lib.versionOlder capabilityDb.${c}.max cudaMajorMinorVersion
      ) known;
      tooNew = builtins.filter (c: lib.versionOlder cudaMajorMinorVersion capabilityDb.${c}.min) known;
      assertions = [
        {
          message = "Requested unrecognized CUDA capabilities: ${builtins.toJSON unrecognized}";
          assertion = unrecognized == [ ];
        }
        {
          message = "Requested CUDA capabilities which are too old for CUDA ${cudaMajorMinorVersion}: ${builtins.toJSON tooOld}";
          assertion = tooOld == [ ];
        }
        {
          message = "Requested CUDA capabilities which are too new for CUDA ${cudaMajorMinorVersion}: ${builtins.toJSON tooNew}";
          assertion = tooNew == [ ];
        }
        {
          message = "Requested Jetson CUDA capabilities (${builtins.toJSON jetsonRequested}) require hostPlatform (${hostPlatform.system}) to be aarch64-linux";
          assertion = jetsonRequested != [ ] -> hostPlatform.system == "aarch64-linux";
        }
        {
          message = "Requested pre-Thor (10.1) Jetson CUDA capabilities (${builtins.toJSON jetsonRequested}) cannot be specified with other capabilities (${
            builtins.toJSON (lib.subtractLists jetsonRequested requestedCapabilities)
          })";
          assertion = jetsonRequested != [ ] -> jetsonRequested == requestedCapabilities;
        }
      ];
      failedAssertionsString = lib.concatMapStrings (a: "\n- ${a.message}") (
        builtins.filter (a: !a.assertion) assertions
      );
      mkVersionedName = name: version: "${name}_${builtins.replaceStrings [ "." ] [ "_" ] version}";
      passthruExtra = {
        nvccHostCCMatchesStdenvCC = true;
        hostNixSystem = hostPlatform.system;
        hostRedistSystem =
          if hostPlatform.system == "x86_64-linux" then
            "linux-x86_64"
          else if hostPlatform.system == "aarch64-linux" then
            (if jetsonRequested != [ ] then "linux-aarch64" else "linux-sbsa")
          else
            "unsupported";
        inherit cudaForwardCompat supportedCudaCapabilities defaultCudaCapabilities;
        cudaCapabilities = requestedCapabilities;
        requestedJetsonCudaCapabilities = jetsonRequested;
        hasJetsonCudaCapability = jetsonRequested != [ ];
        requestedArchitectureSpecificCudaCapabilities = builtins.filter (
          c: capabilityDb.${c}.isArchitectureSpecific or false
        ) requestedCapabilities;
        hasArchitectureSpecificCudaCapability = passthruExtra.requestedArchitectureSpecificCudaCapabilities != [ ];
        requestedFamilySpecificCudaCapabilities = builtins.filter (
          c: capabilityDb.${c}.isFamilySpecific or false
        ) requestedCapabilities;
        hasFamilySpecificCudaCapability = passthruExtra.requestedFamilySpecificCudaCapabilities != [ ];
      };
      backendStdenv =
        assert lib.assertMsg (failedAssertionsString == "") "${mkVersionedName "cudaPackages" cudaMajorMinorVersion}.backendStdenv has failed assertions:${failedAssertionsString}";
        final.stdenv // passthruExtra;

      # What real nvcc's wrapper puts first on its PATH (backendStdenv.cc/bin); here a decoy.
      nvccHostCompilerDecoy = final.stdenvNoCC.mkDerivation {
        pname = "cuda-nvcc-decoy-host-compiler";
        version = cudaMajorMinorVersion;
        env.wrapperShell = final.runtimeShell;
        buildCommand = ''
          mkdir -p $out/bin
          for c in gcc g++ cc c++; do
            cat > $out/bin/$c <<EOF
          #!$wrapperShell
          echo "stub-nixpkgs: nvcc ran the decoy host compiler $c, first on the PATH of the nvcc wrapper (as nixpkgs' cudaPackages.backendStdenv.cc/bin is): pass the stdenv's compiler by full path, -ccbin \"\\\$(command -v \"\\\$CXX\")\"" >&2
          exit 97
          EOF
            chmod +x $out/bin/$c
          done
        '';
        meta.description = "decoy host compiler of the stand-in nvcc wrapper";
      };

      # One redistributable component, linking its unpacked wheels (./cuda-wheels.nix).
      #   links: [ "include" "lib" … ] (dirs of the tree; lib/ gets the unversioned `.so`
      #   links a redistributable tarball has and a wheel lacks), includeFrom: the tree's
      #   directory that becomes include/ (CCCL's 13.x wheel nests it in include/cccl),
      #   wrapBins: executables exec-wrapped in bin/, empty: no wheel is used (empty
      #   include/ and lib/); includeOnly: the entries of that directory that include/ holds
      #   (null: all), includeExcept: entries it leaves out, from: the component whose
      #   unpacked wheels hold the files (default: this one), wheel: the wheel among them
      #   whose pin is the version (default: the component's first); withSrc: the
      #   component has `src`, its unpacked redistributable (buildRedist/default.nix:
      #   `src = srcOnly { src = fetchurl … }`), here the unpacked wheel tree, or a
      #   derivation that fails saying why there is none. A `postInstall` given by
      #   `overrideAttrs` runs after the tree is laid out (a real component runs it after
      #   installPhase moved the tree into $out); without one the derivation is unchanged.
      mkComponent =
        {
          pname,
          withSrc ? false,
          links ? [ ],
          includeFrom ? "include",
          includeOnly ? null,
          includeExcept ? [ ],
          from ? pname,
          wheel ? null,
          propagate ? [ ],
          wrapBins ? [ ],
          pathPrefix ? "",
          empty ? false,
          description ? "CUDA component ${pname}",
        }:
        let
          source = wheels.tree cudaMajorMinorVersion from;
          unavailable = if empty then null else wheels.unavailable cudaMajorMinorVersion from;
          pinned =
            if wheel == null then
              wheels.version cudaMajorMinorVersion from
            else
              wheels.wheelVersion cudaMajorMinorVersion from wheel;
          componentVersion = if pinned == null then "${cudaMajorMinorVersion}.0" else pinned;
        in
        final.stdenvNoCC.mkDerivation (finalAttrs: {
          inherit pname;
          version = componentVersion;
          name = "cuda${cudaMajorMinorVersion}-${pname}-${componentVersion}";
          env = {
            cudaPrefix = source.prefix or "";
            linkDirs = toString links;
            includeFrom = includeFrom;
            includeOnly = if includeOnly == null then "" else toString includeOnly;
            includeExcept = toString includeExcept;
            propagated = toString propagate;
            wrapBinsList = toString wrapBins;
            inherit pathPrefix;
            emptyStub = if empty then "1" else "";
            wrapperShell = final.runtimeShell;
            unavailableReason = if unavailable == null then "" else unavailable;
          };
          buildCommand = ''
            if [ -n "$unavailableReason" ]; then
              echo "stub-nixpkgs: cudaPackages_${
                builtins.replaceStrings [ "." ] [ "_" ] cudaMajorMinorVersion
              }.${pname} cannot be built: $unavailableReason" >&2
              exit 1
            fi
            mkdir -p $out/nix-support
            if [ -n "$propagated" ]; then echo "$propagated" > $out/nix-support/propagated-build-inputs; fi
            if [ -n "$emptyStub" ]; then
              mkdir -p $out/include $out/lib
              echo "empty stand-in: no wheel provides ${pname}" > $out/nix-support/stub-note
              exit 0
            fi
            for d in $linkDirs; do
              case $d in
                include)
                  if [ -z "$includeOnly$includeExcept" ]; then
                    if [ -e "$cudaPrefix/$includeFrom" ]; then ln -s "$cudaPrefix/$includeFrom" $out/include; fi
                  else
                    mkdir -p $out/include
                    for f in "$cudaPrefix/$includeFrom"/*; do
                      [ -e "$f" ] || continue
                      e=$(basename "$f")
                      if [ -n "$includeOnly" ]; then
                        case " $includeOnly " in *" $e "*) ;; *) continue ;; esac
                      fi
                      case " $includeExcept " in *" $e "*) continue ;; esac
                      ln -s "$f" $out/include/
                    done
                  fi ;;
                lib)
                  mkdir -p $out/lib
                  for f in "$cudaPrefix"/lib/*; do
                    [ -e "$f" ] || continue
                    case $f in */__init__.py|*/__pycache__) continue ;; esac
                    ln -s "$f" $out/lib/
                  done
                  # libfoo.so.13 -> libfoo.so: what `-lfoo` finds (tarballs ship it).
                  for f in $out/lib/lib*.so.*; do
                    [ -e "$f" ] || continue
                    dev=''${f%%.so.*}.so
                    [ -e "$dev" ] || ln -s "$(basename "$f")" "$dev"
                  done ;;
                *)
                  if [ -e "$cudaPrefix/$d" ]; then ln -s "$cudaPrefix/$d" "$out/$d"; fi ;;
              esac
            done
            if [ -n "$wrapBinsList" ]; then
              mkdir -p $out/bin
              for b in $wrapBinsList; do
                if [ ! -x "$cudaPrefix/bin/$b" ]; then
                  echo "stub-nixpkgs: ${pname}: $cudaPrefix/bin/$b does not exist" >&2
                  exit 1
                fi
                {
                  printf '#!%s\n' "$wrapperShell"
                  if [ -n "$pathPrefix" ]; then printf 'PATH=%q${"$"}{PATH:+:$PATH}; export PATH\n' "$pathPrefix"; fi
                  printf 'exec %q "$@"\n' "$cudaPrefix/bin/$b"
                } > "$out/bin/$b"
                chmod +x "$out/bin/$b"
              done
            fi
          ''
          + lib.optionalString (finalAttrs ? postInstall) "runHook postInstall\n";
          passthru =
            let
              self = finalAttrs.finalPackage;
            in
            {
              # Real components are multi-output; here every output is the one store path.
              dev = self;
              lib = self;
              bin = self;
              include = self;
              static = self;
              stubs = self;
              inherit cudaMajorMinorVersion;
            }
            # A passthru attribute here (real components have `src` as a derivation
            # attribute), so that the derivation of every stand-in component stays as it was.
            // lib.optionalAttrs withSrc {
              src =
                if source != null then
                  source.prefix
                else
                  final.runCommand "cuda${cudaMajorMinorVersion}-${pname}-source" { } ''
                    echo ${
                      lib.escapeShellArg "stub-nixpkgs: cudaPackages_${
                        builtins.replaceStrings [ "." ] [ "_" ] cudaMajorMinorVersion
                      }.${pname}.src cannot be built: ${
                        if unavailable == null then "no wheel tree" else unavailable
                      }"
                    } >&2
                    exit 1
                  '';
            };
          meta = {
            inherit description;
            license = lib.licenses.nvidiaCudaRedist;
            platforms = [
              "x86_64-linux"
              "aarch64-linux"
            ];
          };
        });

      # The three libraries whose headers ATen/cuda/CUDAContext.h includes, from their wheels.
      libraryComponents = [
        "libcublas"
        "libcusolver"
        "libcusparse"
      ];
      emptyComponents = [
        "libcusparse_lt"
        "libcufft"
        "libcurand"
        "libnvjitlink"
        "libcufile"
        "cuda_nvrtc"
        "cudnn"
        "nccl"
        "libcutensor"
        "libnpp"
      ];
    in
    lib.makeScope final.newScope (
      self:
      {
        inherit
          cudaMajorMinorVersion
          flags
          backendStdenv
          ;
        cudaMajorVersion = lib.versions.major cudaMajorMinorVersion;
        cudaOlder = lib.versionOlder cudaMajorMinorVersion;
        cudaAtLeast = lib.versionAtLeast cudaMajorMinorVersion;
        pkgs = final;

        cuda_nvcc = mkComponent {
          pname = "cuda_nvcc";
          withSrc = true;
          links = [
            "include"
            "lib"
            "nvvm"
          ];
          # From CUDA 13.0 the crt/ headers are cuda_crt's (their own redistributable), not
          # in cuda_nvcc's include (cuda_nvcc.nix patches nvcc.profile to its own include
          # output; cuda_crt.nix). Here the crt wheel is unpacked with nvcc's, so nvcc itself
          # still finds them in its tree; the package's include/ leaves them out, so that a
          # compile reads them only through cuda_cudart, as with real nixpkgs.
          includeExcept = lib.optionals (lib.versionAtLeast cudaMajorMinorVersion "13.0") [ "crt" ];
          wrapBins = [
            "nvcc"
            "ptxas"
            "nvlink"
            "fatbinary"
            "cudafe++"
            "bin2c"
          ];
          pathPrefix = "${nvccHostCompilerDecoy}/bin";
          description = "CUDA compiler driver (stand-in: NVIDIA's nvcc, NVVM and CRT wheels)";
        };
        cuda_cudart = mkComponent {
          pname = "cuda_cudart";
          links = [
            "include"
            "lib"
          ];
          # Real cuda_cudart propagates the include outputs of cuda_crt from CUDA 13.0
          # (crt/host_defines.h, crt/host_config.h, which cuda_runtime_api.h includes) and of
          # CCCL (<nv/target>): pkgs/development/cuda-modules/packages/cuda_cudart.nix.
          propagate = lib.optionals (lib.versionAtLeast cudaMajorMinorVersion "13.0") [ self.cuda_crt ] ++ [
            self.cccl
          ];
          description = "CUDA runtime (stand-in: NVIDIA's runtime wheel)";
        };
        # packages/cuda_crt.nix: the CUDA C runtime headers (include/crt/), a redistributable
        # of their own from CUDA 13.0. Stand-in: the nvidia-cuda-crt wheel, unpacked with
        # cuda_nvcc's (its pin there is the version). Before 13.0 they ship in cuda_nvcc's
        # include, and no 12.x set here has an nvcc: a 12.x cuda_crt fails as its nvcc does.
        cuda_crt = mkComponent {
          pname = "cuda_crt";
          from = "cuda_nvcc";
          wheel = "nvidia-cuda-crt";
          links = [ "include" ];
          includeOnly = [ "crt" ];
          description = "CUDA C runtime headers (stand-in: NVIDIA's CRT wheel)";
        };
        # packages/cccl.nix: the attribute is `cccl` for every CUDA version; its pname is
        # "cccl" from CUDA 13.3 on, "cuda_cccl" before (NVIDIA's rename).
        cccl = mkComponent {
          pname = if lib.versionAtLeast cudaMajorMinorVersion "13.3" then "cccl" else "cuda_cccl";
          links = [ "include" ];
          # The 13.x wheel nests the headers one level down (nvcc.profile adds
          # -isystem include/cccl); the 12.x wheel does not.
          includeFrom = if lib.versionAtLeast cudaMajorMinorVersion "13" then "include/cccl" else "include";
          description = "CUDA C++ Core Libraries (stand-in: NVIDIA's CCCL wheel)";
        };
        cuda_cupti = mkComponent {
          pname = "cuda_cupti";
          links = [
            "include"
            "lib"
          ];
        };
        cuda_nvtx = mkComponent {
          pname = "cuda_nvtx";
          links = [ "include" ];
        };
        cuda_profiler_api = mkComponent {
          pname = "cuda_profiler_api";
          links = [ "include" ];
        };
        cuda_cuobjdump = mkComponent {
          pname = "cuda_cuobjdump";
          wrapBins = [ "cuobjdump" ];
        };
      }
      // lib.genAttrs libraryComponents (
        pname:
        mkComponent {
          inherit pname;
          links = [
            "include"
            "lib"
          ];
        }
      )
      // lib.genAttrs emptyComponents (
        pname:
        mkComponent {
          inherit pname;
          empty = true;
        }
      )
      # cuda-modules/aliases.nix (`mkRenamed`), added when config.allowAliases (default true).
      // lib.optionalAttrs (config.allowAliases or true) {
        cuda_cccl = lib.warn "cudaPackages.cuda_cccl is deprecated, use cccl instead" self.cccl;
      }
    );
in
{
  cudaPackages_12_6 = mkCudaPackages {
    cudaMajorMinorVersion = "12.6";
  };
  cudaPackages_12_8 = mkCudaPackages {
    cudaMajorMinorVersion = "12.8";
  };
  cudaPackages_12_9 = mkCudaPackages {
    cudaMajorMinorVersion = "12.9";
  };
  cudaPackages_13_0 = mkCudaPackages {
    cudaMajorMinorVersion = "13.0";
  };
  cudaPackages_13_2 = mkCudaPackages {
    cudaMajorMinorVersion = "13.2";
  };
  # all-packages.nix at the pin: `cudaPackages = recurseIntoAttrs cudaPackages_12;`
  cudaPackages_12 = final.cudaPackages_12_9;
  cudaPackages_13 = final.cudaPackages_13_2;
  cudaPackages = lib.recurseIntoAttrs final.cudaPackages_12;
}
