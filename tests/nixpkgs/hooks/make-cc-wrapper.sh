# Builds stdenv.cc: wrapper scripts for the host C/C++ compiler (see cc-wrapper.sh), the
# host binutils as symlinks, and nix-support/setup-hook exporting CC and CXX.
set -e
if [ -z "$realCC" ] || [ -z "$realCXX" ]; then
    echo "stub-nixpkgs: $name: no host C/C++ compiler was found on this machine (host.nix cc = null); C/C++ builds are not possible here" >&2
    exit 1
fi
mkdir -p "$out/bin" "$out/nix-support"
wrap() { # wrap NAME REAL
    sed -e "s|@shell@|$shell|g" -e "s|@real@|$2|g" -e "s|@prog@|$1|g" "$wrapperTemplate" >"$out/bin/$1"
    chmod +x "$out/bin/$1"
}
wrap cc "$realCC"
wrap gcc "$realCC"
wrap c++ "$realCXX"
wrap g++ "$realCXX"
[ -z "$realCPP" ] || wrap cpp "$realCPP"
IFS=: read -r -a dirs <<<"$hostPath"
for t in $binutils; do
    for d in "${dirs[@]}"; do
        if [ -x "$d/$t" ]; then ln -s "$d/$t" "$out/bin/$t"; break; fi
    done
done
sed -e "s|@cc@|gcc|g" -e "s|@cxx@|g++|g" "$setupHookTemplate" >"$out/nix-support/setup-hook"
