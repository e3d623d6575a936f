"""Recognise the kernels toolchain's standard `flake.nix`, which nixgen may replace.

Every kernel-builder project ships the same hand-written flake (kernel-builder's
`init/templates/flake.nix`, the anchor's `examples/kernels/*/flake.nix`): an optional
`description`, one input for the toolchain, and outputs that are only a call of its
`lib.genKernelFlakeOutputs` (formerly `genFlakeOutputs`) with `inherit self;` and
`path = ./.;`. Such a flake says nothing nixgen's does not, so `nixgen migrate` replaces
it. A flake of the same shape whose call also passes arguments (`torchVersions`,
`pythonCheckInputs`, `doGetKernelCheck`) is *recognised*: its arguments are read
(`nixgen.app.flakesettings`) and, when nixgen.toml can say all of them, `migrate` moves
them there and replaces the flake; otherwise nixgen keeps it, naming what taking it over
would lose (`assess`, the one judgement `migrate`, `render` and `render --force` share).
Any other flake (more outputs, more inputs) is the user's: `standard` says why not, and
nixgen keeps it.

The file is read as Nix tokens (`nixgen.core.nixexpr`: strings, paths, names,
punctuation; comments and whitespace dropped), not by a Nix evaluator: a flake is
recognised only when its tokens are exactly the pattern (an argument's value is parsed
as an expression of the subset `nixexpr` reads), so nothing that could do more is ever
taken for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from nixgen.core import console, nixexpr, paths
from nixgen.core.errors import OutputError
from nixgen.core.marker import has_marker

#: The toolchain's output functions (its top-level `flake.nix`: `genFlakeOutputs` was
#: renamed `genKernelFlakeOutputs` and now throws, saying so).
FUNCTIONS = ("genKernelFlakeOutputs", "genFlakeOutputs")


@attrs.frozen
class Verdict:
    """Whether a flake is the standard one; if not, `why` (for messages)."""

    standard: bool
    why: str = ""
    #: The call's function, when the outputs call one of `FUNCTIONS`.
    function: str | None = None
    #: The arguments the call passes besides `self` and `path` (name → expression), when
    #: the flake is otherwise the standard one (`recognised`).
    args: Mapping[str, nixexpr.Expr] = attrs.field(factory=dict)
    #: The flake's inputs as it declares them (name → URL), when they could be read.
    inputs: Mapping[str, str] = attrs.field(factory=dict)

    @property
    def recognised(self) -> bool:
        """kernel-builder's flake, standard or passing more arguments to its call."""
        return self.standard or bool(self.args)


def tokens(text: str) -> list[str]:
    """The Nix tokens of `text` the pattern is made of (`nixgen.core.nixexpr.tokens`)."""
    return [token.text for token in nixexpr.tokens(text)]


class _Mismatch(Exception):
    pass


class _Reader:
    def __init__(self, items: list[nixexpr.Token]):
        self.items, self.at = items, 0

    def peek(self) -> str | None:
        return self.items[self.at].text if self.at < len(self.items) else None

    def kind(self) -> str | None:
        return self.items[self.at].kind if self.at < len(self.items) else None

    def take(self, *expected: str) -> str:
        item = self.peek()
        if item is None or (expected and item not in expected) or self.kind() == "string":
            raise _Mismatch(
                f"expected {' or '.join(expected) or 'more'}, found {item or 'the end'}"
            )
        self.at += 1
        return item

    def name(self) -> str:
        item = self.peek()
        if item is None or self.kind() != "name":
            raise _Mismatch(f"expected a name, found {item or 'the end'}")
        self.at += 1
        return item

    def string(self) -> str:
        item = self.peek()
        if item is None or self.kind() != "string":
            raise _Mismatch(f"expected a string, found {item or 'the end'}")
        value = nixexpr.string_value(self.items[self.at])
        self.at += 1
        return value

    def expression(self) -> nixexpr.Expr:
        """One expression of `nixexpr`'s subset, from here (an argument's value)."""
        parser = nixexpr.Parser(self.items, self.at)
        try:
            expr = parser.expr()
        except nixexpr.Unsupported as exc:
            raise _Mismatch(f"an argument nixgen cannot read ({exc})") from None
        self.at = parser.at
        return expr


def standard(text: str) -> Verdict:
    """Whether `text` is the toolchain's standard flake (see the module docstring)."""
    reader = _Reader(nixexpr.tokens(text))
    try:
        return _flake(reader)
    except _Mismatch as exc:
        return Verdict(False, str(exc))


def _flake(r: _Reader) -> Verdict:
    r.take("{")
    inputs: dict[str, str] = {}
    verdict: Verdict | None = None
    while r.peek() != "}":
        key = r.name()
        if key == "description":
            r.take("=")
            r.string()
        elif key == "inputs":
            inputs.update(_inputs(r))
        elif key == "outputs":
            verdict = _outputs(r, list(inputs))
        else:
            raise _Mismatch(f"`{key}` besides `description`, `inputs` and `outputs`")
        r.take(";")
    r.take("}")
    if r.peek() is not None:
        raise _Mismatch("text after the flake")
    if verdict is None:
        raise _Mismatch("no `outputs`")
    return attrs.evolve(verdict, inputs=inputs)


def _inputs(r: _Reader) -> dict[str, str]:
    """`inputs = { NAME.url = "…"; … }` or `inputs.NAME.url = "…"`: the inputs' URLs."""
    if r.peek() == ".":
        r.take(".")
        name = r.name()
        return {name: _input_attr(r)}
    r.take("=")
    r.take("{")
    urls = {}
    while r.peek() != "}":
        name = r.name()
        urls[name] = _input_attr(r)
        r.take(";")
    r.take("}")
    return urls


def _input_attr(r: _Reader) -> str:
    r.take(".")
    r.take("url")
    r.take("=")
    return r.string()


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
    args: dict[str, nixexpr.Expr] = {}
    while r.peek() != "}":
        if r.peek() == "inherit":
            r.take("inherit")
            r.take("self")
            seen.add("self")
        else:
            key = r.name()
            r.take("=")
            if key == "path":
                r.take("./.")
                seen.add("path")
            elif key in args or key == "self":
                raise _Mismatch(f"`{function}` is given `{key}` twice")
            else:
                args[key] = r.expression()
        r.take(";")
    r.take("}")
    if seen != {"self", "path"}:
        raise _Mismatch(f"`{function}` is not given `inherit self;` and `path = ./.;`")
    if args:
        names = ", ".join(f"`{key}`" for key in args)
        return Verdict(
            False,
            f"`{function}` is given {names}, which nixgen's flake does not take as they are",
            function=function,
            args=args,
        )
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


@attrs.frozen(kw_only=True)
class Assessment:
    """What nixgen makes of a project's hand-written flake.nix: its verdict and, for a
    recognised kernel-builder flake that passes arguments, what they come to in
    nixgen.toml (`carried`)."""

    root: Path
    old: bytes
    verdict: Verdict
    carried: Any = None  # nixgen.app.flakesettings.Carried, for a recognised flake with args

    @property
    def lost(self) -> list[str]:
        return list(self.carried.lost) if self.carried is not None else []

    @property
    def takeable(self) -> bool:
        """Whether `nixgen migrate` replaces it without losing anything."""
        return self.verdict.standard or (self.verdict.recognised and not self.lost)

    def note(self) -> str:
        """The one warning about the kept flake that `migrate` and `render` (and the other
        verbs that render) print: what it is, what taking it over would lose, and the
        command that does it."""
        import shlex

        project = shlex.quote(str(self.root))
        where = f"{self.root / 'flake.nix'}: warning:"
        if self.verdict.standard:
            return (
                f"{where} kernel-builder's standard flake, kept: `nixgen build` uses it as it "
                f"is. To replace it with nixgen's (keeping it as {BACKUP}), run: "
                f"nixgen migrate {project}"
            )
        if self.takeable:
            return (
                f"{where} kernel-builder's flake, kept: `nixgen build` uses it as it is. "
                f"nixgen.toml can say what its call adds ({self.carried.summary()}): "
                f"`nixgen migrate {project}` moves that there and replaces the flake "
                f"(keeping it as {BACKUP})"
            )
        if self.verdict.recognised:
            carried = (
                f"; it would carry the rest to nixgen.toml ({self.carried.summary()})"
                if self.carried.settings
                else ""
            )
            return (
                f"{where} kernel-builder's flake, kept: `nixgen build` uses it as it is, "
                "because nixgen cannot carry over what its call adds: "
                f"{'; '.join(self.lost)}. Taking it over would lose that{carried}; to do "
                f"it anyway: {take_over_command(self.root)}"
            )
        return (
            f"{where} hand-written, and not kernel-builder's flake ({self.verdict.why}), so "
            "nixgen keeps it and `nixgen build` uses it; nixgen cannot tell what taking it "
            f"over would lose. To hand it over to nixgen: {take_over_command(self.root)}"
        )


def assess(root: Path, backends: Sequence[str]) -> Assessment | None:
    """The `Assessment` of the hand-written flake.nix of the project at `root` (whose
    build.toml lists `backends`); None for no flake, or nixgen's own."""
    found = check(root)
    if found is None:
        return None
    old, verdict = found
    carried = None
    if verdict.args:
        from nixgen.app import flakesettings

        carried = flakesettings.carry(verdict.args, backends)
    return Assessment(root=root, old=old, verdict=verdict, carried=carried)


def force_refusal(root: Path, backends: Sequence[str], current: Mapping[str, Any]) -> str | None:
    """Why `nixgen render --force` must not replace the project's flake.nix: it is
    kernel-builder's flake and passes arguments that nixgen.toml (`current`, its whole
    document) does not already say; None when replacing it loses nothing nixgen can
    tell."""
    found = assess(root, backends)
    if found is None or found.carried is None:
        return None
    from nixgen.app import flakesettings

    if found.takeable and flakesettings.in_effect(found.carried.settings, current):
        return None
    if found.takeable:
        return (
            f"{root / 'flake.nix'}: --force would replace kernel-builder's flake and drop what "
            f"its call adds ({found.carried.summary()}); run `nixgen migrate "
            f"{root}`, which moves that to nixgen.toml first (nothing was written)"
        )
    return (
        f"{root / 'flake.nix'}: --force would replace kernel-builder's flake and lose what "
        f"nixgen cannot carry over: {'; '.join(found.lost)} (nothing was written); to drop "
        f"it anyway: {take_over_command(root)}"
    )


@attrs.frozen
class Takeover:
    """Replacing a project's kernel-builder flake by nixgen's (`nixgen migrate`), with
    what its call adds moved to nixgen.toml (`settings`: the file's new bytes, and its
    old ones, None when there was none)."""

    root: Path
    old: bytes
    verdict: Verdict
    backup: bool
    #: What `flake.nix.orig` holds now: None (absent), or these very bytes, left by an
    #: earlier takeover that did not finish.
    backup_before: bytes | None = None
    carried: Any = None
    settings: tuple[bytes | None, bytes] | None = None

    def describe(self) -> str:
        kept = f", keeping it as {BACKUP}" if self.backup else ""
        if self.verdict.standard:
            return f"kernel-builder's standard flake.nix with nixgen's{kept}"
        moved = f", moving what its call adds to nixgen.toml ({self.carried.summary()})"
        if not self.carried.settings:
            moved = ""
        return f"kernel-builder's flake.nix with nixgen's{kept}{moved}"

    def apply(self, render: Callable[..., object]) -> None:
        """`render` the project (the render use case, `nixgen.app.pipeline.render_project`)
        handing its flake.nix over to nixgen, in one transaction: the new flake and nix/,
        the old flake kept as `BACKUP` (unless not `backup`) and nixgen.toml with the
        carried settings, which the render plans with before they are written. A render
        that fails or is killed changes nothing, so the same migrate can run again."""
        extra = {BACKUP: self.old} if self.backup else {}
        expect: dict[str, bytes | None] = {"flake.nix": self.old}
        if self.backup:
            expect[BACKUP] = self.backup_before
        render(
            self.root,
            replace_root=("flake.nix",),
            extra=extra,
            expect=expect,
            settings_change=self.settings,
        )
        console.status(f"replaced {self.describe()}")
        if self.carried is not None:
            for note in self.carried.notes:
                console.status(f"  {note}", level=1)


def takeover(root: Path, *, backup: bool, backends: Sequence[str] = ()) -> Takeover | None:
    """What migrating does to the project's flake.nix (its build.toml lists `backends`):
    a `Takeover` of kernel-builder's flake when nothing is lost (its arguments carried to
    nixgen.toml); None for no flake, nixgen's own, or one kept (with the warning
    `Assessment.note`). Raises `OutputError` when the backup would overwrite a file, or
    nixgen.toml already sets a carried key to another value."""
    found = assess(root, backends)
    if found is None:
        return None
    if not found.takeable:
        console.err(found.note())
        return None
    before = None
    if backup and paths.lstat_under(root, BACKUP) is not None:
        # The same flake kept by a takeover that did not finish (an older nixgen left it
        # behind) is no reason to stop: it is written again, unchanged.
        before = paths.read_file(root / BACKUP, limit=MAX_FLAKE)
        if before != found.old:
            raise OutputError(
                f"{root / BACKUP}: exists, and migrating would keep kernel-builder's flake.nix "
                "there; move it away or pass --no-backup (nothing was migrated)"
            )
    settings = None
    if found.carried is not None and found.carried.settings:
        from nixgen.app import flakesettings

        settings = flakesettings.nixgen_toml(root, found.carried)
    return Takeover(
        root,
        found.old,
        found.verdict,
        backup,
        backup_before=found.old if before == found.old else None,
        carried=found.carried,
        settings=settings,
    )
