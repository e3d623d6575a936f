# Tests of `torch.nix`: where a torch derivation's headers and libraries are, the flags of
# a Torch extension per backend, and the stable-ABI define.
let
  lib = import ../../tests/nixpkgs/lib;
  inherit ((import ../default.nix).withLib lib) torch;
  # A package set with what `buildFlags` reads: `runCommand` returns its arguments (the
  # derivation's path is /flags), the build platform's tools are their names.
  fakePkgs = {
    runCommand = name: env: buildCommand: env // { inherit name buildCommand; outPath = "/flags"; };
    buildPackages = {
      cmake = "cmake";
      python3 = "python3";
    };
    cudaPackages.cudaMajorMinorVersion = "13.0";
  };
  # A torch derivation as the library reads it: its store path and its Python's
  # site-packages directory.
  torchDrv = {
    outPath = "/t";
    pname = "torch";
    version = "2.11.0";
    pythonModule.sitePackages = "lib/python3.13/site-packages";
  };
  python = {
    outPath = "/py";
    libPrefix = "python3.13";
  };
  dir = "/t/lib/python3.13/site-packages/torch";
in
{
  testDirIsTheTorchPackageInSitePackages = {
    expr = torch.dir torchDrv;
    expected = dir;
  };

  testIncludeFlagsMapTorchsHeadersOutOfTheStore = {
    expr = torch.includeFlags torchDrv;
    expected = [
      "-isystem"
      "${dir}/include"
      "-isystem"
      "${dir}/include/torch/csrc/api/include"
      "-ffile-prefix-map=${dir}/include/=torch/include/"
    ];
  };

  testFrameworkFlagsAreTheIncludeFlagsAndPythonsHeaders = {
    expr = (torch.framework { torch = torchDrv; inherit python; }).flags;
    expected = torch.includeFlags torchDrv ++ [
      "-isystem"
      "/py/include/python3.13"
    ];
  };

  # What the toolchain takes from torch for every compile follows the headers; its
  # derivation is an input of the compile.
  testFrameworkFlagsEndWithTheToolchainsTorchFlags = {
    expr =
      let
        fw = torch.framework {
          torch = torchDrv;
          inherit python;
          backend = "cuda";
          compileFlags = {
            nvcc = [ "--options-file" "/f/nvcc" ];
            cxx = [ "@/f/cxx" ];
            inputs = [ "/f" ];
          };
        };
      in
      {
        inherit (fw) inputs;
        last = lib.last fw.flags;
      };
    expected = {
      inputs = [ "/f" ];
      last = "@/f/cxx";
    };
  };

  # The flags are read from the variant's torch when the derivation builds (nothing of
  # torch's is written in the library): the derivation runs the reader on torch's package
  # directory for the variant's CUDA version, with CMake and Python from the build platform.
  testCudaCompileFlagsReadTheVariantsTorchAtBuildTime = {
    expr =
      let
        flags = torch.cudaCompileFlags { pkgs = fakePkgs; torch = torchDrv; };
        drv = builtins.head flags.inputs;
      in
      {
        inherit (flags) nvcc cxx;
        inherit (drv) name torchDir cudaArgs nativeBuildInputs;
        reads = builtins.match ".*build_flags.py --torch \"\\$torchDir\".*cmake-flags.cmake \\$cudaArgs --out \"\\$out\".*" drv.buildCommand != null;
      };
    expected = {
      nvcc = [ "--options-file" "/flags/nvcc" ];
      cxx = [ "@/flags/cxx" ];
      name = "torch-2.11.0-build-flags";
      torchDir = dir;
      cudaArgs = "--cuda=13.0";
      nativeBuildInputs = [ "cmake" "python3" ];
      reads = true;
    };
  };

  testCpuFrameworkLinksC10AndTorchCpu = {
    expr = (torch.framework { torch = torchDrv; inherit python; }).libs;
    expected = [
      "-L${dir}/lib"
      "-lc10"
      "-ltorch_cpu"
    ];
  };

  testAGpuBackendAddsTorchsLibrariesOfThatBackend = {
    expr = map (backend: (torch.framework { torch = torchDrv; inherit python backend; }).libs) [
      "cuda"
      "rocm"
      "xpu"
      "metal"
    ];
    expected = [
      [ "-L${dir}/lib" "-lc10" "-ltorch_cpu" "-lc10_cuda" "-ltorch_cuda" ]
      [ "-L${dir}/lib" "-lc10" "-ltorch_cpu" "-lc10_hip" "-ltorch_hip" ]
      [ "-L${dir}/lib" "-lc10" "-ltorch_cpu" "-lc10_xpu" "-ltorch_xpu" ]
      # Metal has no torch library of its own to link.
      [ "-L${dir}/lib" "-lc10" "-ltorch_cpu" ]
    ];
  };

  testAbiDefinesEncodeMajorAndMinorAsTorchCompares = {
    expr = map torch.abiDefines [
      { stableAbi = "2.11"; }
      { stableAbi = "2.9"; }
      { stableAbi = "10.255"; }
      { stableAbi = null; }
    ];
    expected = [
      [ "-DTORCH_TARGET_VERSION=0x020b000000000000" ]
      [ "-DTORCH_TARGET_VERSION=0x0209000000000000" ]
      [ "-DTORCH_TARGET_VERSION=0x0aff000000000000" ]
      [ ]
    ];
  };

  testAnAbiComponentOver255Fails = {
    expr = torch.abiDefines { stableAbi = "2.256"; };
    expectedError = true;
  };
}
