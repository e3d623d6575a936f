# Builds $stdenv: a directory holding `setup` (../setup.sh).
# A script file, not `bash -c "… && cp …"`: bash would exec the last command, and Nix 2.8
# kills a builder whose process closes stdout before exiting (coreutils does) with SIGKILL.
set -e
"$hostTools/bin/mkdir" "$out"
"$hostTools/bin/cp" "$setupScript" "$out/setup"
