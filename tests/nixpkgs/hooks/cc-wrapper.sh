#!@shell@
# stub-nixpkgs cc-wrapper for @prog@ (stands in for pkgs/build-support/cc-wrapper): adds
# NIX_CFLAGS_COMPILE to every call and NIX_CFLAGS_LINK/NIX_LDFLAGS when linking, and maps
# the build directory to /build (the real sandbox path) so outputs do not depend on where
# Nix ran the build.
extra=()
if [ -n "${NIX_BUILD_TOP:-}" ] && [ "$NIX_BUILD_TOP" != /build ]; then
    extra+=("-ffile-prefix-map=$NIX_BUILD_TOP=/build")
fi
link=1
for a in "$@"; do
    case "$a" in
        -c | -S | -E | -M | -MM | --version | -v | -dumpversion | -dumpfullversion | -dumpmachine | -print-*) link= ;;
    esac
done
ldflags=()
if [ -n "$link" ]; then
    for f in ${NIX_LDFLAGS:-}; do
        case "$f" in
            -L* | -l*) ldflags+=("$f") ;;
            *) ldflags+=("-Wl,$f") ;;
        esac
    done
    # shellcheck disable=SC2206
    ldflags+=(${NIX_CFLAGS_LINK:-})
fi
# shellcheck disable=SC2086
exec "@real@" "${extra[@]}" ${NIX_CFLAGS_COMPILE:-} "$@" "${ldflags[@]}"
