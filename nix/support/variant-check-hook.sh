# nixgen's variant check (nix/trust.nix `hook`): the last step of every variant's build,
# appended to `preDistPhases` as the kernels toolchain appends its hash-kernel-hook (after
# the install and the installCheck phase, where its get-kernel-check and the ABI check run).
# It reads from the derivation:
#
# - `nixgenVariantName`: the variant's name (`torch213-cxx11-cpu-x86_64-linux`); `$out` is
#   shown to the client under it, so the client's messages name the variant;
# - `doLoadCheck`: set when the build machine can load the variant (`nixgen.trust.loadable`);
#   empty: the variant is checked without loading it, and `nixgenNoLoadReason` says why.
#
# A hook made without a check Python (a pure-Python variant: `nixgen.trust.noClient`) writes
# the digest only (steps 1 and 2).
#
# Steps, in order:
#
# 1. Python bytecode is removed from `$out` (as the toolchain's remove-bytecode-hook), and no
#    step writes any (PYTHONDONTWRITEBYTECODE);
# 2. the digest of `$out` goes into its metadata.json (support/digest.py, the build's Python),
#    so that the client's load below checks it;
# 3. with `doLoadCheck`: the client loads the variant (`kernels.get_local_kernel`) and the
#    kernel's public functions and layers are written to `$out/symbols.json`
#    (support/load_check.py --load); then the digest is written again, now covering it;
# 4. the client reads the final metadata.json and validates its digest against the files,
#    and every Python file compiles (support/load_check.py).
#
# Whatever the client refuses fails the build with its reason. The client runs offline
# (HF_HUB_OFFLINE) with a HOME of its own in the build directory.
nixgenVariantCheck() {
    local variant="${nixgenVariantName:-}" dir="$NIX_BUILD_TOP/.nixgen-variant-check"
    if [ -z "$variant" ]; then
        echo "nixgen: nixgenVariantName is not set: the variant check needs the variant's name" >&2
        return 1
    fi
    export PYTHONDONTWRITEBYTECODE=1
    find "$out" -type d -name __pycache__ -prune -exec rm -rf {} +
    @python@ @digest@ write "$out"
    if [ -z "@checkPython@" ]; then
        echo "nixgen: $variant is not checked by the kernels client in its build: ${nixgenNoLoadReason:-no client}"
        return 0
    fi
    rm -rf "$dir"
    mkdir -p "$dir/client-home"
    ln -s "$out" "$dir/$variant"
    if [ -n "${doLoadCheck:-}" ]; then
        echo "nixgen: loading $variant with the kernels client"
        _nixgenClient --load --symbols "$out/symbols.json" "$dir/$variant" || return 1
        find "$out" -type d -name __pycache__ -prune -exec rm -rf {} +
        @python@ @digest@ write "$out"
    else
        echo "nixgen: $variant is not loaded in its build: ${nixgenNoLoadReason:-doLoadCheck is empty}"
    fi
    _nixgenClient "$dir/$variant" || return 1
    rm -rf "$dir"
}

# The kernels client (support/load_check.py), offline, with a HOME of its own.
_nixgenClient() {
    if ! HOME="$NIX_BUILD_TOP/.nixgen-variant-check/client-home" HF_HUB_OFFLINE=1 @checkPython@ @checker@ "$@"; then
        echo "nixgen: the kernels client refuses ${nixgenVariantName} (above)" >&2
        return 1
    fi
}
appendToVar preDistPhases nixgenVariantCheck
