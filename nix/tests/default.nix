# Tests of `default.nix`: the library is every module of `nix/`, each under its name, and
# nothing else (string and list helpers come from nixpkgs `lib`: `withLib`).
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
    # and `withLib`, the library with a nixpkgs `lib`.
    expr = builtins.filter (a: !(builtins.elem a (map attrOf modules))) (builtins.attrNames nixgen);
    expected = [ "withLib" ];
  };

  testEachAttributeIsItsModule = {
    expr = builtins.filter (f: builtins.isFunction nixgen.${attrOf f} || !(builtins.isAttrs nixgen.${attrOf f})) modules;
    expected = [ ];
  };

  testWithLibIsTheSameLibraryWithItsBuildersWorking = {
    expr =
      let
        withLib = nixgen.withLib (import ../../tests/nixpkgs/lib);
      in
      {
        modules = builtins.attrNames withLib == builtins.attrNames nixgen;
        quotes = withLib.compile.copyPhase "a b" "c";
      };
    expected = {
      modules = true;
      quotes = "cp 'a b' c\n";
    };
  };

  # Before a package set gives one, a builder that needs `lib` says so.
  testABuilderWithoutLibFails = {
    expr = nixgen.compile.copyPhase "a" "b";
    expectedError = true;
  };
}
