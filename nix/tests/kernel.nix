# Tests of `kernel.nix`: the derivation of a C++ kernel, and what its per-language table
# adds for each language (plan, compilers, the backend's inputs, Metal's install).
let
  lib = import ../../tests/nixpkgs/lib;
  nixgen = (import ../default.nix).withLib lib;
  inherit (nixgen) compile kernel;
  root = ./fixtures/project;
  # A fake package set and toolchain: packages are their names, and mkDerivation returns
  # its attributes.
  pkgs = {
    inherit lib;
    ninja = "ninja";
    python3 = "python3";
    apple-sdk_26 = "apple-sdk_26";
    cudaPackages = {
      cudaMajorMinorVersion = "13.0";
      cuda_nvcc = "cuda_nvcc";
      cuda_cudart = "cuda_cudart";
      cccl = "cccl";
      libcublas = "libcublas";
      libcusolver = "libcusolver";
      libcusparse = "libcusparse";
    };
    rocmPackages = {
      clr = "clr";
      hipcub-devel = "hipcub-devel";
      hipsparselt = "hipsparselt";
      rocprim-devel = "rocprim-devel";
      rocthrust-devel = "rocthrust-devel";
      rocwmma-devel = "rocwmma-devel";
    };
  };
  # mkDerivation returns its attributes, taking `finalAttrs: { … }` and adding
  # `overrideAttrs` (`old: { … }`) as nixpkgs' make-derivation.nix does.
  mkDerivation =
    rattrs:
    let
      fn = if builtins.isFunction rattrs then rattrs else _: rattrs;
      attrs = fn attrs;
    in
    attrs
    // {
      overrideAttrs =
        f:
        mkDerivation (
          final:
          let
            prev = fn final;
          in
          prev // f prev
        );
    };
  toolchain = {
    stdenv = { inherit mkDerivation; };
    compilers = [ "icpx" ];
    cxxFamily = "gcc";
    # What a compile takes from torch: flags naming a stand-in for the flags derivation.
    torchFlags =
      torch:
      if torch == null then
        {
          nvcc = [ ];
          cxx = [ ];
          inputs = [ ];
        }
      else
        {
          nvcc = [
            "--options-file"
            "${torch}-flags/nvcc"
          ];
          cxx = [ "@${torch}-flags/cxx" ];
          inputs = [ "${torch}-flags" ];
        };
  };
  # The headers the project lists: one of the kernel's own, one of another kernel.
  headers = [
    "kernel_a/a.h"
    "kernel_b/b.h"
  ];
  data = language: {
    name = "k";
    pname = "p-k";
    version = "1";
    inherit language;
    sources = [
      "kernel_a/a.cpp"
      "kernel_a/a.h"
    ];
    includes = [ "kernel_a" ];
    cxxFlags = [ "-DX" ];
    depFlags = [ "-DDEP" ];
    buildInputs = [ "torch" ];
  };
  build = language: extra: kernel.cpp { inherit pkgs toolchain root headers; } (data language // extra);
  # What every language's plan gets: the kernel's sources, then the project's other headers.
  common = {
    name = "k";
    sources = [
      "kernel_a/a.cpp"
      "kernel_a/a.h"
      "kernel_b/b.h"
    ];
    includes = [ "kernel_a" ];
    cxxFlags = [ "-DX" ];
    depFlags = [ "-DDEP" ];
  };
  # The attributes that say how a kernel is built (not its source tree).
  shape =
    drv:
    removeAttrs drv [
      "src"
      "configurePhase"
      "overrideAttrs"
    ];
  # What `cpp` returns for kernel `k` (as `shape` shows it): the language's compilers before
  # ninja, its backend's inputs before the kernel's dependencies, and `passthru.nixgen` with
  # what the language adds (its plan, the GPU targets) and the kernel's `linkFlags`.
  expectedShape =
    language:
    {
      compilers ? [ ],
      inputs ? [ ],
      linkFlags ? [ ],
      # The backend flags the language reads, as derivation attributes.
      flags ? { },
      sources ? (data language).sources,
      nixgen,
    }:
    {
      pname = "p-k";
      version = "1";
      # The build's data, as derivation attributes (`overrideAttrs` changes them).
      __structuredAttrs = true;
      inherit sources;
      inherit (data language) includes cxxFlags depFlags;
      nativeBuildInputs = compilers ++ [ "ninja" ];
      buildInputs = inputs ++ [ "torch" ];
      installPhase = compile.installArchivePhase "k";
      passthru.nixgen = {
        kernel = "k";
        library = "k";
        plannedObjects = null;
        targets = [ ];
        inherit language linkFlags;
      }
      // nixgen;
    }
    // flags;
  capabilities = {
    "12.6" = [ "8.0" ];
    "13.0" = [
      "8.0"
      "9.0"
    ];
  };
in
{
  testLanguagesAreTheCppOnes = {
    expr = builtins.attrNames (kernel.cppLanguages { inherit pkgs toolchain; });
    expected = [
      "cpp-cpu"
      "cpp-cuda"
      "cpp-metal"
      "cpp-rocm"
      "cpp-xpu"
    ];
  };

  # Every language nixgen knows (nixgen/core/tables.py LANGUAGES) and the pure-Python variant.
  testLanguageTableHoldsEveryLanguage = {
    expr = builtins.attrNames kernel.languages;
    expected = [
      "cpp-cpu"
      "cpp-cuda"
      "cpp-metal"
      "cpp-rocm"
      "cpp-xpu"
      "noarch"
      "rust-cpu"
      "rust-cuda-oxide"
      "rust-cutile"
    ];
  };

  # `build` dispatches on the data's language, passing each builder only its arguments.
  testBuildCallsTheLanguagesBuilder = {
    expr = (kernel.build { inherit pkgs toolchain root headers; torch = null; variant = null; } (data "cpp-cpu")).pname;
    expected = "p-k";
  };

  testBuildNamesTheKnownLanguages = {
    expr = (builtins.tryEval (kernel.build { } { language = "fortran"; })).success;
    expected = false;
  };

  # `depends` by the library's names: torch's flags and the variant's stable-ABI target,
  # tvm-ffi's headers, a dotted package-set path; inputs tvm-ffi, torch, then the others.
  testDependencies =
    let
      python = name: {
        outPath = "/nix/store/${name}";
        pythonModule.sitePackages = "lib/python3/site-packages";
      };
      variant.stableAbi = "2.11";
    in
    {
      expr = kernel.dependencies {
        pkgs = pkgs // {
          python3.pkgs.tvm-ffi = python "tvm-ffi";
          xpuPackages.sycl-tla = "sycl-tla";
        };
        torch = python "torch";
        inherit variant;
      } [ "torch" "xpuPackages.sycl-tla" "tvm-ffi" ];
      expected = {
        flags =
          nixgen.torch.includeFlags (python "torch")
          ++ nixgen.torch.abiDefines variant
          ++ nixgen.tvmFfi.includeFlags (python "tvm-ffi");
        inputs = [
          (python "tvm-ffi")
          (python "torch")
          "sycl-tla"
        ];
      };
    };

  testCpuKernel = {
    expr = shape (build "cpp-cpu" { linkFlags = [ "-fopenmp" ]; });
    expected = expectedShape "cpp-cpu" {
      linkFlags = [ "-fopenmp" ];
      nixgen.plan = compile.cppCpu common;
    };
  };

  testTheSourceIsTheKernelsFilesAndTheProjectsHeaders = {
    expr =
      let
        src = (build "cpp-cpu" { }).src;
      in
      map (dir: builtins.attrNames (builtins.readDir "${src}/${dir}")) [
        "kernel_a"
        "kernel_b"
      ];
    # Not kernel_a/unused.cpp, nor kernel_b/b.cu: only what the kernel and `headers` list.
    expected = [
      [
        "a.cpp"
        "a.h"
      ]
      [ "b.h" ]
    ];
  };

  testTheConfigurePhaseRunsThePlan = {
    expr =
      let
        drv = build "cpp-cpu" { };
      in
      drv.configurePhase == compile.configurePhase drv.passthru.nixgen.plan;
    expected = true;
  };

  testCudaKernelUsesTheToolkitsCapabilities = {
    expr = shape (
      build "cpp-cuda" {
        inherit capabilities;
        cudaFlags = [ "-lineinfo" ];
      }
    );
    expected = expectedShape "cpp-cuda" {
      compilers = [ "cuda_nvcc" ];
      inputs = kernel.cudaInputs;
      flags.cudaFlags = [ "-lineinfo" ];
      nixgen = {
        capabilities = [
          "8.0"
          "9.0"
        ];
        targets = [
          "8.0"
          "9.0"
        ];
        plan = compile.cppCuda (
          common
          // {
            capabilities = [
              "8.0"
              "9.0"
            ];
            cudaFlags = [ "-lineinfo" ];
          }
        );
      };
    };
  };

  # A torch variant's CUDA kernel: its compiles read what the toolchain takes from the
  # variant's torch, and the derivation that holds it is a build input.
  testCudaKernelOfATorchVariantGetsTheToolchainsTorchFlags = {
    expr =
      let
        drv = kernel.cpp {
          inherit pkgs toolchain root headers;
          torch = "torch";
        } (data "cpp-cuda" // { inherit capabilities; });
      in
      {
        inherit (drv.passthru.nixgen.plan) objects;
        inputs = builtins.filter (i: i == "torch-flags") drv.buildInputs;
      };
    expected = {
      inherit
        (compile.cppCuda (
          common
          // {
            capabilities = [ "8.0" "9.0" ];
            cudaFlags = [ ];
            frameworkFlags = {
              nvcc = [ "--options-file" "torch-flags/nvcc" ];
              cxx = [ "@torch-flags/cxx" ];
            };
          }
        ))
        objects
        ;
      inputs = [ "torch-flags" ];
    };
  };

  # "No buildable capability" is refused by nixgen.plan alone; the library reads the plan.
  testCudaKernelReadsAnEmptyPlannedCapabilitySetAsItIs = {
    expr = (build "cpp-cuda" { capabilities = capabilities // { "13.0" = [ ]; }; })
      .passthru.nixgen.capabilities;
    expected = [ ];
  };

  testCudaKernelOfAToolkitOutsideTheTableFails = {
    expr = (build "cpp-cuda" { capabilities = removeAttrs capabilities [ "13.0" ]; }).pname;
    expectedError = true;
  };

  testRocmKernelCompilesForItsArchs = {
    expr = shape (
      build "cpp-rocm" {
        archs = [ "gfx942" ];
        hipFlags = [ "-DHIP" ];
      }
    );
    expected = expectedShape "cpp-rocm" {
      compilers = [ "clr" ];
      inputs = kernel.rocmInputs;
      flags.hipFlags = [ "-DHIP" ];
      nixgen = {
        archs = [ "gfx942" ];
        targets = [ "gfx942" ];
        plan = compile.cppRocm (
          common
          // {
            archs = [ "gfx942" ];
            hipFlags = [ "-DHIP" ];
          }
        );
      };
    };
  };

  testXpuKernelUsesTheToolchainsCompilers = {
    expr = shape (build "cpp-xpu" { syclFlags = [ "-fsycl-targets=spir64" ]; });
    expected = expectedShape "cpp-xpu" {
      compilers = [ "icpx" ];
      flags.syclFlags = [ "-fsycl-targets=spir64" ];
      # The sycl-flags reach the extension's `icpx -fsycl` link.
      linkFlags = [ "-fsycl-targets=spir64" ];
      nixgen.plan = compile.cppXpu (common // { syclFlags = [ "-fsycl-targets=spir64" ]; });
    };
  };

  testMetalKernelInstallsItsMetallibOutsideTheSandbox = {
    # Metal's toolchain compiles with Apple's clang (toolchains.metal's `cxxFamily`).
    expr = shape (
      kernel.cpp {
        inherit pkgs root headers;
        toolchain = toolchain // { cxxFamily = "clang"; };
      } (data "cpp-metal" // { sources = [ "kernel_a/a.metal" "kernel_a/a.mm" ]; })
    );
    expected =
      expectedShape "cpp-metal" {
        compilers = [ "python3" ];
        inputs = [ "apple-sdk_26" ];
        sources = [
          "kernel_a/a.metal"
          "kernel_a/a.mm"
        ];
        nixgen.plan = compile.cppMetal (
          common
          // {
            sources = [
              "kernel_a/a.metal"
              "kernel_a/a.mm"
              "kernel_a/a.h"
              "kernel_b/b.h"
            ];
          }
        );
      }
      // {
        __noChroot = true;
        meta.platforms = lib.platforms.darwin;
        # The kernel's own sources decide whether there is a metallib (not the headers).
        installPhase = compile.installMetalPhase {
          name = "k";
          sources = [
            "kernel_a/a.metal"
            "kernel_a/a.mm"
          ];
        };
      };
  };

  testAnUnknownLanguageFails = {
    expr = (build "rust-cpu" { }).pname;
    expectedError = true;
  };

  testABackendFlagOfAnotherLanguageIsNotAnArgument = {
    # Flags a language does not take never reach its plan (cppCpu has no `cudaFlags`).
    expr = (build "cpp-cpu" { cudaFlags = [ "-G" ]; }).passthru.nixgen.plan == compile.cppCpu common;
    expected = true;
  };

  # torch-bin's `cxxdev` output (ROCm's hipBLAS & co., the CUDA libraries) comes with it.
  testAKernelTakesTheCxxdevOutputOfItsInputs = {
    expr =
      (kernel.cpp { inherit pkgs toolchain root headers; } (
        data "cpp-cpu"
        // {
          buildInputs = [
            {
              name = "torch";
              cxxdev = "torch-cxxdev";
            }
            "cutlass"
          ];
        }
      )).buildInputs;
    expected = [
      {
        name = "torch";
        cxxdev = "torch-cxxdev";
      }
      "torch-cxxdev"
      "cutlass"
    ];
  };

  # `noarch`: the pure-Python variant, the package and its metadata; nothing compiled.
  testNoarchInstallsThePackageWithoutCompiling =
    let
      drv = kernel.build
        {
          pkgs = pkgs // {
            stdenvNoCC = { inherit mkDerivation; };
          };
          inherit root;
          variant = {
            backend = "cpu";
            name = "torch-cpu";
          };
          projectData = { };
          # what `build` passes no further
          toolchain = null;
        }
        {
          language = "noarch";
          pname = "p-noarch";
          version = "1";
          moduleDir = "torch-ext/pkg";
          moduleName = "pkg";
          pyext = [ "py" ];
        };
    in
    {
      expr = {
        inherit (drv) pname version dontBuild dontConfigure;
        ops = builtins.substring 0 9 drv.passthru.nixgen.opsName;
        variant = drv.passthru.nixgen.variant.name;
      };
      expected = {
        pname = "p-noarch";
        version = "1";
        dontBuild = true;
        dontConfigure = true;
        ops = "_pkg_cpu_";
        variant = "torch-cpu";
      };
    };

  # The pure-Python variant is a fixed point: its ops name follows its `src`.
  testOverridingANoarchSourceRenamesItsOps =
    let
      drv = kernel.build
        {
          pkgs = pkgs // {
            stdenvNoCC = { inherit mkDerivation; };
          };
          inherit root;
          variant = {
            backend = "cpu";
            name = "torch-cpu";
          };
          projectData = { };
        }
        {
          language = "noarch";
          pname = "p-noarch";
          version = "1";
          moduleDir = "torch-ext/pkg";
          moduleName = "pkg";
          pyext = [ "py" ];
        };
      other = drv.overrideAttrs (_: {
        src = "/other";
      });
    in
    {
      expr = other.passthru.nixgen.opsName != drv.passthru.nixgen.opsName;
      expected = true;
    };

  # The build is data: `overrideAttrs` on its attributes changes the plan and the phase.
  testOverridingCxxFlagsChangesTheCompileCommand = {
    expr =
      let
        drv = (build "cpp-cpu" { }).overrideAttrs (old: {
          cxxFlags = old.cxxFlags ++ [ "-DX=1" ];
        });
      in
      {
        inherit (drv) cxxFlags;
        plan = drv.passthru.nixgen.plan == compile.cppCpu (common // { cxxFlags = [ "-DX" "-DX=1" ]; });
        phase = drv.configurePhase == compile.configurePhase drv.passthru.nixgen.plan;
        command = builtins.match ".* -DX '-DX=1' -c kernel_a/a.cpp .*" (builtins.head drv.passthru.nixgen.plan.objects).command != null;
      };
    expected = {
      cxxFlags = [
        "-DX"
        "-DX=1"
      ];
      plan = true;
      phase = true;
      command = true;
    };
  };

  testOverridingIncludesAndDepFlagsReachesThePlan = {
    expr =
      let
        drv = (build "cpp-cpu" { }).overrideAttrs (_: {
          includes = [ "kernel_b" ];
          depFlags = [ ];
        });
      in
      drv.passthru.nixgen.plan
      == compile.cppCpu (
        common
        // {
          includes = [ "kernel_b" ];
          depFlags = [ ];
        }
      );
    expected = true;
  };

  testOverridingSourcesChangesThePlanAndTheSourceTree = {
    expr =
      let
        drv = (build "cpp-cpu" { }).overrideAttrs (old: {
          sources = old.sources ++ [ "kernel_a/unused.cpp" ];
        });
      in
      {
        objects = map (o: o.source) drv.passthru.nixgen.plan.objects;
        tree = builtins.attrNames (builtins.readDir "${drv.src}/kernel_a");
      };
    expected = {
      objects = [
        "kernel_a/a.cpp"
        "kernel_a/unused.cpp"
      ];
      tree = [
        "a.cpp"
        "a.h"
        "unused.cpp"
      ];
    };
  };

  testOverridingTheBackendFlagsReachesTheirCompiler = {
    expr =
      let
        cudaDrv = (build "cpp-cuda" { inherit capabilities; cudaFlags = [ "-lineinfo" ]; }).overrideAttrs (old: {
          cudaFlags = old.cudaFlags ++ [ "-G" ];
        });
        xpuDrv = (build "cpp-xpu" { syclFlags = [ "-fsycl-targets=spir64" ]; }).overrideAttrs (_: {
          syclFlags = [ "-fsycl-targets=intel_gpu_pvc" ];
        });
      in
      {
        cuda =
          cudaDrv.passthru.nixgen.plan
          == compile.cppCuda (
            common
            // {
              capabilities = [ "8.0" "9.0" ];
              cudaFlags = [ "-lineinfo" "-G" ];
            }
          );
        # The sycl-flags reach the extension's link too.
        xpuLink = xpuDrv.passthru.nixgen.linkFlags;
      };
    expected = {
      cuda = true;
      xpuLink = [ "-fsycl-targets=intel_gpu_pvc" ];
    };
  };

  testOnlyTheFlagsALanguageReadsAreAttributes = {
    expr = map (language: builtins.filter (n: (build language { capabilities = capabilities; archs = [ "gfx942" ]; }) ? ${n}) [ "cudaFlags" "hipFlags" "syclFlags" ]) [
      "cpp-cpu"
      "cpp-cuda"
      "cpp-rocm"
      "cpp-xpu"
      "cpp-metal"
    ];
    expected = [
      [ ]
      [ "cudaFlags" ]
      [ "hipFlags" ]
      [ "syclFlags" ]
      [ ]
    ];
  };
}
