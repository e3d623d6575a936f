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
  # Not nixpkgs' `lib.genAttrs`: that would read the nixpkgs input, which the variant lists
  # and the CI matrices never need (nix/tests/flake.nix checks it is never read).
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
    - `legacyPackages.<system>`: `backendBundle.<backend>` and `backendCi.<backend>`, the
      output names the kernels-community CI builds (`mkProject`'s `legacyPackages`);
    - `devShells.<system>`: a development shell per variant (its compilers, torch, the
      `kernels` client, pytest, the project's Python dependencies; nothing built to enter
      it), `test-<variant>` with the variant built on `KERNEL_BUILD`, `default` and `test`
      (the first bundled variant's); `nix develop`, `nixgen shell [--test]`;
    - `checks.<system>.<variant>`: the project's `tests/` (pytest) against the built
      variant (`nix flake check`);
    - `objects.<system>.<variant>`: the object derivations of a variant, which
      `nixgen matrix --shards K` splits into CI shards: `kernels.<kernel>.<key>` for the
      kernels built one derivation per object (`<key>`: the object key nixgen planned),
      `whole.<kernel>` for the other kernels and `binding`, the binding's objects
      (`mkProject`'s `variantObjects`);
    - `variants.<system>`: the variant names (`nix eval .#variants.x86_64-linux --json`);
    - `githubActions.matrix`: the GitHub Actions matrix of every variant, and
      `githubActions.pullRequestMatrix`: one variant per system and backend
      (both as `nixgen matrix --format github [--pull-request]` prints them).

    # Inputs

    `nixpkgs`
    : the nixpkgs flake input (the revision the kernels toolchain locks)

    `kernel-builder`
    : the kernels toolchain flake input (huggingface/kernels); its `nix-builder/overlay.nix`
      provides torch, the versioned toolkits and the manylinux_2_28 stdenvs. Missing, any
      package fails to evaluate with a message naming the input.

    `project`
    : the result of `mkProject`

    `overlays`
    : extra overlays for every variant's package set, applied after the toolchain's overlay
      and before nixgen selects the variant's versions (`cudaPackages_X_Y`,
      `rocmPackages_X_Y`, `xpuPackages_X_Y_Z`, `torch-bin_X_Y`): the escape hatch to bring
      or replace a toolkit or torch

    `self`
    : the project flake's `self`: its git commit and dirty state go into each package's
      `metadata.json` (`nixgen.provenance`); `null` (`nix-build`): none recorded

    # Type

    ```
    kernelOutputs :: { nixpkgs, kernel-builder ? Flake, project :: Project, overlays ? [ Overlay ], self ? Flake } -> AttrSet
    ```
  */
  kernelOutputs =
    {
      nixpkgs,
      kernel-builder ? null,
      project,
      overlays ? [ ],
      self ? null,
    }:
    let
      inherit (project.project) systems;
    in
    {
      packages = genAttrs systems (
        system:
        project.packages (
          {
            inherit
              nixpkgs
              kernel-builder
              system
              overlays
              ;
          }
          // (if self == null then { } else { inherit self; })
        )
      );
      # The kernels toolchain's `backendBundle.<backend>` and `backendCi.<backend>`:
      # `nix build .#backendCi.cuda` looks in `legacyPackages.<system>` after `packages`.
      legacyPackages = genAttrs systems (
        system:
        project.legacyPackages (
          {
            inherit
              nixpkgs
              kernel-builder
              system
              overlays
              ;
          }
          // (if self == null then { } else { inherit self; })
        )
      );
      # Development and test shells, and the project's tests as checks (nix/project.nix).
      devShells = genAttrs systems (
        system:
        project.devShells {
          inherit
            nixpkgs
            kernel-builder
            system
            overlays
            ;
        }
      );
      checks = genAttrs systems (
        system:
        project.checks {
          inherit
            nixpkgs
            kernel-builder
            system
            overlays
            ;
        }
      );
      # The object derivations of kernels built one derivation per object, for CI
      # shards (`nixgen matrix --shards K`); plain attribute sets, not `packages`.
      objects = genAttrs systems (
        system:
        project.objects {
          inherit
            nixpkgs
            kernel-builder
            system
            overlays
            ;
        }
      );
      variants = genAttrs systems (system: map (v: v.name) (project.variants system));
      inherit (project.project) githubActions;
    };
}
