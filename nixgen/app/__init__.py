"""Application: the use cases (render, migrate, scaffold, settings). May import: core to writing."""
