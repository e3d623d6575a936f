# Tests of `rocm.nix`: a kernel's GPU targets restricted to what the builder supports.
let
  rocm = import ../rocm.nix;
  json = builtins.fromJSON (builtins.readFile ../data/rocm-archs.json);
in
{
  testArchsForDropsUnsupportedTargetsKeepingOrder = {
    expr = rocm.archsFor [ "gfx942" "gfx941" "gfx906" ];
    expected = [ "gfx942" "gfx906" ];
  };

  testArchsForNullIsEverySupportedTarget = {
    expr = rocm.archsFor null;
    expected = json.supported;
  };

  testSupportedArchsIsTheTable = {
    expr = rocm.supportedArchs;
    expected = json.supported;
  };

  testArchsForOfOnlyUnsupportedIsEmpty = {
    expr = rocm.archsFor [ "gfx900" "gfx941" ];
    expected = [ ];
  };
}
