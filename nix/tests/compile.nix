# Tests of `compile.nix`: object names and the shape of the build phases.
let
  nixgen = import ../default.nix;
  inherit (nixgen) compile;
  hasInfix = infix: s: builtins.match ".*${infix}.*" s != null;
  lines = s: builtins.filter (l: builtins.isString l && l != "") (builtins.split "\n" s);
in
{
  testObjectNameFlattensThePath = {
    expr = map compile.objectName [ "relu_cpu/relu.cpp" "a.cu" "x/y/z.c" ];
    expected = [ "relu_cpu%2Frelu.cpp.o" "a.cu.o" "x%2Fy%2Fz.c.o" ];
  };

  testObjectNamesAreOneToOne = {
    expr = map compile.objectName [ "a/b__c.cpp" "a__b/c.cpp" "a%2Fb.cpp" "a/b.cpp" ];
    expected = [ "a%2Fb__c.cpp.o" "a__b%2Fc.cpp.o" "a%252Fb.cpp.o" "a%2Fb.cpp.o" ];
  };

  testObjectNamesOfOneBasenameInTwoDirectoriesDiffer = {
    expr = compile.objectName "a/k.cpp" != compile.objectName "b/k.cpp";
    expected = true;
  };

  testArchivePhaseCompilesSourcesByRuleAndArchivesDeterministically = {
    expr = lines (compile.archivePhase {
      name = "k";
      sources = [ "a/x.cpp" "a/x.h" "b/x.cpp" "k.cu" "notes.txt" ];
      rules = [
        { extensions = [ "cu" ]; command = "NVCC"; }
        { extensions = [ "cpp" "cu" ]; command = "CXX"; }
      ];
    });
    expected = [
      "runHook preBuild"
      "mkdir -p nixgen-obj"
      "CXX -c a/x.cpp -o nixgen-obj/a%2Fx.cpp.o"
      "CXX -c b/x.cpp -o nixgen-obj/b%2Fx.cpp.o"
      "NVCC -c k.cu -o nixgen-obj/k.cu.o"
      "ar rcsD libk.a nixgen-obj/a%2Fx.cpp.o nixgen-obj/b%2Fx.cpp.o nixgen-obj/k.cu.o"
      "runHook postBuild"
    ];
  };

  testArchivePhaseQuotesPaths = {
    expr = lines (compile.archivePhase {
      name = "k";
      sources = [ "my dir/it's.cpp" ];
      rules = [ { extensions = [ "cpp" ]; command = "CXX"; } ];
    });
    expected = [
      "runHook preBuild"
      "mkdir -p nixgen-obj"
      "CXX -c 'my dir/it'\\''s.cpp' -o 'nixgen-obj/my dir%2Fit'\\''s.cpp.o'"
      "ar rcsD libk.a 'nixgen-obj/my dir%2Fit'\\''s.cpp.o'"
      "runHook postBuild"
    ];
  };

  testInstallArchivePhase = {
    expr = lines (compile.installArchivePhase "relu_cpu");
    expected = [
      "runHook preInstall"
      "install -Dm644 librelu_cpu.a \"$out/lib/\"librelu_cpu.a"
      "runHook postInstall"
    ];
  };

  testCopyPhase = {
    expr = compile.copyPhase "Cargo.lock" "my crate/Cargo.lock";
    expected = "cp Cargo.lock 'my crate/Cargo.lock'\n";
  };

  testCppCpuPutsTheKernelsFlagsLast = {
    # The kernel's cxx-flags come after nixgen's (so they win), includes before them.
    expr =
      let
        phase = compile.cppCpu {
          name = "k";
          sources = [ "k/k.cpp" ];
          includes = [ "k/include" ];
          cxxFlags = [ "-O3" "-DNAME=\"a b\"" ];
        };
      in
      builtins.head (builtins.filter (hasInfix "-c k/k.cpp") (lines phase));
    expected = "$CXX -ffile-prefix-map=$NIX_BUILD_TOP/= -std=c++20 -O2 -fPIC -D_GLIBCXX_USE_CXX11_ABI=1 -fno-gnu-unique -DCPU_KERNEL -Ik/include -O3 '-DNAME=\"a b\"' -c k/k.cpp -o nixgen-obj/k%2Fk.cpp.o";
  };

  testCppCudaCompilesCuWithNvccForEachCapability = {
    expr =
      let
        phase = compile.cppCuda {
          name = "k";
          sources = [ "k/k.cu" "k/host.cpp" ];
          includes = [ ];
          cxxFlags = [ "-DHOST" ];
          cudaFlags = [ "-lineinfo" ];
          capabilities = [ "8.0" "9.0a" ];
        };
        compileLines = builtins.filter (hasInfix " -c ") (lines phase);
      in
      {
        nvcc = builtins.match "nvcc .* -gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_80,code=compute_80 -lineinfo -c k/k.cu -o nixgen-obj/k%2Fk.cu.o" (builtins.elemAt compileLines 0) != null;
        host = builtins.match "\\$CXX .* -DCUDA_KERNEL -DUSE_CUDA=1 -DHOST -c k/host.cpp .*" (builtins.elemAt compileLines 1) != null;
      };
    expected = {
      nvcc = true;
      host = true;
    };
  };

  testCppRocmPassesOneOffloadArchPerTarget = {
    expr =
      let
        phase = compile.cppRocm {
          name = "k";
          sources = [ "k/k.hip" ];
          includes = [ ];
          cxxFlags = [ ];
          hipFlags = [ "-ffast-math" ];
          archs = [ "gfx942" "gfx90a" ];
        };
      in
      builtins.match "hipcc .* --offload-arch=gfx942 --offload-arch=gfx90a -ffast-math -c k/k.hip .*" (builtins.head (builtins.filter (hasInfix " -c ") (lines phase))) != null;
    expected = true;
  };

  testCppXpuUsesIcpxWithSyclFlagsLast = {
    expr =
      let
        phase = compile.cppXpu {
          name = "k";
          sources = [ "k/k.cpp" ];
          includes = [ ];
          cxxFlags = [ "-DA" ];
          syclFlags = [ "-fsycl-targets=spir64" ];
        };
      in
      builtins.match "icpx -fsycl .* -DXPU_KERNEL -DUSE_XPU -DA -fsycl-targets=spir64 -c k/k.cpp .*" (builtins.head (builtins.filter (hasInfix " -c ") (lines phase))) != null;
    expected = true;
  };

  # nvcc rejects GCC's path maps (torch's include flags carry one); they go through -Xcompiler.
  testCppCudaPassesPrefixMapsOfDependenciesToTheHostCompiler = {
    expr =
      let
        phase = compile.cppCuda {
          name = "k";
          sources = [ "k/k.cu" "k/k.cpp" ];
          includes = [ ];
          cxxFlags = [ ];
          cudaFlags = [ ];
          capabilities = [ "8.0" ];
          depFlags = [ "-isystem" "/t/include" "-ffile-prefix-map=/t/include/=torch/include/" ];
        };
        compiles = builtins.filter (hasInfix " -c ") (lines phase);
      in
      map (line: builtins.match ".* (-isystem /t/include [^ ]*) .*" line) compiles;
    expected = [
      [ "-isystem /t/include -Xcompiler=-ffile-prefix-map=/t/include/=torch/include/" ]
      [ "-isystem /t/include -ffile-prefix-map=/t/include/=torch/include/" ]
    ];
  };

  testIsCxxMatchesTheExtensionLiterally = {
    expr = map compile.isCxx [ "b.c++" "b.c" "b.cc" "b.cxx" "b.cpp" "b.cu" "c++" ];
    expected = [ true false true true true false false ];
  };

  testMetalShadersBecomeAnEmbeddedLibraryBeforeTheSourcesCompile = {
    expr =
      let
        phase = lines (compile.cppMetal {
          name = "relu";
          sources = [ "relu/relu.metal" "relu/loader.mm" "relu/relu.cpp" ];
          includes = [ ];
          cxxFlags = [ ];
        });
        position = pattern: builtins.length (builtins.filter (x: x) (map (l: hasInfix pattern l) phase));
        firstIndex =
          pattern:
          let
            go = i: if i >= builtins.length phase then -1 else if hasInfix pattern (builtins.elemAt phase i) then i else go (i + 1);
          in
          go 0;
      in
      {
        shaderCompiled = position "macosx metal -std=metal4.0 -O2 .*-c relu/relu.metal -o" == 1;
        linkedBeforeSources = firstIndex "metallib " < firstIndex "-c relu/loader.mm";
        headerBeforeSources = firstIndex "metallib-header.py" < firstIndex "-c relu/relu.cpp";
        sourcesSeeTheHeader = hasInfix "-DEMBEDDED_METALLIB_HEADER=\"relu_metallib.h\"" (builtins.elemAt phase (firstIndex "-c relu/relu.cpp"));
        namespace = hasInfix "-DEMBEDDED_METALLIB_NAMESPACE=relu_metal" (builtins.elemAt phase (firstIndex "-c relu/loader.mm"));
        beforePostBuild = firstIndex "metallib-header.py" < firstIndex "runHook postBuild";
      };
    expected = {
      shaderCompiled = true;
      linkedBeforeSources = true;
      headerBeforeSources = true;
      sourcesSeeTheHeader = true;
      namespace = true;
      beforePostBuild = true;
    };
  };

  testMetalInstallPutsTheMetallibNextToTheArchive = {
    expr = lines (compile.installMetalPhase { name = "relu"; sources = [ "relu/relu.metal" "relu/a.mm" ]; });
    expected = [
      "runHook preInstall"
      "install -Dm644 librelu.a \"$out/lib/\"librelu.a"
      "install -Dm644 relu.metallib \"$out/lib/\"relu.metallib"
      "runHook postInstall"
    ];
  };

  testMetalWithoutShadersHasNoMetallib = {
    expr = builtins.any (l: hasInfix "metallib" l) (lines (
      compile.cppMetal { name = "k"; sources = [ "a.mm" ]; includes = [ ]; cxxFlags = [ ]; }
      + compile.installMetalPhase { name = "k"; sources = [ "a.mm" ]; }
    ));
    expected = false;
  };

  testASourceNamedLikeAnOptionIsPassedAsAPath = {
    expr = builtins.filter (hasInfix " -c ") (lines (compile.archivePhase {
      name = "k";
      sources = [ "-x.cpp" "a/-y.cpp" ];
      rules = [ { extensions = [ "cpp" ]; command = "CXX"; } ];
    }));
    expected = [
      "CXX -c ./-x.cpp -o nixgen-obj/-x.cpp.o"
      "CXX -c a/-y.cpp -o nixgen-obj/a%2F-y.cpp.o"
    ];
  };
}
