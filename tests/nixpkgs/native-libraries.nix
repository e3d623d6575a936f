# Libraries the cuda-oxide codegen backend links (real nixpkgs: pkgs/by-name/li/libffi,
# pkgs/development/libraries/libxml2, pkgs/by-name/zs/zstd, pkgs/development/libraries/zlib).
# Stand-ins: they are not on this machine and would need the network, so they evaluate and
# fail when built, saying so.
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
in
{
  libffi = unavailable "libffi" "3.4.8" "the library";
  libxml2 = unavailable "libxml2" "2.14.5" "the library";
  zstd = unavailable "zstd" "1.5.7" "the library";
  zlib = unavailable "zlib" "1.3.1" "the library";
}
