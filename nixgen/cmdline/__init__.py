"""The command line: the verbs, what they print, running Nix. May import: core to writing."""
