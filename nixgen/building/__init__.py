"""Building: running Nix, reading its log, git visibility, labels. May import: core to writing."""
