"""Rendering: the plan laid out as Nix text, in memory. May import: core to planning."""
