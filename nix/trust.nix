/**
  What makes a built variant one the `kernels` client trusts, done inside every variant's
  build (the extension, `extension.mkExtension`, and the pure-Python variant,
  `kernel.noarch`), so `nix build --rebuild` checks it bit for bit:

  - the digest: `metadata.json`'s `digest` (the client's `Digest.hash_variant` rule:
    support/digest.py, run by the build's own Python), which the client checks on every load
    since 0.18.3;
  - the load check: the variant loaded by the client (`kernels.get_local_kernel`), as the
    kernels toolchain loads its builds (nix-builder/pkgs/get-kernel-check), where the build
    machine can load it (`loadable`), and the client's checks that need no device everywhere
    (support/load_check.py);
  - `symbols.json`: the kernel's public functions and layers, written by the load check
    before the final digest (so the digest covers it), read by `kernels describe-api`.

  One setup hook does all three (support/variant-check-hook.sh), in `preDistPhases` as the
  toolchain's hash-kernel-hook; each toolchain makes it (`toolchains.<backend>.variantCheck`)
  with the variant's check Python (`checkPython`). The client is the one the kernels toolchain
  gives its Python (`python3.pkgs.kernels`: nix-builder/pkgs/python-modules/kernels, the
  client of the toolchain's own revision). `nixgen.provenance.stamp`, which rewrites
  `metadata.json` after the build, writes the digest again with the same program.
*/
let
  inherit (builtins) filter;
in
rec {
  /**
    Whether the build machine can load `variant` with the client inside its build, and if
    not, why: `{ load :: Bool, reason :: String | null }`.

    Loaded: CPU variants of a compiled framework without kernel dependencies. Not loaded
    (checked without a device, support/load_check.py): a variant of another backend (its
    build has no GPU, and a Metal or XPU variant's framework needs its device's runtime), and
    a variant with `kernel-depends` (the client would download those kernels from the Hub,
    which a build cannot reach; nixgen has no lock of them to fetch ahead). A pure-Python
    variant (`torch-noarch`) is not checked by the client at all: its package set names no
    torch (`variant.torch` is null), and the toolchain's client depends on one; its digest is
    written all the same (`noClient`).

    # Examples

    ```nix
    loadable { variant = { backend = "cpu"; framework = "torch"; }; project = { kernelDepends = { cpu = [ ]; }; }; }
    => { load = true; reason = null; }
    ```
  */
  loadable =
    { variant, project }:
    let
      kernelDepends = project.kernelDepends.${variant.backend};
    in
    if variant.framework == "torch-noarch" then
      {
        load = false;
        reason = noClient;
      }
    else if variant.backend != "cpu" then
      {
        load = false;
        reason = "a ${variant.backend} variant; only CPU variants are loaded in their builds, which have no ${variant.backend} device";
      }
    else if kernelDepends != [ ] then
      {
        load = false;
        reason = "it depends on other kernels (kernel-depends), which the client would download from the Hub";
      }
    else
      {
        load = true;
        reason = null;
      };

  /**
    Why a pure-Python variant is not checked by the client in its build.
  */
  noClient = "a pure-Python variant; its package set has no torch (it names none), which the kernels client needs, so only its digest is written";

  /**
    The Python the client checks a variant with: `python3` with the client
    (`python3.pkgs.kernels`), what `packages` picks (the variant's framework: its torch or
    tvm-ffi) and the project's Python dependencies for the variant's backend that the
    package set has (as the toolchain's check takes them: nix-builder/deps.nix).

    # Type

    ```
    checkPython :: { python3, variant, project, packages :: PythonPackages -> [ Derivation ] } -> Derivation
    ```
  */
  checkPython =
    {
      python3,
      variant,
      project,
      packages ? ps: [ ],
    }:
    let
      names = project.pythonDepends.${variant.backend};
    in
    python3.withPackages (
      ps:
      packages ps
      ++ [
        (ps.kernels
          or (throw "nixgen: python3.pkgs has no `kernels` (the client that checks each variant); it comes from the kernels toolchain's overlay (the `kernel-builder` flake input)")
        )
      ]
      ++ map (name: ps.${name}) (filter (name: ps ? ${name}) names)
    );

  /**
    The variant check hook (support/variant-check-hook.sh) of a package set, with the check
    Python `python` (`checkPython`; null: no client check, the digest only); the digest is
    computed with the package set's build Python. `toolchains.<backend>.variantCheck` is
    this with the toolchain's package set.
  */
  hook =
    pkgs: python:
    pkgs.makeSetupHook {
      name = "nixgen-variant-check-hook";
      substitutions = {
        python = pkgs.buildPackages.python3.interpreter;
        digest = "${./support/digest.py}";
        checkPython = if python == null then "" else "${python}/bin/python3";
        checker = if python == null then "" else "${./support/load_check.py}";
      };
    } ./support/variant-check-hook.sh;

  /**
    The attributes the hook reads, for a variant's derivation (its `env`):
    `nixgenVariantName`, and `doLoadCheck` (or `nixgenNoLoadReason`) from `loadable`.
    `env.doLoadCheck = "";` in an `overrideAttrs` skips the load (the digest stays).
  */
  env =
    args@{ variant, project }:
    let
      can = loadable args;
    in
    {
      nixgenVariantName = variant.name;
      doLoadCheck = if can.load then "1" else "";
    }
    // (if can.load then { } else { nixgenNoLoadReason = can.reason; });

  /**
    The digest program (support/digest.py), for `provenance.stamp`: `python3 digest.py write
    DIR --metadata FILE` writes FILE's metadata with DIR's digest to DIR/metadata.json.
  */
  digestProgram = ./support/digest.py;
}
