# Tests of `flake.nix`: the flake outputs of a project, per system, from what `mkProject`
# returns (a fake project here, whose functions return what they were called with).
let
  inherit (import ../default.nix) flake;
  project = {
    project = {
      systems = [
        "x86_64-linux"
        "aarch64-darwin"
      ];
      githubActions = {
        matrix = [ "m" ];
        pullRequestMatrix = [ "p" ];
      };
    };
    packages = args: { packagesOf = args; };
    legacyPackages = args: { legacyPackagesOf = args; };
    devShells = args: { devShellsOf = args; };
    checks = args: { checksOf = args; };
    objects = args: { objectsOf = args; };
    variants = system: [
      { name = "torch-cpu-${system}"; }
      { name = "torch-cuda-${system}"; }
    ];
  };
  # Never read: listing variants must not touch nixpkgs.
  nixpkgs = throw "nixpkgs was read";
  outputs = flake.kernelOutputs {
    inherit nixpkgs project;
    kernel-builder = "kb";
  };
in
{
  testOutputsAreTheFlakeSchemasAndTheVariantLists = {
    expr = builtins.attrNames outputs;
    expected = [
      "checks"
      "devShells"
      "githubActions"
      "legacyPackages"
      "objects"
      "packages"
      "variants"
    ];
  };

  testEveryPerSystemOutputHasEachSystem = {
    expr = map (o: builtins.attrNames outputs.${o}) [
      "packages"
      "legacyPackages"
      "devShells"
      "checks"
      "objects"
      "variants"
    ];
    expected = builtins.genList (_: [
      "aarch64-darwin"
      "x86_64-linux"
    ]) 6;
  };

  testVariantsAreNamesAndNeverReadNixpkgs = {
    expr = outputs.variants.aarch64-darwin;
    expected = [
      "torch-cpu-aarch64-darwin"
      "torch-cuda-aarch64-darwin"
    ];
  };

  testPackagesShellsAndChecksGetTheSystemAndTheInputs = {
    expr =
      let
        args = outputs.packages.x86_64-linux.packagesOf;
      in
      {
        inherit (args) system kernel-builder overlays;
        legacy = outputs.legacyPackages.x86_64-linux.legacyPackagesOf.system;
        shells = outputs.devShells.x86_64-linux.devShellsOf.system;
        checks = outputs.checks.x86_64-linux.checksOf.system;
      };
    expected = {
      system = "x86_64-linux";
      kernel-builder = "kb";
      overlays = [ ];
      legacy = "x86_64-linux";
      shells = "x86_64-linux";
      checks = "x86_64-linux";
    };
  };

  testTheCiMatricesAreTheProjectsData = {
    expr = outputs.githubActions;
    expected = project.project.githubActions;
  };
}
