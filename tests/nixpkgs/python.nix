# Python: python3 (with .pkgs, .withPackages, .override { packageOverrides; }), python3Packages
# (= python3.pkgs) with torch-bin_2_11, torch-bin_2_12, torch-bin_2_13, torch-bin (= 2_13),
# torch (= torch-bin_2_13, as the anchor's overlay sets it), and the Python dependencies of
# the anchor's allow-list (einops, helion, tvm-ffi, nvidia-cutlass-dsl, typing-extensions).
#
# Copies the passthru names of pkgs/development/interpreters/python (pythonVersion,
# sitePackages, libPrefix, executable, interpreter, pkgs, withPackages, pythonAtLeast,
# pythonOlder, isPy3k) and of pkgs/development/python-modules/torch/bin (pname "torch",
# version, cudaSupport, rocmSupport, cxxdev).
#
# Stand-ins (all documented in README.md):
#  - python3 is the interpreter make_host.py was run with (a venv's python is fine), its
#    include/pythonX.Y is the host's Python include directory;
#  - every torch-bin_* is the ONE host torch wheel (2.13 CPU here) under a different version
#    number: $out/<sitePackages>/torch links to the host package; for compilers it also exposes
#    $out/include (= torch/include) and $out/lib/*.so (= torch/lib/*.so) and $out/share/cmake.
#    Real torch-bin keeps headers only under <sitePackages>/torch/include; the C++ API headers
#    live in include/torch/csrc/api/include in both;
#  - einops, helion, nvidia-cutlass-dsl, typing-extensions are empty packages; tvm-ffi is the
#    host's PyPI apache-tvm-ffi (headers, libtvm_ffi.so, module) when it has one.
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
  hostTvmFfi = host.tvm_ffi or null;
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
          if [ -n "$pyInclude" ]; then ln -s "$pyInclude" $out/include/python${pythonVersion}; fi
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

      mkTorchBin =
        version: xpuPackages:
        final.stdenvNoCC.mkDerivation (finalAttrs: {
          pname = "torch";
          inherit version;
          env = {
            torchDir = hostTorch.dir or "";
          };
          buildCommand = ''
            if [ -z "$torchDir" ]; then
              echo "stub-nixpkgs: torch-bin: no torch installation was recorded in host.nix (host.nix torch = null)" >&2
              exit 1
            fi
            mkdir -p $out/${sitePackages} $out/lib $out/share
            ln -s "$torchDir" $out/${sitePackages}/torch
            ln -s "$torchDir/include" $out/include
            for f in "$torchDir"/lib/*.so*; do ln -s "$f" $out/lib/; done
            if [ -d "$torchDir/share/cmake" ]; then ln -s "$torchDir/share/cmake" $out/share/cmake; fi
          '';
          passthru =
            let
              selfTorch = finalAttrs.finalPackage;
            in
            {
              cxxdev = selfTorch;
              dev = selfTorch;
              lib = selfTorch;
              pythonModule = python;
              cudaSupport = config.cudaSupport or false;
              rocmSupport = config.rocmSupport or false;
              cudaCapabilities = config.cudaCapabilities or [ ];
              cxx11Abi = true;
              hostTorchVersion = hostTorch.version or null;
              inherit xpuPackages;
              cudaPackages = final.cudaPackages;
            };
          meta = {
            description = "stub-nixpkgs stand-in for torch-bin ${version} (the host torch ${
              hostTorch.version or "?"
            } wheel)";
            license = lib.licenses.bsd3;
            platforms = lib.platforms.linux ++ lib.platforms.darwin;
          };
        });

      # pkgs/development/python-modules/tvm-ffi (pname "tvm-ffi"): the host's PyPI
      # apache-tvm-ffi package ($out/<sitePackages>/tvm_ffi links to it: include/, lib/
      # libtvm_ffi.so, the Python module), or an empty package when the host has none.
      mkTvmFfi =
        if hostTvmFfi == null then
          mkEmptyPythonPackage "tvm-ffi" "0.1.0"
        else
          final.stdenvNoCC.mkDerivation {
            pname = "tvm-ffi";
            version = hostTvmFfi.version or "0.1.0";
            env.tvmFfiDir = hostTvmFfi.dir;
            buildCommand = ''
              mkdir -p $out/${sitePackages}
              ln -s "$tvmFfiDir" $out/${sitePackages}/tvm_ffi
            '';
            meta.description = "stub-nixpkgs stand-in for tvm-ffi (the host's PyPI apache-tvm-ffi)";
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
              "$pyExe" -m pip install --quiet --no-deps --no-build-isolation --no-index \
                --no-compile --no-warn-script-location --prefix "$out" .
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
        torch-bin_2_11 = mkTorchBin "2.11.0" final.xpuPackages_2025_3_2;
        torch-bin_2_12 = mkTorchBin "2.12.0" final.xpuPackages_2025_3_2;
        torch-bin_2_13 = mkTorchBin "2.13.0" final.xpuPackages_2026_0_0;
        torch-bin = self.torch-bin_2_13;
        torch = self.torch-bin_2_13;
        einops = mkEmptyPythonPackage "einops" "0.8.1";
        helion = mkEmptyPythonPackage "helion" "0.2.0";
        tvm-ffi = mkTvmFfi;
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
        buildPythonPackage = _: throw "stub-nixpkgs: python3Packages.buildPythonPackage is not provided (use stdenv.mkDerivation)";
        inherit buildPythonApplication;
      };

      pythonPackages = lib.fix (lib.extends packageOverrides basePythonPackages);
    in
    python;
in
{
  python3 = mkPython { };
  python311 = final.python3;
  python3Packages = final.python3.pkgs;
  python311Packages = final.python3Packages;
}
