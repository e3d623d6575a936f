# Tests of `sources.nix`: a derivation's `src` holds exactly the files it declares.
# Needs `--read-write-mode` (the selected trees are added to the store and listed).
let
  sources = import ../sources.nix;
  lib = import ../../tests/nixpkgs/lib;
  root = ./fixtures/project;

  # Every file under a directory, as sorted relative paths.
  listFiles =
    dir:
    let
      go =
        prefix: path:
        lib.concatLists (
          lib.mapAttrsToList (
            name: type:
            if type == "directory" then go "${prefix}${name}/" (path + "/${name}") else [ "${prefix}${name}" ]
          ) (builtins.readDir path)
        );
    in
    lib.sort (a: b: a < b) (go "" dir);
in
{
  testSelectHoldsExactlyTheDeclaredFiles = {
    expr = listFiles (sources.select lib root [ "kernel_a/a.cpp" "kernel_a/a.h" ]);
    expected = [ "kernel_a/a.cpp" "kernel_a/a.h" ];
  };

  testSelectKeepsFileContents = {
    expr = builtins.readFile "${sources.select lib root [ "kernel_b/b.cu" ]}/kernel_b/b.cu";
    expected = "// kernel_b/b.cu\n";
  };

  testSelectIgnoresTheOrderOfFiles = {
    expr =
      toString (sources.select lib root [ "kernel_a/a.h" "kernel_a/a.cpp" ])
      == toString (sources.select lib root [ "kernel_a/a.cpp" "kernel_a/a.h" ]);
    expected = true;
  };

  testDifferentFileSetsGiveDifferentSources = {
    expr =
      toString (sources.select lib root [ "kernel_a/a.cpp" ])
      == toString (sources.select lib root [ "kernel_a/a.cpp" "kernel_a/a.h" ]);
    expected = false;
  };

  testSelectOfAMissingFileFails = {
    expr = sources.select lib root [ "kernel_a/missing.cpp" ];
    expectedError = true;
  };

  testSelectWithPackageAddsThePackagesPythonFiles = {
    expr = listFiles (sources.selectWithPackage lib root [ "torch-ext/binding.cpp" ] "torch-ext/pkg" [ "py" "pyi" ]);
    expected = [
      "torch-ext/binding.cpp"
      "torch-ext/pkg/__init__.py"
      "torch-ext/pkg/ops.pyi"
      "torch-ext/pkg/sub/mod.py"
    ];
  };

  testSelectWithPackageHonoursTheExtensions = {
    expr = listFiles (sources.selectWithPackage lib root [ ] "torch-ext/pkg" [ "py" "json" ]);
    expected = [
      "torch-ext/pkg/__init__.py"
      "torch-ext/pkg/data.json"
      "torch-ext/pkg/sub/mod.py"
    ];
  };
}
