/**
  Flake outputs of a kernel project.

  Stays within the flake schema: `packages.<system>` holds only derivations; the variant
  lists and the CI matrix (plain data) are separate top-level outputs.
*/
{ nixgen }:
let
  inherit (builtins)
    concatMap
    fromJSON
    listToAttrs
    map
    readFile
    ;
  runners = fromJSON (readFile ./data/ci-runners.json);
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
    Every system that appears in the build-configuration table.
  */
  systems = nixgen.unique (concatMap (config: config.systems) nixgen.variants.buildConfigs);

  /**
    The GitHub Actions matrix of a project: one job per variant, each building
    `packages.<system>.<variant>`.

    # Type

    ```
    githubMatrix :: Project -> { include :: [ { name, system, runner, attr, backend } ] }
    ```
  */
  githubMatrix = project: {
    include = map (variant: {
      inherit (variant) name system backend;
      runner = runners.${variant.system};
      attr = "packages.${variant.system}.${variant.name}";
    }) (project.variants null);
  };

  /**
    Flake outputs for a project made by `nixgen.project.mkProject`.

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
    {
      packages = genAttrs systems (
        system:
        project.packages {
          inherit nixpkgs system overlays;
        }
      );
      variants = genAttrs systems (system: map (v: v.name) (project.variants system));
      githubActions.matrix = githubMatrix project;
    };
}
