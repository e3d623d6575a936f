/**
  ROCm GPU targets: the builder's supported set (`data/rocm-archs.json`), intersected
  with what a kernel lists.
*/
let
  inherit (builtins) elem filter fromJSON readFile;
  db = fromJSON (readFile ./data/rocm-archs.json);
in
{
  /**
    The targets the builder compiles for when a kernel lists none.
  */
  supportedArchs = db.supported;

  /**
    A kernel's targets: its `rocm-archs` (or all supported) restricted to the supported
    set, in the kernel's order.

    # Type

    ```
    archsFor :: [ String ] | Null -> [ String ]
    ```

    # Examples

    ```nix
    archsFor [ "gfx906" "gfx941" "gfx942" ]
    => [ "gfx906" "gfx942" ]
    ```
  */
  archsFor = requested: filter (arch: elem arch db.supported) (if requested == null then db.supported else requested);
}
