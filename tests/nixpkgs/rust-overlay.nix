# `rust-bin` of oxalica/rust-overlay (an overlay of the anchor's build sets: huggingface/kernels
# flake input `rust-overlay`, nix-builder/lib/build-sets.nix overlays = [ overlay rust-overlay ]),
# and the libraries the cuda-oxide codegen backend links (nixpkgs pkgs/by-name/li/libffi,
# pkgs/development/libraries/libxml2, pkgs/by-name/zs/zstd, pkgs/development/libraries/zlib).
#
# Copies: rust-overlay lib/rust-bin.nix `fromRustupToolchainFile` (reads the TOML file, takes
# its `[toolchain]` table, requires `channel`; the same messages).
# Stand-ins: a named toolchain (a nightly) and these libraries are not on this machine and
# would need the network, so they evaluate and fail when built, saying so.
{
  lib,
  final,
  ...
}:
let
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
  libffi = unavailable "libffi" "3.4.8" "the library";
  libxml2 = unavailable "libxml2" "2.14.5" "the library";
  zstd = unavailable "zstd" "1.5.7" "the library";
  zlib = unavailable "zlib" "1.3.1" "the library";
}
