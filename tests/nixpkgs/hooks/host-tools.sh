# Builds stdenv's initial PATH (coreutils, findutils, sed, grep, awk, tar, make, patch, ...)
# as symlinks to the host tools named in $tools, searched in the host PATH. Tools the host
# lacks are skipped, as a real stdenv without them would not provide them either.
set -e
mkdir -p "$out/bin"
IFS=: read -r -a dirs <<<"$PATH"
for t in $tools; do
    for d in "${dirs[@]}"; do
        if [ -x "$d/$t" ] && [ ! -d "$d/$t" ]; then
            ln -s "$d/$t" "$out/bin/$t"
            break
        fi
    done
done
