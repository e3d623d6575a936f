# Stand-in (test only) of the kernels toolchain flake, huggingface/kernels at
# 8ac69fc542a4306eade0759ef7c45b4f2ae57df0 (README.md). Generated flakes take it as input
# `kernel-builder`; tests run them with
#   --override-input nixpkgs path:<copy of tests/nixpkgs>
#   --override-input kernel-builder path:<copy of tests/kernel-builder>
# Same inputs as the real flake (nixpkgs, which the generated flake makes follow its own;
# flake-utils; flake-compat; rust-overlay following nixpkgs), each a stand-in flake in this
# directory (`path:./…`, resolved next to this file, so nothing is fetched); same overlay
# file (nix-builder/overlay.nix, taking `{ builderProvenance ? null }`); same
# `packages.<system>.torch.<variant>` output (the torch of each CPU build set). nixgen
# applies the `rust-overlay` input's `overlays.default` after the toolchain's overlay, as
# the real build sets do; tests/test_real_toolchain.py checks the inputs against the real
# flake.nix.
{
  description = "stand-in of the huggingface/kernels flake for the nixgen tests (not the real toolchain)";

  inputs = {
    flake-utils.url = "path:./flake-utils";
    nixpkgs.url = "github:NixOS/nixpkgs/ec1a11210589d294f0ac99d3290a27e6c73dfa1d";
    flake-compat.url = "path:./flake-compat";
    rust-overlay = {
      url = "path:./rust-overlay";
      inputs.nixpkgs.follows = "nixpkgs";
    };
  };

  outputs =
    {
      self,
      flake-compat,
      flake-utils,
      nixpkgs,
      rust-overlay,
    }:
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
            rust-overlay.overlays.default
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
