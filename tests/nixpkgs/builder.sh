# The default builder of the stub's stdenv.mkDerivation, as pkgs/stdenv/generic/default-builder.sh:
# with structured attrs the variables (including $stdenv) come from .attrs.sh; then load the
# stub's setup (./setup.sh, as $stdenv/setup) and run the phases.
# shellcheck disable=SC1091
# (Nix 2.8 sets NIX_ATTRS_SH_FILE to the path outside the sandbox, so prefer ./.attrs.sh.)
if [ -f .attrs.sh ]; then
    . ./.attrs.sh
elif [ -f "${NIX_ATTRS_SH_FILE:-}" ]; then
    . "$NIX_ATTRS_SH_FILE"
fi
source "$stdenv/setup"
genericBuild
