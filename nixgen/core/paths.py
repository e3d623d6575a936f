"""One rule for every path nixgen reads or writes inside a project (or its output tree).

A path is given relative to a base directory (the project root, or the output tree) and
is walked one component at a time with ``O_NOFOLLOW``: no symbolic link is ever
followed, so a link planted anywhere on the way (``nix/lib`` → a directory elsewhere)
can neither receive nixgen's writes nor leak a file's content into ``--check``'s diff.
Files are opened ``O_NONBLOCK`` and must be regular files, so a FIFO or a device
(``/dev/zero``) cannot hang a render or fill memory; reads are bounded. Directory walks
are iterative, so a very deep hand-written tree cannot exhaust Python's recursion limit.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator

from nixgen.core.errors import OutputError, printable

#: Where the generated tree goes, relative to the project root, when neither `--out`,
#: NIXGEN_OUT nor nixgen.toml's `out` says otherwise (the one home of that default).
DEFAULT_OUT = "nix"

#: The largest file nixgen reads from an output tree (generated files are a few KiB).
MAX_READ = 16 * 1024 * 1024

#: The longest name of one directory entry, in bytes (Linux's and macOS's NAME_MAX).
NAME_MAX = 255
#: The longest path the system takes, in bytes, its final NUL included (Linux's PATH_MAX).
PATH_MAX = 4096

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class Blocked:
    """Why a path cannot be read as a plain file: `reason` is a short phrase
    (``is a symbolic link``), `where` the project-relative component it is about."""

    __slots__ = ("error", "link", "reason", "too_large", "where")

    def __init__(
        self,
        where: str,
        reason: str,
        *,
        too_large: bool = False,
        link: bool = False,
        error: int | None = None,
    ):
        self.where = where
        self.reason = reason
        #: A regular file, refused only for its size.
        self.too_large = too_large
        #: `where` is a symbolic link.
        self.link = link
        #: The errno of the system call that failed, when one did (``cannot be read``).
        self.error = error

    def __repr__(self) -> str:
        return f"Blocked({self.where!r}, {self.reason!r})"

    def __str__(self) -> str:
        return f"{self.where} {self.reason}"


def cache_home() -> str:
    """nixgen's cache base: ``$XDG_CACHE_HOME`` when it is an absolute path (the XDG base
    directory spec: a relative value is invalid and is ignored), else ``~/.cache`` when the
    home directory is absolute; an ``OSError`` (no cache is used) otherwise. A relative
    value would put the cache inside whatever directory nixgen runs in: a project."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(base):
        return base
    home = os.path.expanduser("~")
    if not os.path.isabs(home):
        raise OSError(errno.ENOENT, "no absolute cache directory (XDG_CACHE_HOME, HOME)")
    return os.path.join(home, ".cache")


def cwd_gone() -> bool:
    """Whether the working directory was deleted (a relative path then cannot be reached)."""
    try:
        os.getcwd()
    except OSError:
        return True
    return False


def parts(rel: str) -> list[str]:
    """The components of a relative path (``.`` and empty components dropped)."""
    return [p for p in rel.replace(os.sep, "/").split("/") if p not in ("", ".")]


def kind(mode: int) -> str:
    """What a file that is not what nixgen wanted is, for messages (``is a FIFO``)."""
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a FIFO"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device"
    return "is not a regular file"


def _not_a_dir(mode: int) -> str:
    """What a path component that should be a directory is instead."""
    return "is a file, not a directory" if stat.S_ISREG(mode) else kind(mode)


def _lstat_mode(path: str) -> int | None:
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return None


class PathError(OutputError):
    """A path the user gave (an option's value) that breaks the path rule; the message
    names the option, the value and why."""


def length_problem(rel: str, base: str = "") -> str | None:
    """Why the relative path `rel` (under the directory `base`) is longer than the file
    system takes (a name over `NAME_MAX` bytes, the whole path over `PATH_MAX`), else
    None: a clear message before a system call fails with ENAMETOOLONG."""
    for name in parts(rel):
        size = len(os.fsencode(name))
        if size > NAME_MAX:
            return f"has a name of {size} bytes; file systems take at most {NAME_MAX}"
    size = len(os.fsencode(os.path.join(base, rel) if base else rel))
    if size >= PATH_MAX:
        where = " with the project's path" if base else ""
        return f"is {size} bytes long{where}; the system takes paths of at most {PATH_MAX - 1}"
    return None


def output_path(
    root: str | os.PathLike[str],
    value: str,
    *,
    option: str,
    inputs: Iterable[str] = (),
    directory: bool = False,
) -> str:
    """The project-relative path of the output `value` the user gave with `option`
    (``--output``, ``--out-link``), checked by the path rule of every write; `PathError`
    when it breaks it. The rule: inside the project (an absolute path too), no ``..``,
    not the project itself, names and length the file system takes, no link or
    non-directory on the way, no link, directory or special file (FIFO, device, socket)
    where a file goes (with `directory`: nothing but a real directory where a directory
    goes), and never one of the project's `inputs` (build.toml, a listed source, or
    anything under a listed directory)."""
    shown = f"{option}: `{printable(value)}`"

    def fail(reason: str) -> PathError:
        return PathError(f"{shown} {reason}")

    if "\0" in value:
        raise fail("holds a NUL character")
    real_root = os.path.realpath(root)
    rel = value
    if os.path.isabs(value):
        head, tail = os.path.split(os.path.normpath(value))
        real = os.path.join(os.path.realpath(head), tail) if tail else os.path.realpath(head)
        if not inside(real_root, real):
            raise fail(f"is outside the project ({real_root}); nixgen writes only inside it")
        rel = os.path.relpath(real, real_root)
    if ".." in rel.replace(os.sep, "/").split("/"):
        raise fail("leads out of the project with `..`; give a path inside it")
    names = parts(rel)
    if not names:
        what = "a directory inside it" if directory else "a file name"
        raise fail(f"names the project directory itself; give {what}")
    rel = "/".join(names)
    too_long = length_problem(rel, real_root)
    if too_long is not None:
        raise fail(too_long)
    for given in inputs:
        name = "/".join(parts(given))
        if name and (rel == name or rel.startswith(name + "/")):
            raise fail(
                f"is an input of the project (`{printable(name)}`); nixgen never writes over "
                "what the project's build reads"
            )
    blocked = check_dirs(root, rel)
    if blocked is not None:
        raise fail(
            f"goes through `{printable(blocked.where)}`, which {blocked.reason}; nixgen writes "
            "only into real directories inside the project"
        )
    try:
        mode: int | None = os.lstat(os.path.join(os.fspath(root), *names)).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise fail(f"cannot be looked at ({exc.strerror})") from None
    if mode is None:
        return rel
    if stat.S_ISLNK(mode):
        raise fail("is a symbolic link; nixgen never writes through a link (remove it)")
    if directory and not stat.S_ISDIR(mode):
        raise fail(f"{_not_a_dir(mode)} (move it away, or choose another {option})")
    if not directory and not stat.S_ISREG(mode):
        raise fail(f"{kind(mode)}; nixgen writes only regular files (choose another {option})")
    return rel


def overlap(rel: str, inputs: Iterable[str]) -> str | None:
    """The first of `inputs` (project-relative paths) that `rel` is, lies under, or holds;
    None when none."""
    mine = "/".join(parts(rel))
    for given in inputs:
        name = "/".join(parts(given))
        if name and (mine == name or mine.startswith(name + "/") or name.startswith(mine + "/")):
            return name
    return None


def resolve_inside(root: str | os.PathLike[str], rel: str) -> str | None:
    """`rel` under `root` with every link on the way and at its end resolved, relative
    to `root`'s real path, when it stays inside `root`; None when it leads outside. What
    nixgen reads or writes through a link (a nixgen.toml or build.toml linked to a file
    of the project) is read or written there, never outside."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(os.fspath(root), *parts(rel)))
    if not inside(real_root, real):
        return None
    return "/".join(parts(os.path.relpath(real, real_root)))


def check_dirs(
    base: str | os.PathLike[str],
    rel: str,
    *,
    last: bool = False,
    mode_of: Callable[[str], int | None] = _lstat_mode,
) -> Blocked | None:
    """Whether every directory on the way to `rel` (not `rel` itself; with `last`, `rel`
    too) is a real directory: a `Blocked` naming the first link (`link`) or
    non-directory, else None (a missing component is not a block: it will be created).

    The one path-walking rule: the writer's output directory (`nixgen.writing.write`), the
    validator's "reached through a link" check (`nixgen.checking.validate`, with its cached
    `mode_of`: an lstat mode, None when missing) and every read and write here use it."""
    path = os.fspath(base)
    names = parts(rel)
    for index, name in enumerate(names if last else names[:-1]):
        path = os.path.join(path, name)
        try:
            mode = mode_of(path)
        except OSError as exc:
            return Blocked("/".join(names[: index + 1]), f"cannot be read ({exc.strerror})")
        if mode is None:
            return None
        if not stat.S_ISDIR(mode):
            where = "/".join(names[: index + 1])
            return Blocked(where, _not_a_dir(mode), link=stat.S_ISLNK(mode))
    return None


def inside(root: str, real: str) -> bool:
    """Whether the real path `real` is `root` or under it (both real, absolute)."""
    return real == root or real.startswith(root.rstrip("/") + "/")


def link_target(path: str | os.PathLike[str]) -> str | None:
    """The real path the symbolic link `path` leads to (every link on the way resolved);
    None when `path` is no link. Whether it stays inside a root is `inside`'s to say."""
    try:
        if not stat.S_ISLNK(os.lstat(path).st_mode):
            return None
    except OSError:
        return None
    return os.path.realpath(path)


def lstat_under(
    base: str | os.PathLike[str],
    rel: str,
    *,
    mode_of: Callable[[str], int | None] = _lstat_mode,
) -> os.stat_result | Blocked | None:
    """`lstat` of `rel` under `base` when every directory on the way is real (as
    `check_dirs` with `mode_of` finds them); a `Blocked` otherwise, None when it does not
    exist."""
    blocked = check_dirs(base, rel, mode_of=mode_of)
    if blocked is not None:
        return blocked
    try:
        return os.lstat(os.path.join(os.fspath(base), *parts(rel)))
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    except OSError as exc:
        return Blocked(rel, f"cannot be read ({exc.strerror})")


@contextlib.contextmanager
def _open_dir_chain(base: str, names: list[str]) -> Iterator[int | Blocked | None]:
    """A descriptor of the directory `base/names...`, opened one component at a time
    with O_NOFOLLOW (a link on the way yields `Blocked`, a missing one None)."""
    fds: list[int] = []
    try:
        try:
            fds.append(os.open(base, os.O_RDONLY | _DIRECTORY | _CLOEXEC))
        except FileNotFoundError:
            yield None
            return
        for index, name in enumerate(names):
            try:
                fds.append(
                    os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fds[-1])
                )
            except FileNotFoundError:
                yield None
                return
            except OSError as exc:
                where = "/".join(names[: index + 1])
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    try:
                        mode = os.lstat(name, dir_fd=fds[-1]).st_mode
                    except OSError:
                        mode = stat.S_IFLNK
                    yield Blocked(where, _not_a_dir(mode))
                else:
                    yield Blocked(where, f"cannot be read ({exc.strerror})")
                return
        yield fds[-1]
    finally:
        for fd in fds:
            os.close(fd)


def read_under(
    base: str | os.PathLike[str], rel: str, *, limit: int = MAX_READ
) -> bytes | Blocked | None:
    """The bytes of the regular file `rel` under `base`, or None when it does not exist,
    or a `Blocked` when it (or a directory on the way) is a link, a FIFO, a device, a
    directory, unreadable or larger than `limit` bytes. Never follows a link, never
    blocks on a FIFO, never reads more than `limit` + 1 bytes."""
    names = parts(rel)
    if not names:
        return Blocked(rel or ".", "is a directory")
    with _open_dir_chain(os.fspath(base), names[:-1]) as dirfd:
        if dirfd is None or isinstance(dirfd, Blocked):
            return dirfd
        return _read_at(dirfd, names[-1], rel, limit)


def read_file(
    path: str | os.PathLike[str], *, limit: int = MAX_READ, follow: bool = False
) -> bytes | Blocked | None:
    """`read_under` for one file given by its path, following no link in its last
    component (the directories above it are the caller's business). With `follow`, a
    link is followed (the file a user names on the command line, `build.toml`); the file
    it leads to must still be a regular one, and is read bounded, never blocking."""
    path = os.fspath(path)
    if follow:  # opened by its path: its directory need not be listable, only searchable
        return _read_at(None, path, path, limit, follow=True)
    parent, name = os.path.split(path)
    try:
        dirfd = os.open(parent or ".", os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Blocked(parent, f"cannot be read ({exc.strerror})", error=exc.errno)
    try:
        return _read_at(dirfd, name, path, limit)
    finally:
        os.close(dirfd)


def _read_at(
    dirfd: int | None,
    name: str,
    rel: str,
    limit: int,
    *,
    first: int | None = None,
    follow: bool = False,
) -> bytes | Blocked | None:
    flags = os.O_RDONLY | _NONBLOCK | _CLOEXEC | (0 if follow else _NOFOLLOW)
    try:
        fd = os.open(name, flags, dir_fd=dirfd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if not follow and exc.errno in (errno.ELOOP, errno.EMLINK):
            return Blocked(rel, "is a symbolic link")
        if exc.errno == errno.EISDIR:
            return Blocked(rel, "is a directory")
        return Blocked(rel, f"cannot be read ({exc.strerror})", error=exc.errno)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return Blocked(rel, kind(info.st_mode))
        if first is not None:
            return os.read(fd, first)
        if info.st_size > limit:
            return Blocked(rel, f"is larger than {limit} bytes", too_large=True)
        chunks = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            return Blocked(rel, f"is larger than {limit} bytes", too_large=True)
        return b"".join(chunks)
    except OSError as exc:
        return Blocked(rel, f"cannot be read ({exc.strerror})", error=exc.errno)
    finally:
        os.close(fd)


def head(path: str | os.PathLike[str], size: int) -> bytes:
    """The first `size` bytes of the regular file `path` (its last component not
    followed if a link, never blocking); empty when it is anything else."""
    path = os.fspath(path)
    parent, name = os.path.split(path)
    try:
        dirfd = os.open(parent or ".", os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except OSError:
        return b""
    try:
        data = _read_at(dirfd, name, path, size, first=size)
    finally:
        os.close(dirfd)
    return data if isinstance(data, bytes) else b""


def walk(
    top: str | os.PathLike[str], *, onerror: Callable[[str, OSError], object] | None = None
) -> Iterator[tuple[str, list[str], list[str]]]:
    """Like ``os.walk(top)`` top-down, with sorted names, yielding paths relative to
    `top` (``""`` for `top` itself); links (to anything) count as files and are never
    followed. Iterative: any depth is fine. A directory that cannot be listed is skipped,
    after `onerror(rel, error)` when given (which may raise)."""
    top = os.fspath(top)
    stack = [""]
    while stack:
        rel = stack.pop()
        dirs: list[str] = []
        files: list[str] = []
        try:
            with os.scandir(os.path.join(top, rel) if rel else top) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    (dirs if is_dir else files).append(entry.name)
        except OSError as exc:
            if onerror is not None:
                onerror(rel, exc)
            continue
        dirs.sort()
        files.sort()
        yield rel, dirs, files
        stack.extend(os.path.join(rel, d) if rel else d for d in reversed(dirs))


class Resolver:
    """Resolves project paths (relative to the real directory `root`) like
    `os.path.realpath`, but each directory only once: a project lists hundreds of files in
    a handful of directories. `nixgen validate` checks every listed path with it."""

    def __init__(self, root: str):
        self.root = root
        self._dirs: dict[str, str] = {"": root, ".": root}
        #: `lstat` modes of the path prefixes `_through_link` walked (None: missing).
        self.modes: dict[str, int | None] = {}
        #: Why a path that `resolve` found missing could not be looked at (an errno).
        self.errors: dict[str, int] = {}

    def mode(self, path: str) -> int | None:
        """The `lstat` mode of `path` (absolute), once per path; None when it is missing."""
        if path not in self.modes:
            try:
                self.modes[path] = os.lstat(path).st_mode
            except OSError:
                self.modes[path] = None
        return self.modes[path]

    def real_dir(self, rel: str) -> str:
        if rel not in self._dirs:
            self._dirs[rel] = os.path.realpath(os.path.join(self.root, rel))
        return self._dirs[rel]

    def resolve(self, rel: str) -> tuple[str, os.stat_result | None]:
        """The real path of `rel` and its status (None when it does not exist)."""
        parent, _, name = rel.rpartition("/")
        full = os.path.join(self.real_dir(parent), name)
        try:
            info = os.lstat(full)
        except OSError as exc:
            self.modes.setdefault(full, None)
            if exc.errno is not None and exc.errno != errno.ENOENT:
                self.errors[full] = exc.errno
            return full, None
        # `_through_link` walks the same path (unless a directory on the way is a link).
        self.modes.setdefault(full, info.st_mode)
        if stat.S_ISLNK(info.st_mode):
            full = os.path.realpath(full)
            try:
                info = os.stat(full)
            except OSError:
                return full, None
        return full, info

    def inside(self, real: str) -> bool:
        return inside(self.root, real)
