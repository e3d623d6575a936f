"""Helpers for tests that run Nix against the stub nixpkgs in ``tests/nixpkgs``.

The stub is a strict, offline stand-in for nixpkgs (see ``tests/nixpkgs/README.md``).
``make_stub`` copies it to a temporary directory (outside any git work tree, so flakes see
every file) and writes its ``host.nix``; the other helpers run ``nix-instantiate``,
``nix-build`` and ``nix`` with the settings these machines need (``NIX_CONFIG``: flakes on,
no substituters, builds as root so the root-owned rustup toolchain is reachable) and the one
every user's Nix has on Linux: every build runs in the Nix sandbox (``sandbox = true``), which
sees the store and only the host paths the stand-ins declare (``make_host.sandbox_paths``,
as ``extra-sandbox-paths``), so a build that reads anything else (the project directory,
``$HOME``, ``/tmp``, an undeclared host file) fails here as it would for a user.

Written for Nix 2.8, which has no ``nix build --print-out-paths``: ``nix_build`` uses
``nix-build --no-out-link`` and ``flake_build`` reads ``nix build --json`` (the suite's Nix,
2.18 or newer, reads both alike). ``flake_check`` and ``flake_show`` pass ``--all-systems``:
from Nix 2.16 on they would see the current system's outputs only.

Every helper that evaluates fails on an evaluation warning in Nix's output (``trace:
warning:`` / ``evaluation warning:``, what ``lib.warn`` prints, e.g. for a deprecated alias
such as ``cudaPackages.cuda_cccl``): a warning here is a warning for every user, and an error
under ``--abort-on-warn`` or ``config.allowAliases = false``. Nix's own notices (``warning:
not writing modified lock file``, ``unknown flake output``) are not evaluation warnings.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

TESTS = Path(__file__).resolve().parent
STUB_SOURCE = TESTS / "nixpkgs"
#: The stand-in of the kernels toolchain flake (huggingface/kernels), copied next to the stub.
KERNEL_BUILDER_SOURCE = TESTS / "kernel-builder"


#: A line of Nix's output that an evaluation warning wrote: ``builtins.trace "warning: …"``
#: (Nix 2.8 prints ``trace: warning: …``), nixpkgs' ``lib.warn`` through ``builtins.trace``
#: (``trace: evaluation warning: …``, maybe coloured, the escape character maybe lost) or
#: ``builtins.warn`` (Nix ≥ 2.23, ``evaluation warning: …``).
_EVALUATION_WARNING = re.compile(
    r"^(?:\x1b?\[[0-9;]*m)*"
    r"(?:trace: (?:\x1b?\[[0-9;]*m)*(?:evaluation )?warning:|evaluation warning:)",
    re.MULTILINE,
)


def evaluation_warnings(output: str) -> list[str]:
    """The lines of ``output`` (a Nix command's stderr) that are evaluation warnings."""
    return [line for line in output.splitlines() if _EVALUATION_WARNING.match(line) is not None]


class NixError(RuntimeError):
    """A Nix command failed; ``stderr`` holds its complete error output."""

    def __init__(self, args: Sequence[str], returncode: int, stdout: str, stderr: str):
        self.args_ = list(args)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        tail = "\n".join(stderr.strip().splitlines()[-40:])
        super().__init__(f"{' '.join(args[:3])} … exited with {returncode}:\n{tail}")


def _load_make_host():
    spec = importlib.util.spec_from_file_location("_stub_make_host", STUB_SOURCE / "make_host.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_host = _load_make_host()


def have_nix() -> bool:
    """True when nix-instantiate, nix-build and nix are all on PATH."""
    return all(shutil.which(tool) for tool in ("nix-instantiate", "nix-build", "nix"))


_T = TypeVar("_T")


def needs_nix(test: _T) -> _T:
    """A test that runs Nix: marked `nix` (so it is in the slow tier, tests/tiers.py) and
    skipped where Nix is absent."""
    return pytest.mark.nix(pytest.mark.skipif(not have_nix(), reason="nix is not installed")(test))


def assert_real_nix() -> tuple[int, int, int]:
    """The `nix` a test's nixgen will run is the suite's real one (scripts/nix.sh, 2.18 or
    newer), not a fake of tests/fakenix.py: its version, read as nixgen reads it."""
    from nixgen.building import nixcommand

    found = shutil.which("nix")
    assert found is not None and "fake" not in found, found
    version = nixcommand.nix_version()
    assert version is not None and version >= (2, 18), (found, version)
    return version


def nix_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """``os.environ`` plus the ``NIX_CONFIG`` these tests need (and ``extra``)."""
    env = dict(os.environ)
    env["NIX_CONFIG"] = nix_config()
    if extra:
        env.update(extra)
    return env


def host_facts(python: str = sys.executable) -> dict[str, Any]:
    """What ``make_host`` detects on this machine (None for a missing tool), detected once a
    session (some twenty tool runs, about a second) and only when a test first needs it."""
    return _detected(python)


#: The environment the test session started with: tools are detected against it, whatever
#: a test has set when it first needs them (a fixture's `XDG_CACHE_HOME` or `HOME` would
#: otherwise hide the CUDA wheels, and the cached answer would keep them hidden).
_SESSION_ENV = dict(os.environ)


@functools.cache
def _detected(python: str) -> dict[str, Any]:
    from unittest import mock

    with mock.patch.dict(os.environ, _SESSION_ENV, clear=True):
        return make_host.detect(python)


def require_host(*keys: str, reason: str) -> None:
    """Skip the running test unless ``host_facts()[keys[0]][keys[1]]…`` is set (say
    ``require_host("cuda", "prefix", reason=…)``): called from a fixture, so the tools are
    detected when a test that needs them runs, not when the tests are collected."""
    value: Any = host_facts()
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    if not value:
        import pytest

        pytest.skip(reason)


def _inside_git_work_tree(path: Path) -> bool:
    return any((p / ".git").exists() for p in [path, *path.parents])


# What a copy of the work tree leaves out when git cannot say what is tracked.
_UNTRACKED = (
    ".git",
    ".venv",
    "__pycache__",
    "*.pyc",
    "*.egg-info",
    ".pytest_cache",
    ".hypothesis",
    ".ruff_cache",
    "result",
    "result-*",
    "build",
    "dist",
)


def _git_files(repo: Path) -> list[str] | None:
    if not shutil.which("git") or not (repo / ".git").exists():
        return None
    done = subprocess.run(
        ["git", "ls-files", "-z", "-co", "--exclude-standard"],
        cwd=repo,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        return None
    return sorted({rel for rel in done.stdout.decode().split("\0") if rel})


def copy_worktree(target: Path) -> Path:
    """Copy the repository to ``target`` (outside any git work tree) as a commit would hold
    it: the tracked files plus untracked ones git does not ignore (``git ls-files -co
    --exclude-standard``), so the root flake there sees the examples' generated Nix. Without
    git, copies the tree minus virtual environments, caches and build outputs.

    The copy is made a git repository with everything committed (`commit_all`): an
    example's flake is then what Nix makes of its path, ``git+file:`` of the copy with
    ``?dir=examples/<name>``, whose source holds the repository's ``nix/`` that the
    example's ``nix/default.nix`` imports in place (`_flake_ref`)."""
    target = Path(target).resolve()
    if _inside_git_work_tree(target):
        raise ValueError(f"{target} is inside a git work tree; use a directory outside it")
    repo = TESTS.parent
    files = _git_files(repo)
    if files is None:
        shutil.copytree(repo, target, symlinks=True, ignore=shutil.ignore_patterns(*_UNTRACKED))
        return target
    for rel in files:
        source, dest = repo / rel, target / rel
        if not source.is_symlink() and not source.exists():
            continue  # deleted in the work tree, not yet from the index
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest, follow_symlinks=False)
    commit_all(target)
    return target


def commit_all(directory: Path) -> None:
    """Make `directory` a git repository (if it is not one) holding all its files in one
    commit, with a fixed identity and date (no user configuration read)."""
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "nixgen tests",
        "GIT_AUTHOR_EMAIL": "tests@nixgen.invalid",
        "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
        "GIT_COMMITTER_NAME": "nixgen tests",
        "GIT_COMMITTER_EMAIL": "tests@nixgen.invalid",
        "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "--allow-empty", "-m", "copy"]):
        subprocess.run(["git", *args], cwd=directory, env=env, check=True, capture_output=True)


def make_stub(tmp_path: Path, *, python: str = sys.executable) -> Path:
    """Copy the stub nixpkgs to ``tmp_path/nixpkgs`` and the kernels toolchain stand-in to
    ``tmp_path/kernel-builder`` (``kernel_builder(stub)``), write their ``host.nix``, and
    return the nixpkgs copy.

    ``python`` is the interpreter whose torch and headers the Python stand-ins use.
    Raises ValueError when ``tmp_path`` is inside a git work tree (a flake there would only
    see tracked files).
    """
    tmp_path = Path(tmp_path).resolve()
    if _inside_git_work_tree(tmp_path):
        raise ValueError(f"{tmp_path} is inside a git work tree; use a directory outside it")
    for source, name in ((STUB_SOURCE, "nixpkgs"), (KERNEL_BUILDER_SOURCE, "kernel-builder")):
        target = tmp_path / name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(
            source,
            target,
            ignore=shutil.ignore_patterns("host.nix", "*.tmp", "__pycache__", "result", "result-*"),
        )
        make_host.write_host(target, python=python)
    return tmp_path / "nixpkgs"


def kernel_builder(stub: Path | str) -> Path:
    """The kernels toolchain stand-in that ``make_stub`` copied next to ``stub``."""
    return Path(stub).resolve().parent / "kernel-builder"


class NixWarning(NixError):
    """A Nix command succeeded but printed an evaluation warning (``evaluation_warnings``)."""


def toolchain_input(stub: Path | str) -> str:
    """A Nix expression for the toolchain stand-in next to ``stub`` as a flake passes its
    input ``kernel-builder``, for tests that call ``nix/`` without a flake: its directory
    (``outPath``) and ``inputs.rust-overlay`` (the stand-in flake's input, whose
    ``overlays.default`` nixgen applies; a bare path has no ``inputs``, so no ``rust-bin``)."""
    kb = kernel_builder(stub)
    return (
        f"(let ro = import {kb}/rust-overlay/flake.nix; in {{ outPath = {kb};"
        " inputs.rust-overlay = ro.outputs { self = ro; nixpkgs = null; }; })"
    )


def _run(
    args: Sequence[str],
    *,
    cwd: Path | str | None,
    timeout: float,
    allow_warnings: bool = False,
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        list(args),
        cwd=cwd,
        env=nix_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise NixError(args, done.returncode, done.stdout, done.stderr)
    warnings = [] if allow_warnings else evaluation_warnings(done.stderr)
    if warnings:
        raise NixWarning(
            args,
            done.returncode,
            done.stdout,
            "the command succeeded but printed evaluation warnings (fix them; a test that"
            " checks one passes allow_warnings=True):\n" + "\n".join(warnings),
        )
    return done


def nix_parse(text: str) -> None:
    """Check that ``text`` is syntactically valid Nix; raise NixError if not."""
    done = subprocess.run(
        ["nix-instantiate", "--parse", "-"],
        input=text,
        env=nix_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise NixError(
            ["nix-instantiate", "--parse", "-"], done.returncode, done.stdout, done.stderr
        )


def nix_eval_json(
    expr: str,
    *,
    cwd: Path | str | None = None,
    read_write: bool = False,
    timeout: float = 120,
    allow_warnings: bool = False,
) -> Any:
    """Evaluate ``expr`` strictly with ``nix-instantiate --eval --strict --json``.

    Relative paths in ``expr`` resolve against ``cwd``. ``nix-instantiate --eval`` only
    computes store paths; pass ``read_write=True`` when the test reads files that the
    evaluation puts into the store (``lib.fileset.toSource``, ``builtins.path``).
    Raises NixError on failure, NixWarning on an evaluation warning (unless
    ``allow_warnings``).
    """
    args = ["nix-instantiate", "--eval", "--strict", "--json"]
    if read_write:
        args.append("--read-write-mode")
    done = _run([*args, "--expr", expr], cwd=cwd, timeout=timeout, allow_warnings=allow_warnings)
    return json.loads(done.stdout)


def sandbox_paths(python: str = sys.executable) -> list[str]:
    """The host paths a sandboxed build of the stand-ins sees besides the store (what
    ``make_host.sandbox_paths`` declares for this machine, ``python``'s installation)."""
    return make_host.sandbox_paths(host_facts(python))


@functools.cache
def nix_config() -> str:
    """The settings every Nix command of the tests runs with: flakes, no substituters, no
    build users, and the sandbox with only the stand-ins' declared host paths (read as
    ``NIX_CONFIG``; made on first use, as it detects the host's tools)."""
    return (
        "experimental-features = nix-command flakes\nsubstituters =\nbuild-users-group =\n"
        "sandbox = true\nextra-sandbox-paths = " + " ".join(sandbox_paths())
    )


def __getattr__(name: str) -> str:
    # `nixtools.NIX_CONFIG` is `nix_config()`, made when first read, not at import (PEP 562).
    if name == "NIX_CONFIG":
        return nix_config()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def nix_build(
    expr: str | None = None,
    *,
    file: Path | str | None = None,
    attr: str | None = None,
    cwd: Path | str | None = None,
    check: bool = False,
    sandbox: bool = True,
    max_jobs: int = 2,
    timeout: float = 600,
    extra_args: Sequence[str] = (),
) -> Path:
    """Build with ``nix-build --no-out-link`` and return the (first) output path.

    Give either ``expr`` (a Nix expression) or ``file``; ``attr`` selects ``-A``.
    ``check=True`` rebuilds an existing output and fails if it differs (``--check``).
    Builds run in the sandbox (``NIX_CONFIG``); ``sandbox=False`` builds outside it, in a
    build directory under ``/tmp`` rather than ``/build`` (a rebuild that way with ``check``
    shows the output does not depend on where it was built).
    """
    if (expr is None) == (file is None):
        raise ValueError("give exactly one of expr or file")
    args = ["nix-build", "--no-out-link", "--max-jobs", str(max_jobs)]
    if not sandbox:
        args += ["--option", "sandbox", "false"]
    if check:
        args.append("--check")
    args += list(extra_args)
    args += ["--expr", expr] if expr is not None else [str(file)]
    if attr is not None:
        args += ["-A", attr]
    done = _run(args, cwd=cwd, timeout=timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("/")]
    if not lines:
        raise NixError(args, 0, done.stdout, "nix-build printed no output path\n" + done.stderr)
    check_metadata([Path(line) for line in lines])
    return Path(lines[0])


def check_metadata(outputs: Sequence[Path]) -> None:
    """Every `metadata.json` a build produced (of an output, or of each variant of a
    bundle one level down) is what the `kernels` client's own `Metadata.from_bytes` reads,
    its `kernels-minver` three numbers: every test build holds nixgen's metadata to the
    client (the locked one, in the tests' environment)."""
    try:
        from kernels._rust import Metadata
    except ImportError:  # no client installed: nothing to hold it to
        return
    for out in outputs:
        if not out.is_dir():
            continue
        # A variant's output holds its metadata.json (a file of that name deeper down is
        # the package's own); a bundle's holds one variant per folder.
        top = out / "metadata.json"
        for path in [top] if top.is_file() else sorted(out.glob("*/metadata.json")):
            if not path.is_file():
                continue
            data = path.read_bytes()
            try:
                metadata = Metadata.from_bytes(data)
            except ValueError as exc:
                raise AssertionError(f"{path}: the kernels client refuses it: {exc}") from None
            minver = metadata.kernels_minver
            assert minver is not None and str(minver).count(".") == 2, (path, data)


def _flake_ref(flake_dir: Path | str, attr: str | None) -> str:
    """What Nix makes of the path `flake_dir`: ``git+file:`` of the git work tree it is in
    (with ``?dir=`` for a flake below its top; the source is the work tree's tracked files),
    else ``path:`` of the directory itself."""
    path = Path(flake_dir).resolve()
    top = next((p for p in (path, *path.parents) if (p / ".git").exists()), None)
    if top is None:
        ref = f"path:{path}"
    else:
        below = path.relative_to(top).as_posix()
        ref = f"git+file://{top}" + (f"?dir={below}" if below != "." else "")
    return f"{ref}#{attr}" if attr else ref


def overrides(stub: Path | str, *, toolchain: bool = True) -> list[str]:
    """``--override-input`` arguments for the stub nixpkgs and (``toolchain``) the kernels
    toolchain stand-in next to it (input ``kernel-builder``)."""
    args = ["--override-input", "nixpkgs", f"path:{Path(stub).resolve()}"]
    if toolchain:
        args += ["--override-input", "kernel-builder", f"path:{kernel_builder(stub)}"]
    return args


def _override(stub: Path | str, toolchain: bool = True) -> list[str]:
    return overrides(stub, toolchain=toolchain)


def flake_eval(
    flake_dir: Path | str,
    attr: str,
    *,
    stub: Path | str,
    apply: str | None = None,
    timeout: float = 120,
    toolchain: bool = True,
) -> Any:
    """``nix eval --json path:<flake_dir>#<attr> --override-input nixpkgs path:<stub>``.

    The flake keeps its real ``github:`` nixpkgs URL; nothing is fetched and no lock file is
    written. ``apply`` is a Nix function applied to the value (``--apply``). ``toolchain``:
    also override the input ``kernel-builder`` with the stand-in next to ``stub``.
    """
    args = ["nix", "eval", "--json", _flake_ref(flake_dir, attr), *_override(stub, toolchain)]
    if apply is not None:
        args += ["--apply", apply]
    return json.loads(_run(args, cwd=None, timeout=timeout).stdout)


def flake_build(
    flake_dir: Path | str,
    attr: str,
    *,
    stub: Path | str,
    max_jobs: int = 2,
    timeout: float = 600,
) -> list[Path]:
    """``nix build --json --no-link`` a flake output against the stub; return output paths."""
    args = [
        "nix",
        "build",
        "--json",
        "--no-link",
        "--max-jobs",
        str(max_jobs),
        _flake_ref(flake_dir, attr),
        *_override(stub),
    ]
    results = json.loads(_run(args, cwd=None, timeout=timeout).stdout)
    outputs = [Path(p) for r in results for p in r["outputs"].values()]
    check_metadata(outputs)
    return outputs


def flake_build_each(
    installables: Sequence[tuple[Path | str, str]],
    *,
    stub: Path | str,
    max_jobs: int = 2,
    timeout: float = 600,
) -> list[Path]:
    """``flake_build`` of several ``(flake_dir, attr)`` in one ``nix build`` (builds run in
    parallel, shared derivations once); the output paths, in the order Nix prints them
    (Nix 2.8 does not keep the order of the installables)."""
    args = ["nix", "build", "--json", "--no-link", "--max-jobs", str(max_jobs)]
    args += [_flake_ref(flake_dir, attr) for flake_dir, attr in installables] + _override(stub)
    results = json.loads(_run(args, cwd=None, timeout=timeout).stdout)
    outputs = [Path(r["outputs"]["out"]) for r in results]
    check_metadata(outputs)
    return outputs


@functools.cache
def _all_systems() -> list[str]:
    """``--all-systems`` where Nix has it (2.16 on): since then `nix flake check` evaluates and
    `nix flake show` lists only the current system's outputs (Nix 2.8 did every system)."""
    out = subprocess.run(["nix", "--version"], capture_output=True, text=True, check=False)
    found = re.search(r"(\d+)\.(\d+)", out.stdout)
    new = found is not None and (int(found[1]), int(found[2])) >= (2, 16)
    return ["--all-systems"] if new else []


def flake_check(
    flake_dir: Path | str, *, stub: Path | str, build: bool = False, timeout: float = 600
) -> str:
    """``nix flake check`` (``--no-build`` unless ``build``) against the stub; return stderr.
    Without ``build``, every system's outputs are evaluated; a build is of this system's."""
    args = ["nix", "flake", "check", _flake_ref(flake_dir, None), *_override(stub)]
    if not build:
        args += ["--no-build", *_all_systems()]
    return _run(args, cwd=None, timeout=timeout).stderr


def flake_show(
    flake_dir: Path | str, *, stub: Path | str, timeout: float = 120, all_systems: bool = True
) -> Any:
    """``nix flake show --json`` against the stub, every system's outputs evaluated
    (``--all-systems``, Nix 2.13 and newer) unless `all_systems` is False."""
    args = ["nix", "flake", "show", "--json", _flake_ref(flake_dir, None), *_override(stub)]
    if all_systems:
        args += _all_systems()
    return json.loads(_run(args, cwd=None, timeout=timeout).stdout)


def nix_here(
    flake_dir: Path | str, args: Sequence[str], *, stub: Path | str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``nix <args> --override-input …`` run inside `flake_dir`, as a CI script in the
    project's checkout runs it (``nix build .#backendCi.cpu``: the flake is ``.``)."""
    return _run(["nix", *args, *_override(stub)], cwd=flake_dir, timeout=timeout)
