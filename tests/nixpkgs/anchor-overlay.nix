# Stand-ins for the C++ dependencies the anchor (huggingface/kernels nix-builder) adds in its
# overlay: cutlass_2_10 … cutlass_4_5 and sycl-tla (`depends` names of build.toml; the anchor
# maps sycl_tla to torch.xpuPackages.sycl-tla, also provided in oneapi.nix).
# Stand-in: header-only packages whose include/ is EMPTY (include/cutlass/ or
# include/cutlass/ + include/cute/ exist but hold no headers); they build instantly, so a
# kernel that really includes CUTLASS headers fails to compile here. Each is made with
# callPackage, so `.override { stdenv = …; }` works like in the anchor.
{
  lib,
  final,
  ...
}:
let
  mkHeaderOnly =
    pname: version: dirs:
    final.callPackage (
      { stdenv }:
      stdenv.mkDerivation (finalAttrs: {
        inherit pname version;
        dontUnpack = true;
        installPhase = ''
          runHook preInstall
          mkdir -p $out/nix-support ${lib.concatMapStringsSep " " (d: "$out/include/${d}") dirs}
          echo "empty stand-in for ${pname} ${version} (stub nixpkgs)" > $out/nix-support/stub-note
          runHook postInstall
        '';
        passthru.dev = finalAttrs.finalPackage;
        meta = {
          description = "stub-nixpkgs: empty header-only stand-in for ${pname} ${version}";
          license = lib.licenses.bsd3;
          platforms = lib.platforms.all;
        };
      })
    ) { };
  cutlass = version: mkHeaderOnly "cutlass" version [
    "cutlass"
    "cute"
  ];
in
{
  cutlass_2_10 = cutlass "2.10.0";
  cutlass_3_5 = cutlass "3.5.1";
  cutlass_3_6 = cutlass "3.6.0";
  cutlass_3_8 = cutlass "3.8.0";
  cutlass_3_9 = cutlass "3.9.2";
  cutlass_4_0 = cutlass "4.0.0";
  cutlass_4_4 = cutlass "4.4.0";
  cutlass_4_5 = cutlass "4.5.0";
  sycl-tla = mkHeaderOnly "sycl-tla" "0.5" [
    "cutlass"
    "cute"
  ];
}
