"""The one writer (`nixgen.core.writer`): no other module of nixgen writes a file, and the
writer itself holds against planted links, special files, long names and two writers at once.

The structural half: every module of `nixgen/` is parsed and any call that creates, replaces
or removes a file outside `nixgen/core/writer.py` fails the test (the `os`, `shutil` and
`tempfile` functions ruff's banned-api list also refuses, the `pathlib` methods and `open`
modes it cannot see), and ruff is shown to refuse them too. The behavioural half attacks the
writer as a hostile project would: a link planted where its temporary file goes, a link or a
FIFO where a file goes, a link on the way, a 300-byte name.
"""

from __future__ import annotations

import ast
import errno
import os
import subprocess
import threading
from pathlib import Path

import pytest

from nixgen.core import writer
from nixgen.core.errors import OutputError

from .hostile import SECRET

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "nixgen"

#: Module functions that write (ruff's banned-api list in pyproject.toml holds the same).
WRITING_FUNCTIONS = {
    "os": {
        "replace", "rename", "renames", "link", "symlink", "unlink", "remove", "rmdir",
        "removedirs", "mkdir", "makedirs", "mkfifo", "mknod", "chmod", "lchmod", "fchmod",
        "chown", "lchown", "fchown", "truncate", "ftruncate", "utime",
    },
    "shutil": {
        "move", "copy", "copy2", "copyfile", "copytree", "copymode", "copystat", "rmtree",
    },
    "tempfile": {
        "mkstemp", "mkdtemp", "NamedTemporaryFile", "TemporaryFile", "SpooledTemporaryFile",
        "TemporaryDirectory",
    },
}  # fmt: skip
#: `pathlib.Path` methods that write (`replace` with one argument: `str.replace` has two).
WRITING_METHODS = {
    "write_text", "write_bytes", "unlink", "rename", "rmdir", "mkdir", "touch", "symlink_to",
    "hardlink_to", "chmod", "lchmod",
}  # fmt: skip
_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND", "O_EXCL"}
#: The only writing calls outside the writer, each with its reason.
ALLOWED = {
    # A standard stream reopened on its own descriptor (`streams`): no file is named.
    ("nixgen/cmdline/streams.py", "open(w)"): 1,
}


def _devnull(call: ast.Call) -> bool:
    """`open(os.devnull, …)`: what a closed stream is replaced by; writes nowhere."""
    first = call.args[0] if call.args else None
    return isinstance(first, ast.Attribute) and first.attr == "devnull"


def _mode_writes(call: ast.Call, position: int) -> bool:
    mode = call.args[position] if len(call.args) > position else None
    for keyword in call.keywords:
        if keyword.arg == "mode":
            mode = keyword.value
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(c in mode.value for c in "wax+")
    return True  # a mode computed at run time: assume the worst


def writing_calls(source: str) -> list[str]:
    """What `source` calls that writes a file, one word each (``os.replace``,
    ``.write_text``, ``open(w)``)."""
    tree = ast.parse(source)
    imported: dict[str, str] = {}  # local name -> "module.function" of `from M import F`
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in WRITING_FUNCTIONS:
            for alias in node.names:
                if alias.name in WRITING_FUNCTIONS[node.module]:
                    imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if _devnull(node):
            continue
        if isinstance(func, ast.Name):
            if func.id in imported:
                found.append(imported[func.id])
            elif func.id == "open" and _mode_writes(node, 1):
                found.append("open(w)")
        elif isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else None
            if owner in WRITING_FUNCTIONS and func.attr in WRITING_FUNCTIONS[owner]:
                found.append(f"{owner}.{func.attr}")
            elif owner == "os" and func.attr == "open" and len(node.args) > 1:
                names = {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
                names |= {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                if names & _WRITE_FLAGS:
                    found.append("os.open(write)")
            elif owner == "os" and func.attr == "fdopen" and _mode_writes(node, 1):
                found.append("os.fdopen(w)")
            elif func.attr in WRITING_METHODS:
                found.append(f".{func.attr}")
            elif func.attr == "replace" and len(node.args) == 1 and not node.keywords:
                found.append(".replace")
            elif func.attr == "open" and owner != "os" and _mode_writes(node, 0):
                found.append(".open(w)")
    return found


def test_no_module_but_the_writer_writes_a_file() -> None:
    found: dict[tuple[str, str], int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel == "nixgen/core/writer.py":
            continue
        for call in writing_calls(path.read_text(encoding="utf-8")):
            found[(rel, call)] = found.get((rel, call), 0) + 1
    assert found == ALLOWED, (
        "only nixgen.core.writer creates, replaces or removes files; use its API "
        "(write_file, Transaction, make_dirs, …)"
    )


def test_the_scan_sees_every_way_of_writing() -> None:
    """The check of the test above, on a module that writes in every way it looks for."""
    source = """
import os, shutil, tempfile
from os import replace as swap
from pathlib import Path
os.replace("a", "b"); swap("a", "b"); shutil.move("a", "b"); tempfile.mkstemp()
os.open("a", os.O_WRONLY | os.O_CREAT); os.fdopen(3, "wb"); open("a", "w"); open("a", mode="a")
Path("a").write_text("x"); Path("a").replace("b"); Path("a").open("w"); Path("a").mkdir()
# reading is fine:
open("a"); open("a", "rb"); os.open("a", os.O_RDONLY); "a".replace("a", "b"); Path("a").open()
"""
    assert sorted(writing_calls(source)) == sorted([
        "os.replace", "os.replace", "shutil.move", "tempfile.mkstemp", "os.open(write)",
        "os.fdopen(w)", "open(w)", "open(w)", ".write_text", ".replace", ".open(w)", ".mkdir",
    ])  # fmt: skip


def _ruff(source: str, filename: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(REPO / ".venv" / "bin" / "ruff"), "check", "--no-cache", "--select", "TID251",
         "--stdin-filename", filename, "-"],
        input=source,
        capture_output=True,
        text=True,
        cwd=REPO,
    )  # fmt: skip


@pytest.mark.slow
def test_ruff_refuses_a_writing_call_outside_the_writer() -> None:
    if not (REPO / ".venv" / "bin" / "ruff").exists():
        pytest.skip("ruff is not installed in .venv (scripts/setup.sh)")
    source = "import os\nimport tempfile\n\nos.replace('a', 'b')\ntempfile.mkdtemp()\n"
    outside = _ruff(source, "nixgen/app/anything.py")
    assert outside.returncode == 1, outside.stdout
    assert outside.stdout.count("TID251") == 2
    assert "nixgen.core.writer" in outside.stdout
    assert _ruff(source, "nixgen/core/writer.py").returncode == 0
    assert _ruff(source, "tests/test_anything.py").returncode == 0


# ------------------------------------------------------------------- the writer attacked


def test_a_link_planted_where_the_temporary_file_goes_is_never_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attacker guesses the temporary file's name and plants a link there: O_EXCL
    refuses it, another name is drawn, the file outside keeps its bytes."""
    root = tmp_path / "project"
    root.mkdir()
    outside = tmp_path / "precious.txt"
    outside.write_bytes(SECRET)
    (root / f"{writer.TMP}guessed").symlink_to(outside)
    names = iter(["guessed", "fresh"])
    monkeypatch.setattr(writer, "_token", lambda _: next(names))
    writer.write_file(root, "nixgen.toml", b'out = "gen"\n')
    assert outside.read_bytes() == SECRET
    assert (root / "nixgen.toml").read_bytes() == b'out = "gen"\n'
    assert not (root / "nixgen.toml").is_symlink()
    assert (root / f"{writer.TMP}guessed").is_symlink()  # not ours: left alone


@pytest.mark.parametrize("kind", ["fifo", "dir", "link", "socket"])
def test_only_a_regular_file_is_replaced(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "project"
    root.mkdir()
    target = root / "out.json"
    outside = tmp_path / "precious.txt"
    outside.write_bytes(SECRET)
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dir":
        target.mkdir()
    elif kind == "link":
        target.symlink_to(outside)
    else:
        import socket

        sock = socket.socket(socket.AF_UNIX)
        try:
            sock.bind(str(target))
        except OSError as exc:  # a path too long for a socket address
            pytest.skip(f"cannot bind a socket here: {exc}")
        sock.close()
    with pytest.raises(writer.WriteError) as raised:
        writer.write_file(root, "out.json", b"[]\n")
    assert str(target) in str(raised.value)
    assert outside.read_bytes() == SECRET
    assert [p.name for p in root.iterdir()] == ["out.json"]  # no temporary file left
    if kind == "link":  # with the caller's permission the link itself is replaced
        writer.write_file(root, "out.json", b"[]\n", replace_link=True)
        assert not target.is_symlink() and target.read_bytes() == b"[]\n"
        assert outside.read_bytes() == SECRET


def test_a_link_on_the_way_is_refused_and_nothing_is_made_beyond_it(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "sub").symlink_to(elsewhere)
    with pytest.raises(writer.WriteError, match="sub: is a symbolic link"):
        writer.write_file(root, "sub/deeper/file", b"x")
    with pytest.raises(writer.WriteError, match="sub: is a symbolic link"):
        writer.make_dirs(root, "sub/deeper")
    assert list(elsewhere.iterdir()) == []


def test_a_name_too_long_is_a_clear_error_and_leaves_nothing(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    for rel in ("a" * 300, "/".join(["abcdefgh"] * 600)):
        with pytest.raises(OutputError) as raised:
            writer.write_file(root, rel, b"x")
        assert "File name too long" in str(raised.value)
    assert list(root.iterdir()) == []


def test_a_full_disk_while_staging_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "nixgen.toml").write_bytes(b"old\n")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer, "_fsync_file", full)
    with pytest.raises(writer.WriteError, match="No space left on device"):
        writer.write_file(root, "nixgen.toml", b"new\n")
    assert (root / "nixgen.toml").read_bytes() == b"old\n"
    assert [p.name for p in root.iterdir()] == ["nixgen.toml"]


def test_the_lock_is_reentrant_in_a_thread_and_excludes_other_threads(tmp_path: Path) -> None:
    acquired = threading.Event()

    def other() -> None:
        with writer.project_lock(tmp_path):
            acquired.set()

    with writer.project_lock(tmp_path):
        with writer.project_lock(tmp_path):  # a render inside `nixgen build`: no deadlock
            thread = threading.Thread(target=other)
            thread.start()
            assert not acquired.wait(0.3)
        assert not acquired.wait(0.3), "the inner exit released the outer lock"
    thread.join(5)
    assert acquired.is_set()


def test_a_planted_journal_that_is_no_journal_stops_the_write(tmp_path: Path) -> None:
    """A `.nixgen-journal` nixgen did not write (or a link there) is refused, not obeyed;
    one naming a path outside the project (`..`) is not followed."""
    root = tmp_path / "project"
    root.mkdir()
    outside = tmp_path / "precious.txt"
    outside.write_bytes(SECRET)
    (root / writer.JOURNAL).write_text(
        '{"nixgen-journal": 1, "tree": null, "files": '
        '[{"parent": "..", "name": "precious.txt", "tmp": ".nixgen-tmp-x"}]}'
    )
    refused = pytest.raises(writer.WriteError, match="is not a journal nixgen wrote")
    with refused, writer.transaction(root):
        pass
    (root / writer.JOURNAL).unlink()
    (root / writer.JOURNAL).symlink_to(outside)
    with pytest.raises(writer.WriteError, match="is a symbolic link"), writer.transaction(root):
        pass
    assert outside.read_bytes() == SECRET


def test_a_file_the_user_names_is_written_by_the_writer_and_never_through_a_link(
    tmp_path: Path,
) -> None:
    """`writing.write.atomic_write` (a summary file the user names) is the writer's
    `write_file` in the file's directory: written whole, a link there refused."""
    from nixgen.writing import write

    write.atomic_write(tmp_path / "summary.json", b"{}\n")
    assert (tmp_path / "summary.json").read_bytes() == b"{}\n"
    outside = tmp_path / "precious.txt"
    outside.write_bytes(SECRET)
    (tmp_path / "linked.json").symlink_to(outside)
    with pytest.raises(writer.WriteError, match="is a symbolic link"):
        write.atomic_write(tmp_path / "linked.json", b"{}\n")
    assert outside.read_bytes() == SECRET
