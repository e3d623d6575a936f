# Stand-in for pkgs/build-support/rust/hooks/cargo-install-hook.sh: executables to
# ${!outputBin}/bin, *.so/*.a/*.dylib to ${!outputLib}/lib.

cargoInstallPostBuildHook() {
    echo "Executing cargoInstallPostBuildHook"
    releaseDir=target/@targetSubdirectory@/$cargoBuildType
    tmpDir="${releaseDir}-tmp"
    mkdir -p "$tmpDir"
    cp -r "${releaseDir}"/* "$tmpDir"/
    bins=$(find "$tmpDir" -maxdepth 1 -type f -executable ! \( -regex ".*\.\(so.[0-9.]+\|so\|a\|dylib\)" \))
    echo "Finished cargoInstallPostBuildHook"
}

cargoInstallHook() {
    echo "Executing cargoInstallHook"
    runHook preInstall
    releaseDir=target/@targetSubdirectory@/$cargoBuildType
    tmpDir="${releaseDir}-tmp"
    mkdir -p "${!outputBin}/bin" "${!outputLib}/lib"
    if [ -n "$bins" ]; then xargs -r cp -t "${!outputBin}/bin" <<<"$bins"; fi
    find "$tmpDir" -maxdepth 1 -regex ".*\.\(so.[0-9.]+\|so\|a\|dylib\)" -print0 | xargs -r -0 cp -t "${!outputLib}/lib"
    rmdir --ignore-fail-on-non-empty "${!outputLib}/lib" "${!outputBin}/bin"
    runHook postInstall
    echo "Finished cargoInstallHook"
}

if [ -z "${dontCargoInstall-}" ] && [ -z "${installPhase-}" ]; then
    installPhase=cargoInstallHook
    postBuildHooks+=(cargoInstallPostBuildHook)
fi
