# Stand-in for pkgs/by-name/ni/ninja/setup-hook.sh.

ninjaBuildPhase() {
    runHook preBuild
    local buildCores=1
    if [ "${enableParallelBuilding-1}" ]; then buildCores="$NIX_BUILD_CORES"; fi
    local flagsArray=(-j"$buildCores")
    concatTo flagsArray ninjaFlags ninjaFlagsArray
    echoCmd 'build flags' "${flagsArray[@]}"
    TERM=dumb ninja "${flagsArray[@]}"
    runHook postBuild
}

ninjaCheckPhase() {
    runHook preCheck
    if [ -z "${checkTarget:-}" ]; then
        if ninja -t query test >/dev/null 2>&1; then checkTarget="test"; fi
    fi
    if [ -z "${checkTarget:-}" ]; then
        echo "no test target found in ninja, doing nothing"
    else
        local flagsArray=(-j"$NIX_BUILD_CORES")
        concatTo flagsArray ninjaFlags ninjaFlagsArray checkTarget
        TERM=dumb ninja "${flagsArray[@]}"
    fi
    runHook postCheck
}

ninjaInstallPhase() {
    runHook preInstall
    local flagsArray=(-j"$NIX_BUILD_CORES")
    concatTo flagsArray ninjaFlags ninjaFlagsArray installTargets=install
    TERM=dumb ninja "${flagsArray[@]}"
    runHook postInstall
}

if [ -z "${dontUseNinjaBuild-}" ] && [ -z "${buildPhase-}" ]; then buildPhase=ninjaBuildPhase; fi
if [ -z "${dontUseNinjaCheck-}" ] && [ -z "${checkPhase-}" ]; then checkPhase=ninjaCheckPhase; fi
if [ -z "${dontUseNinjaInstall-}" ] && [ -z "${installPhase-}" ]; then installPhase=ninjaInstallPhase; fi
