"""Rules for single values: names, versions, git URLs, paths, capabilities.

Each rule returns None when the value is fine and a message otherwise. Schemas of every
edition share them through the converter (`nixgen.convert`), so a rule is written once.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from nixgen import tables
from nixgen.errors import did_you_mean

_PROJECT_NAME = re.compile(r"^[a-z][-a-z0-9]*[a-z0-9]$")
_KERNEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*$")
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_FEATURE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_+.-]*(/[A-Za-z0-9_][A-Za-z0-9_+.-]*)?$")
_EXTENSION = re.compile(r"^[A-Za-z0-9_]+$")
_SCP_URL = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
GIT_SCHEMES = ("https", "http", "git", "ssh", "git+ssh", "git+https", "git+http")
GLOB_CHARS = set("*?[]{}")
MAX_NAME = 64

Rule = Callable[[str], str | None]


def project_name(value: str) -> str | None:
    if _PROJECT_NAME.fullmatch(value) and len(value) <= MAX_NAME:
        return None
    return (
        f"invalid name `{value}`: use lowercase letters, digits and dashes, start with a "
        f"letter, end with a letter or digit, at least 2 and at most {MAX_NAME} characters "
        "(for example `my-kernel`, `relu2d`, `flash-attention`)"
    )


def legacy_project_name(value: str) -> str | None:
    """Editions before 4 allowed underscores; upgrading turns them into dashes."""
    return project_name(value.replace("_", "-").lower())


def kernel_name(value: str) -> str | None:
    if value.startswith("__") or value == "outPath":
        return (
            f"kernel name `{value}` is reserved: Nix gives attributes named `outPath` and "
            "`__…` a special meaning (`__toString`, `__functor`), and C++ reserves names "
            "starting with `__`; rename the kernel"
        )
    if _KERNEL_NAME.fullmatch(value) and len(value) <= MAX_NAME:
        return None
    return (
        f"invalid kernel name `{value}`: use ASCII letters, digits, `_` and `-`, starting "
        f"with a letter or `_`, at most {MAX_NAME} characters (for example `relu_cuda`)"
    )


def version(value: str) -> str | None:
    if _VERSION.fullmatch(value):
        return None
    if not value:
        return "empty version string"
    return f"invalid version `{value}`: expected dot-separated numbers such as `2.12` or `12.8`"


def git_url(value: str) -> str | None:
    if _SCP_URL.fullmatch(value):
        return None
    scheme, sep, rest = value.partition("://")
    if not sep or not rest.strip("/") or any(c.isspace() for c in value):
        return f"invalid git URL `{value}`: expected `<scheme>://host/path` or `git@host:org/repo`"
    if scheme not in GIT_SCHEMES:
        return f"unsupported scheme `{scheme}` in git URL `{value}`, expected one of: " + ", ".join(
            GIT_SCHEMES
        )
    return None


def repo_id(value: str) -> str | None:
    if _REPO_ID.fullmatch(value):
        return None
    return f"invalid Hub repository id `{value}`: expected `org/name`"


def rel_path(value: str) -> str | None:
    """A project file: relative, ``/``-separated, inside the project, no glob patterns."""
    if not value:
        return "empty path"
    if _CONTROL.search(value):
        return f"path {value!r} contains a control character"
    if value.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", value):
        return f"absolute path `{value}`: paths are relative to the project root"
    if "\\" in value:
        return f"path `{value}` uses `\\`; use `/` as the separator"
    if GLOB_CHARS & set(value):
        return f"path `{value}` contains a glob character; list each file explicitly"
    parts = value.split("/")
    if ".." in parts:
        return f"path `{value}` leaves the project (`..`); paths must stay inside it"
    if any(p in ("", ".") for p in parts[:-1]) or parts[-1] in ("", "."):
        return f"path `{value}` has an empty or `.` segment; write it as `a/b/c`"
    return None


def rel_dir(value: str) -> str | None:
    """Like `rel_path`, but ``.`` (the project root) is allowed."""
    return None if value == "." else rel_path(value)


def cuda_capability(value: str) -> str | None:
    known = tables.known_cuda_capabilities()
    if value in known:
        return None
    return (
        f"unknown CUDA capability `{value}`{did_you_mean(value, known)} (known: {', '.join(known)})"
    )


def rocm_arch(value: str) -> str | None:
    known = tables.known_rocm_archs()
    if value in known:
        return None
    suggestion = did_you_mean(value, known)
    return f"unknown ROCm architecture `{value}`{suggestion} (known: {', '.join(known)})"


def cargo_feature(value: str) -> str | None:
    if _FEATURE.fullmatch(value):
        return None
    return f"invalid Cargo feature name `{value}`"


_RUST_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def rust_lib_name(value: str) -> str | None:
    if _RUST_IDENT.fullmatch(value):
        return None
    example = re.sub(r"[^A-Za-z0-9_]", "_", value) or "relu"
    return (
        f"invalid library name `{value}`: a Rust library name is an identifier (letters, digits "
        f"and `_`, not starting with a digit), e.g. `{example}`"
    )


def extension(value: str) -> str | None:
    if _EXTENSION.fullmatch(value):
        return None
    return f"invalid file extension `{value}`: write it without the dot, e.g. `json`"


def nonempty(value: str) -> str | None:
    return None if value.strip() else "must not be empty"
