"""Build provenance in ``metadata.json``: the git commit a variant was built from, and
whether the work tree was dirty (issue 32, item 4).

The project flake passes its ``self`` to ``flakeOutputs``; ``nix/provenance.nix`` reads
``self.rev`` / ``self.dirtyRev`` (as the anchor's nix-builder/lib/flake-provenance.nix does)
and writes ``provenance`` into each variant's ``metadata.json`` in a small derivation of its
own, so the kernels and the extension never depend on the revision.

``nix/tests/provenance.nix`` tests what is read of ``self``; here, the relu-cpu example
rendered by this nixgen into a temporary git repository is built as a ``git+file:`` flake
against the stand-ins, in the sandbox.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nixgen import __version__
from tests import client as oracle

from .conftest import EXAMPLES, copy_out
from .nixtools import have_nix, kernel_builder, make_stub, nix_env

pytestmark = [
    pytest.mark.build,
    pytest.mark.nix,
    pytest.mark.skipif(not have_nix(), reason="nix is not installed"),
]

SYSTEM = "x86_64-linux"
CPU_VARIANT = f"torch213-cxx11-cpu-{SYSTEM}"


def _nix_version() -> tuple[int, ...]:
    out = subprocess.run(["nix", "--version"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"(\d+)\.(\d+)", out)
    assert found is not None, out
    return tuple(int(part) for part in found.groups())


def has_dirty_rev() -> bool:
    """Whether this Nix gives a flake `self.dirtyRev` (the commit of a dirty tree), which
    exists from Nix 2.17 on; asked when a test needs it, not at import."""
    return have_nix() and _nix_version() >= (2, 17)


# ------------------------------------------------------------------------- builds


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _nix(args: list[str], *, timeout: float = 1800) -> str:
    done = subprocess.run(
        args, env=nix_env(), capture_output=True, text=True, check=False, timeout=timeout
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, stub: Path) -> Path:
    """relu-cpu rendered by this nixgen (its flake passes `self`), its inputs pointed at the
    stand-ins and locked, all committed to a new git repository: a clean tree as a user's
    is, with its `flake.lock` committed.

    Not `--override-input`: Nix (2.8 and 2.26 alike) treats a flake whose lock file an
    override changed as modified, and its `self` then has no `rev` (tried: a committed
    one-input flake loses `rev`, `shortRev`, `revCount` under `--override-input`;
    `test_an_override_that_changes_the_lock_records_no_commit` holds it)."""
    from click.testing import CliRunner

    from nixgen.cmdline.cli import main

    root = tmp_path_factory.mktemp("git") / "relu-cpu"
    copy_out(EXAMPLES / "relu-cpu", root, symlinks=True)
    rendered = CliRunner().invoke(main, ["render", str(root)])
    assert rendered.exit_code == 0, rendered.output
    flake = root / "flake.nix"
    text = flake.read_text()
    assert "inherit self nixpkgs kernel-builder" in text
    for name, url in (("kernel-builder", kernel_builder(stub)), ("nixpkgs", stub.resolve())):
        text, count = re.subn(
            rf'^(\s*{re.escape(name)}\.url = )"[^"]*";$', rf'\1"path:{url}";', text, flags=re.M
        )
        assert count == 1, name
    flake.write_text(text)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _nix(["nix", "flake", "lock", f"git+file://{root}"], timeout=300)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "relu-cpu")
    assert _git(root, "status", "--porcelain") == ""
    return root


def _eval(root: Path, apply: str) -> Any:
    ref = f"git+file://{root}#packages.{SYSTEM}.{CPU_VARIANT}"
    return json.loads(_nix(["nix", "eval", "--json", ref, "--apply", apply]))


def _build(root: Path) -> Path:
    ref = f"git+file://{root}#packages.{SYSTEM}.{CPU_VARIANT}"
    out = _nix(["nix", "build", "--json", "--no-link", "--max-jobs", "2", ref])
    [result] = json.loads(out)
    return Path(result["outputs"]["out"])


def _metadata(out: Path) -> dict[str, Any]:
    return json.loads((out / "metadata.json").read_text())


def test_metadata_of_a_clean_tree_names_its_commit_and_a_rebuild_is_identical(
    project: Path, stub: Path
) -> None:
    out = _build(project)
    head = _git(project, "rev-parse", "HEAD")
    metadata = _metadata(out)
    assert metadata["provenance"] == {
        "kernel-builder": {"version": f"nixgen {__version__}"},
        "kernel": {"commit": head, "dirty": False},
    }
    # The kernels client reads it (kernels-data's Metadata: full commit, `dirty`) and its
    # DirtyValidator finds nothing to warn about.
    import kernels

    read = kernels.Metadata.read_from_file(out / "metadata.json")
    # A git id is an `Oid` since kernels 0.18.3 (a `str` before): compared as text.
    assert str(read.provenance.kernel.commit) == head
    assert not read.provenance.dirty
    # The stamp wrote the digest again: still the client's, file for file.
    actual = oracle.rust().Digest.hash_variant(read.digest.algorithm, out)
    assert dict(read.digest.files) == dict(actual.files)
    assert read.digest.validate(actual) is None
    # Everything else is the extension's own output, byte for byte.
    unstamped = Path(_eval(project, "p: p.passthru.nixgen.unstamped.outPath"))
    assert {p.relative_to(out) for p in out.rglob("*")} == {
        p.relative_to(unstamped) for p in unstamped.rglob("*")
    }
    for path in out.rglob("*"):
        if path.is_file() and path.name != "metadata.json":
            assert path.read_bytes() == (unstamped / path.relative_to(out)).read_bytes(), path
    # The same commit builds the same output: rebuilt in the sandbox, not one byte differs.
    drv = _eval(project, "p: p.drvPath")
    _nix(["nix-build", "--check", "--no-out-link", drv])


def test_a_new_commit_restamps_metadata_and_relinks_nothing(project: Path, stub: Path) -> None:
    before = _eval(project, "p: [ p.drvPath p.passthru.nixgen.unstamped.drvPath ]")
    (project / "NOTES.md").write_text("another commit\n")
    _git(project, "add", "NOTES.md")
    _git(project, "commit", "-q", "-m", "notes")
    try:
        after = _eval(project, "p: [ p.drvPath p.passthru.nixgen.unstamped.drvPath ]")
    finally:
        _git(project, "reset", "-q", "--hard", "HEAD~1")
    assert after[0] != before[0], "the stamped variant must follow the commit"
    assert after[1] == before[1], "the extension (kernels, link) must not depend on the commit"


def test_metadata_of_a_dirty_tree_never_claims_a_clean_commit(project: Path, stub: Path) -> None:
    notes = project / "NOTES.md"
    notes.write_text("uncommitted\n")
    _git(project, "add", "NOTES.md")  # tracked, not committed: the tree is dirty
    try:
        out = _build(project)
    finally:
        _git(project, "rm", "-q", "--cached", "NOTES.md")
        notes.unlink()
    provenance = _metadata(out)["provenance"]
    assert provenance["kernel-builder"] == {"version": f"nixgen {__version__}"}
    if has_dirty_rev():
        head = _git(project, "rev-parse", "HEAD")
        assert provenance["kernel"] == {"commit": head, "dirty": True}
        import kernels

        assert kernels.Metadata.read_from_file(out / "metadata.json").provenance.dirty
    else:
        # Nix < 2.17 gives a dirty tree no `rev` and no `dirtyRev`: the commit is unknown,
        # and the client's `kernel` needs one, so none is recorded (as the anchor records
        # none): not the last commit, not "clean".
        assert "kernel" not in provenance


def _stamped_provenance(root: Path, *flags: str) -> Any:
    """The `provenance` the variant's `metadata.json` would get, read without building: the
    stamp writes a `builtins.toFile` (written to the store by the evaluation) over the file,
    with its digest (`digest.py write "$out" --metadata FILE`)."""
    ref = f"git+file://{root}#packages.{SYSTEM}.{CPU_VARIANT}"
    command = json.loads(
        _nix(["nix", "eval", "--json", ref, "--apply", "p: p.buildCommand", *flags])
    )
    found = re.search(r"--metadata (/nix/store/[0-9a-z]{32}-metadata\.json)", command)
    assert found is not None, command
    return json.loads(Path(found[1]).read_text())["provenance"]


def test_an_override_that_changes_the_lock_records_no_commit(
    project: Path, stub: Path, tmp_path: Path
) -> None:
    """`--override-input` (`nixgen build --offline` with an `[override-input]` table) that
    changes the lock file costs the flake's `self` its `rev` on every Nix tried (2.8 and
    2.26.3, not 2.8 alone): a clean tree then records no commit, rather than a wrong one;
    a dirty one still records its commit as dirty (`dirtyRev` survives the override)."""
    assert _stamped_provenance(project)["kernel"] == {
        "commit": _git(project, "rev-parse", "HEAD"),
        "dirty": False,
    }
    # The same stand-in at another path: the lock's `nixpkgs` entry changes.
    other = shutil.copytree(stub, tmp_path / "nixpkgs", symlinks=True)
    overridden = _stamped_provenance(project, "--override-input", "nixpkgs", f"path:{other}")
    assert overridden == {"kernel-builder": {"version": f"nixgen {__version__}"}}
    # A dirty tree keeps its `dirtyRev` under the same override (2.26; 2.8 has none).
    if has_dirty_rev():
        notes = project / "NOTES.md"
        notes.write_text("uncommitted\n")
        _git(project, "add", "NOTES.md")
        try:
            dirty = _stamped_provenance(project, "--override-input", "nixpkgs", f"path:{other}")
        finally:
            _git(project, "rm", "-q", "--cached", "NOTES.md")
            notes.unlink()
        assert dirty["kernel"] == {"commit": _git(project, "rev-parse", "HEAD"), "dirty": True}
