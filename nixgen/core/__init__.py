"""Beneath all stages: problems, paths, data tables, the marker, Jinja. May import: no stage."""
