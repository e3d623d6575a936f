# Darwin (evaluation only on aarch64-darwin): apple-sdk_14/_15/_26, apple-sdk (= apple-sdk_14,
# the nixpkgs default). metal-cpp is the kernels toolchain's (tests/kernel-builder), not
# nixpkgs'. Copies the attribute names of pkgs/by-name/ap/apple-sdk;
# meta.platforms = darwin, so using them from a Linux package set is refused like in nixpkgs.
# Stand-in: nothing here can be built on this Linux machine.
{
  lib,
  final,
  ...
}:
let
  inherit (final.__stub) mkUnavailable;
  mkSdk =
    version:
    mkUnavailable {
      pname = "apple-sdk";
      inherit version;
      reason = "the macOS SDK only exists on Darwin";
      meta = {
        platforms = lib.platforms.darwin;
        license = lib.licenses.apsl20;
      };
      passthru = {
        sdkroot = "/stub-apple-sdk-${version}/Platforms/MacOSX.platform/Developer/SDKs/MacOSX.sdk";
        inherit version;
      };
    };
in
{
  apple-sdk_14 = mkSdk "14.4";
  apple-sdk_15 = mkSdk "15.5";
  apple-sdk_26 = mkSdk "26.0";
  apple-sdk = final.apple-sdk_14;
  darwin = {
    apple_sdk = throw "darwin.apple_sdk has been removed from nixpkgs; use apple-sdk_* (stub mirrors nixpkgs 25.05+)";
    xcode = throw "stub-nixpkgs: darwin.xcode is not provided";
  };
  xcbuild = mkUnavailable {
    pname = "xcbuild";
    version = "0.1.1";
    reason = "xcbuild is a Darwin tool here";
    meta.platforms = lib.platforms.darwin;
  };
}
