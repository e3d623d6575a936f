# Tests of `variants.nix`: it reads the variants nixgen planned, and recomputes nothing.
let
  variants = import ../variants.nix;
  v = name: system: ci: { inherit name system ci; };
  project = {
    variants = [
      (v "torch-cpu" "aarch64-darwin" true)
      (v "torch213-cxx11-cpu-x86_64-linux" "x86_64-linux" true)
      (v "torch212-cxx11-cpu-x86_64-linux" "x86_64-linux" false)
    ];
  };
in
{
  testVariantsOfOneSystemKeepThePlannedOrder = {
    expr = variants.names project "x86_64-linux";
    expected = [ "torch213-cxx11-cpu-x86_64-linux" "torch212-cxx11-cpu-x86_64-linux" ];
  };

  testVariantsOfNullAreAll = {
    expr = builtins.length (variants.variants project null);
    expected = 3;
  };
}
