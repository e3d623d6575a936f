/**
  Version strings: dot-separated unsigned integers, compared numerically.

  Trailing zero components are insignificant (`2.10.0` equals `2.10`), as in the
  Python side (`nixgen.tables.version_key`).
*/
let
  inherit (builtins) compareVersions concatStringsSep genList head length splitVersion tail;

  dropTrailingZeros =
    parts:
    if length parts > 1 && builtins.elemAt parts (length parts - 1) == "0" then
      dropTrailingZeros (genList (i: builtins.elemAt parts i) (length parts - 1))
    else
      parts;
in
rec {
  /**
    Normalise a version: drop trailing `.0` components.

    # Type

    ```
    normalize :: String -> String
    ```

    # Examples

    ```nix
    normalize "2.10.0"
    => "2.10"
    ```
  */
  normalize = version: concatStringsSep "." (dropTrailingZeros (splitVersion version));

  /**
    Compare two versions: -1, 0 or 1.

    # Type

    ```
    compare :: String -> String -> Int
    ```

    # Examples

    ```nix
    compare "2.9" "2.10"
    => -1
    ```
  */
  compare = a: b: compareVersions (normalize a) (normalize b);

  /**
    Whether `version` lies within the inclusive bounds `low` and `high` (either may be null).

    # Inputs

    `low`
    : smallest allowed version, or `null`

    `high`
    : largest allowed version, or `null`

    `version`
    : the version to test

    # Type

    ```
    within :: { low :: String | Null, high :: String | Null } -> String -> Bool
    ```

    # Examples

    ```nix
    within { low = "2.12"; high = null; } "2.13"
    => true
    ```
  */
  within =
    { low, high }:
    version: (low == null || compare version low >= 0) && (high == null || compare version high <= 0);

  /**
    Major and minor without the dot, padded to two parts: the form used in variant names.

    # Type

    ```
    short :: String -> String
    ```

    # Examples

    ```nix
    short "2025.3.2"
    => "20253"
    ```
  */
  short =
    version:
    let
      parts = splitVersion version ++ [ "0" "0" ];
    in
    head parts + head (tail parts);

  /**
    Major and minor with an underscore, the form of nixpkgs attribute suffixes.

    # Type

    ```
    underscored :: String -> String
    ```

    # Examples

    ```nix
    underscored "13.0"
    => "13_0"
    ```
  */
  underscored =
    version:
    let
      parts = splitVersion version ++ [ "0" "0" ];
    in
    "${head parts}_${head (tail parts)}";

  /**
    The larger of two versions.

    # Type

    ```
    max :: String -> String -> String
    ```
  */
  max = a: b: if compare a b >= 0 then a else b;
}
