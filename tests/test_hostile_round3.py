"""Hostile input, round 3 (issue 27): hand-written data is never lost, nothing is written
through a link, every exit status is true (a closed pipe included), and resource errors
are located messages, never "internal error".

Each case runs the real ``python -m nixgen`` in a subprocess with a timeout (the
helpers of `test_hostile_paths`), or, where a moment inside a write must be hit exactly,
a small driver script that patches one function of nixgen in the child.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_hostile_paths import BUILD_TOML, SECRET, nixgen, outside_dir, project, snapshot

REPO = Path(__file__).resolve().parent.parent
NOBODY = 65534


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


def env(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "NO_COLOR": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        **extra,
    }


def clean(done: subprocess.CompletedProcess[bytes]) -> str:
    text = (done.stdout or b"").decode(errors="replace") + done.stderr.decode(errors="replace")
    assert "Traceback" not in text, text
    assert "internal error" not in text, text
    return text


def driver(code: str, *, cwd: Path, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    """Run `code` (which patches nixgen, then calls `nixgen.cmdline.entry.main()`) in a child."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        capture_output=True,
        timeout=60,
        env=env(),
        **kwargs,  # type: ignore[arg-type]
    )


# ---------------------------------------------------------------- as an ordinary user

can_drop = os.geteuid() == 0 and shutil.which("setpriv") is not None
needs_user = pytest.mark.skipif(
    not can_drop, reason="needs root and setpriv to run nixgen as an ordinary user"
)


@contextlib.contextmanager
def user_tree() -> Iterator[Path]:
    """A directory an ordinary user (nobody) owns, outside pytest's private tmp_path."""
    base = Path(tempfile.mkdtemp(prefix="nixgen-user-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        os.chown(base, NOBODY, NOBODY)
        yield base
    finally:
        for dirpath, dirnames, _ in os.walk(base):
            for name in dirnames:
                with contextlib.suppress(OSError):
                    os.chmod(os.path.join(dirpath, name), 0o755)
        shutil.rmtree(base, ignore_errors=True)


def as_user(args: list[str], *, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(
        [
            *("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"),
            *(sys.executable, "-m", "nixgen", *args),
        ],
        cwd=cwd,
        capture_output=True,
        timeout=60,
        env=env(XDG_CACHE_HOME=str(cwd / ".cache"), HOME=str(cwd)),
    )
    clean(done)
    return done


def chown_tree(top: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(top):
        for name in [*dirnames, *filenames]:
            os.lchown(os.path.join(dirpath, name), NOBODY, NOBODY)
    os.lchown(top, NOBODY, NOBODY)


@needs_user
def test_an_unlistable_hand_written_directory_is_never_moved_or_deleted() -> None:
    with user_tree() as base:
        root = project(base)
        chown_tree(base)
        assert as_user(["render", "."], cwd=root).returncode == 0
        private = root / "nix" / "private"
        private.mkdir()
        (private / "key.txt").write_bytes(SECRET)
        chown_tree(private)
        (root / "build.toml").write_text(BUILD_TOML.replace("version = 1", "version = 2"))
        private.chmod(0)
        done = as_user(["render", "."], cwd=root)
        assert done.returncode == 2, done.stderr
        assert b"nix/private" in done.stderr and b"cannot be listed" in done.stderr
        private.chmod(0o755)
        assert (private / "key.txt").read_bytes() == SECRET
        assert as_user(["render", "."], cwd=root).returncode == 0
        assert (private / "key.txt").read_bytes() == SECRET


@needs_user
def test_a_source_in_an_unsearchable_directory_is_permission_denied() -> None:
    with user_tree() as base:
        root = project(base)
        chown_tree(base)
        (root / "relu").chmod(0o600)
        done = as_user(["validate", "."], cwd=root)
        assert done.returncode == 2
        assert b"permission denied" in done.stderr
        assert b"does not exist" not in done.stderr


# ----------------------------------------------------- init, migrate: no write via link


def test_init_force_never_writes_through_a_planted_temporary_link(tmp_path: Path) -> None:
    other = outside_dir(tmp_path)
    before = snapshot(other)
    target = tmp_path / "new"
    target.mkdir()
    (target / ".build.toml.nixgen-init").symlink_to(other / "precious.txt")
    done = nixgen("init", "relu", "--dir", str(target), "--force", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert snapshot(other) == before
    assert (target / "build.toml").is_file() and not (target / "build.toml").is_symlink()


def test_init_force_refuses_a_symlinked_source_directory(tmp_path: Path) -> None:
    other = outside_dir(tmp_path)
    before = snapshot(other)
    target = tmp_path / "new"
    target.mkdir()
    (target / "relu_cpu").symlink_to(other)
    done = nixgen("init", "relu", "--dir", str(target), "--force", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "relu_cpu" in done.stderr and "symbolic link" in done.stderr
    assert snapshot(other) == before


def test_migrate_never_rewrites_a_build_toml_linked_from_outside(tmp_path: Path) -> None:
    from tests.test_migrate import V4

    root = project(tmp_path)
    outside = tmp_path / "shared.toml"
    outside.write_text(V4)
    (root / "build.toml").unlink()
    (root / "build.toml").symlink_to(outside)
    done = nixgen("migrate", ".", cwd=root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "symbolic link" in done.stderr
    assert outside.read_text() == V4


def test_a_hand_written_file_that_mentions_the_marker_is_kept(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    notes = root / "nix" / "NOTES.md"
    text = "# Notes\n\nThe files here are @generated by nixgen; this one is mine.\n"
    notes.write_text(text)
    (root / "build.toml").write_text(BUILD_TOML.replace("version = 1", "version = 2"))
    assert nixgen("render", ".", cwd=root).returncode == 0
    assert notes.read_text() == text
    assert nixgen("render", ".", "--check", cwd=root).returncode == 0


def test_an_edit_saved_while_migrate_writes_is_not_lost(tmp_path: Path) -> None:
    """The editor saves (by renaming a new file over build.toml, as editors do) just as
    migrate has written its temporary file: the edit survives, migrate exits 2."""
    from tests.test_migrate import V4

    root = project(tmp_path, V4)
    edited = V4 + "# saved by the editor\n"
    done = driver(
        f"""
        import os, sys
        import nixgen.writing.write as w
        real = w._fsync_file
        def save(fd):
            real(fd)
            with open("build.toml.swp", "w") as f:
                f.write({edited!r})
            os.replace("build.toml.swp", "build.toml")
        w._fsync_file = save
        sys.argv = ["nixgen", "migrate", "."]
        import nixgen.cmdline.entry
        nixgen.cmdline.entry.main()
        """,
        cwd=root,
    )
    text = clean(done)
    assert done.returncode == 2, text
    assert "changed while it was migrated" in text
    assert (root / "build.toml").read_text() == edited
    assert not [p for p in root.iterdir() if ".nixgen-tmp-" in p.name]


# ------------------------------------------------------------- freshness, exit status


RUST_TVM = """\
[general]
name = "relu-rs"
version = 1
edition = 6
license = "Apache-2.0"
backends = ["cpu"]

[tvm-ffi]

[kernel.relu_rs]
language = "rust-cpu"
src = ["relu_rs/Cargo.toml", "relu_rs/Cargo.lock", "relu_rs/src"]
"""


def rust_project(tmp_path: Path) -> Path:
    root = tmp_path / "rs"
    for rel, text in {
        "build.toml": RUST_TVM,
        "relu_rs/Cargo.toml": '[package]\nname = "relu_rs"\nversion = "0.1.0"\n',
        "relu_rs/Cargo.lock": "version = 4\n",
        "relu_rs/src/lib.rs": "// lib\n",
        "relu_rs/src/inner/mod.rs": "// mod\n",
        "tvm-ffi-ext/relu_rs/__init__.py": "",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize("where", ["relu_rs/src", "relu_rs/src/inner"])
def test_a_link_added_in_a_listed_rust_directory_fails_the_next_render(
    tmp_path: Path, where: str
) -> None:
    root = rust_project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    (tmp_path / "elsewhere.rs").write_text("// outside\n")
    (root / where / "evil.rs").symlink_to(tmp_path / "elsewhere.rs")
    done = nixgen("render", ".", cwd=root)
    assert done.returncode == 2, done.stdout
    assert "up to date" not in done.stdout


def closed_pipe_run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """`nixgen ARGS | head -n 0`: the reader is gone before nixgen writes."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "nixgen", *args],
            cwd=cwd,
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=60,
            env=env(),
        )
    finally:
        os.close(write)
    clean(done)
    return done


def test_a_closed_stdout_pipe_never_turns_failure_into_success(tmp_path: Path) -> None:
    from tests.test_migrate import V4

    root = project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    (root / "build.toml").write_text(BUILD_TOML.replace("version = 1", "version = 2"))
    assert closed_pipe_run(["render", ".", "--check"], root).returncode == 1
    (root / "build.toml").write_text(BUILD_TOML.replace('"cpu"]', '"cpx"]'))
    assert closed_pipe_run(["validate", ".", "--json"], root).returncode == 2
    assert closed_pipe_run(["render", ".", "--json"], root).returncode == 2
    old = project(tmp_path, V4, name="old")
    assert closed_pipe_run(["migrate", ".", "--check"], old).returncode == 1
    assert closed_pipe_run(["migrate", ".", "--diff"], old).returncode == 0
    # and success stays success
    assert closed_pipe_run(["schema"], root).returncode == 0


def test_watch_stopped_with_ctrl_c_exits_130(tmp_path: Path) -> None:
    root = project(tmp_path)
    child = subprocess.Popen(
        [sys.executable, "-m", "nixgen", "watch", ".", "--interval", "0.05"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    )
    try:
        assert child.stderr is not None
        child.stderr.readline()  # `watching …`; the render's status line follows on stderr
        line = child.stderr.readline()
        assert b"rendered" in line or b"up to date" in line, line
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 130, err
    assert b"Traceback" not in err


# ------------------------------------------------------------- interrupts, partial output


def test_a_kill_between_the_tree_and_the_flake_is_repaired_and_reported(tmp_path: Path) -> None:
    """Killed after the `nix/` exchange, before `flake.nix` is written (the project-root
    files are written by `atomic_write`, after the tree): `--check` reports the flake, the
    next render (which must not say "up to date") repairs it, and nothing of the killed
    render is left in the tree."""
    root = project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    old_flake = (root / "flake.nix").read_bytes()
    (root / "build.toml").write_text(BUILD_TOML.replace('name = "relu"', 'name = "relu2"'))
    (root / "torch-ext" / "relu2").mkdir()
    (root / "torch-ext" / "relu2" / "__init__.py").write_text("")
    done = driver(
        """
        import os, sys
        import nixgen.writing.write as w
        w.atomic_write = lambda *a, **k: os._exit(137)
        sys.argv = ["nixgen", "render", "."]
        import nixgen.cmdline.entry
        nixgen.cmdline.entry.main()
        """,
        cwd=root,
    )
    assert done.returncode == 137, done.stderr
    assert (root / "flake.nix").read_bytes() == old_flake  # killed before the flake
    check = nixgen("render", ".", "--check", cwd=root)
    assert check.returncode == 1 and "flake.nix" in check.stdout
    assert nixgen("render", ".", cwd=root).returncode == 0
    assert b"relu2" in (root / "flake.nix").read_bytes()
    assert nixgen("render", ".", "--check", cwd=root).returncode == 0
    assert not [p for p in (root / "nix").rglob("*") if ".nixgen" in p.name]


def test_ctrl_c_during_init_leaves_nothing_and_init_runs_again(tmp_path: Path) -> None:
    done = driver(
        """
        import sys
        import nixgen.writing.write as w
        def stop(*a, **k):
            raise KeyboardInterrupt
        w.write = stop
        sys.argv = ["nixgen", "init", "relu"]
        import nixgen.cmdline.entry
        nixgen.cmdline.entry.main()
        """,
        cwd=tmp_path,
    )
    text = clean(done)
    assert done.returncode == 130, text
    assert not (tmp_path / "relu").exists()
    assert os.listdir(tmp_path) == []
    again = nixgen("init", "relu", cwd=tmp_path)
    assert again.returncode == 0, again.stderr


# ------------------------------------------------------------------ resources, limits


can_mount = os.geteuid() == 0 and shutil.which("mount") is not None


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str = "64k") -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace')}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.mark.skipif(not can_mount, reason="needs root to mount a small tmpfs")
def test_a_full_disk_under_the_cache_directory_is_no_error(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "cache") as cache:
        with contextlib.suppress(OSError), open(cache / "filler", "wb") as filler:
            while True:
                filler.write(b"\0" * 4096)
                filler.flush()
        root = project(tmp_path)
        for args, cwd in ((["render", "."], root), (["init", "fresh"], tmp_path)):
            done = subprocess.run(
                [sys.executable, "-m", "nixgen", *args],
                cwd=cwd,
                capture_output=True,
                timeout=60,
                env=env(XDG_CACHE_HOME=str(cache)),
            )
            clean(done)
            assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("where", ["project", "out", "dir"])
def test_a_300_byte_path_component_is_a_clear_error(tmp_path: Path, where: str) -> None:
    root = project(tmp_path)
    long = "x" * 300
    args = {
        "project": ["render", long],
        "out": ["render", ".", "--out", long],
        "dir": ["init", "relu", "--dir", long],
    }[where]
    done = nixgen(*args, cwd=root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "too long" in done.stderr


def test_a_project_path_longer_than_path_max_is_said_so(tmp_path: Path) -> None:
    """20 components of 250 bytes (5 KB, over PATH_MAX): made by `chdir` one at a time."""
    os.chdir(tmp_path)
    try:
        for _ in range(20):
            os.mkdir("d" * 250)
            os.chdir("d" * 250)
        for rel in ("torch-ext/torch_binding.cpp", "torch-ext/relu/__init__.py", "relu/relu.cpp"):
            os.makedirs(os.path.dirname(rel), exist_ok=True)
            with open(rel, "w") as handle:
                handle.write("// x\n")
        with open("build.toml", "w") as handle:
            handle.write(BUILD_TOML)
        done = subprocess.run(
            [sys.executable, "-m", "nixgen", "validate", "."],
            capture_output=True,
            timeout=60,
            env=env(),
        )
    finally:
        os.chdir(REPO)
    text = clean(done)
    assert "does not exist" not in text
    assert done.returncode in (0, 2)
    if done.returncode == 2:
        assert "too long" in text


def test_an_integer_of_thousands_of_digits_is_a_located_toml_error(tmp_path: Path) -> None:
    root = project(tmp_path, BUILD_TOML.replace("version = 1", "version = " + "9" * 5000))
    done = nixgen("validate", ".", cwd=root)
    assert done.returncode == 2
    assert "build.toml:3:" in done.stderr and "digits" in done.stderr


def test_what_nixgen_accepts_it_can_re_render(tmp_path: Path) -> None:
    """The read limit on output files never refuses a file nixgen itself wrote."""
    root = project(tmp_path)
    done = driver(
        """
        import sys
        import nixgen.core.paths as p
        # As if the 16 MiB read limit were 2000 bytes: generated files here are larger.
        p.MAX_READ = 2000
        p.read_under.__kwdefaults__ = {"limit": 2000}
        sys.argv = ["nixgen", "render", "."]
        import nixgen.cmdline.entry
        nixgen.cmdline.entry.main()
        """,
        cwd=root,
    )
    assert done.returncode == 0, done.stderr
    (root / "build.toml").write_text(BUILD_TOML.replace("version = 1", "version = 2"))
    done = driver(
        """
        import sys
        import nixgen.core.paths as p
        p.MAX_READ = 2000
        p.read_under.__kwdefaults__ = {"limit": 2000}
        sys.argv = ["nixgen", "render", "."]
        import nixgen.cmdline.entry
        nixgen.cmdline.entry.main()
        """,
        cwd=root,
    )
    assert done.returncode == 0, done.stderr


def test_a_project_path_that_is_not_utf8(tmp_path: Path) -> None:
    base = os.fsencode(tmp_path) + b"/caf\xe9"
    os.mkdir(base)
    root = project(Path(os.fsdecode(base)), name="proj\xff")
    for args in (["render", "."], ["render", "."], ["validate", "."], ["render", ".", "--check"]):
        done = subprocess.run(
            [sys.executable, "-m", "nixgen", *args],
            cwd=root,
            capture_output=True,
            timeout=60,
            env=env(),
        )
        clean(done)
        assert done.returncode == 0, done.stderr


def test_a_non_ascii_project_path_under_an_ascii_file_system_encoding(tmp_path: Path) -> None:
    root = project(tmp_path, name="caf\u00e9-\u2713")
    ascii_locale = env(LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
    for args in (["render", "."], ["render", "."], ["validate", "."], ["render", ".", "--check"]):
        done = subprocess.run(
            [sys.executable, "-m", "nixgen", *args],
            cwd=root,
            capture_output=True,
            timeout=60,
            env=ascii_locale,
        )
        clean(done)
        assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "nixgen", "render", str(root), "--check"],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
        env=ascii_locale,
    )
    clean(done)
    assert done.returncode == 0, done.stderr


def test_a_latin1_terminal(tmp_path: Path) -> None:
    from tests.test_migrate import V4

    root = project(tmp_path, V4.replace("[general]", "[general]\n# \u2713 \u00e9t\u00e9"))
    latin1 = env(PYTHONIOENCODING="latin-1")
    done = subprocess.run(
        [sys.executable, "-m", "nixgen", "migrate", ".", "--diff"],
        cwd=root,
        capture_output=True,
        timeout=60,
        env=latin1,
    )
    clean(done)
    assert done.returncode == 0, done.stderr
    assert "\u2713".encode() in done.stdout  # the diff is the file's own bytes (UTF-8)
    done = subprocess.run(
        [sys.executable, "-m", "nixgen", "watch", ".", "--max-renders", "1"],
        cwd=project(tmp_path, name="\u2713proj"),
        capture_output=True,
        timeout=60,
        env=latin1,
    )
    clean(done)
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------- accepted, then the build fails


def test_a_link_out_of_the_project_inside_the_python_package(tmp_path: Path) -> None:
    root = project(tmp_path)
    (tmp_path / "secret.py").write_bytes(SECRET)
    (root / "torch-ext" / "relu" / "helper.py").symlink_to(tmp_path / "secret.py")
    done = nixgen("validate", ".", cwd=root)
    assert done.returncode == 2, done.stderr
    assert "torch-ext/relu/helper.py" in done.stderr and "symbolic link" in done.stderr


# ------------------------------------------------------------- migrate and Cargo.toml


def rust_v5(tmp_path: Path) -> Path:
    from tests.test_rust_kernels import relu_rust_v5

    return relu_rust_v5(tmp_path / "rust")


def _hostile_manifest(root: Path, kind: str, tmp_path: Path) -> None:
    manifest = root / "relu-rs" / "Cargo.toml"
    manifest.unlink()
    if kind == "fifo":
        os.mkfifo(manifest)
    elif kind == "zero":
        manifest.symlink_to("/dev/zero")
    elif kind == "deep":
        manifest.write_text('[package]\nname = "relu-rs"\nx = ' + "[" * 1000 + "]" * 1000 + "\n")
    elif kind == "bad-name":
        manifest.write_text('[package]\nname = "relu-rs"\n[lib]\nname = "no such; name"\n')
    elif kind == "outside":
        (tmp_path / "Cargo.toml").write_text('[package]\nname = "stolen-name"\n')
        manifest.symlink_to(tmp_path / "Cargo.toml")


@pytest.mark.parametrize("kind", ["fifo", "zero", "deep", "bad-name", "outside"])
def test_migrate_reads_cargo_toml_by_the_path_rule(tmp_path: Path, kind: str) -> None:
    root = rust_v5(tmp_path)
    before = (root / "build.toml").read_text()
    _hostile_manifest(root, kind, tmp_path)
    done = nixgen("migrate", ".", cwd=root, timeout=30)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "relu-rs/Cargo.toml" in done.stderr
    assert (root / "build.toml").read_text() == before
    assert "stolen" not in done.stderr


# ------------------------------------------------------------------- round-2 leftovers


def test_a_project_directory_named_like_a_toml_file(tmp_path: Path) -> None:
    root = project(tmp_path, name="kernels.toml")
    done = nixgen("validate", str(root), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = nixgen("render", "kernels.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (root / "nix" / "default.nix").is_file()


def test_a_crate_in_a_directory_named_like_an_option(tmp_path: Path) -> None:
    """`-x/` is accepted, so the cargo hooks and `--manifest-path` get `./-x` (the kernel
    file's `crateDir`, which `nixgen.rust.kernel` passes on as `buildAndTestSubdir`)."""
    root = rust_project(tmp_path)
    (root / "relu_rs").rename(root / "-x")
    (root / "build.toml").write_text(RUST_TVM.replace('"relu_rs/', '"-x/'))
    done = nixgen("render", ".", cwd=root)
    assert done.returncode == 0, done.stderr
    kernel = (root / "nix" / "kernels" / "relu_rs.nix").read_text()
    assert 'crateDir = "./-x";' in kernel
    assert 'cargoRoot = "./-x";' in kernel


def test_ctrl_c_inside_a_finalizer_is_no_traceback(tmp_path: Path) -> None:
    """SIGINT landing while Python runs a `__del__` (or another place where it reports an
    exception it cannot raise) is not printed as "Exception ignored … Traceback": nixgen
    stops with `interrupted` and 130, as for a Ctrl-C anywhere else."""
    root = project(tmp_path)
    done = driver(
        """
        import os, signal, sys, time
        import nixgen.app.pipeline as pipeline
        real = pipeline.prepare
        class Finalized:
            def __del__(self):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)
        def prepare(*args, **kwargs):
            item = Finalized()
            del item
            time.sleep(5)  # the interrupt must end the command, not be lost
            return real(*args, **kwargs)
        pipeline.prepare = prepare
        sys.argv = ["nixgen", "render", "."]
        import nixgen.cmdline.entry
        nixgen.cmdline.entry.main()
        """,
        cwd=root,
    )
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 130, err
    assert "Traceback" not in err and "Exception ignored" not in err
    assert err.strip().endswith("interrupted")


LONG_DIR = "/".join(["directory_of_sources"] * 10)  # 209 bytes


def per_object_project(root: Path) -> Path:
    """A cpp-cpu kernel of 32 sources (the per-object mode), one named like an option and
    one 239 bytes long (its encoded object name would be 260 bytes)."""
    sources = ["-x.cpp", f"{LONG_DIR}/kernel_with_a_long_name_a.cpp"]
    sources += [f"k/s{i:02}.cpp" for i in range(30)]
    toml = BUILD_TOML.replace('depends = ["torch"]\nsrc = ["relu/relu.cpp"]', "src = %s") % (
        json.dumps(sources),
    )
    project(root.parent, toml, name=root.name)
    for index, rel in enumerate(sources):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"int nixgen_source_{index}() {{ return {index}; }}\n")
    return root


@pytest.mark.build
@pytest.mark.skipif(shutil.which("nix-build") is None, reason="nix is not installed")
def test_a_dash_source_and_a_long_source_path_build_in_the_per_object_mode(
    tmp_path: Path,
) -> None:
    from tests.nixtools import make_stub, nix_build
    from tests.test_rust_kernels import kernel_expr

    root = per_object_project(tmp_path / "objects")
    assert nixgen("render", ".", cwd=root).returncode == 0
    stub = make_stub(tmp_path / "stub")
    out = nix_build(kernel_expr(stub, "relu"), cwd=root, timeout=1200, max_jobs=4)
    archives = list(out.rglob("*.a"))
    assert archives, list(out.rglob("*"))
    members = subprocess.run(
        ["ar", "t", str(archives[0])], capture_output=True, text=True, check=True
    ).stdout.split()
    assert len(members) == 32
    assert all(len(name.encode()) <= 200 for name in members)


@pytest.mark.parametrize("args", [["render", "."], ["validate", "."], ["init", "fresh"]])
def test_ctrl_c_at_random_moments_never_prints_a_traceback(tmp_path: Path, args: list[str]) -> None:
    """SIGINT at spread-out moments from `main()` on (Python's own start-up, before
    nixgen runs, is outside nixgen's reach): `interrupted` and 130, or a finished run."""
    import random

    rng = random.Random(27)
    root = project(tmp_path)
    code = textwrap.dedent(
        f"""
        import os, sys
        sys.argv = ["nixgen", *{args!r}]
        import nixgen.cmdline.entry
        os.write(2, b"ready\\n")
        nixgen.cmdline.entry.main()
        """
    )
    for attempt in range(12):
        cwd = tmp_path / f"run{attempt}" if args[0] == "init" else root
        cwd.mkdir(exist_ok=True)
        child = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(),
        )
        assert child.stderr is not None
        assert child.stderr.readline() == b"ready\n"
        time.sleep(rng.uniform(0, 0.6))
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
        text = err.decode(errors="replace")
        assert "Traceback" not in text and "Exception ignored" not in text, text
        assert child.returncode in (0, 130), text
        if child.returncode == 130:
            assert text.strip().endswith("interrupted"), text


@pytest.mark.skipif(shutil.which("nix") is None, reason="nix is not installed")
def test_the_flake_of_a_project_whose_path_holds_a_space_evaluates(tmp_path: Path) -> None:
    """`nixgen build`'s evaluation, run for real (the build itself is the same `nix build`
    of derivation paths as for any project): the flake reference Nix gets is valid."""
    from nixgen.building import nixbuild
    from tests.nixtools import kernel_builder, make_stub, nix_env

    root = project(tmp_path / "sp ace", name="relu demo")
    assert nixgen("render", ".", cwd=root).returncode == 0
    stub = make_stub(tmp_path / "stub")
    pairs = [("nixpkgs", f"path:{stub}"), ("kernel-builder", f"path:{kernel_builder(stub)}")]
    ref = nixbuild.flake_ref(root)
    command = nixbuild.eval_command(ref, "x86_64-linux", ["torch213-cxx11-cpu-x86_64-linux"], pairs)
    done = subprocess.run(
        command, cwd=root, capture_output=True, text=True, timeout=600, env=nix_env()
    )
    assert done.returncode == 0, done.stderr[-2000:]
    [drv] = json.loads(done.stdout)
    assert drv.endswith(".drv")
