"""The one sanitiser of text nixgen did not write (`nixgen.core.outside`) and the structure
that makes it the only way out: every terminal write goes through the console's sink, an
`Outside` value formats sanitised, and its raw value is never formatted."""

from __future__ import annotations

import ast
import io
import json

import pytest

from nixgen.core import console, outside
from nixgen.core.errors import error, render_problems
from nixgen.core.outside import Outside

from .conftest import REPO

HOSTILE = "a\x1b]0;title\x07b\x1b[2Jc\x9b31md\re\u202ef\x00g"


def test_an_outside_value_formats_escaped_and_keeps_its_raw_value() -> None:
    value = Outside(HOSTILE)
    assert value.raw == HOSTILE
    shown = f"{value}"
    assert shown == str(value) == "a\\x1b]0;title\\x07b\\x1b[2Jc\\x9b31md\\re\\u202ef\\x00g"
    assert f"[{value:>3}]".startswith("[a\\x1b")
    assert "\x1b" not in repr(value)
    assert value == Outside(HOSTILE) and len({value, Outside(HOSTILE)}) == 1


def test_a_log_keeps_its_lines_and_loses_its_escape_sequences() -> None:
    log = Outside("\x1b[31mred\x1b[0m\nnext\tline\x1b]0;t\x07\r", lines=True)
    assert str(log) == "red\nnext\tline"


def test_credentials_are_redacted_in_values_and_messages() -> None:
    outside.keep_secret("hf_abcdefghijkl")
    assert outside.shown("https://me:hf_xyz@hub.example/api") == "https://***@hub.example/api"
    assert outside.shown("token hf_abcdefghijkl here") == "token *** here"
    assert "hf_abcdefghijkl" not in error("bad hf_abcdefghijkl").render()
    outside.keep_secret("short")  # too short to be a credential: not registered
    assert outside.shown("a short word") == "a short word"


def test_the_console_sink_escapes_what_skipped_the_sanitiser(
    capsys: pytest.CaptureFixture[str],
) -> None:
    console.err(f"raw {HOSTILE}")
    console.out(f"raw {HOSTILE}")
    got = capsys.readouterr()
    for text in (got.err, got.out):
        assert "\x1b" not in text and "\x07" not in text and "\r" not in text
        assert "\u202e" not in text and "\x9b" not in text and "\x00" not in text
        assert text.endswith("\\x00g\n")


def test_the_sink_lets_the_consoles_own_colours_through() -> None:
    stream = io.StringIO()
    coloured = console.colorize(render_problems([error("x")]))
    console.write(stream, coloured + console.style(" ok", fg="green"))
    assert stream.getvalue() == coloured + "\x1b[32m ok\x1b[0m"
    assert "\x1b[31m\x1b[1merror\x1b[0m" in coloured


def test_json_stays_the_same_json_through_the_sink(capsys: pytest.CaptureFixture[str]) -> None:
    payload = {"name": HOSTILE, "url": "https://u:p@h"}
    console.emit_json(payload)
    text = capsys.readouterr().out
    assert "\x9b" not in text and "\u202e" not in text and "\x1b" not in text
    again = json.loads(text)
    assert again["name"] == HOSTILE
    assert again["url"] == "https://***@h"  # a credential is not printed, even in JSON


# ------------------------------------------------------------- the structure holds it

#: The modules that write to a terminal stream other than through `nixgen.core.console`
#: (whose `write` is the sink), and why each may.
DIRECT_WRITERS = {
    "nixgen/core/console.py": "the sink itself",
    "nixgen/cmdline/streams.py": "the exit status of a non-integer `sys.exit`, at exit",
    "nixgen/cmdline/cli.py": "click's own help text",
    "nixgen/cmdline/commands/completion.py": "click's completion script, to be sourced",
    "nixgen/cmdline/commands/matrix.py": "one line of JSON for $GITHUB_OUTPUT (json.dumps "
    "escapes every control character below U+0080; the names are validated)",
    "nixgen/building/nixbuild.py": "the progress line's own `\\r\\x1b[K`; its text goes "
    "through the sink",
    "nixgen/rendering/docs.py": "the reference, printed by a maintainer's script",
    "nixgen/building/process.py": "a command's standard input (`process.run`'s `input`), "
    "not a terminal",
}


def _writer_calls(source: str) -> list[tuple[int, str]]:
    """The calls in `source` that write to a terminal stream directly."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in ("print", "click.echo", "click.secho") or name.endswith(
                (".stdout.write", ".stderr.write", "stream.write")
            ):
                found.append((node.lineno, name))
    return found


def _raw_formatted(source: str) -> list[int]:
    """The lines of `source` where an f-string formats something's `.raw`."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FormattedValue):
            for inner in ast.walk(node.value):
                if isinstance(inner, ast.Attribute) and inner.attr == "raw":
                    lines.append(node.lineno)
    return lines


def _modules() -> dict[str, str]:
    return {
        str(p.relative_to(REPO)): p.read_text() for p in sorted((REPO / "nixgen").rglob("*.py"))
    }


def test_only_the_listed_modules_write_to_a_terminal_around_the_console() -> None:
    writers = {path: calls for path, text in _modules().items() if (calls := _writer_calls(text))}
    unexpected = {p: c for p, c in writers.items() if p not in DIRECT_WRITERS}
    assert not unexpected, (
        f"{unexpected}: print through nixgen.core.console (out, err, status, write), whose "
        "sink escapes what came from outside"
    )
    assert set(DIRECT_WRITERS) <= set(writers), "a listed writer no longer writes: drop it"


def test_the_raw_value_of_outside_text_is_never_formatted() -> None:
    """`Outside.raw` is for sending and comparing: inside an f-string it would print the
    value unsanitised."""
    offenders = {
        path: lines for path, text in _modules().items() if (lines := _raw_formatted(text))
    }
    assert offenders == {}


def test_the_checks_find_what_they_forbid() -> None:
    """Neither check is vacuous: a new verb that echoes a Hub answer's raw value is caught
    by both."""
    planted = "import click\n\ndef show(answer):\n    click.echo(f'got {answer.raw}')\n"
    assert _writer_calls(planted) == [(4, "click.echo")]
    assert _raw_formatted(planted) == [4]
