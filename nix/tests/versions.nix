# Tests of `versions.nix` (nix-unit style: `{ <name> = { expr; expected; }; }`), run by
# tests/test_nixlib.py through `nix-instantiate --eval --strict --json`.
let
  versions = import ../versions.nix;
in
{
  testUnderscoredIsTheNixpkgsAttributeSuffix = {
    expr = map versions.underscored [ "13.0" "12.6" "2025.3.2" "13" ];
    expected = [ "13_0" "12_6" "2025_3" "13_0" ];
  };
}
