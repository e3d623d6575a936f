# nixgen's torch ops check (nix/toolchains.nix `opsCheck`), run after the unpack as the kernels
# toolchain's torch-ops-check-hook.sh runs (nix-builder/pkgs/torch-ops-check: a postUnpack
# hook, off when `dontCheckPythonOps` is set). It reads what it checks from the derivation's
# own attributes, so an `overrideAttrs` of the phases keeps it:
#
# - `torchOpsCheckDir`: the kernel's Python package directory, relative to the source root
#   (`torch-ext/<module>`); unset, or not in the source: nothing to check.
# - `dontCheckPythonOps`: set (`env.dontCheckPythonOps = "1";` in overrideAttrs): skipped.
#
# support/torch/ops_check.py fails the build on torch ops registered under a literal name
# instead of `add_op_namespace_prefix(...)`, naming each file and line.
nixgenTorchOpsCheck() {
    if [ -n "${dontCheckPythonOps:-}" ]; then
        echo "nixgen: skipping the torch ops check (dontCheckPythonOps is set)"
        return 0
    fi
    if [ -z "${torchOpsCheckDir:-}" ]; then
        return 0
    fi
    local dir="${sourceRoot:-.}/$torchOpsCheckDir"
    if [ ! -d "$dir" ]; then
        return 0
    fi
    echo "nixgen: checking the torch op registrations of $torchOpsCheckDir"
    @python@ @checker@ "$dir"
}
postUnpackHooks+=(nixgenTorchOpsCheck)
