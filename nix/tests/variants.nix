# Tests of `variants.nix`: variant names follow the anchor's scheme.
let
  variants = import ../variants.nix;
  project = {
    name = "relu";
    framework = "torch";
    backends = [ "cpu" "cuda" ];
    torch = {
      minver = "2.13";
      maxver = null;
      stableAbi = { };
    };
    cuda = {
      minver = null;
      maxver = null;
    };
    kernels = {
      relu_cpu = { backend = "cpu"; cudaMinver = null; };
      relu_cuda = { backend = "cuda"; cudaMinver = "13.0"; };
    };
  };
in
{
  testComputeName = {
    expr = [
      (variants.computeName "cuda" "12.6")
      (variants.computeName "rocm" "7.1")
      (variants.computeName "xpu" "2025.3.2")
      (variants.computeName "cpu" null)
      (variants.computeName "metal" null)
    ];
    expected = [ "cu126" "rocm71" "xpu20253" "cpu" "metal" ];
  };

  testTorchVariantNamesCarryCxx11OnLinuxOnly = {
    expr = [
      (variants.torchVariantName "2.13" "cuda" "13.0" "x86_64-linux")
      (variants.torchVariantName "2.13" "metal" null "aarch64-darwin")
    ];
    expected = [ "torch213-cxx11-cu130-x86_64-linux" "torch213-metal-aarch64-darwin" ];
  };

  testOtherVariantNames = {
    expr = [
      (variants.stableAbiVariantName "2.11" "cuda" "12.6" "x86_64-linux")
      (variants.tvmFfiVariantName "0.1" "cpu" null "x86_64-linux")
      (variants.noarchVariantName "xpu")
    ];
    expected = [ "torch-stable-abi211-cu126-x86_64-linux" "tvm-ffi01-cpu-x86_64-linux" "torch-xpu" ];
  };

  testNamesHonourTorchMinverAndCudaMinver = {
    expr = variants.names project "x86_64-linux";
    expected = [
      "torch213-cxx11-cpu-x86_64-linux"
      "torch213-cxx11-cu130-x86_64-linux"
      "torch213-cxx11-cu132-x86_64-linux"
    ];
  };

  testVariantsListTheirKernels = {
    expr = map (v: { inherit (v) name kernels; }) (variants.variants project "aarch64-linux");
    expected = [
      { name = "torch213-cxx11-cpu-aarch64-linux"; kernels = [ "relu_cpu" ]; }
      { name = "torch213-cxx11-cu130-aarch64-linux"; kernels = [ "relu_cuda" ]; }
      { name = "torch213-cxx11-cu132-aarch64-linux"; kernels = [ "relu_cuda" ]; }
    ];
  };
}
