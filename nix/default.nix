/**
  nixgen's static Nix library.

  Generated kernel projects call it from their `nix/default.nix`; it is copied into each
  generated tree (`nix/lib/`), so a project always uses the library of the nixgen version
  that rendered it. Everything here is plain Nix: functions that need nixpkgs take `lib`
  or a package set as an argument, and listing variants never imports nixpkgs.

  Modules: `versions`, `variants`, `cuda`, `shell`, `sources`, `compile`, `kernel`,
  `extension`, `torch`, `tvmFfi`, `toolchains`, `rust`,
  `project`, `flake`.
*/
let
  nixgen = {
    versions = import ./versions.nix;
    variants = import ./variants.nix;
    cuda = import ./cuda.nix;
    shell = import ./shell.nix;
    sources = import ./sources.nix;
    compile = import ./compile.nix { inherit (nixgen) shell cuda sources; };
    kernel = import ./kernel.nix { inherit (nixgen) compile cuda sources; };
    extension = import ./extension.nix {
      inherit (nixgen)
        shell
        compile
        kernel
        sources
        torch
        tvmFfi
        ;
    };
    torch = import ./torch.nix;
    tvmFfi = import ./tvm-ffi.nix;
    toolchains = import ./toolchains.nix;
    rust = import ./rust.nix { inherit (nixgen) shell cuda; };
    project = import ./project.nix { inherit nixgen; };
    flake = import ./flake.nix { inherit nixgen; };
  };
in
nixgen
