# Python: python3 (with .pkgs, .withPackages, .override { packageOverrides; }), python3Packages
# (= python3.pkgs) with torch-bin (pkgs/development/python-modules/torch/bin), torch
# (pkgs/development/python-modules/torch/source; here the same host wheel) and the Python
# dependencies of the anchor's allow-list that nixpkgs has (einops, helion,
# nvidia-cutlass-dsl, typing-extensions). `pythonPackagesExtensions` (top level, as in
# pkgs/top-level/all-packages.nix) extend every Python package set, as in
# pkgs/development/interpreters/python/passthrufun.nix. The versioned torch-bin_X_Y and
# tvm-ffi are NOT here: they come from the kernels toolchain's overlay
# (tests/kernel-builder/nix-builder/overlay.nix), which builds them with `__stub.mkTorchBin`.
#
# Copies the passthru names of pkgs/development/interpreters/python (pythonVersion,
# sitePackages, libPrefix, executable, interpreter, pkgs, withPackages, pythonAtLeast,
# pythonOlder, isPy3k) and of pkgs/development/python-modules/torch/bin (pname "torch",
# version, cudaSupport, rocmSupport, cxxdev).
#
# Stand-ins (all documented in README.md):
#  - python3 is the interpreter make_host.py was run with (a venv's python is fine), its
#    include/pythonX.Y is a copy of the host's Python include directory (in the store, so
#    builds by any build user on any builder can read it);
#  - every torch-bin_* is the ONE host torch wheel (2.13 CPU here) under a different version
#    number, except with config.cudaSupport: then it is torch's default Linux wheel from
#    PyPI, a CUDA build (2.11.0, CUDA 13.0: real libtorch_cuda.so and libc10_cuda.so), which
#    scripts/cuda_wheels.py unpacked (host.nix cudaWheels.torch) and nothing installed: $out/<sitePackages>/torch links to the host package, except its include directory, which is copied into the store (readable by any build user, on any machine the store path is copied to); for compilers it also exposes
#    $out/include (= torch/include) and $out/lib/*.so (= torch/lib/*.so) and $out/share/cmake.
#    Real torch-bin keeps headers only under <sitePackages>/torch/include; the C++ API headers
#    live in include/torch/csrc/api/include in both;
#  - apache-tvm-ffi (and the anchor overlay's alias tvm-ffi) is the host's PyPI wheel;
#  - einops, helion, nvidia-cutlass-dsl, typing-extensions are empty packages.
{
  lib,
  final,
  host,
  config,
  ...
}:
let
  hostPython = host.python or null;
  hostTorch = host.torch or null;
  # CUDA variants link torch's CUDA build (./cuda-wheels.nix), never the host's CPU wheel.
  cudaWheels = import ./cuda-wheels.nix { inherit host; };
  cudaTorch = cudaWheels.torch;
  cudaTorchVersion = cudaWheels.version "torch" "torch";
  cudaSupport = config.cudaSupport or false;
  torchSource =
    if cudaSupport then
      {
        dir = if cudaTorch == null then "" else cudaTorch.prefix;
        version = cudaTorchVersion;
      }
    else
      hostTorch;
  torchMissing =
    if cudaSupport then
      "no CUDA build of torch is unpacked on this machine (host.nix cudaWheels.torch = null): run `python scripts/cuda_wheels.py` (scripts/setup.sh does), then write host.nix again"
    else
      "no torch installation was recorded in host.nix (host.nix torch = null)";
  pythonFullVersion = hostPython.version or "3.11.0";
  pythonVersion = lib.versions.majorMinor pythonFullVersion;
  sitePackages = "lib/python${pythonVersion}/site-packages";

  mkPython =
    {
      packageOverrides ? (_: _: { }),
    }:
    let
      python = final.stdenvNoCC.mkDerivation {
        pname = "python3";
        version = pythonFullVersion;
        env = {
          pyExe = hostPython.executable or "";
          pyInclude = hostPython.include or "";
          wrapperShell = final.runtimeShell;
        };
        buildCommand = ''
          if [ -z "$pyExe" ]; then
            echo "stub-nixpkgs: python3: no Python interpreter was recorded in host.nix" >&2
            exit 1
          fi
          mkdir -p $out/bin $out/include $out/${sitePackages}
          for n in python3 python${pythonVersion} python; do
            printf '#!%s\nexec %q "$@"\n' "$wrapperShell" "$pyExe" > $out/bin/$n
            chmod +x $out/bin/$n
          done
          # A copy, not a link: the headers must be readable by any build user on any
          # machine the store is copied to (a link into a private home is not).
          if [ -n "$pyInclude" ]; then cp -rL --no-preserve=mode "$pyInclude" $out/include/python${pythonVersion}; fi
        '';
        passthru = passthru;
        meta = {
          description = "stub-nixpkgs stand-in for CPython (the host interpreter)";
          license = lib.licenses.psfl;
          mainProgram = "python3";
        };
      };
      passthru = {
        inherit pythonVersion sitePackages;
        libPrefix = "python${pythonVersion}";
        executable = "python${pythonVersion}";
        interpreter = "${python}/bin/python${pythonVersion}";
        implementation = "cpython";
        isPy3k = true;
        isPy311 = pythonVersion == "3.11";
        isPy312 = pythonVersion == "3.12";
        pythonAtLeast = lib.versionAtLeast pythonVersion;
        pythonOlder = lib.versionOlder pythonVersion;
        pythonOnBuildForHost = self;
        pkgs = pythonPackages;
        withPackages = f: buildEnv (f pythonPackages);
        buildEnv = {
          override = args: buildEnv (args.extraLibs or [ ]);
        };
        override = args: mkPython { packageOverrides = args.packageOverrides or packageOverrides; };
        inherit self;
      };
      self = python;

      buildEnv =
        extraLibs:
        final.runCommand "python3-${pythonFullVersion}-env"
          {
            pythonPath = map (p: "${p}/${sitePackages}") extraLibs;
            env = {
              pyExe = hostPython.executable or "";
              wrapperShell = final.runtimeShell;
            };
            passthru = passthru // {
              env = throw "stub-nixpkgs: python.withPackages(...).env (a nix-shell) is not provided";
            };
          }
          ''
            mkdir -p $out/bin
            pp=$(echo $pythonPath | tr ' ' ':')
            for n in python3 python${pythonVersion} python; do
              printf '#!%s\nexport PYTHONPATH=%q${"\${PYTHONPATH:+:$PYTHONPATH}"}\nexec %q "$@"\n' "$wrapperShell" "$pp" "$pyExe" > $out/bin/$n
              chmod +x $out/bin/$n
            done
          '';

      # The host wheel is a CPU build: it has no libc10_cuda/libtorch_cuda (nor the _hip and
      # _xpu ones). So that a GPU extension's link can name them, each missing one is an EMPTY
      # shared library with the real soname (it defines nothing: symbols a binding takes from it
      # stay undefined, and such an extension only loads with a real GPU torch).
      gpuStubLibs = [ "c10_cuda" "torch_cuda" "c10_hip" "torch_hip" "c10_xpu" "torch_xpu" ];

      mkTorchBin =
        version: extraPassthru:
        final.stdenv.mkDerivation (finalAttrs: {
          pname = "torch";
          inherit version;
          env = {
            torchDir = torchSource.dir or "";
            inherit torchMissing;
          };
          buildCommand = ''
            if [ -z "$torchDir" ]; then
              echo "stub-nixpkgs: torch-bin: $torchMissing" >&2
              exit 1
            fi
            mkdir -p $out/lib $out/share
            # Mirror $1 into $2 as symlinks, except the entry named $3 (made a directory).
            mirror() {
              mkdir -p "$2"
              for e in "$1"/* "$1"/.[!.]*; do
                [ -e "$e" ] || continue
                [ "$(basename "$e")" = "$3" ] || ln -s "$e" "$2"/
              done
            }
            t=$out/${sitePackages}/torch
            mirror "$torchDir" "$t" include
            # The headers are copied into the store (as the real package has them), with
            # the store's readable modes: a build on a remote builder, by a build user,
            # reads them there (a link into the host's Python tree, maybe a private home,
            # is not readable by every build user).
            cp -rL --no-preserve=mode "$torchDir/include" "$t/include"
            # Generated by a CUDA build of torch (c10/cuda/impl/cuda_cmake_macros.h.in with
            # shared libraries); a CPU wheel lacks it, and c10/cuda/CUDAMacros.h includes it.
            mkdir -p "$t/include/c10/cuda/impl"
            if [ ! -e "$t/include/c10/cuda/impl/cuda_cmake_macros.h" ]; then
              printf '#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n' > "$t/include/c10/cuda/impl/cuda_cmake_macros.h"
            fi
            rm "$t/lib"
            mkdir "$t/lib"
            for e in "$torchDir"/lib/*; do ln -s "$e" $out/${sitePackages}/torch/lib/; done
            for name in ${lib.concatStringsSep " " gpuStubLibs}; do
              so=$out/${sitePackages}/torch/lib/lib$name.so
              if [ ! -e "$so" ]; then
                echo "/* stub-nixpkgs: empty stand-in for lib$name.so */" > stub.c
                $CC -shared -fPIC -Wl,-soname,lib$name.so -o "$so" stub.c
              fi
            done
            ln -s "$t/include" $out/include
            for f in $out/${sitePackages}/torch/lib/*.so*; do ln -s "$f" $out/lib/; done
            if [ -d "$torchDir/share/cmake" ]; then ln -s "$torchDir/share/cmake" $out/share/cmake; fi
          '';
          passthru =
            let
              selfTorch = finalAttrs.finalPackage;
            in
            # The anchor's torch-bin (pkgs/python-modules/torch/binary/generic.nix): outputs
            # out and cxxdev (here both the one path), passthru cudaSupport cudaPackages
            # rocmSupport rocmPackages xpuSupport xpuPackages pkgs (the last three from the
            # toolchain stand-in, `extraPassthru`); pythonModule as every Python package.
            {
              cxxdev = selfTorch;
              pythonModule = python;
              cudaSupport = config.cudaSupport or false;
              rocmSupport = config.rocmSupport or false;
              cudaPackages = final.cudaPackages;
              pkgs = final;
            }
            // extraPassthru;
          meta = {
            description = "stub-nixpkgs stand-in for torch-bin ${version} (the ${
              if cudaSupport then "PyPI CUDA" else "host"
            } torch ${torchSource.version or "?"} wheel)";
            license = lib.licenses.bsd3;
            platforms = lib.platforms.linux ++ lib.platforms.darwin;
          };
        });

      # pkgs/development/python-modules/apache-tvm-ffi/default.nix (real nixpkgs; the anchor's
      # overlay builds the same package, pname "apache-tvm-ffi", as `tvm-ffi`). Stand-in: the
      # host's PyPI `apache-tvm-ffi` wheel (headers under tvm_ffi/include, libtvm_ffi.so under
      # tvm_ffi/lib, the Python package), linked as $out/<sitePackages>/tvm_ffi like the real
      # package's layout; host.nix python.tvmFfi = null makes the build fail with a message.
      mkTvmFfi = final.stdenvNoCC.mkDerivation {
        pname = "apache-tvm-ffi";
        version = hostPython.tvmFfi.version or "0.1.0";
        env.tvmFfiDir = hostPython.tvmFfi.dir or "";
        buildCommand = ''
          if [ -z "$tvmFfiDir" ]; then
            echo "stub-nixpkgs: apache-tvm-ffi: no tvm_ffi package was recorded in host.nix (pip install apache-tvm-ffi)" >&2
            exit 1
          fi
          mkdir -p $out/${sitePackages}
          ln -s "$tvmFfiDir" $out/${sitePackages}/tvm_ffi
          ln -s "$tvmFfiDir/share" $out/share
        '';
        passthru.pythonModule = python;
        meta.description = "stub-nixpkgs stand-in for apache-tvm-ffi (the host's PyPI wheel)";
      };

      mkEmptyPythonPackage =
        pname: version:
        final.stdenvNoCC.mkDerivation {
          inherit pname version;
          buildCommand = ''
            mkdir -p $out/${sitePackages}
          '';
          passthru.pythonModule = python;
          meta.description = "stub-nixpkgs: empty stand-in for the Python package ${pname}";
        };

      # pkgs/development/interpreters/python/mk-python-derivation.nix, for pure-Python
      # applications (the nixgen CLI): argument names checked, `pyproject` or `format`
      # required. Stand-in: the host's pip installs the source tree (no build isolation, no
      # index), and each program is wrapped to import the installed package first. The
      # dependency packages are empty stand-ins: the host interpreter has them.
      pythonArgNames = [
        "pyproject" "format" "build-system" "dependencies" "optional-dependencies"
        "pythonImportsCheck" "pythonRelaxDeps" "pythonRemoveDeps" "nativeCheckInputs"
        "disabledTests" "disabledTestPaths" "pytestFlags" "pytestFlagsArray" "makeWrapperArgs"
        "disabled" "catchConflicts" "pypaBuildFlags" "pipInstallFlags" "permitUserSite"
      ];
      buildPythonApplication =
        attrs:
        assert final.__stub.checkArgNames "python3Packages.buildPythonApplication" (
          final.__stub.knownArgNames ++ pythonArgNames
        ) attrs;
        assert
          attrs ? pyproject
          || attrs ? format
          || throw "${attrs.pname or "buildPythonApplication"}: `pyproject` or `format` must be set (real nixpkgs: buildPythonPackage requires one of them)";
        final.stdenvNoCC.mkDerivation (
          removeAttrs attrs pythonArgNames
          // {
            env = (attrs.env or { }) // {
              pyExe = hostPython.executable or "";
              wrapperShell = final.runtimeShell;
              importsCheck = lib.concatStringsSep " " (attrs.pythonImportsCheck or [ ]);
            };
            dontConfigure = true;
            dontBuild = true;
            installPhase = ''
              runHook preInstall
              if [ -z "$pyExe" ]; then
                echo "stub-nixpkgs: buildPythonApplication: no Python interpreter was recorded in host.nix" >&2
                exit 1
              fi
              export HOME=$TMPDIR PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
              # --ignore-installed: the interpreter is the host's (a venv that may hold an
              # editable nixgen); without it pip uninstalls that copy before installing
              # into $out. nixpkgs' pypaInstallHook installs a wheel into $out alone.
              "$pyExe" -m pip install --quiet --no-deps --no-build-isolation --no-index \
                --ignore-installed --no-compile --no-warn-script-location --prefix "$out" .
              site=$out/${sitePackages}
              for prog in "$out"/bin/*; do
                name=$(basename "$prog")
                # As wrapPythonPrograms: the program keeps its name in `sys.argv[0]`.
                sed "1a import sys; sys.argv[0] = '$name'" "$prog" > "$out/bin/.$name-wrapped"
                rm "$prog"
                printf '#!%s\nexport PYTHONPATH=%q${"\${PYTHONPATH:+:$PYTHONPATH}"}\nexec %q %q "$@"\n' \
                  "$wrapperShell" "$site" "$pyExe" "$out/bin/.$name-wrapped" > "$prog"
                chmod +x "$prog"
              done
              for module in $importsCheck; do
                PYTHONPATH=$site "$pyExe" -c "import $module"
              done
              runHook postInstall
            '';
            passthru = (attrs.passthru or { }) // {
              pythonModule = python;
            };
          }
        );

      basePythonPackages = self: {
        inherit python;
        inherit (passthru) pythonAtLeast pythonOlder isPy3k;
        callPackage = lib.callPackageWith (final // self);
        # For the kernels toolchain stand-in (tests/kernel-builder), not a nixpkgs attribute.
        __stubMkTorchBin = mkTorchBin;
        __stubMkEmptyPythonPackage = mkEmptyPythonPackage;
        torch-bin = mkTorchBin "2.13.0" { };
        torch = self.torch-bin;
        einops = mkEmptyPythonPackage "einops" "0.8.1";
        helion = mkEmptyPythonPackage "helion" "0.2.0";
        apache-tvm-ffi = mkTvmFfi;
        nvidia-cutlass-dsl = mkEmptyPythonPackage "nvidia-cutlass-dsl" "4.2.0";
        typing-extensions = mkEmptyPythonPackage "typing-extensions" "4.15.0";
        # The nixgen CLI's build and runtime dependencies.
        setuptools = mkEmptyPythonPackage "setuptools" "80.9.0";
        attrs = mkEmptyPythonPackage "attrs" "25.4.0";
        cattrs = mkEmptyPythonPackage "cattrs" "25.3.0";
        click = mkEmptyPythonPackage "click" "8.3.1";
        jinja2 = mkEmptyPythonPackage "jinja2" "3.1.6";
        tomli = mkEmptyPythonPackage "tomli" "2.3.0";
        tomlkit = mkEmptyPythonPackage "tomlkit" "0.15.2";
        # Test runner of dev shells and checks: pkgs/development/python-modules/pytest.
        pytest = mkEmptyPythonPackage "pytest" "8.4.2";
        # nixpkgs pkgs/development/python-modules/license-expression (python3Packages.license-expression).
        license-expression = mkEmptyPythonPackage "license-expression" "30.4.4";
        buildPythonPackage = _: throw "stub-nixpkgs: python3Packages.buildPythonPackage is not provided (use stdenv.mkDerivation)";
        inherit buildPythonApplication;
      };

      pythonPackages = lib.fix (
        lib.extends (lib.composeManyExtensions (
          final.pythonPackagesExtensions ++ [ packageOverrides ]
        )) basePythonPackages
      );
    in
    python;
in
{
  pythonPackagesExtensions = [ ];
  python3 = mkPython { };
  python311 = final.python3;
  python3Packages = final.python3.pkgs;
  python311Packages = final.python3Packages;
}
