# Stand-in (test only) for oxalica/rust-overlay's `overlays.default` (flake.nix beside this
# file), which the kernels toolchain's build sets apply right after its own overlay
# (huggingface/kernels flake input `rust-overlay`, nix-builder/lib/mk-build-set.nix
# `overlays = [ overlay rust-overlay … ]`). nixgen applies the toolchain flake's
# `rust-overlay` input the same way (nix/project.nix `toolchainOverlays`).
#
# Copies rust-overlay lib/rust-bin.nix `fromRustupToolchainFile` (reads the TOML file, takes
# its `[toolchain]` table, requires `channel`; the same messages). A named toolchain (a
# nightly) is not on this machine and would need the network: it evaluates and fails when
# built, saying so.
final: prev:
let
  inherit (prev) lib;
  unavailable =
    pname: version: what:
    final.stdenvNoCC.mkDerivation {
      inherit pname version;
      # rust-overlay's toolchains carry these for makeRustPlatform's buildRustPackage meta
      passthru = {
        targetPlatforms = lib.platforms.all;
        badTargetPlatforms = [ ];
      };
      buildCommand = ''
        echo ${lib.escapeShellArg "stub-nixpkgs: ${pname} ${version}: ${what} is not available offline"} >&2
        exit 1
      '';
      meta.description = "stub-nixpkgs stand-in for ${pname} (evaluation only)";
    };
  fromRustupToolchain =
    toolchain:
    if !(toolchain ? channel) then
      throw "rust-overlay: the `toolchain` table of rust-toolchain.toml has no `channel`"
    else
      unavailable "rust-toolchain" toolchain.channel "the Rust toolchain `${toolchain.channel}`${
        lib.optionalString (toolchain ? components) " with ${toString toolchain.components}"
      }";
in
{
  rust-bin = {
    inherit fromRustupToolchain;
    fromRustupToolchainFile =
      path:
      let
        parsed = builtins.fromTOML (builtins.readFile path);
      in
      if parsed ? toolchain then
        fromRustupToolchain parsed.toolchain
      else
        throw "rust-overlay: ${toString path} has no `[toolchain]` table (the legacy one-line format is not supported)";
  };
}
