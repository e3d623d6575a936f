"""Every value nixgen sends to a remote (the Hub), checked first by the remote's rules.

One module, one rule per kind of value: a repository id, a branch (and so every revision
nixgen names: it only ever names branches), a path in a repository (sent or listed by the
Hub), a kernel version turned into its branch, and the endpoint. `nixgen validate` checks
`general.hub` and `kernel-depends` with the same rules (`nixgen.reading.values`), so a value
that passes `validate` is one the upload can send.

Each rule is data: patterns a value must match and patterns it must not contain, each with
its reason, so the same rule is the check here and the JSON Schema an editor validates
build.toml with (plain patterns, no look-around, so every schema engine reads them).

- **Repository ids** follow huggingface_hub's `validate_repo_id` (huggingface_hub 2.4,
  `utils/_validators.py`): ASCII letters, digits, `-`, `_`, `.`; each part 1 to 96
  characters starting and ending with a letter, digit or `_`; no `--` or `..`; not ending in
  `.git`. nixgen also requires the `owner/name` form (a kernel lives in an owner's space).
- **Branches** follow git's `check-ref-format --branch` and the Hub's refusal of `refs/…`
  (huggingface_hub's `create_branch`: "invalid reference for a branch, ex: refs/pr/5"),
  within a narrower character set (letters, digits, `.`, `_`, `-`, `+`, `/`): nothing a
  shell, a URL or a terminal reads specially.
- **Paths in a repository** follow huggingface_hub's `_validate_path_in_repo` (no `.` or
  `..` segment, nothing under `.git/` or `.cache/`), plus no empty segment, no leading `/`,
  no `\\` and no control character.
- **Versions** are what the `kernels` client reads (`metadata.json`'s `version`: a
  non-negative integer that fits its `usize`).
- **Endpoints** are absolute `http(s)` URLs of a host, with no query or fragment; any
  credentials in them are redacted wherever the endpoint is shown
  (`nixgen.core.outside.redact`).
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

import attrs

#: The repository types `nixgen upload --repo-type` takes (kernel-builder's `RepoTypeArg`).
REPO_TYPES = ("kernel", "model")
#: The largest kernel version: the client reads `version` as a 64-bit `usize`.
MAX_VERSION = 2**64 - 1


@attrs.frozen
class Rule:
    """A value's rule: it matches every pattern of `must` (anchored), contains none of
    `must_not`, and has at most `max_length` characters; each pattern comes with the
    reason given when a value breaks it."""

    what: str
    must: tuple[tuple[str, str], ...]
    must_not: tuple[tuple[str, str], ...] = ()
    max_length: int | None = None

    def problem(self, value: object) -> str | None:
        """Why `value` breaks the rule (a phrase to put after ``<value>: ``), or None."""
        if not isinstance(value, str):
            return "not a string"
        if self.max_length is not None and len(value) > self.max_length:
            return f"longer than {self.max_length} characters"
        for pattern, reason in self.must:
            if re.fullmatch(pattern, value) is None:
                return reason
        for pattern, reason in self.must_not:
            if re.search(pattern, value) is not None:
                return reason
        return None

    def schema(self) -> dict[str, Any]:
        """The rule as JSON Schema: the anchored patterns in `allOf`, the forbidden ones
        under `not` (a schema `pattern` is searched, not anchored)."""
        out: dict[str, Any] = {"type": "string"}
        if self.max_length is not None:
            out["maxLength"] = self.max_length
        out["allOf"] = [{"pattern": f"^(?:{p})$"} for p, _ in self.must]
        if self.must_not:
            out["not"] = {"anyOf": [{"pattern": p} for p, _ in self.must_not]}
        return out


_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"

REPO_ID = Rule(
    "a Hub repository id",
    must=(
        (r"[^/]+/[^/]+", "expected `org/name`"),
        (
            rf"{_PART}/{_PART}",
            "expected letters, digits, `-`, `_` and `.` only, each part 1 to 96 characters "
            "that start and end with a letter, a digit or `_`",
        ),
    ),
    must_not=(
        (r"--", "contains `--`, which the Hub refuses"),
        (r"\.\.", "contains `..`, which the Hub refuses"),
        (r"\.git$", "ends in `.git`, which the Hub refuses"),
    ),
    max_length=193,
)

BRANCH = Rule(
    "a branch name",
    must=(
        (
            r"[A-Za-z0-9._+/-]{1,200}",
            "expected 1 to 200 letters, digits, `.`, `_`, `-`, `+` and `/`",
        ),
    ),
    must_not=(
        (
            r"^refs/",
            "starts with `refs/`: that is a reference, not a branch (`refs/pr/N` "
            "is a pull request; pass --create-pr to open one)",
        ),
        (r"^[-/.]", "starts with `-`, `/` or `.`"),
        (r"[/.]$", "ends with `/` or `.`"),
        (r"\.\.", "contains `..`"),
        (r"//", "contains `//`"),
        (r"/[-.]", "has a part that starts with `.` or `-`"),
        (r"\.lock(/|$)", "has a part that ends in `.lock`"),
    ),
)

#: A path in a repository, as the Hub lists it and as nixgen sends it.
REPO_PATH = Rule(
    "a path in a repository",
    must=(
        (
            r"[^\x00-\x1f\x7f-\x9f\\]{1,1024}",
            "expected 1 to 1024 characters, no control character and no `\\`",
        ),
    ),
    must_not=(
        (r"^/", "starts with `/`"),
        (r"(^|/)\.{1,2}(/|$)", "has a `.` or `..` part"),
        (r"//|/$", "has an empty part"),
        (r"(^|/)\.(git|cache)(/|$)", "is under `.git/` or `.cache/`, which the Hub refuses"),
    ),
)


def repo_id_problem(value: object) -> str | None:
    """Why `value` is no repository id the Hub accepts (`REPO_ID`), or None."""
    return REPO_ID.problem(value)


def branch_problem(value: object) -> str | None:
    """Why `value` is no branch nixgen sends (`BRANCH`), or None."""
    return BRANCH.problem(value)


def repo_path_problem(value: object) -> str | None:
    """Why `value` is no path in a repository (`REPO_PATH`), or None."""
    return REPO_PATH.problem(value)


def version_branch(version: object) -> str:
    """The branch of kernel version `version` (``v<version>``); a ``ValueError`` saying
    why when it is no version the client reads (an integer from 0 to `MAX_VERSION`)."""
    if isinstance(version, bool) or not isinstance(version, int):
        raise ValueError("`version` is not an integer")
    if not 0 <= version <= MAX_VERSION:
        raise ValueError(f"`version` is {version}, not an integer from 0 to {MAX_VERSION}")
    return f"v{version}"


@attrs.frozen
class Endpoint:
    """A checked Hub endpoint: `url` (sent, without a trailing `/`), `origin` (scheme,
    host and port: the only place the token goes) and `secrets` (what it carries that is
    never shown: a user name and password)."""

    url: str
    origin: tuple[str, str, int]
    secrets: tuple[str, ...] = ()


_DEFAULT_PORTS = {"http": 80, "https": 443}


def endpoint(value: str) -> Endpoint:
    """`value` (``HF_ENDPOINT``) as an `Endpoint`; a ``ValueError`` saying why when it is
    not an absolute http(s) URL of a host, without query or fragment. The message never
    holds the credentials the URL may carry."""
    if not value.isprintable() or any(c.isspace() for c in value) or len(value) > 2048:
        raise ValueError("has a space or a control character, or is over 2048 characters")
    try:
        parts = urllib.parse.urlsplit(value)
        port = parts.port
    except ValueError:
        raise ValueError("is not a URL") from None
    if parts.scheme not in _DEFAULT_PORTS:
        raise ValueError("is not an http:// or https:// URL")
    if not parts.hostname:
        raise ValueError("names no host")
    if parts.query or parts.fragment or value.endswith(("?", "#")):
        raise ValueError("has a query or a fragment (`?…`, `#…`)")
    secrets = tuple(s for s in (parts.username, parts.password) if s)
    origin = (parts.scheme, parts.hostname, port or _DEFAULT_PORTS[parts.scheme])
    return Endpoint(value.rstrip("/"), origin, secrets)


def url_problem(value: object) -> str | None:
    """Why `value` (a URL the Hub answered, shown to the user) is no plain http(s) URL."""
    if not isinstance(value, str):
        return "is not a string"
    if len(value) > 2048 or not value.isprintable() or any(c.isspace() for c in value):
        return "has a space or a control character, or is over 2048 characters"
    try:
        parts = urllib.parse.urlsplit(value)
    except ValueError:
        return "is not a URL"
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return "is not an http:// or https:// URL"
    return None
