/**
  Flake outputs of a kernel project.

  Stays within the flake schema: `packages.<system>` holds only derivations; the variant
  lists and the CI matrices (plain data, planned by `nixgen render` and read from the
  project's data) are separate top-level outputs (`nix flake check` only warns that it
  does not know them). Neither of those imports nixpkgs.
*/
{ nixgen }:
let
  inherit (builtins) listToAttrs map;
  genAttrs =
    names: f:
    listToAttrs (
      map (name: {
        inherit name;
        value = f name;
      }) names
    );
in
rec {
  /**
    Flake outputs for a project made by `nixgen.project.mkProject`:

    - `packages.<system>`: one derivation per variant (`<variant>`), the bundle of all
      bundled variants in the `<variant>/` layout (`kernels`, also `default`) and one
      bundle per backend (`bundle-<backend>`);
    - `variants.<system>`: the variant names (`nix eval .#variants.x86_64-linux --json`);
    - `githubActions.matrix`: the GitHub Actions matrix of every variant, and
      `githubActions.pullRequestMatrix`: one variant per system and backend
      (both as `nixgen matrix --format github [--pull-request]` prints them).

    # Inputs

    `nixpkgs`
    : the nixpkgs flake input

    `project`
    : the result of `mkProject`

    `overlays`
    : extra overlays for every variant's package set (e.g. providing toolkits)
  */
  kernelOutputs =
    {
      nixpkgs,
      project,
      overlays ? [ ],
    }:
    let
      inherit (project.project) systems;
    in
    {
      packages = genAttrs systems (
        system:
        project.packages {
          inherit nixpkgs system overlays;
        }
      );
      variants = genAttrs systems (system: map (v: v.name) (project.variants system));
      inherit (project.project) githubActions;
    };
}
