# Stand-in (test only) of the flake oxalica/rust-overlay, the kernels toolchain's input
# `rust-overlay` (huggingface/kernels flake.nix, locked to 20ee15370c9256669d66968b89ee20a4b0a4e673
# in its flake.lock). Same input (`nixpkgs`, which the toolchain makes follow its own) and
# the output nixgen reads, `overlays.default` (rust-bin; overlay.nix says what it models).
{
  description = "stand-in of oxalica/rust-overlay for the nixgen tests (not the real overlay)";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixpkgs-unstable";

  outputs =
    { self, nixpkgs }:
    {
      overlays.default = import ./overlay.nix;
    };
}
