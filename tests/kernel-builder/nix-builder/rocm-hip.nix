# Stand-in (test only) for the HIP compiler of the kernels toolchain's ROCm package sets
# (huggingface/kernels nix-builder/pkgs/rocm-packages at 8ac69fc5): `clr` (joins.nix: the
# HIP runtime joined with hipcc, `bin/hipcc` wrapped to find ROCm's clang) and `hipcc`, which
# here wrap the machine's Debian hipcc (host.nix `hip`), as the CUDA stand-in wraps the
# machine's nvcc. overlay.nix applies this to each ROCm scope: `rocmHip <version> <scope>`
# (`scope.overrideScope`).
#
# What it stands in for, and what it cannot show: Debian bookworm's hipcc is ROCm 5.2
# (HIP 5.2, clang 15, HIP_PLATFORM=amd), the anchor's is ROCm 7.1/7.2 (its own clang,
# rebuilt against the manylinux glibc). So a HIP kernel here really compiles for each
# `--offload-arch` (code objects bundled in the host object, as ROCm 7 does) and the
# extension really links against libamdhip64, but only for targets clang 15 knows (gfx90a,
# gfx1030, gfx1100…; not gfx942 or gfx950), with ROCm 5.2's headers and runtime ABI
# (libamdhip64.so.5, not .so.7), and nothing runs: there is no AMD GPU. The header-only
# libraries every ROCm kernel takes (hipcub-devel, rocprim-devel, rocthrust-devel,
# rocwmma-devel, hipsparselt) are not in Debian bookworm: they are empty include
# directories, as CUTLASS is in this stand-in. Without host.nix `hip`, `clr` and `hipcc`
# fail to build, saying so.
{
  lib,
  final,
  host,
}:
rocmVersion: scope:
let
  hip = host.hip or null;
  reason = "no hipcc was found on this machine (host.nix hip = null; Debian: apt-get install hipcc)";

  # The HIP runtime and hipcc in one package, like the anchor's `clr` (the extension links
  # `-lamdhip64` from its lib/, kernels run its `bin/hipcc`).
  mkHip =
    pname:
    final.stdenvNoCC.mkDerivation {
      inherit pname;
      version = rocmVersion;
      env = {
        hipcc = if hip == null then "" else hip.hipcc;
        hipInclude = if hip == null then "" else hip.include;
        hipLib = if hip == null then "" else hip.lib;
        hipVersion = if hip == null then "" else hip.version;
        wrapperShell = final.runtimeShell;
      };
      buildCommand = ''
        if [ -z "$hipcc" ]; then
          echo "kernel-builder stand-in: ${pname}: ${reason}" >&2
          exit 1
        fi
        mkdir -p $out/bin $out/include $out/lib $out/nix-support
        printf '#!%s\nexport HIP_PLATFORM=amd\nexec %q "$@"\n' "$wrapperShell" "$hipcc" > $out/bin/hipcc
        chmod +x $out/bin/hipcc
        for d in hip hsa; do
          if [ -d "$hipInclude/$d" ]; then ln -s "$hipInclude/$d" $out/include/$d; fi
        done
        for f in "$hipLib"/libamdhip64.so*; do ln -s "$f" $out/lib/; done
        echo "stand-in: Debian's hipcc (HIP $hipVersion) for ROCm ${rocmVersion}" > $out/nix-support/stub-note
      '';
      meta = {
        description = "kernel-builder stand-in: ${pname} wrapping the machine's hipcc (ROCm 5.2)";
        license = lib.licenses.mit;
        platforms = [ "x86_64-linux" ];
      };
    };

  # Header-only ROCm libraries Debian lacks: empty include directories.
  mkEmptyHeaders =
    pname:
    final.stdenvNoCC.mkDerivation {
      inherit pname;
      version = rocmVersion;
      buildCommand = ''
        mkdir -p $out/include $out/nix-support
        echo "empty stand-in for ${pname} (not in Debian bookworm)" > $out/nix-support/stub-note
      '';
      meta = {
        description = "kernel-builder stand-in: empty header-only ${pname}";
        license = lib.licenses.mit;
        platforms = [ "x86_64-linux" ];
      };
    };
in
scope.overrideScope (
  self: super:
  {
    clr = mkHip "rocm-clr";
    hipcc = mkHip "hipcc";
  }
  // lib.genAttrs [
    "hipcub-devel"
    "hipsparselt"
    "rocprim-devel"
    "rocthrust-devel"
    "rocwmma-devel"
  ] mkEmptyHeaders
)
