# The minimum Nix version real nixpkgs evaluates with: NixOS/nixpkgs lib/minver.nix, read at
# 40cc908fabc2e23730f0572b411471a16bd75f1a (search index id 12740533772; the pin ec1a1121 has
# at least this). Real nixpkgs' default.nix aborts on an older Nix; this stand-in (written on
# Nix 2.8, run on the suite's 2.18 or newer) does not, so it only records the value:
# docs/toolchain.md states it (tests/test_nixpkgs_names.py checks).
"2.18.0"
