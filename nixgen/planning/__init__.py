"""Planning: the build variants and CI matrices of a project. May import: core to checking."""
