# Tests of `extension.nix`: the op namespace and `metadata.json`.
let
  # The library with nixpkgs `lib` (the stand-in's copy of it).
  nixgen = (import ../default.nix).withLib (import ../../tests/nixpkgs/lib);
  inherit (nixgen) extension;
  project = {
    name = "relu";
    version = 1;
    license = "Apache-2.0";
    upstream = null;
    source = null;
    kernelsMinver = {
      cpu = "0.14.0";
      cuda = "0.14.0";
    };
    buildLayout = "files";
    # Each backend's, as the plan writes them: [general]'s, then the backend table's.
    pythonDepends = {
      cpu = [ "einops" ];
      cuda = [
        "einops"
        "nvidia-cutlass-dsl"
      ];
    };
    kernelDepends = {
      cpu = [ ];
      cuda = [ ];
    };
    noarchArchs = {
      cpu = [ ];
      cuda = [ ];
    };
  };
  cudaVariant = {
    name = "torch213-cxx11-cu130-x86_64-linux";
    backend = "cuda";
  };
  ops = sources: extension.opsName { moduleName = "relu"; backend = "cuda"; inherit sources; };
  # The arguments of a CPU extension's plan: ops `_relu_cpu_0`, a framework without flags or
  # libraries, and `args`.
  cpuPlanArgs = args: { opsName = "_relu_cpu_0"; backend = "cpu"; framework = { flags = [ ]; libs = [ ]; }; } // args;
in
{
  testOpsNameIsModuleBackendAndAHashOfTheSources = {
    expr = builtins.match "_relu_cuda_[0-9a-f]{10}" (ops [ "/nix/store/aaa-source" ]) != null;
    expected = true;
  };

  testOpsNameIsDeterministic = {
    expr = ops [ "/nix/store/aaa-source" "/nix/store/bbb-source" ] == ops [ "/nix/store/aaa-source" "/nix/store/bbb-source" ];
    expected = true;
  };

  testOpsNameChangesWithAnySource = {
    expr = [
      (ops [ "/nix/store/aaa-source" ] == ops [ "/nix/store/aab-source" ])
      (ops [ "/nix/store/aaa-source" ] == ops [ "/nix/store/aaa-source" "/nix/store/bbb-source" ])
      (ops [ "/nix/store/aaa-source" ] == extension.opsName { moduleName = "relu"; backend = "cpu"; sources = [ "/nix/store/aaa-source" ]; })
    ];
    expected = [ false false false ];
  };

  testOpsNameHashesTheVersionAndKernelNamesButNoKernelSource = {
    expr =
      let
        named = version: kernelNames: extension.opsName {
          moduleName = "relu";
          backend = "cpu";
          sources = [ "/nix/store/aaa-source" ];
          inherit version kernelNames;
        };
      in
      [
        (named 1 [ "a" ] == named 1 [ "a" ])
        (named 1 [ "a" ] == named 2 [ "a" ])
        (named 1 [ "a" ] == named 1 [ "a" "b" ])
      ];
    expected = [ true false false ];
  };

  testMetadataHasTheKeysTheKernelsClientReads = {
    expr = extension.metadata {
      inherit project;
      variant = cudaVariant;
      opsName = "_relu_cuda_0123456789";
      archs = [ "8.0" "9.0" ];
    };
    expected = {
      name = "relu";
      id = "_relu_cuda_0123456789";
      version = 1;
      license = "Apache-2.0";
      "python-depends" = [ "einops" "nvidia-cutlass-dsl" ];
      backend = {
        type = "cuda";
        archs = [ "8.0" "9.0" ];
      };
      "kernels-minver" = "0.14.0";
      "build-layout" = "files";
    };
  };

  # `kernels-minver` is the variant's backend's, as nixgen planned it; `build-layout` the
  # project's.
  testMetadataCarriesThePlannedMinverAndLayout = {
    expr =
      let
        meta = extension.metadata {
          project = project // {
            kernelsMinver.cpu = "0.19.0";
            buildLayout = "zip";
          };
          variant = cudaVariant // { backend = "cpu"; };
          opsName = "_relu_cpu_0123456789";
        };
      in
      [ meta."kernels-minver" meta."build-layout" ];
    expected = [ "0.19.0" "zip" ];
  };

  testMetadataOptionalKeysAppearOnlyWhenSet = {
    expr = builtins.attrNames (extension.metadata {
      project = project // {
        upstream = "https://github.com/org/relu";
        source = "https://github.com/org/relu-src";
        kernelDepends.cpu = [ { "repo-id" = "org/dep"; version = 1; } ];
      };
      variant = cudaVariant // { backend = "cpu"; };
      opsName = "_relu_cpu_0123456789";
    });
    expected = [ "backend" "build-layout" "id" "kernel-depends" "kernels-minver" "license" "name" "python-depends" "source" "upstream" "version" ];
  };

  testMetadataWithoutArchsHasNoArchsKey = {
    expr = (extension.metadata {
      inherit project;
      variant = cudaVariant // { backend = "cpu"; };
      opsName = "_relu_cpu_0123456789";
    }).backend;
    expected = {
      type = "cpu";
    };
  };

  testArchsOfIsTheSortedUnionOfTheKernelsTargetsAsTheAnchorWritesIt = {
    # add_build_metadata.py: `sorted(set(...))` of the kernels' archs, `+PTX` kept.
    expr = extension.archsOf {
      a = { passthru.nixgen.targets = [ "8.0" "9.0+PTX" ]; };
      b = { passthru.nixgen.targets = [ "9.0+PTX" "10.0" ]; };
      c = { passthru.nixgen.targets = [ "gfx942" ]; };
      d = { passthru.nixgen.targets = [ ]; };
    };
    expected = [ "10.0" "8.0" "9.0+PTX" "gfx942" ];
  };

  testLinkOnlyPlanReadsTheBindingObjectsFromTheStore = {
    expr =
      let
        plan = extension.plan (cpuPlanArgs {
          bindingSources = [ "b/x.cpp" "b/w.h" ];
          prebuiltObjects = "/nix/store/bbb-binding";
          wholeArchives = [ "/nix/store/k/lib/libk.a" ];
        });
        edges = nixgen.compile.edges plan;
      in
      {
        outputs = map (e: e.outputs) edges;
        inputs = (builtins.head edges).inputs;
      };
    expected = {
      outputs = [ [ "_relu_cpu_0.abi3.so" ] ];
      inputs = [ "/nix/store/bbb-binding/b%2Fx.cpp.o" ];
    };
  };

  testBindingPlanCompilesWithTheOpsNameAndNeitherArchivesNorLinks = {
    expr =
      let
        plan = extension.bindingPlan (cpuPlanArgs {
          framework = { flags = [ "-DFW" ]; libs = [ ]; };
          bindingSources = [ "b/x.cpp" ];
          cxxFlags = [ "-DMINE" ];
        });
        command = (builtins.head plan.objects).command;
      in
      {
        edges = map (e: e.outputs) (nixgen.compile.edges plan);
        flags = map (f: builtins.match ".* ${f} .*" command != null) [ "'-DTORCH_EXTENSION_NAME=_relu_cpu_0'" "-DFW" "-DMINE" ];
      };
    expected = {
      edges = [ [ "nixgen-obj/b%2Fx.cpp.o" ] ];
      flags = [ true true true ];
    };
  };

  testFrameworksTellTheirPackageDefinesAndWhetherCratesCanBeTheBinding = {
    expr =
      let
        deps = {
          torch = "TORCH";
          python3.pkgs.tvm-ffi = "TVM-FFI";
        };
      in
      {
        packages = map (f: extension.frameworks.${f}.package deps) [ "torch" "tvm-ffi" ];
        defines = map (f: extension.frameworks.${f}.defines { stableAbi = "2.11"; }) [ "torch" "tvm-ffi" ];
        crates = map (f: extension.frameworks.${f}.cratesCanBeBinding) [ "torch" "tvm-ffi" ];
      };
    expected = {
      packages = [ "TORCH" "TVM-FFI" ];
      defines = [ [ "-DTORCH_TARGET_VERSION=0x020b000000000000" ] [ ] ];
      crates = [ false true ];
    };
  };

  testATorchExtensionFileWithoutTheTorchArgumentFails = {
    expr = extension.frameworks.torch.package { python3 = { }; };
    expectedError = true;
  };

  testBindingCompilesEveryCxxSourceAndNothingElse = {
    expr =
      let
        plan = extension.plan (cpuPlanArgs { bindingSources = [ "b/x.c++" "b/y.c" "b/z.cc" "b/w.h" ]; });
      in
      map (o: o.source) plan.objects;
    expected = [ "b/x.c++" "b/z.cc" ];
  };

  # The link of each linker family (the command's words, store-path free).
  testTheGnuLinkKeepsWholeArchivesAndHidesTheirSymbols = {
    expr =
      let
        link = (builtins.head (extension.plan (cpuPlanArgs { bindingSources = [ ]; wholeArchives = [ "/k/libk.a" ]; })).extraEdges).command;
      in
      link;
    expected = "$CXX -shared -o _relu_cpu_0.abi3.so  -Wl,--whole-archive /k/libk.a -Wl,--no-whole-archive   -Wl,--exclude-libs,ALL -Wl,-z,noexecstack -Wl,-O1 '-Wl,--build-id=sha1' ";
  };

  # ld64: a bundle, -force_load, the Python C API looked up at load time, no GNU-ld flag.
  testTheLd64LinkIsABundleWithForceLoadAndDynamicLookup = {
    expr =
      let
        link = (builtins.head (extension.plan (cpuPlanArgs {
          bindingSources = [ ];
          wholeArchives = [ "/k/libk.a" ];
          plainArchives = [ "/r/librust.a" ];
          linker = "ld64";
        })).extraEdges).command;
        gnuOnly = builtins.filter (flag: builtins.match ".*${flag}.*" link != null) [ "--whole-archive" "--exclude-libs" "-z," "--build-id" "-lgcc_s" "-lrt" ];
      in
      {
        inherit gnuOnly;
        words = builtins.filter (w: builtins.isString w && w != "") (builtins.split " " link);
      };
    expected = {
      gnuOnly = [ ];
      words = [ "$CXX" "-bundle" "-o" "_relu_cpu_0.abi3.so" "-Wl,-force_load,/k/libk.a" "/r/librust.a" "-Wl,-undefined,dynamic_lookup" "-liconv" "-lSystem" "-lc" "-lm" ];
    };
  };

  testXpuLinksWithTheSyclDriver = {
    expr = builtins.match "icpx -fsycl -shared -o _relu_xpu_0[.]abi3[.]so .* '-fsycl-targets=spir64_gen'" (builtins.head (extension.plan (cpuPlanArgs {
      opsName = "_relu_xpu_0";
      backend = "xpu";
      bindingSources = [ ];
      wholeArchives = [ "/k/libk.a" ];
      linkDriver = "icpx -fsycl";
      linkFlags = [ "-lsycl" "-fsycl-targets=spir64_gen" ];
    })).extraEdges).command != null;
    expected = true;
  };

  testAnUnknownLinkerFamilyFails = {
    expr = (builtins.head (extension.plan (cpuPlanArgs { bindingSources = [ ]; linker = "gold"; })).extraEdges).command;
    expectedError = true;
  };
}
