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

  # The library only reads the plan: an empty planned entry is returned as it is (the
  # "no buildable capability" rule lives in nixgen.plan alone; a second check here fails this).
  testCapabilitiesForReadsThePlanWithoutCheckingIt = {
    expr = map (cuda.capabilitiesFor {
      "12.6" = [ ];
      "13.0" = [ "9.0" ];
    }) [ "12.6" "13.0" ];
    expected = [ [ ] [ "9.0" ] ];
  };

  testArchName = {
    expr = map cuda.archName [ "8.0" "9.0a" "10.0f" "12.1" ];
    expected = [ "80" "90a" "100f" "121" ];
  };

  testBaseOfAndWithPtx = {
    expr = map (c: [ (cuda.baseOf c) (cuda.withPtx c) ]) [ "9.0+PTX" "9.0a+PTX" "8.0" "10.0f" ];
    expected = [ [ "9.0" true ] [ "9.0a" true ] [ "8.0" false ] [ "10.0f" false ] ];
  };

  testArchNameDropsPtx = {
    expr = map cuda.archName [ "9.0+PTX" "9.0a+PTX" ];
    expected = [ "90" "90a" ];
  };

  testGencodeFlagsSassForEachNoPtxUnlessAsked = {
    # The anchor's set_gencode_flags_for_srcs: PTX only for a `+PTX` capability.
    expr = cuda.gencodeFlags [ "8.0" "9.0" ];
    expected = [
      "-gencode=arch=compute_80,code=sm_80"
      "-gencode=arch=compute_90,code=sm_90"
    ];
  };

  testGencodeFlagsPtxCapabilityEmbedsSassAndPtx = {
    expr = cuda.gencodeFlags [ "9.0+PTX" "8.0" "10.0f" "12.0+PTX" ];
    expected = [
      "-gencode=arch=compute_90,code=[sm_90,compute_90]"
      "-gencode=arch=compute_80,code=sm_80"
      "-gencode=arch=compute_100f,code=sm_100f"
      "-gencode=arch=compute_120,code=[sm_120,compute_120]"
    ];
  };

  testTargetCountCountsPtxAsASecondTarget = {
    expr = map cuda.targetCount [ [ ] [ "8.0" ] [ "9.0+PTX" ] [ "8.0" "9.0+PTX" ] ];
    expected = [ 0 1 2 3 ];
  };

  testGencodeFlagsOfNothingIsNothing = {
    expr = cuda.gencodeFlags [ ];
    expected = [ ];
  };

  # A ptxas pin overrides the toolkit's `cuda_nvcc` in its scope, copying ptxas and nvlink
  # from the pinned set's redistributable before the package's own postInstall; NVVM only
  # from a set older than 13.0 (which carries it); no pin leaves the set as it is.
  testWithPtxasOverridesNvccFromThePinnedSet =
    let
      scope =
        version: nvcc:
        {
          cudaMajorMinorVersion = version;
          cuda_nvcc = nvcc;
          overrideScope = f: scope version (f { } { cuda_nvcc = nvcc; }).cuda_nvcc;
        };
      nvcc = attrs: attrs // { overrideAttrs = g: nvcc (attrs // g attrs); };
      toolkit = scope "12.6" (nvcc { postInstall = "own-steps\n"; });
      pinned = version: scope version (nvcc { src = "/src-${version}"; });
      install = pin: (cuda.withPtxas toolkit (pinned pin)).cuda_nvcc.postInstall;
    in
    {
      expr = [
        (install "12.8")
        (install "13.0")
        ((cuda.withPtxas toolkit null).cuda_nvcc.postInstall)
      ];
      expected = [
        (
          "cp -f /src-12.8/bin/ptxas \"$out/bin/ptxas\"\ncp -f /src-12.8/bin/nvlink \"$out/bin/nvlink\"\n"
          + "cp -f /src-12.8/nvvm/bin/* \"$out/nvvm/bin/\"\nown-steps\n"
        )
        "cp -f /src-13.0/bin/ptxas \"$out/bin/ptxas\"\ncp -f /src-13.0/bin/nvlink \"$out/bin/nvlink\"\nown-steps\n"
        "own-steps\n"
      ];
    };
}
