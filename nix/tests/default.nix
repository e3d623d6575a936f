# Tests of `default.nix`: the library is every module of `nix/`, each under its name, and
# nothing else (list helpers come from nixpkgs `lib`).
let
  nixgen = import ../default.nix;
  # `tvm-ffi.nix` is `tvmFfi` (a Nix identifier).
  attrOf = file: if file == "tvm-ffi.nix" then "tvmFfi" else builtins.substring 0 (builtins.stringLength file - 4) file;
  modules = builtins.filter (f: builtins.match ".*\\.nix" f != null && f != "default.nix") (
    builtins.attrNames (builtins.readDir ../.)
  );
in
{
  testEveryModuleIsAnAttributeOfTheLibrary = {
    expr = builtins.filter (f: !(nixgen ? ${attrOf f})) modules;
    expected = [ ];
  };

  testTheLibraryHoldsOnlyItsModules = {
    expr = builtins.filter (a: !(builtins.elem a (map attrOf modules))) (builtins.attrNames nixgen);
    expected = [ ];
  };

  testEachAttributeIsItsModule = {
    expr = builtins.filter (f: builtins.isFunction nixgen.${attrOf f} || !(builtins.isAttrs nixgen.${attrOf f})) modules;
    expected = [ ];
  };
}
