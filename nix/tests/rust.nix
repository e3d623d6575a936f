# Tests of `rust.nix`: the cuda-oxide device build's target.
let
  nixgen = import ../default.nix;
  inherit (nixgen) rust;
  target =
    capabilities:
    builtins.head (
      builtins.match ".*CUDA_OXIDE_TARGET=([^ ]*) .*" (rust.deviceBuild {
        manifest = "device/Cargo.toml";
        ptxDir = "ptx";
        inherit capabilities;
      })
    );
in
{
  testDeviceBuildTargetsTheLowestCapability = {
    expr = target [ "9.0" "8.0" "12.0" ];
    expected = "sm_80";
  };

  testDeviceBuildTargetDropsPtx = {
    # The branch's kernel.cmake: `string(REPLACE "+PTX" "" _OXIDE_ARCH ...)`.
    expr = target [ "9.0+PTX" "10.0" ];
    expected = "sm_90";
  };
}
