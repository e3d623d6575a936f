"""Building without a network: `nixgen build --offline` (and `shell --offline`).

`--offline` passes Nix its own offline settings (`--offline`, no substituters, one
download attempt with a short connect timeout), and before Nix runs, checks that every
input of the generated flake can be had without a download: overridden
(``--override-input NAME REF``, or ``[override-input]`` in nixgen.toml), or locked in
flake.lock and already in the Nix store. A missing one is named at once, with the
override that supplies it, instead of Nix retrying DNS and failing in "evaluating …".
A hand-written flake.nix that nixgen keeps (kernel-builder's, or any other) gets the same
check of the inputs it declares (read by `kept_flake_inputs`, with `nixgen.core.nixexpr`),
and of what its flake.lock locks below them; when its inputs cannot be read, a warning
says that --offline cannot check them.

`scripts/offline-inputs.sh DIR` lays out nixgen's test stand-ins of nixpkgs and of the
kernels toolchain in DIR, for trying nixgen on a machine without network; it prints the
`[override-input]` table that points a project at them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from nixgen.core import console, nixexpr, paths, tables
from nixgen.core.errors import NixgenError
from nixgen.core.marker import is_generated
from nixgen.rendering.library import COPY, Library, is_local

#: Nix's settings for a run that downloads nothing, beside its `--offline` flag
#: (`nixcommand.Settings.offline`): the short timeout and single attempt bound a fetch that
#: is tried anyway (a github input missing from the store), so that no run waits on DNS
#: retries.
SETTINGS = (("substituters", ""), ("connect-timeout", "1"), ("download-attempts", "1"))


def _script() -> str:
    """scripts/offline-inputs.sh as the messages name it: its absolute path when this nixgen
    runs from a checkout (an editable install, as scripts/setup.sh makes), so that it can be
    run from the project; else the path in a nixgen checkout."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "offline-inputs.sh"
    return str(script) if script.is_file() else "scripts/offline-inputs.sh"


#: What scripts/offline-inputs.sh is called, for the messages.
SCRIPT = _script()


def flake_inputs(library: Library = COPY) -> dict[str, str]:
    """The inputs of every generated flake.nix, by name: their flake references; also the
    flake input `nixgen` when the project takes the library from one that must be
    downloaded (`library`: ``input:URL``; a local URL, such as ``git+file:`` or ``path:``,
    is read from disk offline)."""
    inputs = {"kernel-builder": tables.KERNEL_BUILDER_URL, "nixpkgs": tables.NIXPKGS_URL}
    url = library.url
    if url is not None and not is_local(url):
        inputs["nixgen"] = url
    return inputs


def _nix_base32(digest: bytes) -> str:
    """Nix's base-32 encoding of a hash (its own alphabet, least significant bits first)."""
    alphabet = "0123456789abcdfghijklmnpqrsvwxyz"
    length = (len(digest) * 8 - 1) // 5 + 1
    out = []
    for n in range(length - 1, -1, -1):
        bit = n * 5
        i, j = divmod(bit, 8)
        c = digest[i] >> j
        if i + 1 < len(digest):
            c |= digest[i + 1] << (8 - j)
        out.append(alphabet[c & 0x1F])
    return "".join(out)


def source_path(nar_hash: str, *, store: str | None = None) -> str | None:
    """The store path of a flake input locked with `nar_hash` (``sha256-<base64>``, as
    flake.lock records it): Nix stores a fetched input as a recursive, sha256
    fixed-output path named ``source``. None for another kind of hash."""
    store = store or os.environ.get("NIX_STORE_DIR") or "/nix/store"
    if not nar_hash.startswith("sha256-"):
        return None
    try:
        raw = base64.b64decode(nar_hash.removeprefix("sha256-"), validate=True)
    except ValueError:
        return None
    if len(raw) != 32:
        return None
    fingerprint = f"source:sha256:{raw.hex()}:{store}:source"
    full = hashlib.sha256(fingerprint.encode()).digest()
    folded = bytearray(20)
    for i, byte in enumerate(full):
        folded[i % 20] ^= byte
    return f"{store}/{_nix_base32(bytes(folded))}-source"


def _lock(root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The nodes of the project's flake.lock and its root node's inputs ({} for none)."""
    try:
        lock = json.loads((root / "flake.lock").read_text(encoding="utf-8"))
        nodes = lock["nodes"]
        inputs = nodes[lock["root"]]["inputs"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}, {}
    if not isinstance(nodes, dict) or not isinstance(inputs, dict):
        return {}, {}
    return nodes, inputs


def _nar(nodes: dict[str, Any], node: Any) -> str | None:
    nar = (
        ((nodes.get(node) or {}).get("locked") or {}).get("narHash")
        if isinstance(node, str)
        else None
    )
    return nar if isinstance(nar, str) else None


def _locked(root: Path) -> dict[str, str]:
    """The NAR hash of each root input that the project's flake.lock locks."""
    nodes, inputs = _lock(root)
    out: dict[str, str] = {}
    for name, node in inputs.items():
        nar = _nar(nodes, node)
        if nar is not None:
            out[name] = nar
    return out


def _below(nodes: dict[str, Any], node: Any, seen: set[str]) -> list[str]:
    """The lock nodes `node` takes as inputs, directly or further down (not `follows`,
    which name a node of another path)."""
    out = []
    inputs = (nodes.get(node) or {}).get("inputs") if isinstance(node, str) else None
    for child in (inputs or {}).values() if isinstance(inputs, dict) else ():
        if isinstance(child, str) and child not in seen:
            seen.add(child)
            out += [child, *_below(nodes, child, seen)]
    return out


def missing_inputs(
    root: Path,
    overridden: Iterable[str],
    library: Library = COPY,
    inputs: dict[str, str] | None = None,
) -> list[tuple[str, str]]:
    """The inputs (name, reference) of the flake at `root` that an offline run cannot
    have: neither in `overridden` nor locked in flake.lock and in the store. `inputs` are
    the flake's, by default the generated flake's (`flake_inputs`, with `library`); for a
    kept flake (`inputs` given) what its flake.lock locks below a locked input must be in
    the store too."""
    given = set(overridden)
    nodes, roots = _lock(root)
    missing = []
    for name, ref in sorted((inputs if inputs is not None else flake_inputs(library)).items()):
        if name in given:
            continue
        nar = _nar(nodes, roots.get(name))
        path = source_path(nar) if nar is not None else None
        if path is None or not os.path.exists(path):
            missing.append((name, ref))
            continue
        if inputs is None:
            continue
        for node in _below(nodes, roots.get(name), set()):
            below = _nar(nodes, node)
            found = source_path(below) if below is not None else None
            if found is None or not os.path.exists(found):
                missing.append((name, f"{ref}, whose locked input `{node}` is not in the store"))
                break
    return missing


def check_inputs(root: Path, overridden: Iterable[str], library: Library = COPY) -> None:
    """Raise `NixgenError` naming the inputs an offline build of the flake at `root`
    cannot have (`missing_inputs`): the generated flake's, or those a hand-written
    flake.nix declares (`kept_flake_inputs`); when those cannot be read, warn that they
    are not checked."""
    if is_generated(root / "flake.nix"):
        missing = missing_inputs(root, overridden, library)
        if missing:
            raise NixgenError(missing_message(missing))
        return
    found = kept_flake_inputs(root)
    if isinstance(found, str):
        console.err(
            f"nixgen: warning: --offline cannot check the inputs of the hand-written "
            f"{root / 'flake.nix'} that nixgen keeps ({found}): an input missing from the Nix "
            "store fails in Nix's evaluation"
        )
        return
    missing = missing_inputs(root, overridden, inputs=found)
    if missing:
        raise NixgenError(
            missing_message(missing)
            + f" (the inputs of the hand-written {root / 'flake.nix'} nixgen keeps)"
        )


#: The largest flake.nix read for its inputs.
MAX_FLAKE = 256 * 1024


def kept_flake_inputs(root: Path) -> dict[str, str] | str:
    """The inputs (name → URL) a hand-written flake.nix at `root` declares in its
    top-level `inputs` (`inputs = { NAME.url = "…"; … }`, `inputs.NAME.url = "…"`,
    `NAME = { url = "…"; … }`); an input that only `follows` another is left out. A
    string says why they cannot be read (not a file nixgen reads, or `inputs` beyond
    what `nixgen.core.nixexpr` reads)."""
    data = paths.read_file(root / "flake.nix", limit=MAX_FLAKE)
    if data is None or isinstance(data, paths.Blocked):
        return f"flake.nix {data or 'is gone'}"
    try:
        items = nixexpr.tokens(data.decode("utf-8"))
    except UnicodeDecodeError:
        return "it is not UTF-8"
    declared: dict[str, Any] = {}
    depth, lets, at = 0, 0, 0
    try:
        while at < len(items):
            token = items[at]
            if token.kind == "punct" and token.text in ("{", "[", "("):
                depth += 1
            elif token.kind == "punct" and token.text in ("}", "]", ")"):
                depth -= 1
            elif token.kind == "name" and token.text == "let":
                lets += 1
            elif token.kind == "name" and token.text == "in" and lets:
                lets -= 1
            elif (
                depth == 1
                and not lets
                and token.kind == "name"
                and token.text == "inputs"
                and at > 0
                and items[at - 1].text in ("{", ";")
            ):
                at = _read_inputs(items, at, declared)
                continue
            at += 1
    except nixexpr.Unsupported as exc:
        return f"its inputs are beyond what nixgen reads: {exc}"
    urls = {}
    for name, value in declared.items():
        if isinstance(value, dict) and isinstance(value.get("url"), str):
            urls[name] = value["url"]
        elif not isinstance(value, dict):
            return f"input `{name}` is not a set"
    return urls


def _read_inputs(items: list[nixexpr.Token], at: int, declared: dict[str, Any]) -> int:
    """Read the binding `inputs… = VALUE;` at `at` into `declared`; the index after it."""
    parser = nixexpr.Parser(items, at + 1)
    path: list[str] = []
    while parser.punct("."):
        parser.at += 1
        token = parser.peek()
        if token is None or token.kind not in ("name", "string"):
            raise nixexpr.Unsupported(f"line {items[at].line}: an input name")
        path.append(nixexpr.string_value(token) if token.kind == "string" else token.text)
        parser.at += 1
    parser.take("=")
    evaluator = nixexpr.Evaluator()
    value = evaluator.deep(nixexpr.evaluate(parser.expr(), evaluator))
    parser.take(";")
    for part in reversed(path):
        value = {part: value}
    _merge(declared, value if isinstance(value, dict) else {})
    return parser.at


def _merge(into: dict[str, Any], value: dict[str, Any]) -> None:
    for key, item in value.items():
        if isinstance(item, dict) and isinstance(into.get(key), dict):
            _merge(into[key], item)
        else:
            into[key] = item


def notes(report: Sequence[str], *, offline: bool) -> list[str]:
    """The notes after a failed run's `report` lines (`network_note`, unless the run
    was already offline; `failure_notes`)."""
    note = None if offline else network_note(report)
    return [*([note] if note else []), *failure_notes(report)]


def missing_message(missing: Sequence[tuple[str, str]]) -> str:
    """The one-line error for `missing_inputs`."""
    names = ", ".join(f"`{name}` ({ref})" for name, ref in missing)
    flags = " ".join(f"--override-input {name} path:DIR" for name, _ in missing)
    return (
        f"--offline: the flake input{'s' if len(missing) > 1 else ''} {names} "
        f"{'are' if len(missing) > 1 else 'is'} not in the Nix store and cannot be fetched "
        f"offline; pass {flags} (or set them in nixgen.toml's [override-input]; "
        f"`{SCRIPT} DIR` lays out nixgen's test stand-ins), or build once with a network"
    )


#: Nix's words for a download that failed (no network, no DNS).
_DOWNLOAD = re.compile(r"unable to download '([^']+)'|Couldn't resolve host|timed out")


def network_note(messages: Iterable[str]) -> str | None:
    """A note for a run that failed because Nix could not download something."""
    for message in messages:
        match = _DOWNLOAD.search(message)
        if match:
            what = f" ({match.group(1)})" if match.group(1) else ""
            return (
                f"nixgen: note: Nix could not download{what}: without a network, build with "
                "--offline and local inputs (--override-input NAME path:DIR, or nixgen.toml's "
                f"[override-input]); `{SCRIPT} ~/nixgen-offline >> nixgen.toml` lays out "
                "nixgen's test stand-ins there and names them (it prints the sandbox setting "
                "they need), then `nixgen build --offline`"
            )
    return None


#: The builder the nixpkgs stand-in names when its host.nix was never written.
_NO_HOST = "host.nix-is-missing"


#: Nix's words when a derivation's builder is not in the sandbox: a host program (only the
#: stand-ins build with one; real nixpkgs' builders are in the store).
_HOST_BUILDER = re.compile(r"executing '(/(?!nix/store/)[^']*)': No such file or directory")


def failure_notes(lines: Iterable[str]) -> list[str]:
    """Notes for a failed build's report `lines`: a nixpkgs stand-in used as it is in
    nixgen's checkout, without the host.nix that `scripts/offline-inputs.sh` writes; a
    stand-in's host program that the Nix sandbox does not let in (no `extra-sandbox-paths`)."""
    lines = list(lines)
    found: list[str] = []
    if any(_NO_HOST in line for line in lines):
        found.append(
            "nixgen: note: the nixpkgs stand-in has no host.nix (the paths of this machine's "
            f"compilers and Python it links to): lay the stand-ins out with `{SCRIPT} DIR` and "
            "point --override-input at that copy"
        )
    host = next((m[1] for m in map(_HOST_BUILDER.search, lines) if m), None)
    if host is not None:
        found.append(
            f"nixgen: note: the build's program {host} is not in the Nix sandbox: the offline "
            "stand-ins build with this machine's tools, which the sandbox must let in; "
            f'`export NIX_CONFIG="$(cat DIR/nix.conf)"` (DIR: where `{SCRIPT} DIR` laid them '
            "out), or add that file's `extra-sandbox-paths` line to nix.conf"
        )
    return found
