"""Shared fixtures: the real-world corpus, project trees and a CLI runner."""

from __future__ import annotations

import os
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.checking import project
from nixgen.reading import model

from .tiers import *  # noqa: F403  (the fast tier's rule: tests/tiers.py)

TESTS = Path(__file__).parent
REPO = TESTS.parent
CORPUS = TESTS / "corpus"
CORPUS_FILES = sorted(CORPUS.glob("*.toml"))
EXAMPLES = REPO / "examples"

# The README's test command is `.venv/bin/python -m pytest`, with no venv activated: the venv's
# bin/ goes first on PATH, so the tests, and the nixgen and Nix they start, use the tools
# scripts/setup.sh put there (the current Nix of scripts/nix.sh among them).
_VENV_BIN = str(Path(sys.prefix) / "bin")
if sys.prefix != sys.base_prefix and os.environ.get("PATH", "").split(os.pathsep)[0] != _VENV_BIN:
    os.environ["PATH"] = os.pathsep.join([_VENV_BIN, os.environ.get("PATH", "")])

# pytest removes old numbered temporary directories at exit with a recursive
# shutil.rmtree: a 1,500-deep tree left in /tmp by an interrupted run of
# test_hostile_paths would otherwise end a later, green session in RecursionError.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

# A suite started under `nohup` (or by a runner that ignores SIGHUP) passes the ignored
# SIGHUP on to every process it starts, and nixgen rightly keeps an ignored SIGHUP ignored:
# the tests of what SIGHUP does would see nothing. A handler, unlike an ignored signal,
# is reset by exec: the suite still outlives a hangup, and what it starts gets SIGHUP's
# default.
if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, lambda signum, frame: None)


def corpus_id(path: Path) -> str:
    return path.stem


def materialize(build_toml: Path | str, root: Path) -> Path:
    """A project tree for `build_toml`: the file itself (and the nixgen.toml beside it) plus
    an empty file for every path it lists (a crate's manifest naming its library) and the
    Python package, so file checks and Nix file sets can see them."""
    root.mkdir(parents=True, exist_ok=True)
    text = Path(build_toml).read_text() if isinstance(build_toml, Path) else build_toml
    (root / "build.toml").write_text(text)
    # the project's nixgen.toml (a golden case's, beside its build.toml)
    if isinstance(build_toml, Path) and (build_toml.parent / "nixgen.toml").is_file():
        shutil.copy(build_toml.parent / "nixgen.toml", root / "nixgen.toml")
    loaded = project.read(root, check_files=False)
    build = loaded.build
    files = set(build.source_files())
    dirs: set[str] = set()
    fw = build.framework
    if isinstance(fw, (model.Torch, model.TvmFfi)):
        dirs.update(fw.include)
    manifests: dict[str, str] = {}
    for name, kernel in build.kernels.items():
        dirs.update(getattr(kernel, "include", []))
        if isinstance(kernel, model.RUST_KERNELS):
            # a Rust source entry without an extension is a directory of sources
            listed = [p for p in kernel.src if "." not in p.rsplit("/", 1)[-1]]
            files.difference_update(listed)
            files.update(f"{p.rstrip('/')}/lib.rs" for p in listed)
            # the crate's manifest names the library nixgen reads from it: the kernel's when
            # a file said it, else the crate's directory, as `cargo new` names a crate (the
            # kernel's name at the root); a workspace's other manifests are workspaces
            crate_dir = kernel.cargo_manifest.rpartition("/")[0].rpartition("/")[2]
            package = kernel.library or crate_dir or kernel.library_name(name)
            manifests[kernel.cargo_manifest] = f'[package]\nname = "{package}"\n'
            for other in kernel.manifests():
                manifests.setdefault(other, "[workspace]\n")
            # a lock file of no dependencies: the build reads it while it is evaluated
            for lock in kernel.src:
                if lock.rsplit("/", 1)[-1] == "Cargo.lock":
                    manifests.setdefault(lock, "version = 3\n")
    for rel in sorted(files):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(manifests.get(rel, f"// {rel}\n"))
    for rel in sorted(dirs):
        (root / rel).mkdir(parents=True, exist_ok=True)
    from nixgen.reading.model import python_package_dir

    package = root / python_package_dir(build)
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").touch()
    return root


#: A capability nixgen's table does not know, listed by a real project (issue 15).
UNKNOWN_CAPABILITY = "11.8"


def unknown_capability_project(root: Path) -> Path:
    """The `relu-mixed` example (a C++ and a Rust CPU kernel, a CUDA kernel) with
    `UNKNOWN_CAPABILITY` among its CUDA kernel's capabilities, unrendered, at `root`."""
    copy_out(EXAMPLES / "relu-mixed", root, "nix", "flake.nix", "result*", "target")
    toml = root / "build.toml"
    text = toml.read_text()
    listed = 'cuda-capabilities = ["8.0", "9.0"]'
    assert listed in text
    wider = f'cuda-capabilities = ["8.0", "{UNKNOWN_CAPABILITY}", "9.0"]'
    toml.write_text(text.replace(listed, wider))
    return root


@pytest.fixture(autouse=True)
def _private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nixgen's cache (compiled templates) is a per-session one, never the user's ~/.cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))


@pytest.fixture
def make_project(tmp_path: Path) -> Callable[..., Path]:
    """Write a build.toml (text or corpus path) into a fresh directory, with its files."""
    counter = iter(range(1_000_000))

    def make(build_toml: Path | str, *, files: bool = True) -> Path:
        root = tmp_path / f"project{next(counter)}"
        if files:
            return materialize(build_toml, root)
        root.mkdir(parents=True)
        text = Path(build_toml).read_text() if isinstance(build_toml, Path) else build_toml
        (root / "build.toml").write_text(text)
        return root

    return make


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def without_library(text: str) -> str:
    """nixgen.toml's `text` less its ``library = …`` line, the comment block just above it
    and the blank line after it (what an example's nixgen.toml holds beyond that)."""
    lines = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.startswith("library = ")), None)
    if at is None:
        return text
    start = at
    while start > 0 and lines[start - 1].startswith("#"):
        start -= 1
    end = at + 1
    if end < len(lines) and not lines[end].strip():
        end += 1
    return "".join(lines[:start] + lines[end:])


def copy_out(source: Path, target: Path, *ignore: str, symlinks: bool = False) -> Path:
    """The example project `source` copied out of the repository to `target`, as a user
    copies it, less the `ignore` patterns, and less its nixgen.toml's
    `library = "path:../../nix"` (`without_library`), which names the repository's library
    by a path that leads nowhere out there (a render then vendors a copy into nix/lib, the
    default); the file's other settings (a Rust kernel's options) stay. A nixgen.toml left
    with nothing is not copied."""
    shutil.copytree(source, target, symlinks=symlinks, ignore=shutil.ignore_patterns(*ignore))
    settings = target / "nixgen.toml"
    if settings.is_file() and not settings.is_symlink():
        kept = without_library(settings.read_text())
        if any(line.strip() and not line.startswith("#") for line in kept.splitlines()):
            settings.write_text(kept)
        else:
            settings.unlink()
    return target


@pytest.fixture
def copy_example(tmp_path: Path) -> Callable[[str], Path]:
    def copy(name: str) -> Path:
        return copy_out(EXAMPLES / name, tmp_path / name)

    return copy
