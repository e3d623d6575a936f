"""SPDX license expressions (`general.license`, ``--license``), checked with the
maintained `license-expression` library and its SPDX license list.

The library and its list take some 50 ms to load, so only `nixgen validate`, `init` and
`migrate --license` check a license; `render` and `build` do not need to.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from nixgen.core.errors import closest

#: SPDX's own values for "not stated" and "no license", valid alone.
SPECIAL = ("NOASSERTION", "NONE")
#: User-defined identifiers, valid anywhere an SPDX identifier is (SPDX spec, annex D).
_REF = re.compile(r"(DocumentRef-[A-Za-z0-9.-]+:)?LicenseRef-[A-Za-z0-9.-]+")
_EXAMPLE = "e.g. `Apache-2.0`, `MIT OR Apache-2.0`; https://spdx.org/licenses/"
#: The longest expression checked: real ones are a few dozen characters, and the library's
#: time grows with the length (thousands of unknown identifiers took minutes).
MAX_EXPRESSION = 1000
#: Unknown identifiers named one by one in the message (with "did you mean"); the rest
#: are counted.
MAX_NAMED = 5


@cache
def _licensing() -> Any:
    from license_expression import get_spdx_licensing

    return get_spdx_licensing()


@cache
def _known() -> dict[str, Any]:
    """The SPDX symbols (licenses and exceptions), by lower-case identifier."""
    return {k.lower(): v for k, v in _licensing().known_symbols.items()}


def _misplaced(symbol: str) -> str | None:
    """Why a known identifier the library still calls invalid is: a license after `WITH`,
    or an exception where a license goes; None when it is not known at all."""
    found = _known().get(symbol.lower())
    if found is None:
        return None
    if getattr(found, "is_exception", False):
        return (
            f"`{found.key}` is a license exception, which only follows `WITH` "
            f"(`GPL-2.0-only WITH {found.key}`)"
        )
    return (
        f"`{found.key}` is a license, not a license exception: `WITH` is followed by an "
        "exception (`GPL-2.0-only WITH Classpath-exception-2.0`); to combine licenses use "
        f"`AND` or `OR`"
    )


@cache
def _identifiers() -> tuple[str, ...]:
    """The SPDX license and exception identifiers (without the library's own
    `LicenseRef-scancode-*` keys), for "did you mean"."""
    return tuple(k for k in _licensing().known_symbols if not k.startswith("LicenseRef-"))


def problem(expression: str) -> str | None:
    """Why `expression` is not a valid SPDX license expression, with the closest valid
    identifier when one is near; None when it is valid (case does not matter, as in
    SPDX: `apache-2.0` is `Apache-2.0`)."""
    text = expression.strip()
    if text in SPECIAL:
        return None
    if len(text) > MAX_EXPRESSION:
        return (
            f"the license expression is {len(text)} characters long; no SPDX expression "
            f"needs more than {MAX_EXPRESSION} ({_EXAMPLE})"
        )
    try:
        info = _licensing().validate(text)
    except Exception:  # the library fails on some malformed input (`MIT AND`)
        return f"`{text}` is not a valid SPDX license expression ({_EXAMPLE})"
    unknown = list(dict.fromkeys(s for s in info.invalid_symbols if s and not _REF.fullmatch(s)))
    if unknown:
        parts = []
        for symbol in unknown[:MAX_NAMED]:
            misplaced = _misplaced(symbol)
            if misplaced is not None:
                parts.append(misplaced)
                continue
            match = closest(symbol, _identifiers())
            hint = f"; did you mean `{match}`?" if match else ""
            parts.append(f"unknown SPDX license identifier `{symbol}`{hint}")
        if len(unknown) > MAX_NAMED:
            parts.append(f"and {len(unknown) - MAX_NAMED} more unknown identifiers")
        return "; ".join(parts) + f" ({_EXAMPLE})"
    # What is left unknown is user-defined `LicenseRef-…` identifiers, which SPDX allows;
    # any other error is the expression's syntax.
    refs_only = bool(info.invalid_symbols) and all(_REF.fullmatch(s) for s in info.invalid_symbols)
    if info.errors and not refs_only:
        return f"`{text}` is not a valid SPDX license expression ({_EXAMPLE})"
    return None
