/**
  The build variants of a kernel project, as `nixgen render` planned them.

  nixgen plans in one place (`nixgen/planning/`): the variants of every system, the
  pull-request selection (`ci`), each system's default dev shell (`default`) and the CI
  matrices are written into the project's data
  (`project.nix`), and this module only reads them — so listing variants never imports
  nixpkgs and can never disagree with `nixgen variants`.

  A variant is `{ name; system; backend; framework; torch; backendVersion; tvmFfi;
  stableAbi; bundle; kernels; ci; default; }`.
*/
let
  inherit (builtins) filter map;
in
rec {
  /**
    The variants of `system` (or of every system when `null`), in the planned order
    (by system, then name).

    # Type

    ```
    variants :: Project -> String | Null -> [ Variant ]
    ```

    # Examples

    ```nix
    map (v: v.name) (variants { variants = [ { name = "torch-cuda"; system = "x86_64-linux"; } { name = "torch-cuda"; system = "aarch64-linux"; } ]; } "x86_64-linux")
    => [ "torch-cuda" ]
    ```
  */
  variants = project: system: filter (v: system == null || v.system == system) project.variants;

  /**
    Variant names only (what `nixgen variants` prints).

    # Type

    ```
    names :: Project -> String | Null -> [ String ]
    ```

    # Examples

    ```nix
    names { variants = [ { name = "torch-cpu"; system = "aarch64-darwin"; } ]; } null
    => [ "torch-cpu" ]
    ```
  */
  names = project: system: map (v: v.name) (variants project system);
}
