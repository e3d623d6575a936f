# Stand-in for pkgs/build-support/rust/hooks/cargo-check-hook.sh.

cargoCheckHook() {
    echo "Executing cargoCheckHook"
    runHook preCheck
    if [[ -n "${buildAndTestSubdir-}" ]]; then
        pushd "${buildAndTestSubdir}"
    fi
    local flagsArray=("-j" "$NIX_BUILD_CORES" "--target" "@rustcTargetSpec@" "--offline")
    if [ "${cargoCheckType:-release}" != "debug" ]; then
        flagsArray+=("--profile" "${cargoCheckType:-release}")
    fi
    if [ -n "${cargoCheckNoDefaultFeatures-}" ]; then
        flagsArray+=("--no-default-features")
    fi
    if [ -n "${cargoCheckFeatures-}" ]; then
        flagsArray+=("--features=$(concatStringsSep "," cargoCheckFeatures)")
    fi
    concatTo flagsArray cargoTestFlags
    local testFlags=()
    concatTo testFlags checkFlags checkFlagsArray
    if [ "${#testFlags[@]}" -gt 0 ]; then flagsArray+=("--" "${testFlags[@]}"); fi
    echoCmd 'cargoCheckHook flags' "${flagsArray[@]}"
    cargo test "${flagsArray[@]}"
    if [[ -n "${buildAndTestSubdir-}" ]]; then
        popd
    fi
    echo "Finished cargoCheckHook"
    runHook postCheck
}

if [ -z "${dontCargoCheck-}" ] && [ -z "${checkPhase-}" ]; then
    checkPhase=cargoCheckHook
fi
