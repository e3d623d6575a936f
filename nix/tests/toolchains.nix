# Tests of `toolchains.nix`: which compiler family, linker family and link driver each
# backend's toolchain names, and the compilers XPU needs.
let
  lib = import ../../tests/nixpkgs/lib;
  # The library with nixpkgs `lib` (the stand-in's copy of it).
  nixgen = (import ../default.nix).withLib lib;
  inherit (nixgen) toolchains;
  stdenvOf = isDarwin: isClang: {
    hostPlatform = {
      isLinux = !isDarwin;
      inherit isDarwin;
    };
    cc = { inherit isClang; };
  };
  # A package set with what a toolchain reads (its stdenvs and the backend's packages).
  pkgsOf =
    stdenv:
    {
      inherit stdenv;
      manylinux_2_28 = {
        inherit stdenv;
        cudaBackendStdenv = stdenv;
      };
      inherit lib;
      cudaPackages = {
        backendStdenv = stdenv;
        cuda_cudart = "cuda_cudart";
        cuda_nvcc = {
          outPath = "cuda_nvcc";
          include = "cuda_nvcc-include";
        };
        cudaMajorMinorVersion = "13.0";
      };
      rocmPackages.clr = "clr";
      xpuPackages = {
        oneapi-torch-dev = "oneapi-torch-dev";
        ocloc = "ocloc";
      };
      apple-sdk_26 = "apple-sdk_26";
    };
  linux = pkgsOf (stdenvOf false false);
  darwin = pkgsOf (stdenvOf true true);
  families = t: {
    inherit (t) cxxFamily linker linkDriver;
  };
in
{
  testLinuxToolchainsCompileWithGccAndLinkWithGnuLd = {
    expr = map (backend: families (toolchains.${backend} linux)) [ "cpu" "cuda" "rocm" ];
    expected = builtins.genList (_: {
      cxxFamily = "gcc";
      linker = "gnu";
      linkDriver = "$CXX";
    }) 3;
  };

  testDarwinToolchainsCompileWithClangAndLinkWithLd64 = {
    expr = map (backend: families (toolchains.${backend} darwin)) [ "cpu" "metal" ];
    expected = builtins.genList (_: {
      cxxFamily = "clang";
      linker = "ld64";
      linkDriver = "$CXX";
    }) 2;
  };

  # The SYCL driver links (a `$CXX` link drops the device images); ocloc builds
  # ahead-of-time device code, so it is one of the compilers.
  testXpuLinksWithIcpxFsyclAndHasOcloc = {
    expr =
      let
        t = toolchains.xpu linux;
      in
      {
        inherit (t) linkDriver compilers;
        inherit (t) cxxFamily;
      };
    expected = {
      linkDriver = "icpx -fsycl";
      compilers = [ "oneapi-torch-dev" "ocloc" ];
      cxxFamily = "gcc";
    };
  };

  # What every compile takes from torch: only CUDA reads torch's CMake config (none without
  # torch); the other backends take nothing yet.
  testOnlyCudaTakesFlagsFromTorch = {
    expr = map (backend: (toolchains.${backend} linux).torchFlags null) [ "cpu" "cuda" "rocm" "xpu" ]
      ++ [ ((toolchains.metal darwin).torchFlags null) ];
    expected = builtins.genList (_: {
      nvcc = [ ];
      cxx = [ ];
      inputs = [ ];
    }) 5;
  };

  # A binding is compiled without nvcc: the runtime's headers need CUDA's crt/ headers,
  # which cuda_cudart propagates (cuda_crt) from CUDA 13.0 and cuda_nvcc holds before.
  testCudaBindingGetsTheCrtHeadersOfItsToolkit = {
    expr = map (
      version: (toolchains.cuda (linux // { cudaPackages = linux.cudaPackages // { cudaMajorMinorVersion = version; }; })).buildInputs
    ) [ "12.9" "13.0" ];
    expected = [
      [ "cuda_cudart" "cuda_nvcc-include" ]
      [ "cuda_cudart" ]
    ];
  };
}
