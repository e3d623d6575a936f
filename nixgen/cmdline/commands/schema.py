"""`nixgen schema`: the JSON Schema of an edition-6 build.toml, for editors."""

from __future__ import annotations

import click

from nixgen.cmdline.cli import emit_json, emit_result, handle_errors, json_option
from nixgen.rendering import jsonschema


@click.command()
@json_option
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

    (`nixgen init` writes both.) With --json, the schema is the `result` of nixgen's
    JSON envelope.
    """

    (emit_result if as_json else emit_json)(jsonschema.schema())


command = schema
