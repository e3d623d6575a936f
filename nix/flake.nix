/**
  Flake outputs of a kernel project.

  Stays within the flake schema: `packages.<system>` holds only derivations; the variant
  lists and the CI matrices (plain data) are separate top-level outputs (`nix flake
  check` only warns that it does not know them). Neither of those imports nixpkgs.
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
    The GitHub Actions runner label of a Nix system (`data/ci-runners.json`).
  */
  runnerFor =
    system: runners.${system} or (throw "nixgen: no GitHub runner is known for system ${system}");

  /**
    The GitHub Actions matrix that builds `variants` in at most `maxJobs` jobs; mirrors
    `nixgen.matrix.github`.

    Up to `maxJobs` variants: one job each,
    `{ name; variant; system; runner; backend; attr; attrs = [ attr ]; }` with
    `attr = "packages.<system>.<variant>"`. More: the variants of each (system, backend)
    are cut into consecutive slices of the smallest size that fits, one job per slice,
    `{ name = "<backend> <system> <i>/<n>"; system; runner; backend; attrs; variants; }`.
    A workflow builds `matrix.attrs` either way.

    # Inputs

    `maxJobs`
    : the job limit (GitHub's is 256)

    `variants`
    : the variants to build, in order

    # Type

    ```
    githubMatrix :: { maxJobs ? Int } -> [ Variant ] -> { include :: [ AttrSet ] }
    ```

    # Examples

    ```nix
    (githubMatrix { } (project.variants null)).include
    => [ { name = "torch212-cpu-aarch64-darwin"; attr = "packages.aarch64-darwin.torch212-cpu-aarch64-darwin"; … } … ]
    ```
  */
  githubMatrix =
    {
      maxJobs ? 256,
    }:
    variants:
    let
      inherit (builtins)
        attrNames
        elemAt
        foldl'
        genList
        length
        ;
      attrOf = v: "packages.${v.system}.${v.name}";
      jobName =
        v:
        let
          tail = "-${v.system}";
          n = builtins.stringLength v.name;
          t = builtins.stringLength tail;
        in
        # `torch-cpu` is built on every system: name the system where the name lacks it.
        if n > t && builtins.substring (n - t) t v.name == tail then
          v.name
        else
          "${v.name} (${v.system})";
      row = v: {
        name = jobName v;
        variant = v.name;
        inherit (v) system backend;
        runner = runnerFor v.system;
        attr = attrOf v;
        attrs = [ (attrOf v) ];
      };
      keyOf = v: "${v.system}\t${v.backend}";
      grouped = foldl' (
        acc: v: acc // { ${keyOf v} = (acc.${keyOf v} or [ ]) ++ [ v ]; }
      ) { } variants;
      # attrNames are sorted, and the tab sorts before any name character: ordered by
      # system, then backend, as in Python.
      groups = map (key: grouped.${key}) (attrNames grouped);
      ceilDiv = a: b: (a + b - 1) / b;
      jobsFor = size: foldl' (n: g: n + ceilDiv (length g) size) 0 groups;
      sizeFrom = size: if jobsFor size <= maxJobs then size else sizeFrom (size + 1);
      size = sizeFrom 2;
      slice =
        list: start: count:
        genList (i: elemAt list (start + i)) (
          if start + count > length list then length list - start else count
        );
      chunks =
        group:
        let
          count = ceilDiv (length group) size;
          first = builtins.head group;
        in
        genList (
          index:
          let
            members = slice group (index * size) size;
          in
          {
            name = "${first.backend} ${first.system} ${toString (index + 1)}/${toString count}";
            inherit (first) system backend;
            runner = runnerFor first.system;
            attrs = map attrOf members;
            variants = map (v: v.name) members;
          }
        ) count;
    in
    if maxJobs < 1 then
      throw "nixgen: the job limit must be at least 1"
    else if length variants <= maxJobs then
      { include = map row variants; }
    else if length groups > maxJobs then
      throw "nixgen: ${toString (length groups)} (system, backend) pairs cannot be built in ${
        toString maxJobs
      } jobs"
    else
      { include = builtins.concatMap chunks groups; };

  /**
    Flake outputs for a project made by `nixgen.project.mkProject`:

    - `packages.<system>`: one derivation per variant (`<variant>`), the bundle of all
      bundled variants in the `<variant>/` layout (`kernels`, also `default`) and one
      bundle per backend (`bundle-<backend>`);
    - `variants.<system>`: the variant names (`nix eval .#variants.x86_64-linux --json`);
    - `githubActions.matrix`: the GitHub Actions matrix of every variant, and
      `githubActions.pullRequestMatrix`: one variant per system and backend
      (`nixgen.variants.selectCi`); the shape of `nixgen matrix --format github`.

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
  */
  kernelOutputs =
    {
      nixpkgs,
      kernel-builder ? null,
      project,
      overlays ? [ ],
    }:
    {
      packages = genAttrs systems (
        system:
        project.packages {
          inherit
            nixpkgs
            kernel-builder
            system
            overlays
            ;
        }
      );
      variants = genAttrs systems (system: map (v: v.name) (project.variants system));
      githubActions = {
        matrix = githubMatrix { } (project.variants null);
        pullRequestMatrix = githubMatrix { } (nixgen.variants.selectCi (project.variants null));
      };
    };
}
