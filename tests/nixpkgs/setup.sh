# stub-nixpkgs $stdenv/setup: a small stand-in for pkgs/stdenv/generic/setup.sh, sourced by
# ./builder.sh (the default builder, like default-builder.sh) or by a custom builder.
#
# It keeps the parts of the real stdenv that generated derivations rely on:
#   - structured attrs (.attrs.sh) or plain environment variables,
#   - dependencies: nativeBuildInputs/*/bin on PATH, buildInputs/*/{include,lib} on
#     CPATH/LIBRARY_PATH (the real cc-wrapper uses NIX_CFLAGS_COMPILE/NIX_LDFLAGS instead),
#     nix-support/propagated-*build-inputs and nix-support/setup-hook of every dependency,
#   - the phases unpack, patch, configure, build, check, install, fixup, installCheck with
#     `runHook pre<Phase>/post<Phase>`, overridable phase strings, dont*/do* switches,
#   - helpers: runHook, concatTo, appendToVar, concatStringsSep, stripHash, substitute(InPlace),
#     addEnvHooks, echoCmd, getAllOutputNames.
# Not done: stripping, patchelf, patchShebangs, multiple-output moves, cross compilation.
__nixpkgs_setup_set_original=$-
set -eu
set -o pipefail

# -- structured attrs (Nix writes .attrs.sh into the build directory) --------------------
# Nix 2.8 sets NIX_ATTRS_SH_FILE to the path outside the sandbox, so prefer ./.attrs.sh.
if [ -e .attrs.sh ] || [ -e "${NIX_ATTRS_SH_FILE:-}" ]; then
    __structuredAttrs=1
    if [ -e .attrs.sh ]; then source ./.attrs.sh; else source "$NIX_ATTRS_SH_FILE"; fi
    for __o in "${!outputs[@]}"; do declare "$__o=${outputs[$__o]}"; export "${__o?}"; done
    if declare -p env >/dev/null 2>&1; then
        for __v in "${!env[@]}"; do export "$__v=${env[$__v]}"; done
    fi
    unset __o __v
else
    __structuredAttrs=
    : "${outputs:=out}"
fi

export NIX_BUILD_TOP="${NIX_BUILD_TOP:-$PWD}"
export TMPDIR="${TMPDIR:-$NIX_BUILD_TOP}" TMP="${TMP:-$NIX_BUILD_TOP}"
export HOME=/homeless-shelter
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-315532800}"
export TZ=UTC
export SHELL="${BASH:-/bin/sh}"

# -- helpers (same names and behaviour as setup.sh) -------------------------------------
echoCmd() { printf '%s:' "$1"; shift; printf ' %q' "$@"; echo; }

# concatTo TARGET VAR...: append the elements of each VAR (an array, or a string split on
# whitespace) to the array TARGET. `VAR=default` uses default when VAR is empty.
concatTo() {
    local -
    set -o noglob
    local -n __target="$1"; shift
    local arg name default type
    for arg in "$@"; do
        IFS="=" read -r name default <<<"$arg"
        if ! declare -p "$name" >/dev/null 2>&1; then
            [ -n "$default" ] && __target+=("$default")
            continue
        fi
        local -n __ref="$name"
        type="$(declare -p "$name")"
        if [[ -z "${__ref[*]}" && -n "$default" ]]; then
            __target+=("$default")
        elif [[ "${type#* }" == -a* ]]; then
            __target+=("${__ref[@]}")
        elif [[ "${type#* }" == -A* ]]; then
            echo "concatTo(): ERROR: trying to use concatTo on an associative array." >&2
            return 1
        else
            # shellcheck disable=SC2206
            __target+=(${__ref-})
        fi
        unset -n __ref
    done
}

# appendToVar NAME VALUE...: append to NAME, an array if it is one (or with structured
# attributes), else a space-separated string; NAME may be unset. Setup hooks use it to add
# phases whatever form a derivation gave the variable (`appendToVar preDistPhases hook`, as
# the kernels toolchain's hash-kernel-hook does).
appendToVar() {
    local -n __var="$1"
    local type array=
    [ -z "${__structuredAttrs:-}" ] || array=1
    if type="$(declare -p "$1" 2>/dev/null)"; then
        case "${type#* }" in
            -A*) echo "appendToVar(): ERROR: trying to use appendToVar on an associative array." >&2; return 1 ;;
            -a*) array=1 ;;
            *) array= ;;
        esac
    fi
    shift
    if [ -n "$array" ]; then
        __var+=("$@")
    else
        __var="${__var-} $*"
    fi
}

concatStringsSep() {
    local sep="$1" name="$2" type
    if ! declare -p "$name" >/dev/null 2>&1; then return; fi
    local -n __csRef="$name"
    type="$(declare -p "$name")"
    if [[ "${type#* }" == -a* ]]; then
        local IFS="$sep"; echo -n "${__csRef[*]}"
    else
        local -a __words
        # shellcheck disable=SC2206
        __words=(${__csRef-})
        local IFS="$sep"; echo -n "${__words[*]}"
    fi
}

stripHash() {
    local strippedName="${1##*/}"
    if [[ "$strippedName" =~ ^[a-z0-9]{32}- ]]; then
        echo "${strippedName:33}"
    else
        echo "$strippedName"
    fi
}

getAllOutputNames() {
    if [ -n "$__structuredAttrs" ]; then echo "${!outputs[*]}"; else echo "$outputs"; fi
}

_hasOutput() { local o; for o in $(getAllOutputNames); do [ "$o" = "$1" ] && return 0; done; return 1; }
for __var in outputDev outputBin outputLib outputInclude; do
    if [ -z "${!__var:-}" ]; then
        case "$__var" in
            outputDev | outputInclude) if _hasOutput dev; then declare "$__var=dev"; else declare "$__var=out"; fi ;;
            outputBin) if _hasOutput bin; then declare "$__var=bin"; else declare "$__var=out"; fi ;;
            outputLib) if _hasOutput lib; then declare "$__var=lib"; else declare "$__var=out"; fi ;;
        esac
    fi
done
unset __var
: "${prefix:=${!outputBin:-$out}}"

# runHook NAME: run the variable or function NAME (setup.sh's `_callImplicitHook`), then
# the hooks in the array NAMEHooks (functions or code), in that order.
runHook() {
    local hookName="$1"; shift
    local hooksSlice="${hookName%Hook}Hooks[@]"
    local hook
    if declare -F "$hookName" >/dev/null; then
        "$hookName" "$@"
    elif [ -n "${!hookName:-}" ]; then
        eval "${!hookName}"
    fi
    for hook in ${!hooksSlice+"${!hooksSlice}"}; do
        if declare -F "$hook" >/dev/null; then "$hook" "$@"; else eval "$hook"; fi
    done
    return 0
}

addEnvHooks() { shift; envHooks+=("$@"); }
addToSearchPath() { local -n __p="$1"; [ -d "$2" ] || return 0; __p="${__p:+$__p:}$2"; }

substitute() {
    local input="$1" output="$2"; shift 2
    if [ ! -f "$input" ]; then echo "substitute(): ERROR: file '$input' does not exist" >&2; return 1; fi
    local content; content="$(cat "$input"; printf x)"; content="${content%x}"
    while (($#)); do
        case "$1" in
            --replace | --replace-fail | --replace-warn | --replace-quiet)
                if [ "$1" = --replace-fail ] && [[ "$content" != *"$2"* ]]; then
                    echo "substitute(): ERROR: pattern $2 doesn't match anything in file '$input'" >&2
                    return 1
                fi
                content="${content//"$2"/"$3"}"; shift 3 ;;
            --subst-var) local v="$2"; content="${content//@$v@/${!v}}"; shift 2 ;;
            --subst-var-by) content="${content//@$2@/$3}"; shift 3 ;;
            *) echo "substitute(): ERROR: Invalid command line argument: $1" >&2; return 1 ;;
        esac
    done
    printf '%s' "$content" >"$output.tmp"
    if [ -e "$input" ] && [ -x "$input" ]; then chmod +x "$output.tmp"; fi
    mv "$output.tmp" "$output"
}
substituteInPlace() { local f="$1"; shift; substitute "$f" "$f" "$@"; }

# -- dependencies --------------------------------------------------------------------------
# setup hooks are sourced with these set, as in setup.sh (native build, no cross offsets)
hostOffset=0 targetOffset=1
declare -a envHooks=() __nativeDeps=() __hostDeps=()
declare -A __seenNative=() __seenHost=() __sourcedHooks=()

__addDep() { # __addDep native|host PATH
    local kind="$1" dep="$2" f p
    [ -n "$dep" ] || return 0
    if [ "$kind" = native ]; then
        [ -z "${__seenNative[$dep]:-}" ] || return 0
        __seenNative[$dep]=1; __nativeDeps+=("$dep")
    else
        [ -z "${__seenHost[$dep]:-}" ] || return 0
        __seenHost[$dep]=1; __hostDeps+=("$dep")
    fi
    for f in propagated-native-build-inputs propagated-build-inputs; do
        if [ -e "$dep/nix-support/$f" ]; then
            for p in $(<"$dep/nix-support/$f"); do
                if [ "$f" = propagated-native-build-inputs ]; then __addDep native "$p"; else __addDep "$kind" "$p"; fi
            done
        fi
    done
}

__nativeList=() __hostList=()
concatTo __nativeList stubCC depsBuildBuild nativeBuildInputs propagatedNativeBuildInputs
concatTo __hostList depsHostHost buildInputs propagatedBuildInputs
if [ -n "${doCheck:-}" ]; then concatTo __hostList checkInputs; concatTo __nativeList nativeCheckInputs; fi
if [ -n "${doInstallCheck:-}" ]; then concatTo __hostList installCheckInputs; concatTo __nativeList nativeInstallCheckInputs; fi
for __d in "${__nativeList[@]}"; do __addDep native "$__d"; done
for __d in "${__hostList[@]}"; do __addDep host "$__d"; done
if [ -z "${strictDeps:-}" ]; then
    # Without strictDeps the real stdenv also treats host deps as build tools and vice versa.
    for __d in "${__hostDeps[@]}"; do __addDep native "$__d"; done
    for __d in "${__nativeDeps[@]}"; do __addDep host "$__d"; done
fi

PATH=
for __d in "${__nativeDeps[@]}"; do addToSearchPath PATH "$__d/bin"; done
__initial=(); concatTo __initial stubInitialPath
for __d in "${__initial[@]}"; do addToSearchPath PATH "$__d/bin"; done
export PATH

export CPATH="${CPATH:-}" LIBRARY_PATH="${LIBRARY_PATH:-}"
for __d in "${__hostDeps[@]}"; do
    addToSearchPath CPATH "$__d/include"
    addToSearchPath LIBRARY_PATH "$__d/lib"
done
[ -n "$CPATH" ] || unset CPATH
[ -n "$LIBRARY_PATH" ] || unset LIBRARY_PATH

for __d in "${__nativeDeps[@]}" "${__hostDeps[@]}"; do
    if [ -f "$__d/nix-support/setup-hook" ] && [ -z "${__sourcedHooks[$__d]:-}" ]; then
        __sourcedHooks[$__d]=1
        # shellcheck disable=SC1091
        source "$__d/nix-support/setup-hook"
    fi
done
for __h in "${envHooks[@]}"; do
    for __d in "${__hostDeps[@]}"; do "$__h" "$__d"; done
done
unset __d __h __initial

NIX_BUILD_CORES="${NIX_BUILD_CORES:-1}"
if ((NIX_BUILD_CORES <= 0)); then NIX_BUILD_CORES="$(nproc 2>/dev/null || echo 1)"; fi
export NIX_BUILD_CORES

# reproducible-builds.sh sets a random seed from the output path; a non-sandboxed
# `nix-build --check` builds into a scratch output path, so the stub derives it from the
# derivation name instead.
export NIX_CFLAGS_COMPILE="${NIX_CFLAGS_COMPILE:-} -frandom-seed=$(printf '%s' "$name" | sha256sum | cut -c1-16)"

# -- phases ------------------------------------------------------------------------------
unpackFile() {
    local curSrc="$1"
    echo "unpacking source archive $curSrc"
    if [ -d "$curSrc" ]; then
        cp -r --preserve=mode,timestamps --reflink=auto -- "$curSrc" "$(stripHash "$curSrc")"
    else
        case "$curSrc" in
            *.tar | *.tar.* | *.tgz | *.tbz2 | *.tbz | *.txz)
                tar xf "$curSrc" --mode=+w --warning=no-timestamp ;;
            *) echo "do not know how to unpack source archive $curSrc"; return 1 ;;
        esac
    fi
}

unpackPhase() {
    runHook preUnpack
    local -a srcsArray=()
    if [ -z "${srcs:-}" ]; then
        if [ -z "${src:-}" ]; then
            echo 'variable $src or $srcs should point to the source'
            exit 1
        fi
        concatTo srcsArray src
    else
        concatTo srcsArray srcs
    fi
    local dirsBefore="" i
    for i in *; do [ -d "$i" ] && dirsBefore="$dirsBefore $i "; done
    for i in "${srcsArray[@]}"; do unpackFile "$i"; done
    : "${sourceRoot=}"
    if [ -n "${setSourceRoot:-}" ]; then
        eval "$setSourceRoot"
    elif [ -z "$sourceRoot" ]; then
        for i in *; do
            if [ -d "$i" ]; then
                case $dirsBefore in
                    *\ $i\ *) ;;
                    *)
                        if [ -n "$sourceRoot" ]; then echo "unpacker produced multiple directories"; exit 1; fi
                        sourceRoot="$i" ;;
                esac
            fi
        done
    fi
    if [ -z "$sourceRoot" ]; then echo "unpacker appears to have produced no directories"; exit 1; fi
    echo "source root is $sourceRoot"
    if [ -z "${dontMakeSourcesWritable:-}" ]; then chmod -R u+w -- "$sourceRoot"; fi
    runHook postUnpack
}

patchPhase() {
    runHook prePatch
    local -a patchesArray=() flagsArray=()
    concatTo patchesArray patches
    concatTo flagsArray patchFlags=-p1
    local i
    for i in "${patchesArray[@]}"; do
        echo "applying patch $i"
        patch "${flagsArray[@]}" <"$i"
    done
    runHook postPatch
}

configurePhase() {
    runHook preConfigure
    if [[ -z "${configureScript:-}" && -x ./configure ]]; then configureScript=./configure; fi
    if [ -n "${configureScript:-}" ]; then
        local -a flagsArray=()
        [ -n "${dontAddPrefix:-}" ] || flagsArray+=("${prefixKey:---prefix=}$prefix")
        concatTo flagsArray configureFlags configureFlagsArray
        echoCmd 'configure flags' "${flagsArray[@]}"
        # shellcheck disable=SC2086
        $configureScript "${flagsArray[@]}"
    else
        echo "no configure script, doing nothing"
    fi
    runHook postConfigure
}

__hasMakefile() { [[ -n "${makeFlags-}" || -n "${makefile:-}" || -e Makefile || -e makefile || -e GNUmakefile ]]; }

buildPhase() {
    runHook preBuild
    if ! __hasMakefile; then
        echo "no Makefile or custom buildPhase, doing nothing"
    else
        foundMakefile=1
        local -a flagsArray=(${enableParallelBuilding:+-j${NIX_BUILD_CORES}} SHELL="$SHELL")
        concatTo flagsArray makeFlags makeFlagsArray buildFlags buildFlagsArray
        echoCmd 'build flags' "${flagsArray[@]}"
        make ${makefile:+-f $makefile} "${flagsArray[@]}"
    fi
    runHook postBuild
}

checkPhase() {
    runHook preCheck
    if [[ -z "${foundMakefile:-}" ]]; then
        echo "no Makefile or custom checkPhase, doing nothing"
    else
        if [[ -z "${checkTarget:-}" ]]; then
            if make -n ${makefile:+-f $makefile} check >/dev/null 2>&1; then checkTarget=check
            elif make -n ${makefile:+-f $makefile} test >/dev/null 2>&1; then checkTarget=test; fi
        fi
        if [[ -z "${checkTarget:-}" ]]; then
            echo "no check/test target in ${makefile:-Makefile}, doing nothing"
        else
            local -a flagsArray=(${enableParallelChecking:+-j${NIX_BUILD_CORES}} SHELL="$SHELL")
            concatTo flagsArray makeFlags makeFlagsArray checkFlags=VERBOSE=y checkFlagsArray checkTarget
            make ${makefile:+-f $makefile} "${flagsArray[@]}"
        fi
    fi
    runHook postCheck
}

installPhase() {
    runHook preInstall
    if ! __hasMakefile; then
        echo "no Makefile or custom installPhase, doing nothing"
    else
        [ -z "$prefix" ] || mkdir -p "$prefix"
        local -a flagsArray=(${enableParallelInstalling:+-j${NIX_BUILD_CORES}} SHELL="$SHELL")
        concatTo flagsArray makeFlags makeFlagsArray installFlags installFlagsArray installTargets=install
        make ${makefile:+-f $makefile} "${flagsArray[@]}"
    fi
    runHook postInstall
}

# multiple-outputs.sh: moveToOutput PATTERN OUTPUT-PATH moves matching paths of every
# other output into OUTPUT-PATH.
moveToOutput() {
    local patt="$1" dstOut="$2" output srcOut srcPath dstPath
    for output in $(getAllOutputNames); do
        srcOut="${!output}"
        [ "$srcOut" != "$dstOut" ] || continue
        for srcPath in "$srcOut"/$patt; do
            [ -e "$srcPath" ] || [ -L "$srcPath" ] || continue
            dstPath="$dstOut${srcPath#"$srcOut"}"
            echo "moving $srcPath to $dstPath"
            if [ -d "$dstPath" ] && [ -d "$srcPath" ]; then
                rmdir "$srcPath" --ignore-fail-on-non-empty
                [ -d "$srcPath" ] && { cp -r "$srcPath"/. "$dstPath"/ && rm -rf "$srcPath"; }
            else
                mkdir -p "$(dirname "$dstPath")"
                mv "$srcPath" "$dstPath"
            fi
        done
    done
}

fixupPhase() {
    local output
    for output in $(getAllOutputNames); do
        if [ -e "${!output}" ]; then chmod -R u+w,u-s,g-s "${!output}"; fi
    done
    # multiple-outputs.sh (_multioutDevs, _multioutPropagateDev): headers and build
    # metadata go to the dev output, which propagates the other outputs.
    if [ "$outputDev" != out ]; then
        local p
        for p in include lib/pkgconfig share/pkgconfig lib/cmake share/aclocal; do
            moveToOutput "$p" "${!outputDev}"
        done
    fi
    runHook preFixup
    local devOut="${!outputDev}" words
    if [ -n "${propagatedBuildInputs:-}" ]; then
        mkdir -p "$devOut/nix-support"
        words=(); concatTo words propagatedBuildInputs
        printf '%s ' "${words[@]}" >"$devOut/nix-support/propagated-build-inputs"
    fi
    if [ -n "${propagatedNativeBuildInputs:-}" ]; then
        mkdir -p "$devOut/nix-support"
        words=(); concatTo words propagatedNativeBuildInputs
        printf '%s ' "${words[@]}" >"$devOut/nix-support/propagated-native-build-inputs"
    fi
    if [ -n "${setupHook:-}" ]; then
        mkdir -p "$devOut/nix-support"
        cp "$setupHook" "$devOut/nix-support/setup-hook"
    fi
    if [ "$outputDev" != out ]; then
        mkdir -p "$devOut/nix-support"
        for output in $(getAllOutputNames); do
            [ "$output" = "$outputDev" ] || [ ! -e "${!output}" ] || printf '%s ' "${!output}" >>"$devOut/nix-support/propagated-build-inputs"
        done
    fi
    runHook postFixup
}

installCheckPhase() {
    runHook preInstallCheck
    if [[ -n "${foundMakefile:-}" ]] && make -n ${makefile:+-f $makefile} "${installCheckTarget:-installcheck}" >/dev/null 2>&1; then
        make ${makefile:+-f $makefile} "${installCheckTarget:-installcheck}"
    else
        echo "no Makefile or installcheck target, doing nothing"
    fi
    runHook postInstallCheck
}

distPhase() { runHook preDist; runHook postDist; }

runPhase() {
    local curPhase="$*"
    case "$curPhase" in
        unpackPhase) [ -z "${dontUnpack:-}" ] || return 0 ;;
        patchPhase) [ -z "${dontPatch:-}" ] || return 0 ;;
        configurePhase) [ -z "${dontConfigure:-}" ] || return 0 ;;
        buildPhase) [ -z "${dontBuild:-}" ] || return 0 ;;
        checkPhase) [ -n "${doCheck:-}" ] || return 0 ;;
        installPhase) [ -z "${dontInstall:-}" ] || return 0 ;;
        fixupPhase) [ -z "${dontFixup:-}" ] || return 0 ;;
        installCheckPhase) [ -n "${doInstallCheck:-}" ] || return 0 ;;
        distPhase) [ -n "${doDist:-}" ] || return 0 ;;
    esac
    echo "Running phase: $curPhase"
    eval "${!curPhase:-$curPhase}"
    if [ "$curPhase" = unpackPhase ]; then
        [ -z "${sourceRoot:-}" ] || chmod +x -- "$sourceRoot"
        cd -- "${sourceRoot:-.}"
    fi
}

genericBuild() {
    if [ -f "${buildCommandPath:-}" ]; then
        # shellcheck disable=SC1090
        source "$buildCommandPath"
        return
    fi
    if [ -n "${buildCommand:-}" ]; then
        eval "$buildCommand"
        return
    fi
    local -a phasesArray=()
    if [ -n "${phases[*]:-}" ]; then
        concatTo phasesArray phases
    else
        concatTo phasesArray prePhases
        phasesArray+=(unpackPhase patchPhase)
        concatTo phasesArray preConfigurePhases
        phasesArray+=(configurePhase)
        concatTo phasesArray preBuildPhases
        phasesArray+=(buildPhase checkPhase)
        concatTo phasesArray preInstallPhases
        phasesArray+=(installPhase)
        concatTo phasesArray preFixupPhases
        phasesArray+=(fixupPhase installCheckPhase)
        concatTo phasesArray preDistPhases
        phasesArray+=(distPhase)
        concatTo phasesArray postPhases
    fi
    local p
    for p in "${phasesArray[@]}"; do runPhase "$p"; done
}

cd "$NIX_BUILD_TOP"

# As the real setup.sh ends: the caller's shell options back (`nix develop` sources this
# from its get-env.sh, which is not written for `set -u`).
[[ $__nixpkgs_setup_set_original == *e* ]] || set +e
[[ $__nixpkgs_setup_set_original == *u* ]] || set +u
unset -v __nixpkgs_setup_set_original
