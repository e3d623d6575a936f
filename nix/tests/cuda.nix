# Tests of `cuda.nix`: which capabilities a toolkit can build, and the nvcc flags for them.
let
  cuda = import ../cuda.nix;
  json = builtins.fromJSON (builtins.readFile ../data/builder-cuda-capabilities.json);
in
{
  testSupportedFollowsTheCapabilityTable = {
    expr = map (args: cuda.supported (builtins.elemAt args 0) (builtins.elemAt args 1)) [
      [ "7.0" "12.6" ] # Volta: last supported by 12.9
      [ "7.0" "13.0" ]
      [ "7.5" "13.2" ] # Turing: no upper bound
      [ "8.0" "11.1" ] # Ampere: from 11.2
      [ "8.0" "11.2" ]
      [ "10.1" "12.9" ] # renamed to 11.0 in CUDA 13
      [ "10.1" "13.0" ]
      [ "11.0" "12.9" ]
      [ "11.0" "13.0" ]
      [ "12.1" "12.8" ]
    ];
    expected = [ true false true false true true false false true false ];
  };

  testArchitectureSpecificNeedsCuda12 = {
    expr = [
      (cuda.supported "9.0a" "11.8")
      (cuda.supported "9.0a" "12.0")
      (cuda.supported "9.0a" "12.6")
      (cuda.supported "10.0a" "12.6") # the base capability needs 12.8
      (cuda.supported "10.0a" "12.8")
    ];
    expected = [ false true true false true ];
  };

  testFamilySpecificNeedsCuda12_9 = {
    expr = [
      (cuda.supported "10.0f" "12.8")
      (cuda.supported "10.0f" "12.9")
      (cuda.supported "12.0f" "13.0")
    ];
    expected = [ false true true ];
  };

  testUnknownCapabilitiesAreNeverSupported = {
    expr = map (c: cuda.supported c "13.0") [ "99.0" "8.0x" "sm_80" "" "8" ];
    expected = [ false false false false false ];
  };

  testCapabilitiesForKeepsTheKernelsOrder = {
    expr = cuda.capabilitiesFor [ "9.0" "7.0" "8.0" ] "13.0";
    expected = [ "9.0" "8.0" ];
  };

  testCapabilitiesForDropsVoltaOnCuda13Only = {
    expr = {
      "12.6" = cuda.capabilitiesFor [ "7.0" "8.0" "9.0a" ] "12.6";
      "13.0" = cuda.capabilitiesFor [ "7.0" "8.0" "9.0a" ] "13.0";
    };
    expected = {
      "12.6" = [ "7.0" "8.0" "9.0a" ];
      "13.0" = [ "8.0" "9.0a" ];
    };
  };

  testCapabilitiesForCanBeEmpty = {
    expr = cuda.capabilitiesFor [ "7.0" "7.2" ] "13.0";
    expected = [ ];
  };

  testCapabilitiesForNullIsTheBuildersDefaultSet = {
    expr = {
      default = cuda.defaultCapabilities;
      "12.6" = cuda.capabilitiesFor null "12.6";
      "13.0" = cuda.capabilitiesFor null "13.0";
    };
    expected = {
      default = json.capabilities;
      "12.6" = [ "7.0" "7.2" "7.5" "8.0" "8.6" "8.7" "8.9" "9.0" ];
      "13.0" = [ "7.5" "8.0" "8.6" "8.7" "8.9" "9.0" "10.0" "11.0" "12.0" ];
    };
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
