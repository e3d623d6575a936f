# mkShell, after pkgs/build-support/mkshell/default.nix (called with callPackage in
# pkgs/top-level/all-packages.nix, so `mkShell.override { stdenv = …; }` picks the stdenv):
# the shell's inputs merged with those of `inputsFrom`, a derivation whose one build phase
# writes a note to $out (nobody builds it: `nix develop` only reads its environment).
{ lib, stdenv }:
{
  name ? "nix-shell",
  packages ? [ ],
  inputsFrom ? [ ],
  buildInputs ? [ ],
  nativeBuildInputs ? [ ],
  propagatedBuildInputs ? [ ],
  propagatedNativeBuildInputs ? [ ],
  ...
}@attrs:
let
  mergeInputs =
    name:
    (attrs.${name} or [ ])
    ++ lib.subtractLists inputsFrom (lib.flatten (lib.catAttrs name inputsFrom));
  rest = builtins.removeAttrs attrs [
    "name"
    "packages"
    "inputsFrom"
    "buildInputs"
    "nativeBuildInputs"
    "propagatedBuildInputs"
    "propagatedNativeBuildInputs"
    "shellHook"
  ];
in
stdenv.mkDerivation (
  {
    inherit name;
    buildInputs = mergeInputs "buildInputs";
    nativeBuildInputs = packages ++ (mergeInputs "nativeBuildInputs");
    propagatedBuildInputs = mergeInputs "propagatedBuildInputs";
    propagatedNativeBuildInputs = mergeInputs "propagatedNativeBuildInputs";
    shellHook = lib.concatStringsSep "\n" (
      lib.catAttrs "shellHook" (lib.reverseList inputsFrom ++ [ attrs ])
    );
    phases = [ "buildPhase" ];
    buildPhase = ''
      { echo "------------------------------------------------------------";
        echo " WARNING: the existence of this path is not guaranteed.";
        echo " It is an internal implementation detail for pkgs.mkShell.";
        echo "------------------------------------------------------------";
        echo;
        # Record all build inputs as runtime dependencies
        export;
      } >> "$out"
    '';
    preferLocalBuild = true;
  }
  // rest
)
