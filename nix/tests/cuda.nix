# Tests of `cuda.nix`: the planned capabilities of a toolkit, and the nvcc flags for them.
let
  cuda = import ../cuda.nix;
in
{
  testCapabilitiesForPicksTheToolkitsPlannedList = {
    expr = map (cuda.capabilitiesFor {
      "12.6" = [ "7.0" "8.0" ];
      "13.0" = [ "8.0" ];
    }) [ "12.6" "13.0" ];
    expected = [ [ "7.0" "8.0" ] [ "8.0" ] ];
  };

  testCapabilitiesForAnUnplannedToolkitFailsNamingIt = {
    expr = (builtins.tryEval (cuda.capabilitiesFor { "13.0" = [ "8.0" ]; } "12.9")).success;
    expected = false;
  };

  testKernelCapabilitiesNoneForTheToolkitFails = {
    expr = map (v: (builtins.tryEval (cuda.kernelCapabilities "gemm" {
      "12.6" = [ ];
      "13.0" = [ "9.0" ];
    } v)).success) [ "12.6" "13.0" ];
    expected = [ false true ];
  };

  testArchName = {
    expr = map cuda.archName [ "8.0" "9.0a" "10.0f" "12.1" ];
    expected = [ "80" "90a" "100f" "121" ];
  };

  testGencodeFlagsSassForEachPlusPtxForTheNewestPlain = {
    expr = cuda.gencodeFlags [ "8.0" "9.0" ];
    expected = [
      "-gencode=arch=compute_80,code=sm_80"
      "-gencode=arch=compute_90,code=sm_90"
      "-gencode=arch=compute_90,code=compute_90"
    ];
  };

  testGencodeFlagsPtxIsTheNewestWhateverTheOrder = {
    expr = cuda.gencodeFlags [ "9.0" "12.0" "8.0" ];
    expected = [
      "-gencode=arch=compute_90,code=sm_90"
      "-gencode=arch=compute_120,code=sm_120"
      "-gencode=arch=compute_80,code=sm_80"
      "-gencode=arch=compute_120,code=compute_120"
    ];
  };

  testGencodeFlagsNoPtxForSuffixedCapabilities = {
    # `9.0a` code runs only on 9.0 itself: PTX of it would not run anywhere newer.
    expr = {
      onlySuffixed = cuda.gencodeFlags [ "9.0a" "10.0f" ];
      mixed = cuda.gencodeFlags [ "8.0" "9.0a" ];
    };
    expected = {
      onlySuffixed = [
        "-gencode=arch=compute_90a,code=sm_90a"
        "-gencode=arch=compute_100f,code=sm_100f"
      ];
      mixed = [
        "-gencode=arch=compute_80,code=sm_80"
        "-gencode=arch=compute_90a,code=sm_90a"
        "-gencode=arch=compute_80,code=compute_80"
      ];
    };
  };

  testGencodeFlagsOfNothingIsNothing = {
    expr = cuda.gencodeFlags [ ];
    expected = [ ];
  };
}
