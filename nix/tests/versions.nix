# Tests of `versions.nix` (nix-unit style: `{ <name> = { expr; expected; }; }`), run by
# tests/test_nixlib.py through `nix-instantiate --eval --strict --json`.
let
  versions = import ../versions.nix;
in
{
  testNormalizeDropsTrailingZeros = {
    expr = map versions.normalize [ "2.10.0" "1.0.0" "13" "0" "2025.3.2" "12.0" ];
    expected = [ "2.10" "1" "13" "0" "2025.3.2" "12" ];
  };

  testCompareIsNumericNotLexical = {
    expr = [
      (versions.compare "2.9" "2.10")
      (versions.compare "2.10" "2.9")
      (versions.compare "2.10.0" "2.10")
      (versions.compare "13.0" "12.9")
      (versions.compare "12.10" "12.9")
    ];
    expected = [ (-1) 1 0 1 1 ];
  };

  testWithinIsInclusiveAndOpenEnded = {
    expr = [
      (versions.within { low = "2.12"; high = null; } "2.13")
      (versions.within { low = "2.12"; high = null; } "2.12.0")
      (versions.within { low = "2.12"; high = null; } "2.11")
      (versions.within { low = null; high = "12.9"; } "12.9")
      (versions.within { low = null; high = "12.9"; } "13.0")
      (versions.within { low = null; high = null; } "1")
      (versions.within { low = "12.8"; high = "12.9"; } "12.10")
    ];
    expected = [ true true false true false true false ];
  };

  testShortIsMajorMinorWithoutDot = {
    expr = map versions.short [ "2.13" "2025.3.2" "13" "0.1" "12.6.3" ];
    expected = [ "213" "20253" "130" "01" "126" ];
  };

  testUnderscoredIsTheNixpkgsAttributeSuffix = {
    expr = map versions.underscored [ "13.0" "12.6" "2025.3.2" "13" ];
    expected = [ "13_0" "12_6" "2025_3" "13_0" ];
  };

  testMaxComparesNumerically = {
    expr = [
      (versions.max "2.9" "2.10")
      (versions.max "2.10" "2.9")
      (versions.max "13.0" "13")
    ];
    expected = [ "2.10" "2.10" "13.0" ];
  };
}
