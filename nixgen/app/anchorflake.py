"""Recognise the kernels toolchain's standard `flake.nix`, which nixgen may replace.

Every kernel-builder project ships the same hand-written flake (kernel-builder's
`init/templates/flake.nix`, the anchor's `examples/kernels/*/flake.nix`): an optional
`description`, one input for the toolchain, and outputs that are only a call of its
`lib.genKernelFlakeOutputs` (formerly `genFlakeOutputs`) with `inherit self;` and
`path = ./.;`. Such a flake says nothing nixgen's does not, so `nixgen migrate` replaces
it. Any other flake (more outputs, more arguments such as `torchVersions` or
`pythonCheckInputs`, more inputs) is the user's: `standard` says why not, and nixgen
keeps it.

The file is read as Nix tokens (strings, paths, names, punctuation; comments and
whitespace dropped), not by a Nix evaluator: a flake is recognised only when its tokens
are exactly the pattern, so nothing that could do more is ever taken for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import attrs

from nixgen.core import console, paths
from nixgen.core.errors import OutputError
from nixgen.core.marker import has_marker

#: The toolchain's output functions (its top-level `flake.nix`: `genFlakeOutputs` was
#: renamed `genKernelFlakeOutputs` and now throws, saying so).
FUNCTIONS = ("genKernelFlakeOutputs", "genFlakeOutputs")

_TOKEN = re.compile(
    r"""(?P<space>\s+)
      |(?P<comment>\#[^\n]*|/\*.*?\*/)
      |(?P<string>"(?:[^"\\$]|\\.|\$(?!\{))*")
      |(?P<path>\.{1,2}(?:/[A-Za-z0-9._+-]*)+)
      |(?P<name>[A-Za-z_][A-Za-z0-9_'-]*)
      |(?P<punct>\.\.\.|[{}=;:,.])
      |(?P<other>\S)""",
    re.VERBOSE | re.DOTALL,
)


@attrs.frozen
class Verdict:
    """Whether a flake is the standard one; if not, `why` (for messages)."""

    standard: bool
    why: str = ""
    #: The call's function, when the outputs call one of `FUNCTIONS`.
    function: str | None = None


def tokens(text: str) -> list[str]:
    """The Nix tokens of `text` the pattern is made of; anything else (an interpolation,
    a `''` string, an operator, a list) is one character per token, which the pattern
    never matches."""
    out: list[str] = []
    at = 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        assert match is not None  # `other` matches any character left
        if match.lastgroup not in ("space", "comment"):
            out.append(match.group())
        at = match.end()
    return out


class _Mismatch(Exception):
    pass


class _Reader:
    def __init__(self, items: list[str]):
        self.items, self.at = items, 0

    def peek(self) -> str | None:
        return self.items[self.at] if self.at < len(self.items) else None

    def take(self, *expected: str) -> str:
        item = self.peek()
        if item is None or (expected and item not in expected):
            raise _Mismatch(
                f"expected {' or '.join(expected) or 'more'}, found {item or 'the end'}"
            )
        self.at += 1
        return item

    def name(self) -> str:
        item = self.peek()
        if item is None or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_'-]*", item):
            raise _Mismatch(f"expected a name, found {item or 'the end'}")
        self.at += 1
        return item

    def string(self) -> str:
        item = self.peek()
        if item is None or not item.startswith('"'):
            raise _Mismatch(f"expected a string, found {item or 'the end'}")
        self.at += 1
        return item


def standard(text: str) -> Verdict:
    """Whether `text` is the toolchain's standard flake (see the module docstring)."""
    reader = _Reader(tokens(text))
    try:
        return _flake(reader)
    except _Mismatch as exc:
        return Verdict(False, str(exc))


def _flake(r: _Reader) -> Verdict:
    r.take("{")
    inputs: list[str] = []
    verdict: Verdict | None = None
    while r.peek() != "}":
        key = r.name()
        if key == "description":
            r.take("=")
            r.string()
        elif key == "inputs":
            inputs += _inputs(r)
        elif key == "outputs":
            verdict = _outputs(r, inputs)
        else:
            raise _Mismatch(f"`{key}` besides `description`, `inputs` and `outputs`")
        r.take(";")
    r.take("}")
    if r.peek() is not None:
        raise _Mismatch("text after the flake")
    if verdict is None:
        raise _Mismatch("no `outputs`")
    return verdict


def _inputs(r: _Reader) -> list[str]:
    """`inputs = { NAME.url = "…"; … }` or `inputs.NAME.url = "…"`: the input names."""
    if r.peek() == ".":
        r.take(".")
        name = r.name()
        _input_attr(r)
        return [name]
    r.take("=")
    r.take("{")
    names = []
    while r.peek() != "}":
        names.append(r.name())
        _input_attr(r)
        r.take(";")
    r.take("}")
    return names


def _input_attr(r: _Reader) -> None:
    r.take(".")
    r.take("url")
    r.take("=")
    r.string()


def _outputs(r: _Reader, inputs: list[str]) -> Verdict:
    r.take("=")
    r.take("{")
    formals = []
    while r.peek() != "}":
        formals.append(r.take("...") if r.peek() == "..." else r.name())
        if r.peek() == ",":
            r.take(",")
    r.take("}")
    r.take(":")
    builder = r.name()
    if builder not in inputs:
        raise _Mismatch("outputs are not only a call of the toolchain input's `lib` function")
    extra = [f for f in formals if f not in ("self", builder, "...")]
    if extra or "self" not in formals or builder not in formals:
        raise _Mismatch(f"outputs take {', '.join(formals)}, not `self` and `{builder}`")
    if len(inputs) != 1:
        raise _Mismatch(
            f"inputs besides `{builder}`: {', '.join(i for i in inputs if i != builder)}"
        )
    r.take(".")
    r.take("lib")
    r.take(".")
    function = r.name()
    if function not in FUNCTIONS:
        raise _Mismatch(f"outputs call `{function}`, not `genKernelFlakeOutputs`")
    r.take("{")
    seen = set()
    while r.peek() != "}":
        if r.peek() == "inherit":
            r.take("inherit")
            r.take("self")
            seen.add("self")
        else:
            key = r.name()
            if key != "path":
                raise _Mismatch(
                    f"`{function}` is given `{key}`, which nixgen's flake does not take over"
                )
            r.take("=")
            r.take("./.")
            seen.add("path")
        r.take(";")
    r.take("}")
    if seen != {"self", "path"}:
        raise _Mismatch(f"`{function}` is not given `inherit self;` and `path = ./.;`")
    return Verdict(True, function=function)


#: The name the old flake is kept under when nixgen replaces it.
BACKUP = "flake.nix.orig"
#: The largest flake.nix read (the standard one is a few hundred bytes).
MAX_FLAKE = 64 * 1024


def check(root: Path) -> tuple[bytes, Verdict] | None:
    """The hand-written `flake.nix` of the project at `root` and its verdict; None when
    there is none, or it is nixgen's own (generated) or no regular file."""
    data = paths.read_file(root / "flake.nix", limit=MAX_FLAKE)
    if data is None:
        return None
    if isinstance(data, paths.Blocked):
        if data.too_large:
            return b"", Verdict(False, "it is larger than the standard flake ever is")
        return None
    if has_marker(data):
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data, Verdict(False, "it is not UTF-8")
    return data, standard(text)


def take_over_command(root: Path) -> str:
    """The command that hands a hand-written flake over to nixgen, keeping it aside."""
    import shlex

    flake, backup = (shlex.quote(str(root / name)) for name in ("flake.nix", BACKUP))
    return f"mv {flake} {backup} && nixgen render {shlex.quote(str(root))}"


@attrs.frozen
class Takeover:
    """Replacing a project's standard flake by nixgen's (`nixgen migrate`)."""

    root: Path
    old: bytes
    verdict: Verdict
    backup: bool
    #: What `flake.nix.orig` holds now: None (absent), or these very bytes, left by an
    #: earlier takeover that did not finish.
    backup_before: bytes | None = None

    def describe(self) -> str:
        kept = f", keeping it as {BACKUP}" if self.backup else ""
        return f"kernel-builder's standard flake.nix with nixgen's{kept}"

    def apply(self, render: Callable[..., object]) -> None:
        """`render` the project (the render use case, `nixgen.app.pipeline.render_project`)
        handing its flake.nix over to nixgen, with the old flake kept as `BACKUP` (unless
        not `backup`) in the same transaction as the new flake and nix/: a render that
        fails or is killed changes nothing, so the same migrate can run again."""
        extra = {BACKUP: self.old} if self.backup else {}
        expect: dict[str, bytes | None] = {"flake.nix": self.old}
        if self.backup:
            expect[BACKUP] = self.backup_before
        render(self.root, replace_root=("flake.nix",), extra=extra, expect=expect)
        console.status(f"replaced {self.describe()}")


def takeover(root: Path, *, backup: bool) -> Takeover | None:
    """What migrating does to the project's flake.nix: a `Takeover` of the standard flake;
    None for no flake, nixgen's own, or a hand-written one (kept, with a warning that
    gives the command to take it over). Raises `OutputError` when the backup would
    overwrite a file."""
    found = check(root)
    if found is None:
        return None
    old, verdict = found
    if not verdict.standard:
        console.err(
            f"{root / 'flake.nix'}: warning: hand-written, and not kernel-builder's standard "
            f"flake ({verdict.why}), so nixgen keeps it and `nixgen build` uses it; to hand it "
            f"over to nixgen: {take_over_command(root)}"
        )
        return None
    before = None
    if backup and paths.lstat_under(root, BACKUP) is not None:
        # The same flake kept by a takeover that did not finish (an older nixgen left it
        # behind) is no reason to stop: it is written again, unchanged.
        before = paths.read_file(root / BACKUP, limit=MAX_FLAKE)
        if before != old:
            raise OutputError(
                f"{root / BACKUP}: exists, and migrating would keep kernel-builder's flake.nix "
                "there; move it away or pass --no-backup (nothing was migrated)"
            )
    return Takeover(root, old, verdict, backup, backup_before=old if before == old else None)
