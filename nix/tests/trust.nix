# Tests of `trust.nix`: which variants their build loads with the kernels client, the
# attributes the variant check hook reads, and the Python it checks with. The hook itself
# runs in every build (tests/test_trust.py builds and rebuilds variants with it).
let
  inherit (import ../default.nix) trust;
  # Each backend's dependencies as the plan writes them: [general]'s, then the backend's.
  project = {
    kernelDepends = {
      cpu = [ ];
      cuda = [ ];
    };
    pythonDepends = {
      cpu = [ "einops" ];
      cuda = [
        "einops"
        "nvidia-cutlass-dsl"
      ];
    };
  };
  withDeps = project // {
    kernelDepends = {
      cuda = [ ];
      cpu = [
        {
          "repo-id" = "org/dep";
          version = 1;
        }
      ];
    };
  };
  cpu = {
    name = "torch213-cxx11-cpu-x86_64-linux";
    backend = "cpu";
    framework = "torch";
  };
  cuda = {
    name = "torch213-cxx11-cu130-x86_64-linux";
    backend = "cuda";
    framework = "torch";
  };
  # A Python whose `withPackages` gives the names of the packages it was given.
  pythonWith = pkgs: {
    withPackages = f: map (p: p.pname) (f pkgs);
    inherit pkgs;
  };
  python3 = pythonWith {
    kernels.pname = "kernels";
    torch.pname = "torch";
    einops.pname = "einops";
  };
in
{
  testACpuVariantIsLoaded = {
    expr = trust.loadable {
      variant = cpu;
      inherit project;
    };
    expected = {
      load = true;
      reason = null;
    };
  };

  testAGpuVariantIsCheckedWithoutLoading = {
    expr = (trust.loadable {
      variant = cuda;
      inherit project;
    }).load;
    expected = false;
  };

  testACpuVariantWithKernelDependsIsNotLoaded = {
    expr =
      let
        can = trust.loadable {
          variant = cpu;
          project = withDeps;
        };
      in
      {
        inherit (can) load;
        saysWhy = builtins.match ".*kernel-depends.*" can.reason != null;
      };
    expected = {
      load = false;
      saysWhy = true;
    };
  };

  # Another backend's kernel dependencies do not keep a CPU variant from loading.
  testAnotherBackendsKernelDependsDoNotCount = {
    expr =
      (trust.loadable {
        variant = cpu;
        project = project // {
          kernelDepends = {
            cpu = [ ];
            cuda = [
              {
                "repo-id" = "org/dep";
                version = 1;
              }
            ];
          };
        };
      }).load;
    expected = true;
  };

  # The client needs a torch, and a pure-Python variant's package set names none.
  testAPureVariantIsNotCheckedByTheClient = {
    expr = trust.loadable {
      variant = cpu // {
        name = "torch-cpu";
        framework = "torch-noarch";
      };
      inherit project;
    };
    expected = {
      load = false;
      reason = trust.noClient;
    };
  };

  testTheHookReadsTheNameAndTheLoadSwitch = {
    expr = trust.env {
      variant = cpu;
      inherit project;
    };
    expected = {
      nixgenVariantName = cpu.name;
      doLoadCheck = "1";
    };
  };

  testAVariantNotLoadedCarriesTheReason = {
    expr = builtins.attrNames (
      trust.env {
        variant = cuda;
        inherit project;
      }
    );
    expected = [
      "doLoadCheck"
      "nixgenNoLoadReason"
      "nixgenVariantName"
    ];
  };

  testTheNotLoadedSwitchIsEmpty = {
    expr =
      (trust.env {
        variant = cuda;
        inherit project;
      }).doLoadCheck;
    expected = "";
  };

  # The framework, the client, and the Python dependencies the package set has (for the
  # variant's backend too; `nvidia-cutlass-dsl` is not in this package set).
  testTheCheckPythonHasTheFrameworkTheClientAndTheDependencies = {
    expr = trust.checkPython {
      inherit python3 project;
      variant = cuda;
      packages = ps: [ ps.torch ];
    };
    expected = [
      "torch"
      "kernels"
      "einops"
    ];
  };

  testACheckPythonWithoutTheClientFailsSayingWhere = {
    expr = trust.checkPython {
      python3 = pythonWith (removeAttrs python3.pkgs [ "kernels" ]);
      inherit project;
      variant = cpu;
    };
    expectedError = true;
  };
}
