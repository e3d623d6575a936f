# The stub nixpkgs as a flake, for `--override-input nixpkgs path:<copy of this directory>`.
# Outputs like nixpkgs' flake.nix: `lib` and `legacyPackages.<system>` (= import ./. { inherit
# system; }, so unfree packages are refused there, as in nixpkgs).
{
  description = "stub nixpkgs for the nixgen tests (not real nixpkgs)";

  outputs =
    { self }:
    let
      lib = import ./lib;
      systems = [
        "x86_64-linux"
        "aarch64-linux"
        "x86_64-darwin"
        "aarch64-darwin"
      ];
    in
    {
      inherit lib;
      legacyPackages = lib.genAttrs systems (system: import ./. { inherit system; });
    };
}
