"""The one writer of nixgen: every file or directory nixgen creates, replaces or removes on
disk goes through this module (ruff's banned-api list and `tests/test_one_writer.py` fail
when another module of nixgen calls a writing function of `os`, `shutil`, `tempfile` or
`pathlib`, or opens a file for writing).

The rules, for a directory `root` that is the boundary (a project; for `nixgen init`, the
new project's directory):

* **Reached without links.** A path is walked from `root` one directory at a time with
  ``O_NOFOLLOW``, holding a descriptor of each: a symbolic link, a file or a special file
  on the way is refused (a missing directory is made), so no link planted anywhere can send
  a write out of `root`, and what happens after the walk happens in the directory walked.
* **Fresh files, renamed into place.** A file is written as a new temporary file
  (``O_CREAT|O_EXCL|O_NOFOLLOW``, a random name) in the target's own directory, flushed to
  disk, given its mode and renamed over the target, the directory then flushed too: a
  reader sees the old file or the new one. A planted ``.nixgen-tmp-*`` link is never
  opened (``O_EXCL`` refuses an existing name; another name is drawn).
* **Only regular files are replaced.** A directory, FIFO, device or socket where a file
  goes is refused; a symbolic link is replaced (the link itself, its target never written)
  only when the caller says so (``--force``).
* **Several changes are one transaction** (`Transaction`: the generated tree, `flake.nix`,
  `nixgen.toml`, `flake.nix.orig`): everything is staged first, then a journal naming the
  staged entries is written (`JOURNAL`), then they are moved into place and the journal
  removed. A run killed before the journal leaves only staged entries, which the next run
  removes (nothing changed); one killed after it is completed by the next (`recover`), so
  the files that change together are never seen half changed by a later run.
* **One writer per project at a time** (`project_lock`, reentrant in a thread).
* **No traceback.** Every ``OSError`` becomes a `WriteError` naming the path.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import json
import os
import stat
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from nixgen.core import paths
from nixgen.core.errors import OutputError, printable

#: Prefix of the temporary files renamed into place (and of their leftovers).
TMP = ".nixgen-tmp-"
#: Prefix of a staged tree, next to the tree it replaces.
STAGING = ".nixgen-staging-"
#: Prefix of a tree moved aside by the two-rename exchange (no ``renameat2``).
OLD = ".nixgen-old-"
#: The journal of a transaction being committed, in the project root.
JOURNAL = ".nixgen-journal"
#: The largest journal read back (a journal names a handful of entries).
_MAX_JOURNAL = 64 * 1024

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_RENAME_EXCHANGE = 2


class WriteError(OutputError):
    """Something could not be written; the message names the path and why."""


def _token(size: int) -> str:
    """A random name part (`size` random bytes in hex) for a temporary entry."""
    return os.urandom(size).hex()


def _reached(step: str) -> None:
    """Called after each step of a commit (``staged``, ``journal``, ``tree`` and, without
    ``renameat2``, ``tree:moved aside`` and ``tree:renamed`` before it, ``file:<path>``,
    ``done``): the fault-injection point of the crash tests, a no-op otherwise."""


def _fail(where: str, exc: OSError, doing: str = "cannot write") -> WriteError:
    """`exc`, raised on `where`, as one clear error (no traceback)."""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENAMETOOLONG:
        reason += f": a name is over {paths.NAME_MAX} bytes, or the whole path too long"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        reason = "permission denied (is the directory read-only, or not yours?)"
    elif exc.errno == errno.EROFS:
        reason = "read-only file system"
    return WriteError(f"{where}: {doing}: {reason}")


# --------------------------------------------------------------------------- directories


def _open_root(root: Path | str) -> int:
    try:
        return os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except OSError as exc:
        raise _fail(str(root), exc, "cannot open the directory") from None


def _open_at(fd: int, names: list[str], *, create: bool, shown: str, mode: int = 0o777) -> int:
    """A descriptor of `names` under the directory `fd` (which stays open), each reached
    with O_NOFOLLOW; missing ones are made when `create`, else FileNotFoundError."""
    current = os.dup(fd)
    try:
        for index, name in enumerate(names):
            where = os.path.join(shown, *names[: index + 1])
            try:
                nxt = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=current)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(name, mode, dir_fd=current)
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise _fail(where, exc, "cannot make the directory") from None
                try:
                    nxt = os.open(
                        name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=current
                    )
                except OSError as exc:
                    raise _refused(current, name, where, exc) from None
            except OSError as exc:
                raise _refused(current, name, where, exc) from None
            os.close(current)
            current = nxt
        return current
    except BaseException:
        os.close(current)
        raise


def _refused(dirfd: int, name: str, where: str, exc: OSError) -> WriteError:
    """Why the directory `name` could not be entered: a link, a file, or `exc`."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        try:
            mode = os.stat(name, dir_fd=dirfd, follow_symlinks=False).st_mode
        except OSError:
            mode = stat.S_IFLNK
        if stat.S_ISLNK(mode):
            return WriteError(
                f"{where}: is a symbolic link; nixgen writes only into real directories "
                "inside the project and never through a link (remove the link)"
            )
        return WriteError(
            f"{where}: {paths.kind(mode) if not stat.S_ISREG(mode) else 'is a file'}, not a "
            "directory (move it away)"
        )
    return _fail(where, exc, "cannot open the directory")


def _check_length(root: Path | str, rel: str) -> None:
    """Refuse a path longer than the system takes (nixgen could make it one directory at
    a time, but nothing could then name it)."""
    too_long = paths.length_problem(rel, str(root))
    if too_long is not None:
        shown = os.path.join(str(root), rel)
        shown = shown if len(shown) < 200 else shown[:200] + "…"
        raise WriteError(f"{printable(shown)}: cannot write: File name too long ({too_long})")


@contextlib.contextmanager
def directory(root: Path | str, rel_dir: str = "", *, create: bool = True) -> Iterator[int]:
    """A descriptor of the directory `rel_dir` under `root`, reached without following any
    link (missing directories made when `create`); `WriteError` otherwise."""
    _check_length(root, rel_dir)
    top = _open_root(root)
    try:
        fd = _open_at(top, paths.parts(rel_dir), create=create, shown=str(root))
    except FileNotFoundError as exc:
        raise _fail(os.path.join(str(root), rel_dir), exc, "cannot open the directory") from None
    finally:
        os.close(top)
    try:
        yield fd
    finally:
        os.close(fd)


def make_dirs(root: Path | str, rel_dir: str) -> None:
    """Make the directory `rel_dir` under `root` (and those above it), through no link."""
    with directory(root, rel_dir):
        pass


def make_user_dirs(path: Path) -> None:
    """``mkdir -p`` of a directory the user named on the command line (`nixgen init`'s
    parent directories: no project exists there yet)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _fail(str(path), exc, "cannot make the directory") from None


# --------------------------------------------------------------------------- one file


def _mode_at(dirfd: int, name: str) -> int | None:
    try:
        return os.stat(name, dir_fd=dirfd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None


def _check_replaceable(mode: int | None, where: str, *, replace_link: bool) -> None:
    if mode is None or stat.S_ISREG(mode):
        return
    if stat.S_ISLNK(mode):
        if replace_link:
            return
        raise WriteError(
            f"{where}: is a symbolic link; nixgen never writes through a link and replaces "
            "one only with --force (remove it, or choose another path)"
        )
    raise WriteError(
        f"{where}: {paths.kind(mode)}; nixgen replaces only regular files (move it away, or "
        "choose another path)"
    )


def _stage(dirfd: int, data: bytes, mode: int, where: str) -> str:
    """A fresh temporary file in the directory `dirfd` holding `data`, flushed to disk and
    given `mode`; its name."""
    for _ in range(100):
        name = f"{TMP}{_token(8)}"
        try:
            fd = os.open(
                name,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC,
                0o600,
                dir_fd=dirfd,
            )
        except FileExistsError:
            continue  # a leftover, or planted: never opened, another name is drawn
        except OSError as exc:
            raise _fail(where, exc) from None
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
            _fsync_file(fd)
        except OSError as exc:
            os.close(fd)
            _unlink_quietly(dirfd, name)
            raise _fail(where, exc) from None
        except BaseException:
            os.close(fd)
            _unlink_quietly(dirfd, name)
            raise
        os.close(fd)
        return name
    raise WriteError(f"{where}: cannot make a temporary file next to it")


def _unlink_quietly(dirfd: int, name: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=dirfd)


def _fsync_file(fd: int) -> None:
    """Flush a staged file to disk (its failure, a full disk, fails the write)."""
    os.fsync(fd)


def _fsync_fd(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.fsync(fd)


def write_file(
    root: Path | str,
    rel: str,
    data: bytes,
    *,
    mode: int = 0o644,
    replace_link: bool = False,
) -> None:
    """Create or replace the file `rel` under `root` with `data`, atomically (see the
    module's rules); `WriteError` when it cannot be."""
    with Transaction(root, lock=False) as tx:
        tx.file(rel, data, mode=mode, replace_link=replace_link)
        tx.commit(journal=False)


def _exchange_at(dirfd: int, a: str, b: str) -> bool:
    """Swap the entries `a` and `b` of the directory `dirfd` atomically; False where the
    system cannot (nothing done)."""
    renameat2 = getattr(_libc(), "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(dirfd, os.fsencode(a), dirfd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    import ctypes

    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), b)


@functools.cache
def _libc() -> Any:
    """The C library through ctypes (for `syncfs` and `renameat2`), or None."""
    import ctypes

    try:
        # The running program's own symbols include libc's; no `find_library`, which
        # spawns `ldconfig` and costs more than the whole write.
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


class Changed(Exception):
    """The file changed on disk between the moment it was read and its replacement."""


def replace_unchanged(
    root: Path | str, rel: str, data: bytes, *, expected: bytes, mode: int
) -> None:
    """Replace the file `rel` under `root` by `data` only if it still holds `expected`: an
    edit saved meanwhile (written in place, or renamed over it as editors do) is never
    lost (`nixgen migrate`).

    The new file is staged next to it and swapped in with one atomic
    ``renameat2(RENAME_EXCHANGE)``; the file that comes out is then compared with
    `expected`, and when it differs the two are swapped back (the edit is in place again)
    and `Changed` is raised. Where the exchange is not available, the file is compared
    just before an ordinary rename (a window of microseconds)."""
    parent, _, name = rel.rpartition("/")
    where = os.path.join(str(root), rel)
    with directory(root, parent, create=False) as dirfd:
        _check_replaceable(_mode_at(dirfd, name), where, replace_link=False)
        tmp = _stage(dirfd, data, mode, where)
        try:
            limit = max(len(expected), 1) + 1
            if _exchange_at(dirfd, tmp, name):
                if _read_at(dirfd, tmp, limit) != expected:
                    _exchange_at(dirfd, tmp, name)  # the edit goes back into place
                    raise Changed(where)
                os.unlink(tmp, dir_fd=dirfd)
            else:
                if _read_at(dirfd, name, limit) != expected:
                    raise Changed(where)
                os.rename(tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
        except OSError as exc:
            _unlink_quietly(dirfd, tmp)
            raise _fail(where, exc) from None
        except BaseException:
            _unlink_quietly(dirfd, tmp)
            raise
        _fsync_fd(dirfd)


def _read_at(dirfd: int, name: str, limit: int) -> bytes | None:
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, dir_fd=dirfd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks) if size <= limit else None
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- the lock

_held: dict[tuple[int, int, int], int] = {}


@contextlib.contextmanager
def project_lock(root: Path | str) -> Iterator[None]:
    """Serialise the writers of one project: two nixgen runs on it (two renders, a render
    and a `compdb`) take turns, each holding the lock from before it reads the settings
    it writes by to after its last write, so what one run writes together is never mixed
    with the other's.

    The lock is taken on the project directory itself (``flock``): no lock file is left
    behind or can be planted, and unlike build.toml the directory keeps its inode when an
    editor (or `nixgen migrate`) replaces build.toml by renaming a new file over it. It is
    reentrant within a thread (a render inside `nixgen build` takes it again). Taking it
    completes a transaction a killed run left half committed (`recover`)."""
    fd = _open_root(root)
    try:
        info = os.fstat(fd)
        key = (threading.get_ident(), info.st_dev, info.st_ino)
        if key in _held:
            _held[key] += 1
            try:
                yield
            finally:
                _held[key] -= 1
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            from nixgen.core import console

            console.status(f"waiting for another nixgen run to finish writing {root}")
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            raise _fail(str(root), exc, "cannot lock the project directory") from None
        _held[key] = 1
        try:
            # What a killed run left half committed is completed first, so that whatever
            # the holder reads (nixgen.toml, nix/, flake.nix) is one run's whole output.
            recover(root)
            yield
        finally:
            del _held[key]
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- transactions


class _File:
    __slots__ = ("data", "expect", "mode", "name", "parent", "rel", "replace_link", "tmp")

    def __init__(
        self, rel: str, data: bytes, mode: int, replace_link: bool, expect: bytes | object | None
    ):
        self.rel = rel
        self.parent, _, self.name = rel.rpartition("/")
        self.data, self.mode, self.replace_link, self.expect = data, mode, replace_link, expect
        self.tmp: str | None = None


#: `Transaction.file`'s `expect` when whatever is there may be replaced.
ANY = object()


class Tree:
    """A directory tree being staged to replace `rel` (`Transaction.tree`): made of fresh
    directories and files only, in a new directory next to `rel`."""

    def __init__(self, root: Path, rel: str, parent_fd: int, staging: str):
        self.rel = rel
        self.parent, _, self.name = rel.rpartition("/")
        self.staging = staging
        self._parent_fd = parent_fd
        #: The staging directory as a path (for `os.link` sources and `paths.walk`).
        self.path = root.joinpath(*paths.parts(self.parent), staging)
        self.inode = os.stat(staging, dir_fd=parent_fd, follow_symlinks=False).st_ino
        self.modes: dict[str, int] = {}

    def _at(self, rel: str) -> str:
        return os.path.join(str(self.path), rel) if rel else str(self.path)

    def make_dir(self, rel: str) -> None:
        os.mkdir(self._at(rel))  # the umask applies, as for any new directory

    def exists(self, rel: str) -> bool:
        try:
            return stat.S_ISDIR(os.lstat(self._at(rel)).st_mode)
        except OSError:
            return False

    def create(self, rel: str, data: bytes) -> None:
        """A new regular file (mode 0644); fails rather than follow or reuse an entry."""
        fd = os.open(
            self._at(rel), os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o644
        )
        try:
            os.fchmod(fd, 0o644)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    def link_from(self, source: Path, rel: str) -> None:
        """Hard-link the entry `source` (a link stays a link) as `rel`: same inode, bytes,
        mode and mtime."""
        os.link(source, self._at(rel), follow_symlinks=False)

    def set_mode(self, rel: str, mode: int) -> None:
        """`rel` (a directory of the staged tree) gets `mode` when the tree is done."""
        self.modes[rel] = mode

    def remove_if_empty(self, rel: str) -> bool:
        if os.listdir(self._at(rel)):
            return False
        os.rmdir(self._at(rel))
        self.modes.pop(rel, None)
        return True

    def _finish(self) -> None:
        """Make the staged tree durable and give its directories their modes."""
        _fsync_tree(self.path)
        for rel, mode in sorted(self.modes.items(), reverse=True):
            os.chmod(self._at(rel), mode)
        if "" not in self.modes:
            os.chmod(self.path, 0o755)

    def _swap(self) -> None:
        """Put the staged tree in place: exchanged with the old tree (which then sits at
        the staging name), or renamed when there was none."""
        fd = self._parent_fd
        if _mode_at(fd, self.name) is None:
            os.rename(self.staging, self.name, src_dir_fd=fd, dst_dir_fd=fd)
        elif not _exchange_at(fd, self.staging, self.name):
            old = f"{OLD}{self.name}"
            os.rename(self.name, old, src_dir_fd=fd, dst_dir_fd=fd)
            _reached("tree:moved aside")
            os.rename(self.staging, self.name, src_dir_fd=fd, dst_dir_fd=fd)
            _reached("tree:renamed")
            os.rename(old, self.staging, src_dir_fd=fd, dst_dir_fd=fd)
        _fsync_fd(fd)


class Transaction:
    """Files and at most one tree that change together, under `root` (see the module's
    rules). Use as a context manager: `commit` puts everything in place; leaving the block
    without it (or by an exception) removes what was staged and changes nothing.

    With `lock` (the default), the project lock is held for the whole block and an
    interrupted earlier transaction is completed first (`recover`)."""

    def __init__(
        self,
        root: Path | str,
        *,
        lock: bool = True,
        cleanup: Iterable[str] = (),
        quiet: bool = False,
    ):
        self.root = Path(root)
        #: No fault-injection steps (`_reached`): the journal's own write.
        self._quiet = quiet
        self._lock = lock
        self._cleanup = list(cleanup)
        self._files: list[_File] = []
        self._unchanged: list[tuple[str, bytes | None]] = []
        self._tree: Tree | None = None
        self._stack = contextlib.ExitStack()
        self._done = False
        #: The journal is written: what is staged belongs to it (`recover` completes it).
        self._journaled = False

    def __enter__(self) -> Transaction:
        if self._lock:
            self._stack.enter_context(project_lock(self.root))
            recover(self.root, self._cleanup)  # the journal is done: the leftovers
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if not self._done:
                self._abort()
        finally:
            self._stack.close()

    def file(
        self,
        rel: str,
        data: bytes,
        *,
        mode: int = 0o644,
        replace_link: bool = False,
        expect: bytes | object | None = ANY,
    ) -> None:
        """Stage `data` for the file `rel` (project-relative). With `expect` (bytes, or
        None for "absent"), the commit is refused when the file holds anything else then."""
        rel = "/".join(paths.parts(rel))
        where = str(self.root / rel)
        _check_length(self.root, rel)
        item = _File(rel, data, mode, replace_link, expect)
        with directory(self.root, item.parent) as dirfd:
            try:
                _check_replaceable(_mode_at(dirfd, item.name), where, replace_link=replace_link)
            except OSError as exc:
                raise _fail(where, exc) from None
            item.tmp = _stage(dirfd, data, mode, where)
        self._files.append(item)

    def tree(self, rel: str) -> Tree:
        """A new, empty staged tree that replaces the directory `rel` at the commit."""
        assert self._tree is None, "one tree per transaction"
        rel = "/".join(paths.parts(rel))
        parent = rel.rpartition("/")[0]
        where = str(self.root / rel)
        top = _open_root(self.root)
        try:
            parent_fd = _open_at(top, paths.parts(parent), create=True, shown=str(self.root))
        finally:
            os.close(top)
        try:
            for _ in range(100):
                staging = f"{STAGING}{_token(6)}"
                try:
                    os.mkdir(staging, 0o700, dir_fd=parent_fd)
                    break
                except FileExistsError:
                    continue
            else:
                raise WriteError(f"{where}: cannot make a staging directory next to it")
            self._tree = Tree(self.root, rel, parent_fd, staging)
        except OSError as exc:
            os.close(parent_fd)
            raise _fail(where, exc) from None
        except BaseException:
            os.close(parent_fd)
            raise
        return self._tree

    def unchanged(self, rel: str, data: bytes | None) -> None:
        """Refuse the commit unless the file `rel` (not written here) still holds `data`
        (None: is absent): what this transaction's content was made from."""
        self._unchanged.append(("/".join(paths.parts(rel)), data))

    def commit(self, *, journal: bool = True) -> None:
        """Put everything staged in place. Files with an `expect` are compared first (a
        mismatch changes nothing). With `journal` (more than one change), a journal is
        written before the first change, so that a run killed in the middle is completed
        by the next one."""
        self._check_expected()
        tree = self._tree
        try:
            if tree is not None:
                tree._finish()
            self._step("staged")
            if journal and (len(self._files) + (tree is not None)) > 1:
                self._write_journal()
                self._journaled = True
                self._step("journal")
            else:
                journal = False
            if tree is not None:
                tree._swap()
                self._step("tree")
            for item in self._files:
                with directory(self.root, item.parent, create=False) as dirfd:
                    assert item.tmp is not None
                    os.rename(item.tmp, item.name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
                    item.tmp = None
                    _fsync_fd(dirfd)
                self._step(f"file:{item.rel}")
            if journal:
                with directory(self.root, "", create=False) as rootfd:
                    os.unlink(JOURNAL, dir_fd=rootfd)
                    _fsync_fd(rootfd)
            self._step("done")
        except OSError as exc:
            raise _fail(
                str(exc.filename or self.root),
                exc,
                "cannot put the output in place; the next nixgen run completes or removes it",
            ) from None
        self._done = True
        if tree is not None:
            remove_tree(tree.path)  # now the old tree
            os.close(tree._parent_fd)
            self._tree = None

    def _step(self, name: str) -> None:
        if not self._quiet:
            _reached(name)

    def _check_expected(self) -> None:
        expected = [(i.rel, i.expect) for i in self._files if i.expect is not ANY]
        for rel, expect in [*expected, *self._unchanged]:
            limit = max(len(expect), 1) if isinstance(expect, bytes) else 1
            current = paths.read_under(self.root, rel, limit=limit)
            if isinstance(current, paths.Blocked) and not current.too_large:
                current = b""  # not a regular file: it is not what was read
            if current != expect:
                raise WriteError(
                    f"{self.root / rel}: changed while nixgen ran; nothing was written (run again)"
                )

    def _write_journal(self) -> None:
        tree = self._tree
        entry: dict[str, Any] = {
            "nixgen-journal": 1,
            "tree": None
            if tree is None
            else {
                "parent": tree.parent,
                "name": tree.name,
                "staging": tree.staging,
                "inode": tree.inode,
            },
            "files": [
                {"parent": item.parent, "name": item.name, "tmp": item.tmp} for item in self._files
            ],
        }
        with Transaction(self.root, lock=False, quiet=True) as tx:
            tx.file(JOURNAL, (json.dumps(entry) + "\n").encode(), mode=0o600)
            tx.commit(journal=False)

    def _abort(self) -> None:
        if self._journaled:  # half committed: the next run completes it from the journal
            if self._tree is not None:
                os.close(self._tree._parent_fd)
                self._tree = None
            return
        for item in self._files:
            if item.tmp is not None:
                with (
                    contextlib.suppress(OutputError),
                    directory(self.root, item.parent, create=False) as dirfd,
                ):
                    _unlink_quietly(dirfd, item.tmp)
        if self._tree is not None:
            remove_tree(self._tree.path)
            os.close(self._tree._parent_fd)
            self._tree = None


def transaction(root: Path | str, *, cleanup: Iterable[str] = ()) -> Transaction:
    """A locked `Transaction` on `root`; `cleanup` are the directories (relative to `root`)
    where an interrupted run may have left staged entries."""
    return Transaction(root, cleanup=cleanup)


# --------------------------------------------------------------------------- recovery


def _journal_name(value: object, prefix: str = "") -> str:
    if not isinstance(value, str) or not value or "/" in value or value in (".", ".."):
        raise ValueError(value)
    if prefix and not value.startswith(prefix):
        raise ValueError(value)
    return value


def _journal_dir(value: object) -> str:
    if not isinstance(value, str) or ".." in value.split("/") or value.startswith("/"):
        raise ValueError(value)
    return "/".join(paths.parts(value))


def recover(root: Path | str, cleanup: Iterable[str] = ()) -> None:
    """Complete a transaction whose journal is in `root` (a run killed while committing),
    then remove what killed runs staged in the directories `cleanup` (relative to `root`):
    staging trees, trees moved aside, temporary files. Call it holding the lock."""
    root = Path(root)
    data = paths.read_under(root, JOURNAL, limit=_MAX_JOURNAL)
    if isinstance(data, paths.Blocked):
        raise WriteError(
            f"{root / JOURNAL}: {data.reason}; nixgen keeps the journal of an interrupted "
            "write there (remove it)"
        )
    if data is not None:
        _complete(root, data)
        from nixgen.core import console

        shown = printable(str(root))
        console.status(f"completed the write of an interrupted nixgen run in {shown}")
    for rel_dir in dict.fromkeys(["", *cleanup]):
        _clean(root, rel_dir)


def _complete(root: Path, data: bytes) -> None:
    where = str(root / JOURNAL)
    try:
        entry = json.loads(data)
        tree = entry["tree"]
        files = [
            (_journal_dir(f["parent"]), _journal_name(f["name"]), _journal_name(f["tmp"], TMP))
            for f in entry["files"]
        ]
        if tree is not None:
            tree = (
                _journal_dir(tree["parent"]),
                _journal_name(tree["name"]),
                _journal_name(tree["staging"], STAGING),
                int(tree["inode"]),
            )
    except (ValueError, KeyError, TypeError):
        raise WriteError(
            f"{where}: is not a journal nixgen wrote; remove it, then run `nixgen render`"
        ) from None
    try:
        if tree is not None:
            parent, name, staging, inode = tree
            try:
                with directory(root, parent, create=False) as fd:
                    _finish_swap(fd, name, staging, inode)
            except WriteError:
                pass  # the directory is gone: nothing of this tree to complete
        for parent, name, tmp in files:
            try:
                with directory(root, parent, create=False) as fd:
                    mode = _mode_at(fd, tmp)
                    if mode is not None and stat.S_ISREG(mode):
                        os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
                        _fsync_fd(fd)
            except WriteError:
                continue  # the directory is gone: nothing of this file to complete
        with directory(root, "", create=False) as fd:
            os.unlink(JOURNAL, dir_fd=fd)
            _fsync_fd(fd)
    except OSError as exc:
        raise _fail(where, exc, "cannot complete the interrupted write it records") from None


def _finish_swap(fd: int, name: str, staging: str, inode: int) -> None:
    """Finish putting the staged tree `staging` (the directory of inode `inode`) in place
    as `name`, in the directory `fd`, whatever step the swap was interrupted at."""
    old = f"{OLD}{name}"
    try:
        staged = os.stat(staging, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return  # swapped, and the old tree removed
    if stat.S_ISDIR(staged.st_mode) and staged.st_ino == inode:  # not swapped yet
        if _mode_at(fd, name) is None:
            os.rename(staging, name, src_dir_fd=fd, dst_dir_fd=fd)
        elif not _exchange_at(fd, staging, name):
            os.rename(name, old, src_dir_fd=fd, dst_dir_fd=fd)
            os.rename(staging, name, src_dir_fd=fd, dst_dir_fd=fd)
        _fsync_fd(fd)


def _clean(root: Path, rel_dir: str) -> None:
    """Remove staged leftovers in `rel_dir`: staging trees and temporary files are
    removed; a tree moved aside (`OLD`) goes back into place when nothing took it."""
    try:
        with directory(root, rel_dir, create=False) as fd:
            names = os.listdir(fd)
            for name in names:
                mode = _mode_at(fd, name)
                if mode is None:
                    continue
                if name.startswith(OLD) and stat.S_ISDIR(mode):
                    target = name[len(OLD) :]
                    if target and _mode_at(fd, target) is None:
                        os.rename(name, target, src_dir_fd=fd, dst_dir_fd=fd)
                    else:
                        remove_tree(root.joinpath(*paths.parts(rel_dir), name))
                elif name.startswith(STAGING) and stat.S_ISDIR(mode):
                    remove_tree(root.joinpath(*paths.parts(rel_dir), name))
                elif name.startswith(TMP) and stat.S_ISREG(mode):
                    _unlink_quietly(fd, name)
    except (OutputError, OSError):
        return  # a directory that is not there (or not reachable) holds no leftovers


# --------------------------------------------------------------------------- trees


def remove_tree(top: str | os.PathLike[str]) -> None:
    """Remove the directory `top` and everything under it, following no link, at any
    depth (``shutil.rmtree`` recurses); errors are ignored, like ``ignore_errors``. Only
    for nixgen's own staged and moved-aside trees."""
    top = os.fspath(top)
    try:
        if not stat.S_ISDIR(os.lstat(top).st_mode):
            return
    except OSError:
        return
    found = list(paths.walk(top))
    for rel, _, files in reversed(found):
        folder = os.path.join(top, rel) if rel else top
        for name in files:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def set_aside(root: Path | str, rel: str) -> str:
    """Rename the entry `rel` under `root` (reached through no link) to a staging name in
    its own directory, in one step, and return that name's path relative to `root`. A
    process that dies before `put_back` or `remove_tree` leaves a staging entry, which the
    next run's `recover` removes."""
    parent, _, name = "/".join(paths.parts(rel)).rpartition("/")
    aside = f"{STAGING}{name}-{_token(4)}-aside"
    with directory(root, parent, create=False) as fd:
        try:
            os.rename(name, aside, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError as exc:
            raise _fail(str(Path(root) / rel), exc, "cannot move aside") from None
        _fsync_fd(fd)
    return f"{parent}/{aside}" if parent else aside


def put_back(root: Path | str, aside: str, rel: str) -> bool:
    """Rename `aside` (from `set_aside`) back to `rel` when nothing has taken its place;
    False (left aside) when something has."""
    parent, _, name = "/".join(paths.parts(rel)).rpartition("/")
    aside_name = aside.rpartition("/")[2]
    with directory(root, parent, create=False) as fd:
        if _mode_at(fd, name) is not None:
            return False
        try:
            os.rename(aside_name, name, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError as exc:
            raise _fail(str(Path(root) / rel), exc, "cannot move back") from None
        _fsync_fd(fd)
    return True


def remove_entry(root: Path | str, rel: str) -> None:
    """Remove the entry `rel` under `root` (a file or link is unlinked, a real directory
    removed with what it holds), reached through no link; errors are ignored."""
    parent, _, name = "/".join(paths.parts(rel)).rpartition("/")
    with contextlib.suppress(OutputError, OSError), directory(root, parent, create=False) as fd:
        mode = _mode_at(fd, name)
        if mode is not None and stat.S_ISDIR(mode):
            remove_tree(Path(root).joinpath(*paths.parts(rel)))
        elif mode is not None:
            os.unlink(name, dir_fd=fd)


def _fsync_tree(top: Path) -> None:
    """Make a staged tree durable before it is swapped in: one `syncfs` of its file system
    where Linux offers it (one call instead of one `fsync` per file)."""
    syncfs = getattr(_libc(), "syncfs", None)
    if syncfs is not None:
        fd = os.open(top, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        try:
            if syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    for rel_dir, _, names in paths.walk(top):
        folder = top / rel_dir if rel_dir else top
        for name in names:
            if not stat.S_ISREG(os.lstat(folder / name).st_mode):
                continue  # a hand-written link or FIFO: nothing to sync, nothing to open
            fd = os.open(folder / name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fd = os.open(folder, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        try:
            _fsync_fd(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def new_directory(directory_path: Path) -> Iterator[Path]:
    """A new directory made as one step (`nixgen init`): the body fills a hidden directory
    next to `directory_path`, which is renamed into place when the body succeeds and
    removed when it fails, so Ctrl-C or an error leaves nothing."""
    parent = directory_path.parent
    make_user_dirs(parent)
    with directory(parent, "", create=False) as fd:
        for _ in range(100):
            staging = f".{directory_path.name[:64]}.nixgen-init-{_token(6)}"
            try:
                os.mkdir(staging, 0o777, dir_fd=fd)  # the umask applies, as for mkdir
                break
            except FileExistsError:
                continue
            except OSError as exc:
                raise _fail(str(directory_path), exc, "cannot make the directory") from None
        else:
            raise WriteError(f"{directory_path}: cannot make a directory next to it")
        path = parent / staging
        try:
            yield path
            try:
                os.rename(staging, directory_path.name, src_dir_fd=fd, dst_dir_fd=fd)
            except OSError as exc:
                raise _fail(str(directory_path), exc, "cannot make the directory") from None
            _fsync_fd(fd)
        except BaseException:
            remove_tree(path)
            raise


def remove_new_entries(root: Path, before: set[str]) -> None:
    """Remove every entry of the directory `root` that is not in `before` (what a failed
    `nixgen init` made in an empty directory)."""
    try:
        now = set(os.listdir(root))
    except OSError:
        return
    for entry in now - before:
        remove_entry(root, entry)
