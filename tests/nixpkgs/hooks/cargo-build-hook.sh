# Stand-in for pkgs/build-support/rust/hooks/cargo-build-hook.sh (same flags, same order).

cargoBuildHook() {
    echo "Executing cargoBuildHook"
    runHook preBuild
    export "CARGO_PROFILE_${cargoBuildType@U}_STRIP"=false
    if [ -n "${buildAndTestSubdir-}" ]; then
        CARGO_TARGET_DIR="$(pwd)/target"
        export CARGO_TARGET_DIR
        pushd "${buildAndTestSubdir}"
    fi
    local flagsArray=(
        "-j" "$NIX_BUILD_CORES"
        "--target" "@rustcTargetSpec@"
        "--offline"
    )
    if [ "${cargoBuildType:-release}" != "debug" ]; then
        flagsArray+=("--profile" "${cargoBuildType:-release}")
    fi
    if [ -n "${cargoBuildNoDefaultFeatures-}" ]; then
        flagsArray+=("--no-default-features")
    fi
    if [ -n "${cargoBuildFeatures-}" ]; then
        flagsArray+=("--features=$(concatStringsSep "," cargoBuildFeatures)")
    fi
    concatTo flagsArray cargoBuildFlags
    echoCmd 'cargoBuildHook flags' "${flagsArray[@]}"
    cargo build "${flagsArray[@]}"
    if [ -n "${buildAndTestSubdir-}" ]; then
        popd
    fi
    runHook postBuild
    echo "Finished cargoBuildHook"
}

if [ -z "${dontCargoBuild-}" ] && [ -z "${buildPhase-}" ]; then
    buildPhase=cargoBuildHook
fi
