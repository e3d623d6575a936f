# nixgen's ABI check (nix/toolchains.nix `abiCheck`), run after the install as the kernels
# toolchain's check-kernel-abi-hook.sh runs (at installCheck, when `doAbiCheck` is set, with
# `torchStableAbiVersion` for a variant built against the torch stable ABI):
#
# 1. the toolchain's `kernel-builder check-abi [--torch-stable-abi=V] DIR` (manylinux,
#    Python abi3, the torch stable ABI, the macOS minimum version). It looks for build
#    variants, directories with a metadata.json, inside DIR (the anchor's `$out/<variant>/`
#    layout); a nixgen extension's `$out` is the variant directory itself, so DIR is a
#    directory holding a link to `$out`.
# 2. on Linux, nixgen's addition (nix/support/abi_check.py): the libraries the extension
#    needs, and undefined unversioned symbols that manylinux_2_28's glibc does not define.
#
# Both run and report; either failing fails the build. An empty `doAbiCheck` (`env.doAbiCheck
# = "";` in overrideAttrs) skips them.
nixgenAbiCheck() {
    if [ -z "${doAbiCheck:-}" ]; then
        echo "nixgen: skipping the ABI check (doAbiCheck is not set)"
        return 0
    fi
    local variants="$NIX_BUILD_TOP/.nixgen-abi-check" failed=
    rm -rf "$variants"
    mkdir -p "$variants"
    ln -s "$out" "$variants/${name:-extension}"
    echo "nixgen: checking the ABI of $out (kernel-builder check-abi${torchStableAbiVersion:+ --torch-stable-abi=$torchStableAbiVersion})"
    if [ -z "${torchStableAbiVersion:-}" ]; then
        @kernelBuilder@ check-abi "$variants" || failed=1
    else
        @kernelBuilder@ check-abi --torch-stable-abi="$torchStableAbiVersion" "$variants" || failed=1
    fi
    if [ -n "@policy@" ]; then
        @python@ @checker@ --policy @policy@ "$out" || failed=1
    fi
    rm -rf "$variants"
    if [ -n "$failed" ]; then
        echo "nixgen: the ABI check failed (above); \`env.doAbiCheck = \"\";\` skips it" >&2
        return 1
    fi
}
postInstallCheckHooks+=(nixgenAbiCheck)
