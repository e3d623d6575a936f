"""Nix literals: the one place where Python data becomes Nix source text.

Every string that reaches generated Nix, including attribute names, goes through
`string` or `attr_name`, and every value a template interpolates goes through
`finalize`, so text from a ``build.toml`` can never become Nix code. Trusted
expression text that nixgen writes itself is marked with `raw`.

What a Nix string can carry, found with ``nix-instantiate`` 2.8.0 (Debian 12's ``nix-bin``)
and held on the suite's Nix (2.26.3, Debian 13's) by ``tests/test_nixlit.py``:

* Every Unicode scalar value except U+0000 round-trips through a double-quoted
  literal written raw as UTF-8: C0 controls, DEL, C1 controls, U+2028/U+2029,
  U+FEFF, U+FFFE/U+FFFF and all non-BMP code points. Each code point
  U+0001..U+10FFFF (surrogates aside) was written into ``"…"`` literals and read
  back with ``nix-instantiate --eval --strict --json FILE``, all equal.
  ``tests/test_nixlit.py`` repeats this check.
* U+0000 cannot be carried. On Nix 2.8 a raw NUL silently cuts the literal short:
  ``printf '"a\\x00b" + "c"' > n.nix; nix-instantiate --eval n.nix`` prints
  ``"ac"`` (NixOS/nix#1307); 2.26 refuses it ("cannot be represented as Nix string
  because it contains null bytes"). Nix has no escape that produces a NUL either.
* Lone surrogates (U+D800..U+DFFF) are not Unicode characters. TOML cannot
  produce them, but a Python ``str`` can. They have no UTF-8 encoding, and the
  CESU bytes for one come back from Nix 2.8 as invalid UTF-8 (2.26 refuses to print
  them: "JSON serialization error … invalid UTF-8 byte").
* A raw CR, or a CR LF pair, is read back as LF, so CR must be escaped. Nix has
  only the escapes ``\\n``, ``\\r`` and ``\\t``. Any other ``\\x`` means plain
  ``x`` (``"\\u0041"`` evaluates to ``"u0041"``), and Lix warns about those.
  Other control characters are therefore written raw. They round-trip, but
  they are invisible in output, so whether to allow them is up to validation.
* ``$`` interpolates only before ``{``: ``"a$"``, ``"$$"`` and ``"$\\\\{"`` are
  literal, and so, oddly, is ``"$${x}"``. `string` escapes each ``$`` that
  comes before ``{``, so ``$${`` is written ``$\\${``.

For attribute names, `attr_name` matches nixpkgs ``lib.strings.escapeNixIdentifier``:
a name is left bare when it matches ``[a-zA-Z_][a-zA-Z0-9_'-]*`` and is not a
keyword, and quoted otherwise. Nix 2.8 rejects ``{ if = 1; }`` for every keyword
except ``or``, which it accepts for backwards compatibility. We quote ``or``
anyway, and ``__curPos`` too, because it is a lexer token and not an identifier.
``throw``, ``import``, ``true``, ``false``, ``null``, ``abort`` and ``builtins``
are ordinary identifiers. Used bare, they worked in each attribute position
tried: ``{ n = 1; }``, ``x.n``, ``x ? n``, ``x.n or d``, ``inherit (x) n;`` and
``{ a.n = 1; }``. So they stay bare, as nixpkgs leaves them.

Numbers: Nix integers are signed 64-bit, and Nix cannot parse the literal
``9223372036854775808``. A negative number is the expression ``0 - n``, so it is
written in parentheses; ``[ 1 -2 ]`` is a syntax error. A float literal needs a
``.`` (``1e-05`` is written ``1.0e-05``). Nix rejects subnormal floats ("invalid
float '5.0e-324'") and has no negative zero (``-0.0`` is ``0 - 0.0``). It parses
floats exactly, but ``--json`` prints only 6 significant digits.
"""

from __future__ import annotations

import math
import re
import sys

from nixgen.core import nixpath

__all__ = [
    "NixLiteralError",
    "Path",
    "Raw",
    "attr_name",
    "finalize",
    "path",
    "raw",
    "string",
    "unrepresentable",
    "value",
]

#: Target line width for `value` layout.
WIDTH = 80

_INT_MAX = 2**63 - 1
_INT_MIN = -(2**63)
KEYWORDS = frozenset(
    {"assert", "else", "if", "in", "inherit", "let", "or", "rec", "then", "with", "__curPos"}
)
_IDENTIFIER = re.compile(r"[a-zA-Z_][a-zA-Z0-9_'-]*")
_UNREPRESENTABLE = re.compile("[\x00\ud800-\udfff]")
# The lookahead escapes only a `$` that starts `${`, so `$${` becomes `$\${`.
_NEEDS_ESCAPE = re.compile(r'[\\"\n\r\t]|\$(?=\{)')
#: A string with nothing to escape or refuse (no `$` at all: the common case, one match).
_PLAIN = re.compile('[^\\\\"\n\r\t$\x00\ud800-\udfff]*')
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "$": "\\$"}


class NixLiteralError(ValueError):
    """A value that no Nix literal can express, such as a NUL character or NaN."""


class Raw(str):
    """Nix expression text that nixgen wrote itself and passes through unescaped.

    Never wrap data from a build.toml in `Raw`. Any operation on a `Raw`, such as
    ``+`` or ``format``, returns a plain `str`, so the mark is lost.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Raw({str.__repr__(self)})"


def raw(text: str) -> Raw:
    """Mark `text`, trusted Nix expression text written by nixgen, as `Raw`."""
    if not isinstance(text, str):
        raise TypeError(f"raw() needs a str, not {type(text).__name__}")
    return Raw(text)


# A relative path literal (`Path`, made by `path`): the plan names files by it too.
Path = nixpath.Path
path = nixpath.path


def unrepresentable(s: str) -> int | None:
    """Return the index of the first character no Nix string can carry, else None.

    Those characters are U+0000 and lone surrogates (see the module docstring).
    Validation calls this to report a friendly error before anything is rendered.
    """
    match = _UNREPRESENTABLE.search(s)
    return None if match is None else match.start()


def _check_representable(s: str) -> None:
    index = unrepresentable(s)
    if index is None:
        return
    code = ord(s[index])
    if code == 0:
        what = "NUL character (U+0000)"
    else:
        what = f"lone surrogate (U+{code:04X}, not a Unicode character)"
    raise NixLiteralError(f"{what} cannot appear in a Nix string (at index {index})")


def string(s: str) -> str:
    """Return a double-quoted Nix string literal that evaluates to exactly `s`.

    Escapes ``\\``, ``"``, the ``$`` of every ``${``, newline, CR and tab, and
    writes every other character raw. Raises `NixLiteralError` for characters
    that `unrepresentable` reports.

    >>> print(string('say "${hi}"\\n'))
    "say \\"\\${hi}\\"\\n"
    """
    if not isinstance(s, str):
        raise TypeError(f"a Nix string needs a str, not {type(s).__name__}")
    if _PLAIN.fullmatch(s):
        return '"' + s + '"'
    _check_representable(s)
    return '"' + _NEEDS_ESCAPE.sub(lambda m: _ESCAPES[m.group()[0]], s) + '"'


def attr_name(name: str) -> str:
    """Return `name` as an attribute name: bare when it is a plain identifier, else quoted.

    >>> attr_name("cuda_12-4"), attr_name("if"), attr_name("a.b"), attr_name("0x")
    ('cuda_12-4', '"if"', '"a.b"', '"0x"')
    """
    if not isinstance(name, str):
        raise TypeError(f"an attribute name must be a str, not {type(name).__name__}")
    if is_identifier(name):
        return name
    return string(name)


def is_identifier(name: str) -> bool:
    """Whether `name` can be written bare in Nix: an identifier that is not a keyword."""
    return _IDENTIFIER.fullmatch(name) is not None and name not in KEYWORDS


def _int(n: int) -> str:
    if not _INT_MIN <= n <= _INT_MAX:
        raise NixLiteralError(f"integer {n} is outside Nix's signed 64-bit range")
    if n == _INT_MIN:
        # The literal 9223372036854775808 does not parse, so its negation cannot be written.
        return f"({_INT_MIN + 1} - 1)"
    text = int.__repr__(n)
    return f"({text})" if n < 0 else text


def _float(x: float) -> str:
    if not math.isfinite(x):
        raise NixLiteralError(f"{x!r} has no Nix literal (Nix floats must be finite)")
    if x == 0:
        return "0.0"  # also for -0.0: Nix has no negative zero literal
    if abs(x) < sys.float_info.min:
        raise NixLiteralError(f"subnormal float {x!r} has no Nix literal (Nix rejects it)")
    mantissa, e, exponent = float.__repr__(x).partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    text = mantissa + (e + exponent if e else "")
    return f"({text})" if x < 0 else text


def _scalar(obj: object) -> str | None:
    """Return the Nix text of a scalar, or None if `obj` is a container."""
    if isinstance(obj, Raw | Path):
        return str(obj)
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "true" if obj else "false"
    if isinstance(obj, int):
        return _int(obj)
    if isinstance(obj, float):
        return _float(obj)
    if isinstance(obj, str):
        return string(obj)
    if isinstance(obj, list | tuple | dict):
        return None
    raise TypeError(f"cannot write a {type(obj).__name__} as a Nix value")


def _render(obj: object, indent: int, taken: int) -> str:
    """Lay out `obj` on a line indented by `indent`, where `taken` columns are already used."""
    scalar = _scalar(obj)
    if scalar is not None:
        return scalar
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(obj, dict):
        if not obj:
            return "{ }"
        for key in obj:
            if not isinstance(key, str):
                raise TypeError(f"attribute names must be str, not {type(key).__name__}: {key!r}")
        lines = ["{"]
        for key in sorted(obj):
            name = attr_name(key)
            # `name = ` before the value and `;` after it share the line.
            used = indent + 2 + len(name) + 3 + 1
            lines.append(f"{inner}{name} = {_render(obj[key], indent + 2, used)};")
        lines.append(pad + "}")
        return "\n".join(lines)
    if not obj:
        return "[ ]"
    assert isinstance(obj, list | tuple)  # _scalar returned None: a list or tuple
    items = [_scalar(item) for item in obj]
    one_liners = [item for item in items if item is not None and "\n" not in item]
    if len(one_liners) == len(items):
        one_line = "[ " + " ".join(one_liners) + " ]"
        if taken + len(one_line) <= WIDTH:
            return one_line
    body = [inner + _render(item, indent + 2, indent + 2) for item in obj]
    return "\n".join(["[", *body, pad + "]"])


def value(obj: object, indent: int = 0) -> str:
    """Return canonical, deterministic Nix text for a JSON-like Python value.

    Handles None, bool, int, finite float, str, `Raw` (written as is), list,
    tuple and dict with str keys. Dict keys are sorted and written with
    `attr_name`, and a dict always spans several lines. A list of scalars stays
    on one line (``[ a b ]``) when that fits within 80 columns from `indent`.
    Otherwise each element gets its own line. Nested levels indent 2 more
    spaces, and empty containers are written ``[ ]`` and ``{ }``. `indent` is the
    column where the line holding the value starts; closing brackets line up
    with it. Negative numbers are parenthesized, so each value is a single
    element wherever it lands, even inside a list or a function application.

    Raises TypeError for other types and for non-str keys, and
    `NixLiteralError` for NaN, infinities, subnormal floats, integers outside
    64 bits and strings that `unrepresentable` rejects.
    """
    return _render(obj, indent, indent)


def finalize(obj: object) -> str:
    """Jinja2 ``finalize`` hook: `Raw` comes back unchanged, everything else goes through `value`.

    With ``Environment(finalize=finalize)``, every ``{{ x }}`` in a template
    therefore becomes a safe Nix literal.
    """
    if isinstance(obj, Raw):
        return obj
    return value(obj)
