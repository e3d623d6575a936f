# Stand-in for pkgs/by-name/cm/cmake/setup-hook.sh (the parts generated code relies on):
# configure out of tree in $cmakeBuildDir with the install dirs, build type and compilers
# the real hook passes, CMAKE_PREFIX_PATH from the dependencies, and Ninja when present.

addCMakeParams() {
    addToSearchPath CMAKE_PREFIX_PATH "$1"
    export CMAKE_PREFIX_PATH
}
addEnvHooks "$targetOffset" addCMakeParams

cmakeConfigurePhase() {
    runHook preConfigure
    : "${cmakeBuildDir:=build}"
    export CTEST_OUTPUT_ON_FAILURE=1
    if [ -z "${dontUseCmakeBuildDir-}" ]; then
        mkdir -p "$cmakeBuildDir"
        cd "$cmakeBuildDir"
        : "${cmakeDir:=..}"
    else
        : "${cmakeDir:=.}"
    fi
    local flagsArray=(
        "-DCMAKE_INSTALL_PREFIX=$prefix"
        "-DCMAKE_BUILD_TYPE=${cmakeBuildType:-Release}"
        "-DCMAKE_INSTALL_LIBDIR=lib"
        "-DCMAKE_INSTALL_INCLUDEDIR=include"
        "-DCMAKE_INSTALL_BINDIR=bin"
        "-DCMAKE_SKIP_BUILD_RPATH=ON"
        "-DCMAKE_EXPORT_NO_PACKAGE_REGISTRY=ON"
        "-DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF"
    )
    if [ -n "${CC:-}" ]; then flagsArray+=("-DCMAKE_C_COMPILER=$CC"); fi
    if [ -n "${CXX:-}" ]; then flagsArray+=("-DCMAKE_CXX_COMPILER=$CXX"); fi
    if command -v ninja >/dev/null && [ -z "${dontUseNinjaBuild-}" ]; then flagsArray+=(-GNinja); fi
    concatTo flagsArray cmakeFlags cmakeFlagsArray
    echoCmd 'cmake flags' "${flagsArray[@]}"
    cmake "$cmakeDir" "${flagsArray[@]}"
    if ! [[ -v enableParallelBuilding ]]; then
        enableParallelBuilding=1
    fi
    runHook postConfigure
}

if [ -z "${dontUseCmakeConfigure-}" ] && [ -z "${configurePhase-}" ]; then
    configurePhase=cmakeConfigurePhase
fi
