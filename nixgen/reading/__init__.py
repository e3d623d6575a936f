"""Reading: build.toml to the edition-6 model (load, editions, upgrade). May import: core."""
