# Tests of `torch.nix`: where a torch derivation's headers and libraries are, the flags of
# a Torch extension per backend, and the stable-ABI define.
let
  inherit ((import ../default.nix).withLib (import ../../tests/nixpkgs/lib)) torch;
  # A torch derivation as the library reads it: its store path and its Python's
  # site-packages directory.
  torchDrv = {
    outPath = "/t";
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
