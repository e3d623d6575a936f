"""Which lines of a C/C++ source a compile can reach, through its preprocessor conditionals.

The include scan (`validate.unlisted_includes`) warns about a quoted `#include` of a project
file no list names. A line under `#ifdef USE_ROCM` in a CUDA-only kernel is never compiled,
so a warning about it is wrong; a line under a condition nixgen cannot decide (a macro of
the project's own) may or may not be compiled. This module reads the conditionals (`#if`,
`#ifdef`, `#ifndef`, `#elif`, `#elifdef`, `#elifndef`, `#else`, `#endif`) of a source and
evaluates each with what is known of its macros for one compile (`Macros`), in three values:
True (taken), False (cannot be taken), None (undecided).

What nixgen knows for certain is the `-D` flags it passes: each backend's defines
(`data/languages.json`, the Nix library's `compile.backendDefines`), so a macro one backend
defines and this compile's backend does not is known to be undefined, plus the `-D`/`-U`
flags the project gives the kernel. A macro the project `#define`s or `#undef`s anywhere in
its listed files is undecided again: a header may set it before the line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import attrs

#: What is known of a macro for one compile: its value (a string, "" when defined empty),
#: or None when it is known to be undefined. A macro absent from the mapping is unknown.
Macros = Mapping[str, str | None]

_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*([a-z]+)\b(.*)$")
_DEFINE = re.compile(rb"^[ \t]*#[ \t]*(?:define|undef)[ \t]+([A-Za-z_]\w*)", re.MULTILINE)
_TOKEN = re.compile(
    r"\s*(?:(?P<number>0[xX][0-9a-fA-F]+|\d+)[uUlL]*|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|[()!<>]))"
)


def known_macros(
    defines: Sequence[str], others: Iterable[str], flags: Sequence[str], unsure: Iterable[str]
) -> dict[str, str | None]:
    """The macros known for one compile: `defines` (``-DNAME`` or ``-DNAME=VALUE``, nixgen's
    own for the compile's backend) defined, the names in `others` (other backends' defines)
    undefined, then the `-D`/`-U` of `flags` (the project's) applied; a name in `unsure` (one
    the project's files define or undefine themselves) is left unknown."""
    known: dict[str, str | None] = {}
    for name in others:
        known[name] = None
    for flag in (*defines, *_define_flags(flags)):
        body = flag[2:]
        name, _, value = body.partition("=")
        known[name] = None if flag.startswith("-U") else (value if "=" in body else "1")
    for name in unsure:
        known.pop(name, None)
    return known


def _define_flags(flags: Sequence[str]) -> list[str]:
    """The ``-DX[=V]`` and ``-UX`` of a flag list, ``-D X`` (two words) joined."""
    out: list[str] = []
    for i, flag in enumerate(flags):
        if flag in ("-D", "-U") and i + 1 < len(flags):
            out.append(flag + flags[i + 1])
        elif flag.startswith(("-D", "-U")) and len(flag) > 2:
            out.append(flag)
    return out


def defined_names(text: bytes) -> set[str]:
    """The macros a file `#define`s or `#undef`s (anywhere, whatever its conditionals)."""
    return {m.group(1).decode("ascii") for m in _DEFINE.finditer(text)}


@attrs.frozen
class Reach:
    """Whether a line is compiled: `taken` is True, False or None (undecided), and
    `condition` the innermost undecided directive above it (`#ifdef FOO`, line 3)."""

    taken: bool | None
    condition: tuple[str, int] | None = None


@attrs.define
class _Frame:
    """One `#if` group, for one compile: is its current branch taken, and whether one of
    its conditions so far is true for certain (every later branch is then skipped) or
    undecided (every later branch is then at most undecided)."""

    active: bool | None
    any_true: bool
    any_undecided: bool
    directive: tuple[str, int]


def reach(text: bytes, compiles: Sequence[Macros]) -> dict[int, Reach]:
    """Every line of `text` (by number, from 1) that some compile in `compiles` may reach,
    with whether it is taken: True when one compile surely takes it, else None (undecided);
    a line no compile can take is left out. A line outside every conditional is True."""
    stacks: list[list[_Frame]] = [[] for _ in compiles]
    out: dict[int, Reach] = {}
    lines = text.split(b"\n")
    number = 0
    while number < len(lines):
        start = number + 1
        line = lines[number]
        # A directive continued with backslashes is one logical line.
        while line.endswith(b"\\") and number + 1 < len(lines):
            number += 1
            line = line[:-1] + lines[number]
        number += 1
        match = _DIRECTIVE.match(line)
        if match is not None:
            word = match.group(1).decode("ascii", "replace")
            rest = _strip_comments(match.group(2).decode("utf-8", "replace")).strip()
            shown = (f"#{word} {rest}".strip(), start)
            for macros, stack in zip(compiles, stacks, strict=True):
                _directive(word, rest, macros, stack, shown)
        states = [_state(stack) for stack in stacks]
        if any(s[0] is True for s in states):
            out[start] = Reach(True)
        elif any(s[0] is None for s in states):
            condition = next(s[1] for s in states if s[0] is None)
            out[start] = Reach(None, condition)
    return out


def _state(stack: Sequence[_Frame]) -> tuple[bool | None, tuple[str, int] | None]:
    undecided = None
    for frame in stack:
        if frame.active is False:
            return False, None
        if frame.active is None:
            undecided = frame.directive
    return (True, None) if undecided is None else (None, undecided)


def _directive(
    word: str, rest: str, macros: Macros, stack: list[_Frame], shown: tuple[str, int]
) -> None:
    if word in ("if", "ifdef", "ifndef"):
        value = _condition(word, rest, macros)
        stack.append(_Frame(value, value is True, value is None, shown))
    elif word in ("elif", "elifdef", "elifndef") and stack:
        frame = stack[-1]
        frame.directive = shown
        if frame.any_true:
            frame.active = False
            return
        value = _condition("if" if word == "elif" else word[2:], rest, macros)
        frame.active = False if value is False else (None if frame.any_undecided else value)
        frame.any_true |= value is True
        frame.any_undecided |= value is None
    elif word == "else" and stack:
        frame = stack[-1]
        frame.directive = shown
        frame.active = False if frame.any_true else (None if frame.any_undecided else True)
        frame.any_true = True
    elif word == "endif" and stack:
        stack.pop()


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text)
    return text.split("//", 1)[0]


def _condition(word: str, rest: str, macros: Macros) -> bool | None:
    """The value of `#if REST` (or `#ifdef`/`#ifndef NAME`) with `macros`."""
    if word in ("ifdef", "ifndef"):
        name = rest.split()[0] if rest.split() else ""
        defined = _defined(name, macros)
        if defined is None or word == "ifdef":
            return defined
        return not defined
    try:
        value = _Parser(rest, macros).parse()
    except _Undecided:
        return None
    return None if value is None else value != 0


def _defined(name: str, macros: Macros) -> bool | None:
    if name not in macros:
        return None
    return macros[name] is not None


class _Undecided(Exception):
    """The expression holds something this reader does not evaluate."""


class _Parser:
    """A `#if` expression in three values: an int, or None when it depends on something
    unknown. Supported: integers, macro names, `defined NAME` / `defined(NAME)`, `!`, `&&`,
    `||`, the comparisons and parentheses; anything else is undecided."""

    def __init__(self, text: str, macros: Macros):
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None:
                if text[pos:].strip():
                    raise _Undecided
                break
            self.tokens.append(match.group("number") or match.group("name") or match.group("op"))
            pos = match.end()
        self.macros = macros
        self.pos = 0

    def parse(self) -> int | None:
        value = self._or()
        if self.pos != len(self.tokens):
            raise _Undecided
        return value

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self) -> str:
        token = self._peek()
        if token is None:
            raise _Undecided
        self.pos += 1
        return token

    def _or(self) -> int | None:
        values = [self._and()]
        while self._peek() == "||":
            self._take()
            values.append(self._and())
        if len(values) == 1:
            return values[0]
        if any(v not in (None, 0) for v in values):
            return 1
        return None if None in values else 0

    def _and(self) -> int | None:
        values = [self._comparison()]
        while self._peek() == "&&":
            self._take()
            values.append(self._comparison())
        if len(values) == 1:
            return values[0]
        if 0 in values:
            return 0
        return None if None in values else 1

    def _comparison(self) -> int | None:
        left = self._unary()
        op = self._peek()
        if op not in ("==", "!=", "<", ">", "<=", ">="):
            return left
        self._take()
        right = self._unary()
        if left is None or right is None:
            return None
        return int(
            {
                "==": left == right,
                "!=": left != right,
                "<": left < right,
                ">": left > right,
                "<=": left <= right,
                ">=": left >= right,
            }[op]
        )

    def _unary(self) -> int | None:
        token = self._take()
        if token == "!":
            value = self._unary()
            return None if value is None else int(value == 0)
        if token == "(":
            value = self._or()
            if self._take() != ")":
                raise _Undecided
            return value
        if token == "defined":
            name = self._take()
            if name == "(":
                name = self._take()
                if self._take() != ")":
                    raise _Undecided
            defined = _defined(name, self.macros)
            return None if defined is None else int(defined)
        if token[0].isdigit():
            return _number(token)
        if token[0].isalpha() or token[0] == "_":
            if token not in self.macros:
                return None
            text = self.macros[token]
            if text is None:
                return 0  # an undefined name is 0 in `#if`
            if re.fullmatch(r"\d+", text.strip()):
                return int(text.strip())
            return None  # defined to something else: not evaluated here
        raise _Undecided


def _number(token: str) -> int:
    """An integer literal as `#if` reads it (hex, octal after a leading 0, decimal)."""
    try:
        if token[:2] in ("0x", "0X"):
            return int(token, 16)
        return int(token, 8) if len(token) > 1 and token[0] == "0" else int(token)
    except ValueError:
        raise _Undecided from None
