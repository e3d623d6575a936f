"""`nixgen schema`: the JSON Schema of an edition-6 build.toml, for editors."""

from __future__ import annotations

import click

from nixgen.cli import emit_json, handle_errors


@click.command()
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    hidden=True,
    help="Accepted for symmetry with the other read-only verbs; the output is always JSON.",
)
@handle_errors
def schema(as_json: bool) -> None:
    """Print the JSON Schema (Draft 2020-12) of an edition-6 build.toml.

    Derived from nixgen's model: it rejects what `nixgen validate` rejects, except the
    rules JSON Schema cannot express (listed in its description: files that must exist,
    version order, …). Save it and point your editor at it:

    \b
      nixgen schema > build-toml.schema.json
      # first line of build.toml (Even Better TOML / taplo):
      #:schema ./build-toml.schema.json
    """
    from nixgen import jsonschema

    emit_json(jsonschema.schema())


command = schema
