# nixgen's own flake: the CLI, the example kernel projects built for real, the static Nix
# library for kernel projects' flakes, and cheap checks.
#
# No flake.lock is committed: a real lock needs the network (to hash the inputs). `nix`
# writes one on first use; offline, run everything with
# `--override-input nixpkgs path:<a nixpkgs checkout> --override-input kernel-builder path:<…>`
# (the tests use tests/nixpkgs and tests/kernel-builder; docs/toolchain.md).
{
  description = "nixgen: typed build.toml for compute kernels, rendered to reproducible Nix derivations";

  # The kernels toolchain's binary cache: torch and the toolkits are downloaded, not built.
  nixConfig = {
    extra-substituters = [ "https://huggingface.cachix.org" ];
    extra-trusted-public-keys = [
      "huggingface.cachix.org-1:ynTPbLS0W8ofXd9fDjk1KvoFky9K2jhxe6r4nXAkc/o="
    ];
  };

  # The kernels toolchain (huggingface/kernels) and the nixpkgs revision its flake.lock
  # holds; the same revisions generated kernel flakes pin (nix/data/pins.json, which
  # tests/test_one_home.py holds these literals to). Update them together, deliberately.
  inputs = {
    kernel-builder.url = "github:huggingface/kernels/8ac69fc542a4306eade0759ef7c45b4f2ae57df0";
    kernel-builder.inputs.nixpkgs.follows = "nixpkgs";
    nixpkgs.url = "github:NixOS/nixpkgs/ec1a11210589d294f0ac99d3290a27e6c73dfa1d";
  };

  outputs =
    {
      self,
      nixpkgs,
      kernel-builder,
    }:
    let
      nixgen = import ./nix;
      inherit (builtins)
        attrNames
        concatMap
        filter
        fromJSON
        listToAttrs
        map
        pathExists
        readDir
        readFile
        ;
      # The systems of nixgen's build table, as planned into every rendered project.
      inherit (import ./examples/relu-cpu/nix/project.nix) systems;

      genAttrs =
        names: f:
        listToAttrs (
          map (name: {
            inherit name;
            value = f name;
          }) names
        );

      # Example kernel projects through their committed, generated entry points
      # (`nixgen render examples/<name>`; tests/test_examples.py keeps them fresh).
      buildable = [
        "relu-cpu"
        "relu-rust"
        "relu-cuda"
        "relu-mixed"
      ];
      # No SYCL compiler on the machines this repository is tested on: evaluated, not built.
      evalOnly = [ "relu-xpu" ];
      examples = genAttrs (buildable ++ evalOnly) (name: import (./examples + "/${name}/nix"));

      # The examples that have variants on `system`, each with its packages there.
      examplesOn =
        system: names:
        map (name: {
          inherit name;
          packages = examples.${name}.packages { inherit nixpkgs kernel-builder system; };
        }) (filter (name: examples.${name}.variants system != [ ]) names);

      # `<example>/<variant>/…`: every bundled variant of every example, for `get_local_kernel`.
      joined =
        system: name: names:
        nixpkgs.legacyPackages.${system}.linkFarm name (
          map (example: {
            inherit (example) name;
            path = example.packages.kernels;
          }) (examplesOn system names)
        );

      nixgenPackage =
        pkgs:
        let
          pyproject = fromTOML (readFile ./pyproject.toml);
          py = pkgs.python3Packages;
        in
        py.buildPythonApplication {
          pname = "nixgen";
          inherit (pyproject.project) version;
          pyproject = true;
          src = pkgs.lib.fileset.toSource {
            root = ./.;
            fileset = pkgs.lib.fileset.unions [
              ./pyproject.toml
              (pkgs.lib.fileset.maybeMissing ./README.md)
              ./nixgen
              ./nix
            ];
          };
          build-system = [ py.setuptools ];
          dependencies = with py; [
            attrs
            cattrs
            click
            jinja2
            license-expression
            tomli
            tomlkit
          ];
          pythonImportsCheck = [ "nixgen" ];
          meta = {
            description = pyproject.project.description;
            license = pkgs.lib.licenses.asl20;
            mainProgram = "nixgen";
          };
        };

      # The library's unit tests (`nix/tests/*.nix`: `{ <name> = { expr; expected; }; }`, or
      # `expectedError = true`), evaluated when the check is (`checks.<system>.lib-tests`): a
      # failure fails evaluation and names the test. tests/test_nixlib.py runs the same files
      # one by one, and evaluates this check through the stand-ins.
      libTests =
        let
          dir = ./nix/tests;
          files =
            if pathExists dir then
              filter (f: builtins.match ".*\\.nix" f != null) (attrNames (readDir dir))
            else
              [ ];
          passes =
            t:
            let
              r = builtins.tryEval (builtins.deepSeq t.expr t.expr);
            in
            if t ? expectedError then !r.success else r.success && r.value == t.expected;
        in
        concatMap (
          file:
          let
            tests = import (dir + "/${file}");
          in
          map (name: {
            name = "${file}: ${name}";
            passed = passes tests.${name};
          }) (attrNames tests)
        ) files;
      libTestFailures = map (t: t.name) (filter (t: !t.passed) libTests);
    in
    {
      /**
        nixgen's static Nix library (`nix/`, documented there) plus `projectOutputs`.
      */
      lib = nixgen // {
        /**
          Flake outputs of a kernel project rendered by `nixgen render`, built with this
          flake's library instead of the copy vendored into the project (`<out>/lib`).

          # Inputs

          `nixpkgs`
          : the nixpkgs flake input

          `kernel-builder`
          : the kernels toolchain flake input (huggingface/kernels, see docs/toolchain.md)

          `root`
          : the project root (the directory holding `build.toml`)

          `out`
          : the rendered directory, relative to `root` (default `"nix"`)

          `overlays`
          : extra overlays for every variant's package set, applied before nixgen selects
            the variant's toolkit and torch versions

          # Type

          ```
          projectOutputs :: { nixpkgs, kernel-builder, root :: Path, out ? String, overlays ? [ Overlay ] } -> AttrSet
          ```

          # Examples

          ```nix
          outputs = { self, nixpkgs, kernel-builder, nixgen }:
            nixgen.lib.projectOutputs { inherit nixpkgs kernel-builder; root = ./.; };
          ```
        */
        projectOutputs =
          {
            nixpkgs,
            kernel-builder ? null,
            root,
            out ? "nix",
            overlays ? [ ],
          }:
          let
            dir = root + "/${out}";
            project = nixgen.project.mkProject {
              inherit root;
              project = import (dir + "/project.nix");
              extension = dir + "/extension.nix";
              noarch = dir + "/noarch.nix";
            };
          in
          nixgen.flake.kernelOutputs {
            inherit
              nixpkgs
              kernel-builder
              project
              overlays
              ;
          };
      };

      packages = genAttrs systems (
        system:
        let
          pkgs = nixpkgs.legacyPackages.${system};
          perExample = listToAttrs (
            map (example: {
              inherit (example) name;
              value = example.packages.kernels;
            }) (examplesOn system buildable)
          );
        in
        perExample
        // {
          nixgen = nixgenPackage pkgs;
          default = self.packages.${system}.nixgen;
          kernels = joined system "nixgen-examples-kernels" buildable;
        }
        // (
          if examplesOn system evalOnly == [ ] then
            { }
          else
            {
              # Evaluation only here (see checks.<system>.eval-only-kernels).
              kernels-xpu = joined system "nixgen-examples-kernels-xpu" evalOnly;
            }
        )
      );

      checks = genAttrs systems (
        system:
        let
          pkgs = nixpkgs.legacyPackages.${system};
          # Every variant of the evaluation-only examples, bundled or not.
          evalOnlyVariants = concatMap (
            example: map (v: example.packages.${v.name}) (examples.${example.name}.variants system)
          ) (examplesOn system evalOnly);
        in
        {
          lib-tests =
            if libTestFailures == [ ] then
              pkgs.runCommand "nixgen-lib-tests" {
                # What the check ran (`<file>: <test>`), for tests/test_nixlib.py.
                passthru.tests = map (t: t.name) libTests;
              } "touch $out"
            else
              throw "nixgen library tests failed: ${builtins.concatStringsSep ", " libTestFailures}";
        }
        // (
          if evalOnlyVariants == [ ] then
            { }
          else
            {
              # Forces every evaluation-only derivation (and its whole dependency graph) to
              # instantiate, without depending on — and so building — any of them.
              eval-only-kernels = pkgs.runCommand "nixgen-eval-only-kernels" {
                drvPaths = builtins.unsafeDiscardStringContext (
                  builtins.concatStringsSep "\n" (map (drv: drv.drvPath) evalOnlyVariants)
                );
              } "printf '%s\\n' \"$drvPaths\" > $out";
            }
        )
      );

      # The repository's CI: one job per (example, system) building that example's bundle.
      githubActions.matrix.include =
        let
          runners = fromJSON (readFile ./nix/data/ci-runners.json);
        in
        concatMap (
          system:
          map (example: {
            name = "${example.name} ${system}";
            inherit system;
            runner = runners.${system};
            attr = "packages.${system}.${example.name}";
          }) (examplesOn system buildable)
        ) systems;
    };
}
