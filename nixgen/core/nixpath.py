"""A relative Nix path literal (`Path`): text the Nix literal writer
(`nixgen.rendering.nixlit`) writes as a path, not a string. Checked when made (`path`), so
the planner can name a generated file by it and nothing else becomes one."""

from __future__ import annotations

import re


class Path(str):
    """A relative Nix path literal (``./kernels/relu.nix``, ``../.``), checked by `path`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Path({str.__repr__(self)})"


#: A relative path literal Nix reads as written: `./` or `../` steps, then plain names.
_PATH_NAME = r"[A-Za-z0-9_+-][A-Za-z0-9._+-]*"
_PATH = re.compile(rf"(\.\./|\./)+(\.\.|\.|{_PATH_NAME}(/{_PATH_NAME})*)")


def path(text: str) -> Path:
    """`text` as a relative path literal: `./` or `../` steps then names of letters,
    digits, `.`, `_`, `+`, `-` (a name does not start with `.`); else ValueError.

    >>> path("./kernels/relu.nix"), path("../.")
    (Path('./kernels/relu.nix'), Path('../.'))
    """
    if not isinstance(text, str) or not _PATH.fullmatch(text):
        raise ValueError(f"not a relative Nix path literal: {text!r}")
    return Path(text)
