# Stand-in for pkgs/build-support/rust/hooks/cargo-setup-hook.sh: copy the vendored
# dependencies next to the source, point cargo at them, and check that the source's
# Cargo.lock is the one the vendor directory was made from (same messages as the real hook).

cargoSetupPostUnpackHook() {
    echo "Executing cargoSetupPostUnpackHook"
    if [ -z "${cargoVendorDir-}" ]; then
        unpackFile "$cargoDeps"
        export cargoDepsCopy
        cargoDepsCopy="$(stripHash "$cargoDeps")"
    else
        cargoDepsCopy="$sourceRoot/${cargoRoot:+$cargoRoot/}${cargoVendorDir}"
    fi
    mkdir -p .cargo
    local config="$(pwd)/$cargoDepsCopy/.cargo/config.toml"
    if [[ -e $config ]]; then
        cat "$config" >>.cargo/config.toml
    fi
    # cargo may not write to $HOME (/homeless-shelter).
    export CARGO_HOME="$NIX_BUILD_TOP/.cargo-home"
    mkdir -p "$CARGO_HOME"
    echo "Finished cargoSetupPostUnpackHook"
}

cargoSetupPostPatchHook() {
    echo "Executing cargoSetupPostPatchHook"
    local cargoDepsLockfile="$NIX_BUILD_TOP/$cargoDepsCopy/Cargo.lock"
    local srcLockfile="$NIX_BUILD_TOP/$sourceRoot/${cargoRoot:+$cargoRoot/}/Cargo.lock"
    echo "Validating consistency between $srcLockfile and $cargoDepsLockfile"
    if ! diff "$srcLockfile" "$cargoDepsLockfile"; then
        if ! [ -e "$srcLockfile" ]; then
            echo "ERROR: Missing Cargo.lock from src. Expected to find it at: $srcLockfile"
            echo "Hint: You can use the cargoPatches attribute to add a Cargo.lock manually to the build."
            exit 1
        fi
        if ! [ -e "$cargoDepsLockfile" ]; then
            echo "ERROR: Missing lockfile from cargo vendor. Expected to find it at: $cargoDepsLockfile"
            exit 1
        fi
        echo
        echo "ERROR: cargoHash or cargoSha256 is out of date"
        echo
        echo "Cargo.lock is not the same in $cargoDepsCopy"
        echo
        exit 1
    fi
    unset cargoDepsCopy
    echo "Finished cargoSetupPostPatchHook"
}

if [ -z "${dontCargoSetupPostUnpack-}" ]; then
    postUnpackHooks+=(cargoSetupPostUnpackHook)
fi
if [ -z "${cargoVendorDir-}" ]; then
    postPatchHooks+=(cargoSetupPostPatchHook)
fi
