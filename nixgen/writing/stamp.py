"""The render stamp: lets an unchanged project re-render in the time Python takes to start.

After a render, nixgen writes a stamp into its cache directory (``$XDG_CACHE_HOME/nixgen``
or ``~/.cache/nixgen``; nothing is added to the project). It records
what the output was computed from — nixgen's own code, the build.toml bytes, the files the
project lists (they must exist) — and the digest of every file written. Before importing
anything heavy, `nixgen render` checks the stamp: when every input and every output is as
recorded, there is nothing to do. Any doubt (a changed byte, a new file, a symlink, an
unusual option) falls back to the full pipeline, which is always correct.

The fast path makes every check a full render of an unchanged project makes: paths are
read by the rule of `nixgen.core.paths` (no link followed, no FIFO opened, bounded reads), the
output directory and every directory holding a listed file must be real directories,
no swap leftover may be waiting for recovery, and a directory's mode or ownership change
(its ctime) counts as a change, like a new entry (its mtime).

This module must stay import-light: stdlib only, nothing from the rest of nixgen except
the version, `nixgen.core.paths` and `nixgen.core.marker`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Callable
from typing import Any

from nixgen import __version__
from nixgen.core import paths
from nixgen.core.marker import is_generated

_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def code_digest() -> str:
    """A digest of everything of nixgen's own that a render reads: its version, its Python
    files, templates and data tables (`nixgen/`), and the Nix library it vendors
    (`nixgen/nixlib`, its unit tests left out), from names, sizes and mtimes: a changed
    nixgen never trusts an old stamp."""
    h = hashlib.sha256(__version__.encode())
    lib = os.path.join(_PACKAGE, "nixlib")
    for base, skip in ((_PACKAGE, {"nixlib"}), (lib, {"tests", "data"})):
        for rel, dirnames, filenames in paths.walk(base):
            dirnames[:] = [d for d in dirnames if d != "__pycache__" and (rel or d not in skip)]
            for name in filenames:
                if name.endswith(".pyc") or (not rel and name in skip):
                    continue
                st = os.stat(os.path.join(base, rel, name))
                h.update(f"{base}/{rel}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def location(root: str | os.PathLike[str], out_dir: str) -> str:
    """Where the stamp of (`root`, `out_dir`) lives in the cache directory."""
    base = paths.cache_home()  # an OSError when there is none: no stamp
    key = _digest(os.fsencode(os.path.realpath(root)) + b"\0" + os.fsencode(out_dir))[:32]
    return os.path.join(base, "nixgen", "stamps", f"{key}.json")


def save(root: str | os.PathLike[str], out_dir: str, data: bytes) -> None:
    """Store a stamp; a cache that cannot be written is simply not used."""
    try:
        path = location(root, out_dir)
    except OSError:
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # a full disk: no half-written stamp left behind


def forget(root: str | os.PathLike[str], out_dir: str) -> None:
    """Remove the stamp of (`root`, `out_dir`), if any."""
    with contextlib.suppress(OSError):
        os.unlink(location(root, out_dir))


def _dir_state(
    root: str | os.PathLike[str],
    rel: str,
    mode_of: Callable[[str], int | None] | None = None,
) -> str:
    """What validation depends on in one directory: it is reached through real
    directories only, and its entries (mtime) and mode/owner (ctime) are as they were.
    `mode_of` is `nixgen.core.paths.cached_modes` when one pass looks at many directories."""
    mode_of = mode_of or paths.cached_modes()
    if rel != "." and paths.check_dirs(root, f"{rel}/x", mode_of=mode_of) is not None:
        raise OSError(f"{rel}: not reached through real directories")
    info = os.lstat(os.path.join(root, rel))
    if not stat.S_ISDIR(info.st_mode):
        raise OSError(f"{rel}: not a directory")
    return f"{info.st_ino}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_mode}"


def parent_states(root: str | os.PathLike[str], files: list[str]) -> dict[str, str]:
    """The state of every directory holding a listed file, and of every directory under
    a listed directory (a Rust `src`, the Python package): adding, removing or replacing
    an entry changes it, so checking a handful of directories stands for checking every
    file (what file validation depends on is existence, not content)."""
    root = os.fspath(root)
    # Each directory holding listed files is listed once (which of them are directories),
    # and each directory on the way is looked at once: not one lstat per file.
    mode_of = paths.cached_modes()
    listings: dict[str, dict[str, bool] | None] = {}
    parents = {os.path.dirname(rel) or "." for rel in files}
    for rel in files:
        names = paths.parts(rel)
        parent = "/".join(names[:-1])
        if parent not in listings:
            listings[parent] = _listing(root, parent, mode_of)
        entries = listings[parent]
        if entries is not None and names:
            is_dir = entries.get(names[-1], False)
        else:  # a directory that cannot be listed (no read permission), or the root
            found = paths.lstat_under(root, rel, mode_of=mode_of)
            is_dir = isinstance(found, os.stat_result) and stat.S_ISDIR(found.st_mode)
        if is_dir:
            top = os.path.join(root, *names)
            parents.update(
                os.path.join(rel, sub) if sub else rel.rstrip("/")
                for sub, _, _ in paths.walk(top, onerror=_unlistable)
            )
    return {rel: _dir_state(root, rel, mode_of) for rel in sorted(parents)}


def _listing(root: str, rel: str, mode_of: Callable[[str], int | None]) -> dict[str, bool] | None:
    """Whether each entry of the directory `rel` is a directory (links are not), empty
    when `rel` is missing or not reached through real directories; None when it cannot
    be listed."""
    if paths.check_dirs(root, rel, last=True, mode_of=mode_of) is not None:
        return {}
    try:
        with os.scandir(os.path.join(root, rel) if rel else root) as entries:
            return {entry.name: entry.is_dir(follow_symlinks=False) for entry in entries}
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError:
        return None


def _unlistable(rel: str, exc: OSError) -> None:
    raise exc  # no stamp: the full render reports it


def make(
    *,
    root: str | os.PathLike[str],
    build_toml: bytes,
    out_dir: str,
    files: list[str],
    dirs: list[str],
    outputs: dict[str, bytes],
    skipped: list[str],
    messages: str,
    parents: dict[str, str] | None = None,
) -> bytes:
    """The stamp's bytes. `outputs` maps project-relative paths to the bytes written;
    `skipped` lists hand-written root files nixgen left alone; `messages` is what the full
    render printed (warnings), replayed by the fast path; `parents` is `parent_states`
    taken before the files were validated (taken now when not given)."""
    data = {
        "code": code_digest(),
        "input": _digest(build_toml),
        "out": out_dir,
        "files": sorted(files),
        "dirs": sorted(dirs),
        "parents": parents if parents is not None else parent_states(root, files),
        "outputs": {path: _digest(data) for path, data in sorted(outputs.items())},
        "skipped": sorted(skipped),
        "messages": messages,
    }
    return (json.dumps(data, indent=1, sort_keys=True) + "\n").encode()


def _read(path: str) -> bytes:
    """A regular file's bytes (following links: build.toml may be one), without
    blocking on a FIFO and without reading more than `paths.MAX_READ`."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > paths.MAX_READ:
            raise OSError(f"{path}: not a regular file of a sensible size")
        data = os.read(fd, paths.MAX_READ + 1)
        if len(data) > paths.MAX_READ:
            raise OSError(f"{path}: too large")
        return data
    finally:
        os.close(fd)


def fresh(root: str | os.PathLike[str], out_dir: str) -> dict[str, Any] | None:
    """The stamp of `root` when everything it records still holds, else None.

    The checks are cheapest first (a render after an edit, or after the output was
    removed, is told apart before nixgen's own files are walked)."""
    root = os.fspath(root)
    try:
        stamp: dict[str, Any] = json.loads(_read(location(root, out_dir)))
        if stamp.get("out") != out_dir:
            return None
        if stamp["input"] != _digest(_read(os.path.join(root, "build.toml"))):
            return None
        parents: dict[str, str] = stamp["parents"]
        mode_of = paths.cached_modes()
        for rel, state in parents.items():
            if _dir_state(root, rel, mode_of) != state:
                return None
        if not all(_is_dir_under(root, rel) for rel in stamp["dirs"]):
            return None
        out = os.path.join(root, out_dir)
        if not _is_dir_under(root, out_dir) or _leftovers(out):
            return None  # the full render refuses a linked output, or recovers a swap
        if stamp.get("code") != code_digest():
            return None
        outputs: dict[str, str] = stamp["outputs"]
        for rel, digest in outputs.items():
            data = paths.read_under(root, rel)
            if not isinstance(data, bytes) or _digest(data) != digest:
                return None
        for rel in stamp["skipped"]:
            # A kept hand-written file that is gone or now generated: render writes it.
            path = os.path.join(root, rel)
            if not os.path.lexists(path) or is_generated(path):
                return None
        for rel_dir, _, filenames in paths.walk(out):
            for name in filenames:
                rel = os.path.join(out_dir, rel_dir, name) if rel_dir else f"{out_dir}/{name}"
                if os.path.normpath(rel) not in outputs and is_generated(os.path.join(root, rel)):
                    return None  # a stale generated file the full render would remove
        return stamp
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


def _is_dir_under(root: str, rel: str) -> bool:
    """`rel` is a real directory reached from `root` through real directories only."""
    found = paths.lstat_under(root, rel)
    return isinstance(found, os.stat_result) and stat.S_ISDIR(found.st_mode)


def _leftovers(out: str) -> bool:
    """Whether a killed render left something the full render would clean up first."""
    parent, name = os.path.split(out.rstrip("/"))
    try:
        names = os.listdir(parent or ".")
    except OSError:
        return True
    return any(n == f".nixgen-old-{name}" or n.startswith(".nixgen-staging-") for n in names)
