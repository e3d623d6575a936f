/**
  Version strings: the nixpkgs attribute suffix of a toolkit or torch version.

  Versions are compared and planned in Python (`nixgen.tables.version_key`,
  `nixgen.plan`); the library only spells the planned versions as attribute names.
*/
let
  inherit (builtins) head splitVersion tail;
in
{
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
}
