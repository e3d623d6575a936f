"""Which variants a derivation of a `nix build` belongs to, for the progress display.

The kernels of two variants are two derivations of one name (``relu-cpu-relu_cpu-1``):
Nix's log names a derivation, not the variant that needs it. The variants' derivations
are known (one per variant, from the evaluation), and each `.drv` file in the store lists
the derivations it needs (its ``inputDrvs``), so the project's own derivations (those the
plan has a label for) are found from each variant's down, as far as they go: nothing of
nixpkgs or the toolchain is read. A derivation two variants share is theirs both.

The `.drv` files are read from the store directory (`nixcommand.store_dir`), bounded, and
every path in them is checked as a derivation (`nixcommand.derivation`) before it is read
in turn. When a file cannot be read (a store on another machine, a format this reader does
not know), the display only lacks the variant names: nothing fails.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs

from nixgen.building import nixcommand
from nixgen.building.nixlog import drv_name
from nixgen.core import paths

#: The most bytes of one `.drv` file read: its input derivations come right after its
#: outputs, so this is more than any file needs to reach them.
MAX_DRV = 8 * 1024 * 1024
#: The most derivations followed from the variants (a kernel split into objects has one
#: per source: thousands at most).
MAX_FOLLOWED = 100_000


@attrs.frozen
class Owners:
    """`variants`: the variants each followed derivation belongs to (the variants' own
    derivations included); `wrappers`: variants' derivations that only wrap one of their
    inputs of the same name (the provenance stamp around the extension)."""

    variants: Mapping[str, tuple[str, ...]]
    wrappers: frozenset[str]


def owners(roots: Mapping[str, Sequence[str]], follow: Callable[[str], bool]) -> Owners:
    """The derivations reachable from `roots` (a variant's derivation → its variants)
    through derivations whose name (`nixlog.drv_name`) `follow` accepts, each with the
    variants that need it."""
    found: dict[str, set[str]] = {drv: set(names) for drv, names in roots.items()}
    inputs: dict[str, list[str]] = {}
    wrappers = set()
    queue = list(roots)
    while queue and len(inputs) < MAX_FOLLOWED:
        drv = queue.pop()
        if drv not in inputs:
            inputs[drv] = [d for d in read_inputs(drv) if follow(drv_name(d))]
            if drv in roots and any(drv_name(d) == drv_name(drv) for d in inputs[drv]):
                wrappers.add(drv)
        for child in inputs[drv]:
            before = found.get(child)
            merged = (before or set()) | found[drv]
            if merged != before:
                found[child] = merged
                queue.append(child)
    return Owners(
        variants={drv: tuple(sorted(names)) for drv, names in found.items()},
        wrappers=frozenset(wrappers),
    )


def read_inputs(drv: str) -> list[str]:
    """The input derivations of the derivation `drv` (its `.drv` file's ``inputDrvs``), or
    none when the file cannot be read or parsed."""
    try:
        nixcommand.derivation(drv)
    except nixcommand.NotAStorePath:
        return []
    text = paths.head(drv, MAX_DRV)
    if len(text) >= MAX_DRV:
        return []
    try:
        found = _input_drvs(text.decode("utf-8", "replace"))
    except _Unreadable:
        return []
    return [d for d in found if nixcommand.is_derivation(d)]


class _Unreadable(Exception):
    """Not a `.drv` file this reader knows."""


def _input_drvs(text: str) -> list[str]:
    """``Derive([outputs],[(drv,[outputs]),…],…)``: the paths of the second list."""
    if not text.startswith("Derive("):
        raise _Unreadable
    _, pos = _value(text, len("Derive("))
    if text[pos : pos + 1] != ",":
        raise _Unreadable
    value, _ = _value(text, pos + 1)
    if not isinstance(value, list):
        raise _Unreadable
    out = []
    for item in value:
        if not isinstance(item, tuple) or not item or not isinstance(item[0], str):
            raise _Unreadable
        out.append(item[0])
    return out


_Value = str | list["_Value"] | tuple["_Value", ...]


def _value(text: str, pos: int, depth: int = 0) -> tuple[_Value, int]:
    """One ATerm value at `pos`: a string, a list `[…]` or a tuple `(…)`; and where it
    ends."""
    if depth > 8 or pos >= len(text):
        raise _Unreadable
    char = text[pos]
    if char == '"':
        out = []
        pos += 1
        while pos < len(text) and text[pos] != '"':
            if text[pos] == "\\":
                pos += 1
                if pos >= len(text):
                    raise _Unreadable
                out.append({"n": "\n", "t": "\t", "r": "\r"}.get(text[pos], text[pos]))
            else:
                out.append(text[pos])
            pos += 1
        if pos >= len(text):
            raise _Unreadable
        return "".join(out), pos + 1
    if char in "[(":
        close = "]" if char == "[" else ")"
        items: list[_Value] = []
        pos += 1
        if text[pos : pos + 1] == close:
            return ([] if char == "[" else ()), pos + 1
        while True:
            item, pos = _value(text, pos, depth + 1)
            items.append(item)
            if text[pos : pos + 1] == ",":
                pos += 1
            elif text[pos : pos + 1] == close:
                return (items if char == "[" else tuple(items)), pos + 1
            else:
                raise _Unreadable
    raise _Unreadable
