"""Rules for single values: names, versions, git URLs, paths, capabilities.

Each rule returns None when the value is fine and a message otherwise. `NEWTYPES` is the
one table from each of the model's NewTypes to its rule: the converter of every edition
(`nixgen.reading.schema.common`), the JSON Schema (`nixgen.rendering.jsonschema`) and the
warnings for well-formed values nixgen does not know (`nixgen.reading.schema.unknown`) all read
it, so a rule is written once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import attrs

from nixgen.core import remote, tables
from nixgen.core.errors import closest, did_you_mean
from nixgen.reading import model

_PROJECT_NAME = re.compile(r"^[a-z][-a-z0-9]*[a-z0-9]$")
_KERNEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*$")
_VERSION2 = re.compile(r"^[0-9]+\.[0-9]+$")
_FEATURE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_+.-]*(/[A-Za-z0-9_][A-Za-z0-9_+.-]*)?$")
_EXTENSION = re.compile(r"^[A-Za-z0-9_]+$")
#: A host name: labels of letters, digits and `-`, the last one starting with a letter (a
#: last label of digits would be read as an IPv4 address).
_HOST = r"(?:[A-Za-z0-9-]+\.)*[A-Za-z][A-Za-z0-9-]*"
#: `user@host:path`, the path not starting with `/` (scp's syntax, as git and the format read it).
_SCP_URL = re.compile(rf"^[A-Za-z0-9._-]+@{_HOST}:[^\s/]\S*$")
_PORT = r"(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})"
#: `scheme://[user[:password]@]host[:port][/path]` (the scheme checked apart, for its message).
_URL = re.compile(
    rf"^[a-z+]+://(?:[A-Za-z0-9._~-]+(?::[A-Za-z0-9._~-]*)?@)?{_HOST}(?::{_PORT})?(?:/\S*)?$"
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: A Windows drive (`C:\`, `c:/`) starts an absolute path.
_DRIVE = re.compile(r"[A-Za-z]:[\\/]")
#: Major and minor of at most nine digits each: far past any capability (an unknown one such
#: as the anchor's own `99999.0` example stays a warning), and a number of hundreds of digits
#: never reaches the float arithmetic of `plan`.
_CUDA_CAPABILITY = re.compile(r"^([0-9]{1,9})\.([0-9]{1,9})([af]?)(\+PTX)?$")
_ROCM_ARCH = re.compile(r"^gfx([0-9][0-9a-f]{2,4}|[0-9]+(-[0-9]+)*-generic)(:[a-z0-9-]+[+-])*$")
GIT_SCHEMES = ("https", "http", "git", "ssh", "git+ssh", "git+https", "git+http")
GLOB_CHARS = set("*?[]{}")
MAX_NAME = 64

Rule = Callable[[str], str | None]


def field_project_name(value: str) -> str | None:
    """The format's rule for `general.name` (the `kernels` client's `KernelName`)."""
    if _PROJECT_NAME.fullmatch(value):
        return None
    return project_name(value)


def project_name(value: str) -> str | None:
    if _PROJECT_NAME.fullmatch(value) and len(value) <= MAX_NAME:
        return None
    return (
        f"invalid name `{value}`: use lowercase letters, digits and dashes, start with a "
        f"letter, end with a letter or digit, at least 2 and at most {MAX_NAME} characters "
        "(for example `my-kernel`, `relu2d`, `flash-attention`)"
    )


def legacy_project_name(value: str) -> str | None:
    """Editions 1–4 allowed underscores; upgrading turns them into dashes, which keeps the
    Python module name (`-` and `_` both become `_`). Upper case stays an error: edition 6
    has no spelling that keeps such a module name."""
    return project_name(value) if project_name(value.replace("_", "-")) else None


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


#: The most digits of one version component: far above any real version (years have 4),
#: far below where Python's integers and Nix's (64-bit) `compareVersions` could disagree.
MAX_VERSION_DIGITS = 9


#: A component as the format reads it: Rust's `usize::from_str` (an optional `+`, ASCII digits).
_FIELD_COMPONENT = re.compile(r"\+?[0-9]+")
#: The largest component the format reads (a 64-bit `usize`).
_USIZE_MAX = 2**64 - 1


def field_version(value: str) -> str | None:
    """The format's rule for every version of build.toml (the `kernels` client's
    `Version<2>`): surrounding whitespace trimmed, exactly two dot-separated unsigned
    integers (`12.8`, `2.11`)."""
    text = value.strip()
    if not text:
        return "empty version string"
    parts = text.split(".")
    if not all(_FIELD_COMPONENT.fullmatch(p) and int(p) <= _USIZE_MAX for p in parts):
        return (
            f"invalid version `{value}`: expected two dot-separated numbers such as `2.12` "
            "or `12.8`"
        )
    if len(parts) != 2:
        return (
            f"invalid version `{value}`: expected `major.minor`, two dot-separated numbers such "
            f"as `2.12` or `12.8` (it has {len(parts)} component{'s' if len(parts) != 1 else ''})"
        )
    return None


def version(value: str) -> str | None:
    """Why `value` is not a canonical version, or None. Canonical: dot-separated numbers
    without leading zeros (`02.11` would name a variant `abi0211`, which the `kernels`
    client reads as 0.211) and with at most `MAX_VERSION_DIGITS` digits each; no sign or
    surrounding blanks (the format trims them; nixgen asks for the plain spelling)."""
    if _VERSION.fullmatch(value):
        parts = value.split(".")
        if any(len(p) > MAX_VERSION_DIGITS for p in parts):
            return (
                f"invalid version `{value}`: a component has more than {MAX_VERSION_DIGITS} "
                "digits; no real version has"
            )
        if any(len(p) > 1 and p.startswith("0") for p in parts):
            canonical = ".".join(str(int(p)) for p in parts)
            return (
                f"invalid version `{value}`: a component has a leading zero, which names "
                f"variants ambiguously; write `{canonical}`"
            )
        return None
    if not value:
        return "empty version string"
    return f"invalid version `{value}`: expected dot-separated numbers such as `2.12` or `12.8`"


def git_url(value: str) -> str | None:
    """A git URL nixgen is sure the format reads the same (the `kernels` client parses it
    with the WHATWG URL rules, or as scp's `user@host:path`): a plain host name, an optional
    user and port, a path without blanks."""
    if _SCP_URL.fullmatch(value):
        return None
    scheme, sep, _ = value.partition("://")
    if sep and scheme.isascii() and scheme.islower() and scheme not in GIT_SCHEMES:
        return f"unsupported scheme `{scheme}` in git URL `{value}`, expected one of: " + ", ".join(
            GIT_SCHEMES
        )
    if sep and _URL.fullmatch(value):
        return None
    return (
        f"invalid git URL `{value}`: expected `<scheme>://host/path` or `git@host:org/repo` "
        "(a host name of letters, digits, `-` and `.`; no blanks)"
    )


def repo_id(value: str) -> str | None:
    """A Hub repository id, by the one rule of values sent to the Hub (`remote.REPO_ID`)."""
    why = remote.repo_id_problem(value)
    return None if why is None else f"invalid Hub repository id `{value}`: {why}"


def hub_branch(value: str) -> str | None:
    """A branch nixgen uploads to, by the same module's rule (`remote.BRANCH`)."""
    why = remote.branch_problem(value)
    return None if why is None else f"invalid branch `{value}`: {why}"


def rel_path(value: str) -> str | None:
    """A project file: relative, ``/``-separated, inside the project, no glob patterns."""
    if not value:
        return "empty path"
    if _CONTROL.search(value):
        return f"path {value!r} contains a control character"
    if value.startswith("/") or _DRIVE.match(value):
        return f"absolute path `{value}`: paths are relative to the project root"
    if "\\" in value:
        return f"path `{value}` uses `\\`; use `/` as the separator"
    if not GLOB_CHARS.isdisjoint(value):
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
    """The form of a CUDA capability: ``major.minor`` with an optional ``a``/``f`` suffix,
    then optionally ``+PTX`` (embed the PTX too, as the anchor reads it).

    A well-formed capability nixgen does not know is not an error (`unknown_cuda_capability`
    warns about it): the anchor keeps such values and each toolkit builds what it can.
    """
    if _CUDA_CAPABILITY.fullmatch(value):
        return None
    known = tables.known_cuda_capabilities()
    base, ptx = _split_ptx_loosely(value)
    guess = _capability_of_arch(base)
    tail = tables.PTX if ptx else ""
    if guess in known:
        suggestion = f"; did you mean `{guess}{tail}`?"
    elif ptx and base in known:
        suggestion = f"; did you mean `{base}{tail}`?"
    else:
        suggestion = did_you_mean(value, known)
    return (
        f"invalid CUDA capability `{value}`{suggestion}: expected `major.minor` with an "
        "optional `a` or `f` suffix, such as `8.0`, `9.0a` or `10.0f`, and `+PTX` to also "
        "embed its PTX (`9.0+PTX`)"
    )


def _split_ptx_loosely(value: str) -> tuple[str, bool]:
    """``9.0+ptx``, ``9.0 + PTX`` → ``("9.0", True)``: a PTX suffix however it is spelt."""
    match = re.fullmatch(r"(.*?)\s*\+\s*ptx", value.strip(), re.IGNORECASE)
    return (match[1], True) if match else (value, False)


def _capability_of_arch(value: str) -> str | None:
    """``sm_90a`` → ``9.0a``, ``80`` → ``8.0``: the capability an nvcc arch name means."""
    match = re.fullmatch(r"(?:sm_?|compute_?)?([0-9]+)([0-9])([af]?)", value.strip().lower())
    return f"{match[1]}.{match[2]}{match[3]}" if match else None


def unknown_cuda_capability(value: str) -> str | None:
    """A warning for a well-formed capability that nixgen's table does not know (a
    ``+PTX`` capability by its base)."""
    known = tables.known_cuda_capabilities()
    base, ptx = tables.split_ptx(value)
    if base in known or not _CUDA_CAPABILITY.fullmatch(value):
        return None
    closest = _closest_capability(base) + (tables.PTX if ptx else "")
    return f"unknown CUDA capability `{value}` (closest known: `{closest}`)"


def _closest_capability(value: str) -> str:
    """The known capability nearest to `value`: same suffix when one exists, then the
    nearest major, then the nearest minor (``11.8`` → ``11.0``, ``8.0a`` → ``9.0a``)."""
    major, minor, suffix, _ = _CUDA_CAPABILITY.fullmatch(value).groups()  # type: ignore[union-attr]

    def distance(known: str) -> tuple[int, int, int]:
        k_major, k_minor, k_suffix, _ = _CUDA_CAPABILITY.fullmatch(known).groups()  # type: ignore[union-attr]
        return (
            k_suffix != suffix,
            abs(int(k_major) - int(major)),
            abs(int(k_minor) - int(minor)),
        )

    return min(tables.known_cuda_capabilities(), key=distance)


def rocm_arch(value: str) -> str | None:
    """The form of an AMD GPU target: ``gfx`` and its hexadecimal version (``gfx90a``,
    ``gfx1100``), a generic target (``gfx11-generic``), optional features (``:xnack-``).

    A well-formed target nixgen does not know is not an error (`unknown_rocm_arch` warns).
    """
    if _ROCM_ARCH.fullmatch(value):
        return None
    known = tables.known_rocm_archs()
    return (
        f"invalid ROCm architecture `{value}`{did_you_mean(value, known)}: expected an AMD "
        "GPU target such as `gfx90a`, `gfx942` or `gfx1100`"
    )


def unknown_rocm_arch(value: str) -> str | None:
    """A warning for a well-formed ROCm target that nixgen's table does not know."""
    known = tables.known_rocm_archs()
    if value in known or not _ROCM_ARCH.fullmatch(value):
        return None
    close = closest(value, known) or closest(value.split(":")[0], known)
    hint = f" (closest known: `{close}`)" if close else ""
    return f"unknown ROCm architecture `{value}`{hint}"


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


# --------------------------------------------------------------- the NewType → rule table


_PATH_CHAR = r"[^/\\*?\[\]{}\x00-\x1f\x7f]"
_SEGMENT = rf"{_PATH_CHAR}+"


def _rel_path_schema() -> dict[str, Any]:
    # `rel_path` as a JSON Schema: relative, `/`-separated, no glob or control characters,
    # no empty, `.` or `..` segment, no Windows drive (tests hold the two equal).
    return {
        "type": "string",
        "pattern": rf"^{_SEGMENT}(/{_SEGMENT})*$",
        "not": {"anyOf": [{"pattern": r"(^|/)\.\.?(/|$)"}, {"pattern": r"^[A-Za-z]:/"}]},
    }


def _git_url_schema() -> dict[str, Any]:
    schemes = "|".join(re.escape(s) for s in GIT_SCHEMES)
    return {
        "type": "string",
        "anyOf": [
            {"pattern": _SCP_URL.pattern},
            {"pattern": _URL.pattern.replace("[a-z+]+", f"(?:{schemes})", 1)},
        ],
    }


def _pattern(regex: re.Pattern[str], max_length: int | None = None) -> Callable[[], dict[str, Any]]:
    def make() -> dict[str, Any]:
        out: dict[str, Any] = {"type": "string", "pattern": regex.pattern}
        if max_length is not None:
            out["maxLength"] = max_length
        return out

    return make


@attrs.frozen(kw_only=True)
class ValueRule:
    """A NewType's rule: `format`, the field's own rule for the value (the `kernels`
    client's parser; None where the format takes any string), `check`, nixgen's rule
    (None or the message; what it refuses beyond `format` is a rule of nixgen's own,
    `Problem.beyond_format`), `schema` (its JSON Schema, made on demand) and, for values
    that may be well-formed yet unknown to nixgen's tables, `unknown` (None or the
    warning)."""

    check: Rule
    schema: Callable[[], dict[str, Any]]
    format: Rule | None = None
    unknown: Rule | None = None


#: Each NewType of the model and its rule: the one home of the value rules.
NEWTYPES: dict[Any, ValueRule] = {
    model.ProjectName: ValueRule(
        check=project_name, format=field_project_name, schema=_pattern(_PROJECT_NAME, MAX_NAME)
    ),
    model.KernelName: ValueRule(check=kernel_name, schema=_pattern(_KERNEL_NAME, MAX_NAME)),
    model.Version: ValueRule(check=version, format=field_version, schema=_pattern(_VERSION2)),
    model.GitUrl: ValueRule(check=git_url, schema=_git_url_schema),
    model.RelPath: ValueRule(check=rel_path, schema=_rel_path_schema),
    model.RelDir: ValueRule(
        check=rel_dir, schema=lambda: {"anyOf": [{"const": "."}, _rel_path_schema()]}
    ),
    model.Flag: ValueRule(check=lambda _: None, schema=lambda: {"type": "string"}),
    # Well-formed values nixgen does not know are warnings, not errors: the pattern is the
    # rule, the known values are examples.
    model.CudaCapability: ValueRule(
        check=cuda_capability,
        schema=lambda: {
            **_pattern(_CUDA_CAPABILITY)(),
            "examples": list(tables.known_cuda_capabilities()),
        },
        unknown=unknown_cuda_capability,
    ),
    model.RocmArch: ValueRule(
        check=rocm_arch,
        schema=lambda: {**_pattern(_ROCM_ARCH)(), "examples": list(tables.known_rocm_archs())},
        unknown=unknown_rocm_arch,
    ),
    model.RepoId: ValueRule(check=repo_id, schema=remote.REPO_ID.schema),
    model.HubBranch: ValueRule(check=hub_branch, schema=remote.BRANCH.schema),
    model.CargoFeature: ValueRule(check=cargo_feature, schema=_pattern(_FEATURE)),
    model.RustLibName: ValueRule(check=rust_lib_name, schema=_pattern(_RUST_IDENT)),
    model.Extension: ValueRule(check=extension, schema=_pattern(_EXTENSION)),
}
