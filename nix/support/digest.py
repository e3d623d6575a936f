"""The digest of a built variant, as the `kernels` client computes and checks it.

Run in every variant's build (support/variant-check-hook.sh) and by `nixgen.provenance.stamp`,
with the build's own Python (the standard library only):

    python3 digest.py write VARIANT [--metadata BASE]   # VARIANT/metadata.json gets `digest`
    python3 digest.py show VARIANT                      # the digest, as JSON, on stdout

`write` reads the metadata from BASE (default: VARIANT/metadata.json), sets its `digest` to
the one of VARIANT's files and writes it to VARIANT/metadata.json (one line of JSON, keys
sorted, as nixgen's other metadata.json files). Since 0.18.3 the client checks that digest on
every load (`DigestValidator`): a missing one is a warning, any difference an error.

The rule is the client's `Digest.hash_variant` (kernels-common/src/digest.rs; the facts are
in docs/trust.md), which every build checks against the client itself:

1. The variant directory is walked recursively. Its root may be a symbolic link (followed);
   links to directories inside it are not descended into.
2. An entry is kept when, with links resolved, it is a regular file: a link to a file
   (inside the variant or not) is kept under the link's own path and hashed with the
   target's bytes; a dangling link is an error, as in the client. Directories (empty ones
   included), devices, sockets and pipes are not recorded, nor are modes or times.
3. Left out: `metadata.json` and `metadata.json.sigstore` directly in the variant (the same
   names deeper down are hashed); every path with a component `__pycache__` (the client
   looks at the whole path as given, the variant's own location included); every file whose
   extension is `pyc` (`x.pyc`, not a file named `.pyc`).
4. Each kept file's bytes are hashed with SHA-256 (the algorithm `kernel-builder hash` always
   uses), and the raw digest is written in standard base64 with padding (44 characters).
5. The key is the path relative to the variant, `/`-separated (a `\\` in a name becomes `/`,
   as the client normalises Windows paths); a name that is not UTF-8 is decoded with
   replacement characters, as Rust's `to_string_lossy`. The map is `{"algorithm": "sha256",
   "files": {key: hash}}`, keys sorted.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

ALGORITHM = "sha256"
#: Files directly in the variant that are not hashed: the metadata holds the digest, and
#: its signature bundle signs the metadata.
UNHASHED = ("metadata.json", "metadata.json.sigstore")
#: Python writes bytecode next to a package when it imports it; none of it is hashed.
BYTECODE_DIR = "__pycache__"
BYTECODE_EXTENSION = "pyc"
#: Bytes read at a time (extension modules can be large).
CHUNK = 1 << 16


class DigestError(Exception):
    """A variant whose digest cannot be computed (a dangling link, an unreadable file)."""


def _key(relative: bytes) -> str:
    """The client's key of a relative path: lossy UTF-8, `\\` made `/`."""
    return relative.decode("utf-8", errors="replace").replace("\\", "/")


def _extension(name: bytes) -> bytes | None:
    """A file name's extension as Rust's `Path::extension` gives it: the part after the last
    dot, none for a name without a dot or a name whose only dot leads it (`.pyc`)."""
    dot = name.rfind(b".")
    if dot <= 0:
        return None
    return name[dot + 1 :]


def _hash(path: bytes) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
    except OSError as exc:
        raise DigestError(f"cannot read {os.fsdecode(path)} for hashing: {exc.strerror}") from None
    return base64.b64encode(digest.digest()).decode("ascii")


def files(variant: str | os.PathLike[str]) -> dict[str, str]:
    """Relative path → base64 SHA-256 of every file the client hashes in `variant`."""
    root = os.fsencode(variant)
    # The client resolves every entry before it applies a rule (a dangling link fails the
    # whole digest, wherever it is), then tests every component of the path as given: the
    # root's own components count too.
    under_bytecode = BYTECODE_DIR in Path(os.fsdecode(root)).parts
    _resolve(root)
    out: dict[str, str] = {}
    pending: list[bytes] = [b""]
    while pending:
        relative = pending.pop()
        folder = os.path.join(root, relative) if relative else root
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError as exc:
            raise DigestError(f"cannot list {os.fsdecode(folder)}: {exc.strerror}") from None
        for entry in entries:
            name = entry.name
            inner = os.path.join(relative, name) if relative else name
            path = os.path.join(root, inner)
            mode = _resolve(path)
            if entry.is_dir(follow_symlinks=False):
                pending.append(inner)
                continue
            if (
                not stat.S_ISREG(mode)
                or (not relative and os.fsdecode(name) in UNHASHED)
                or under_bytecode
                or BYTECODE_DIR.encode() in inner.split(b"/")
                or _extension(name) == BYTECODE_EXTENSION.encode()
            ):
                continue
            out[_key(inner)] = _hash(path)
    return dict(sorted(out.items()))


def _resolve(path: bytes) -> int:
    """The mode of what `path` names, links followed; a dangling link is an error."""
    try:
        return os.stat(path).st_mode
    except OSError as exc:
        raise DigestError(f"{os.fsdecode(path)}: {exc.strerror}") from None


def digest(variant: str | os.PathLike[str]) -> dict[str, Any]:
    """`metadata.json`'s `digest` of `variant`."""
    return {"algorithm": ALGORITHM, "files": files(variant)}


def encode(metadata: dict[str, Any]) -> str:
    """A metadata.json's text: one line of JSON, keys sorted (as Nix's `builtins.toJSON`)."""
    return json.dumps(metadata, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


def write(variant: Path, base: Path | None = None) -> dict[str, Any]:
    """Write `variant`/metadata.json: `base` (default: that file) with the variant's digest."""
    source = base if base is not None else variant / "metadata.json"
    try:
        metadata = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DigestError(f"{source}: cannot read the metadata ({exc})") from None
    if not isinstance(metadata, dict):
        raise DigestError(f"{source}: the metadata is not a JSON object")
    metadata["digest"] = digest(variant)
    target = variant / "metadata.json"
    partial = variant / ".metadata.json.partial"
    partial.write_text(encode(metadata), encoding="utf-8")
    os.chmod(partial, 0o644)
    os.replace(partial, target)
    return metadata


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    write_parser = verbs.add_parser("write", help="write the digest into VARIANT/metadata.json")
    write_parser.add_argument("variant", type=Path)
    write_parser.add_argument("--metadata", type=Path, help="the metadata to add it to")
    show_parser = verbs.add_parser("show", help="print the digest of VARIANT as JSON")
    show_parser.add_argument("variant", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.verb == "write":
            recorded = write(args.variant, args.metadata)["digest"]["files"]
            print(f"nixgen: digest of {len(recorded)} file(s) written to metadata.json")
        else:
            print(json.dumps(digest(args.variant), indent=2, sort_keys=True))
    except DigestError as exc:
        print(f"nixgen: digest: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
