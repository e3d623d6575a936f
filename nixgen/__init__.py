"""nixgen: typed build.toml for compute kernels, rendered to reproducible Nix."""

__version__ = "0.1.0"
