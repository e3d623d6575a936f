"""The Jinja2 settings every nixgen template is rendered with.

An undefined name is an error (`StrictUndefined`), nothing is HTML-escaped, block tags
leave no blank lines behind, and a template's final newline stays; rendered text is made
canonical by `canonical`. Jinja2 is imported
only when an environment is made: most verbs never render a template.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2


def environment(loader: jinja2.BaseLoader, **options: Any) -> jinja2.Environment:  # noqa: TID251
    """A Jinja2 environment with nixgen's settings, reading templates through `loader`;
    `options` are further `jinja2.Environment` arguments (`finalize`, a bytecode cache)."""
    import jinja2

    return jinja2.Environment(  # noqa: TID251 (the one home of the settings)
        loader=loader,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        **options,
    )


def canonical(text: str) -> str:
    """Rendered text as canonical bytes are written: no trailing spaces or tabs on a line,
    exactly one final newline.

    Lines are split on ``"\\n"`` alone: `str.splitlines` also breaks at U+2028, U+0085,
    VT, FF, … which `nixgen.rendering.nixlit` writes raw inside string literals, and stripping
    there would eat string content."""
    lines = [line.rstrip(" \t") for line in text.split("\n")]
    return "\n".join(lines).rstrip("\n") + "\n"


def optional_cache(directory: str) -> jinja2.BytecodeCache:
    """Jinja2's bytecode cache in `directory`, as an optimisation only: a cache that
    cannot be read or written (a full disk, a read-only or vanished directory) is not
    used, and the templates are compiled afresh."""
    import jinja2

    class OptionalCache(jinja2.FileSystemBytecodeCache):
        def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            try:
                super().load_bytecode(bucket)
            except (OSError, EOFError, ValueError):
                bucket.reset()

        def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            with contextlib.suppress(OSError):
                super().dump_bytecode(bucket)

    return OptionalCache(directory)
