# Stand-in (test only) of the kernels toolchain flake, huggingface/kernels at
# 8ac69fc542a4306eade0759ef7c45b4f2ae57df0 (README.md). Generated flakes take it as input
# `kernel-builder`; tests run them with
#   --override-input nixpkgs path:<copy of tests/nixpkgs>
#   --override-input kernel-builder path:<copy of tests/kernel-builder>
# Same input name for nixpkgs (followed by the generated flake's), same overlay file
# (nix-builder/overlay.nix, taking `{ builderProvenance ? null }`), same
# `packages.<system>.torch.<variant>` output (the torch of each CPU build set). The anchor's
# other inputs (flake-utils, flake-compat, rust-overlay) are not declared: they would have
# to be fetched, and nothing here is fetched. nixgen applies `rust-overlay` when the
# toolchain has it (the real one does).
{
  description = "stand-in of the huggingface/kernels flake for the nixgen tests (not the real toolchain)";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/ec1a11210589d294f0ac99d3290a27e6c73dfa1d";

  outputs =
    { self, nixpkgs }:
    let
      inherit (nixpkgs) lib;
      overlay = import ./nix-builder/overlay.nix { };
      systems = [
        "x86_64-linux"
        "aarch64-linux"
        "aarch64-darwin"
      ];
      torchVersions = [
        "2.11"
        "2.12"
        "2.13"
      ];
      flatten = lib.replaceStrings [ "." ] [ "_" ];
      # As the anchor's nix-builder/lib/mk-build-set.nix, for the CPU backend.
      torchOf =
        system: version:
        (import nixpkgs {
          inherit system;
          config.allowUnfree = true;
          overlays = [
            overlay
            (final: prev: {
              pythonPackagesExtensions = prev.pythonPackagesExtensions ++ [
                (python-final: python-prev: { torch = python-final."torch-bin_${flatten version}"; })
              ];
            })
          ];
        }).python3.pkgs.torch;
      cpuName =
        system: version:
        "torch${lib.replaceStrings [ "." ] [ "" ] version}-${
          if lib.hasSuffix "darwin" system then "" else "cxx11-"
        }cpu-${system}";
    in
    {
      packages = lib.genAttrs systems (system: {
        torch = lib.listToAttrs (
          map (version: {
            name = cpuName system version;
            value = torchOf system version;
          }) torchVersions
        );
      });
    };
}
