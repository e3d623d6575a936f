"""Writing: the rendered tree put on disk atomically, or compared. May import: core to rendering."""
