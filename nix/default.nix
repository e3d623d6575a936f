/**
  nixgen's static Nix library.

  Generated kernel projects call it from their `nix/default.nix`. By default it is copied
  into each generated tree (`nix/lib/`), so a project always uses the library of the nixgen
  version that rendered it; `nixgen render --library input:URL` takes it from the flake
  input `nixgen` instead (this repository's flake, `lib`), and `--library path:DIR` from a
  directory in place (the examples in this repository name `../../nix` in their
  nixgen.toml). The format check (`project.checkFormat`) makes a library of another format
  fail clearly. Everything here is plain Nix: functions that need nixpkgs take `lib` or a
  package set as an argument, and listing variants never imports nixpkgs. The string
  and list helpers are nixpkgs' (`lib.escapeShellArg`, `lib.hasSuffix`, `lib.unique`):
  `withLib lib` is the library with them, as `mkProject` makes it for each variant's
  package set.

  Modules: `versions`, `variants`, `cuda`, `sources`, `compile`, `kernel`,
  `extension`, `torch`, `tvmFfi`, `toolchains`, `rust`,
  `project`, `flake`, `provenance`, `trust`.
*/
let
  # The library with nixpkgs `lib` (string and list functions of lib/strings.nix and
  # lib/lists.nix) for the modules that build: a package set's `lib`, or an error saying
  # where one comes from for a function that needs it before there is one.
  make =
    lib:
    let
      nixgen = {
        versions = import ./versions.nix;
        variants = import ./variants.nix;
        cuda = import ./cuda.nix;
        sources = import ./sources.nix;
        compile = import ./compile.nix {
          inherit lib;
          inherit (nixgen) cuda sources;
        };
        kernel = import ./kernel.nix {
          inherit lib;
          inherit (nixgen)
            compile
            cuda
            sources
            rust
            torch
            tvmFfi
            extension
            toolchains
            trust
            ;
        };
        extension = import ./extension.nix {
          inherit lib;
          inherit (nixgen)
            compile
            kernel
            sources
            torch
            trust
            tvmFfi
            ;
        };
        torch = import ./torch.nix { inherit lib; };
        tvmFfi = import ./tvm-ffi.nix;
        toolchains = import ./toolchains.nix;
        trust = import ./trust.nix;
        rust = import ./rust.nix {
          inherit lib;
          inherit (nixgen)
            cuda
            sources
            compile
            ;
        };
        project = import ./project.nix { inherit nixgen; };
        flake = import ./flake.nix { inherit nixgen; };
        provenance = import ./provenance.nix { inherit (nixgen) extension trust; };

        /**
          The library whose building modules use `lib` (nixpkgs' `lib`, e.g. `pkgs.lib`):
          `mkProject` takes each variant's; call it to use `compile`, `kernel`,
          `extension` or `rust` on their own.

          # Type

          ```
          withLib :: Lib -> AttrSet
          ```
        */
        withLib = make;
      };
    in
    nixgen;
in
make (
  throw "nixgen: this library function needs nixpkgs `lib`; use `(import ./lib).withLib pkgs.lib` (a variant's package set gives it)"
)
