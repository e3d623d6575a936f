#!/usr/bin/env bash
# Re-lock the development and test environment (requirements/README.md says when and why).
#
#   scripts/lock.sh            # resolve requirements/dev.in and the client versions anew
#
# Writes requirements/dev.txt (every package the suite and CI install, with sha256 hashes) and
# requirements/kernels-<version>.txt (each older `kernels` client of the compatibility tier,
# tests/test_client_versions.py). Needs uv (`pip install uv`). Resolves for CPython 3.11 on
# manylinux_2_28 x86_64, with this machine's wheel directory as a find-links source (torch's
# CPU build lies there; elsewhere PyTorch's CPU index has the same file).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
common=(--generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28 --quiet)
# torch's CPU build: this machine's wheel directory where it has one, else PyTorch's CPU index.
if [[ -d /opt/wheels ]]; then
  links=(--find-links /opt/wheels)
else
  links=(--extra-index-url https://download.pytorch.org/whl/cpu --index-strategy unsafe-best-match)
fi
uv pip compile requirements/dev.in "${common[@]}" "${links[@]}" --no-emit-package nixgen \
  --custom-compile-command scripts/lock.sh -o requirements/dev.txt
# The older clients nixgen supports; the newest is dev.txt's. Each is installed on its own
# (no dependencies: it shares torch and the Hub client with the main environment).
for version in $(sed -n 's/^# kernels-clients *= *//p' requirements/dev.in); do
  printf 'kernels==%s\n' "$version" |
    uv pip compile - "${common[@]}" --no-deps --custom-compile-command scripts/lock.sh \
      -o "requirements/kernels-$version.txt"
done
