"""Checking: cross-field and file rules; one project read and checked. May import: core, reading."""
