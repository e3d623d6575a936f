# Stand-in (test only) for the kernels toolchain's `kernel-builder` package: huggingface/kernels
# nix-builder/pkgs/kernel-builder/default.nix at 8ac69fc542a4306eade0759ef7c45b4f2ae57df0 (the
# overlay's `kernel-builder = final.callPackage ./pkgs/kernel-builder { inherit
# builderProvenance; };`, a Rust program). Same package name, version scheme, argument and
# program (`bin/kernel-builder`); of its subcommands only `check-abi`, with the same command
# line, over the same checker library (`kernel_builder.py` here; the PyPI `kernel-abi-check`
# package, which must be installed for the host Python that tests/nixpkgs' python3 runs).
# Not here: the other subcommands, shell completions, and the package's two setup hooks
# (check-kernel-abi-hook.sh, check-kernel-build-hook.sh), which nixgen does not use: they run
# `kernel-builder check-abi "$out/"` on the anchor's output layout, `$out/<variant>/`, while a
# nixgen extension's `$out` is the variant directory itself (nix/support/abi-check-hook.sh).
{
  lib,
  stdenvNoCC,
  runtimeShell,
  python3,
  builderProvenance ? null,
}:
let
  host = if builtins.pathExists ../../../host.nix then import ../../../host.nix else { };

  # THE stand-in's manylinux policy, the one place it is stated. The real kernel-builder
  # checks against manylinux_2_28 (its `--manylinux` default), which its own compilers meet:
  # gcc toolsets linked against glibc 2.28. The stand-in's compilers are the host's (Debian 12
  # here: glibc 2.36, g++ 12), whose libstdc++ headers use `__libc_single_threaded`
  # (GLIBC_2.32) in every extension that touches a shared_ptr, so no extension built here can
  # meet manylinux_2_28. The stand-in's default is therefore the manylinux policy named after
  # the host's glibc (host.nix `abi.GLIBC`, read by tests/nixpkgs/make_host.py from the C
  # library itself): manylinux_2_36 on this machine. `--manylinux` still overrides it, as in
  # the real program.
  glibc = host.abi.GLIBC or "2.28";
  manylinux = "manylinux_${lib.replaceStrings [ "." ] [ "_" ] glibc}";

  torchInclude = if host ? torch.dir then "${host.torch.dir}/include" else "";
in
stdenvNoCC.mkDerivation {
  pname = "kernel-builder";
  # The real one reads the version from kernel-builder/Cargo.toml (0.17.0-dev0 at 8ac69fc5).
  version = "0.17.0-dev0";
  env = {
    inherit manylinux torchInclude;
    program = "${./kernel_builder.py}";
    shell = runtimeShell;
    python = python3.interpreter;
    provenance = if builderProvenance == null then "" else builderProvenance.sha;
  };
  buildCommand = ''
    if ! "$python" -c 'import kernel_abi_check' 2>/dev/null; then
      echo "kernel-builder stand-in: the host Python ($python) has no kernel-abi-check package (pip install kernel-abi-check==0.14.1)" >&2
      exit 1
    fi
    mkdir -p $out/bin $out/share/kernel-builder
    cp "$program" $out/share/kernel-builder/kernel_builder.py
    {
      printf '#!%s\n' "$shell"
      printf 'export KERNEL_BUILDER_MANYLINUX=%s\n' "$manylinux"
      if [ -n "$torchInclude" ]; then
        printf 'export KERNEL_BUILDER_TORCH_INCLUDE="''${KERNEL_BUILDER_TORCH_INCLUDE:-%s}"\n' "$torchInclude"
      fi
      printf 'exec %s %s "$@"\n' "$python" "$out/share/kernel-builder/kernel_builder.py"
    } > $out/bin/kernel-builder
    chmod +x $out/bin/kernel-builder
  '';
  meta = {
    description = "kernel-builder stand-in: `check-abi` over the PyPI kernel-abi-check package";
    license = lib.licenses.asl20;
    mainProgram = "kernel-builder";
    platforms = lib.platforms.linux ++ lib.platforms.darwin;
  };
}
