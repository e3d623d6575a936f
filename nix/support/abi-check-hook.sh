# nixgen's ABI check (nix/toolchains.nix): after the install phase, every shared object
# under $out must keep to the toolchain's binary-compatibility policy (nix/support/abi_check.py).
# Set `dontAbiCheck = true;` in a derivation to skip it.
nixgenAbiCheck() {
    if [ -n "${dontAbiCheck:-}" ]; then
        echo "nixgen: skipping the ABI check (dontAbiCheck is set)"
        return 0
    fi
    echo "nixgen: checking the ABI of $out against @policyName@"
    @python@ @checker@ --policy @policy@ "$out"
}
postInstallHooks+=(nixgenAbiCheck)
