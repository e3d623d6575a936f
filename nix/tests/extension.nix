# Tests of `extension.nix`: the op namespace and `metadata.json`.
let
  nixgen = import ../default.nix;
  inherit (nixgen) extension;
  project = {
    name = "relu";
    version = 1;
    license = "Apache-2.0";
    upstream = null;
    source = null;
    minver = null;
    pythonDepends = {
      general = [ "einops" ];
      cuda = [ "nvidia-cutlass-dsl" ];
    };
    kernelDepends = {
      general = [ ];
    };
  };
  cudaVariant = {
    name = "torch213-cxx11-cu130-x86_64-linux";
    backend = "cuda";
  };
  ops = sources: extension.opsName { moduleName = "relu"; backend = "cuda"; inherit sources; };
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
    };
  };

  testMetadataOptionalKeysAppearOnlyWhenSet = {
    expr = builtins.attrNames (extension.metadata {
      project = project // {
        upstream = "https://github.com/org/relu";
        source = "https://github.com/org/relu-src";
        minver = "0.12";
        kernelDepends.general = [ { "repo-id" = "org/dep"; version = 1; } ];
      };
      variant = cudaVariant // { backend = "cpu"; };
      opsName = "_relu_cpu_0123456789";
    });
    expected = [ "backend" "id" "kernel-depends" "kernels-minver" "license" "name" "python-depends" "source" "upstream" "version" ];
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

  testArchsOfIsTheFirstSeenUnionOfTheKernelsTargets = {
    expr = extension.archsOf {
      a = { passthru.nixgen.capabilities = [ "8.0" "9.0" ]; };
      b = { passthru.nixgen.capabilities = [ "9.0" "10.0" ]; };
      c = { passthru.nixgen.archs = [ "gfx942" ]; };
      d = { passthru.nixgen = { }; };
    };
    expected = [ "8.0" "9.0" "10.0" "gfx942" ];
  };

  testBindingCompilesEveryCxxSourceAndNothingElse = {
    expr =
      let
        plan = extension.plan {
          opsName = "_relu_cpu_0";
          backend = "cpu";
          framework = { flags = [ ]; libs = [ ]; };
          bindingSources = [ "b/x.c++" "b/y.c" "b/z.cc" "b/w.h" ];
        };
      in
      map (o: o.source) plan.objects;
    expected = [ "b/x.c++" "b/z.cc" ];
  };
}
