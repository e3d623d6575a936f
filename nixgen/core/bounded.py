"""One rule for data nixgen parses from a file, a flag or another program's output (a
Nix log line, `nix eval`'s JSON, ``--costs``): it is bounded, and every way it can be
malformed is a ``ValueError`` the caller turns into a located message.

- JSON: no `NaN`/`Infinity` (Python's `json` accepts them, and `1e400` becomes `inf`),
  no nesting deep enough to exhaust the recursion limit, no integer of more digits than
  Python converts (`int_max_str_digits`), and at most `MAX_JSON` characters.
- Numbers: finite and within the range the caller states (`number`).

Stdlib-only and cheap to import: the Nix log reader uses it for every line.
"""

from __future__ import annotations

import json
import math
from typing import Any

#: The most characters of JSON nixgen parses from one source (a cost table, one line of
#: Nix's log, `nix eval`'s list of derivations): far above any real one.
MAX_JSON = 16 * 1024 * 1024
#: The deepest nesting accepted: real inputs nest two or three levels.
MAX_DEPTH = 64


def _no_constant(name: str) -> Any:
    raise ValueError(f"`{name}` is not a number JSON allows")


def _depth(text: str, limit: int) -> int:
    """The deepest nesting of `text` outside strings (a linear scan), capped at `limit` + 1."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif char in "]}":
            depth -= 1
    return deepest


def json_loads(text: str, *, limit: int = MAX_JSON, depth: int = MAX_DEPTH) -> Any:
    """`json.loads(text)` within the bounds above; a ``ValueError`` saying why otherwise."""
    if len(text) > limit:
        raise ValueError(f"longer than {limit} characters")
    if ("[" in text or "{" in text) and _depth(text, depth) > depth:
        raise ValueError(f"nested more than {depth} levels deep")
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError:
        raise ValueError(f"nested more than {depth} levels deep") from None


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"`{text}` is out of range")
    return value


def number(value: object, *, low: float, high: float) -> float | None:
    """`value` as a float when it is a JSON number (not a bool) with `low` < it <= `high`;
    None otherwise (an integer too large for a float included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        result = float(value)
    except OverflowError:
        return None
    return result if math.isfinite(result) and low < result <= high else None
