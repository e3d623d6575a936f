"""Outputs the user names (`compdb -o`, `build --out-link`, `--out` of every verb, nixgen.toml's
`out`) through the one path rule (`nixgen.core.paths.output_path`, `render.check_out_dir`).

Written as an attacker and a careless user would: the project itself (``''``, ``.``,
``torch-ext/..``), a way out (``..``, an absolute path elsewhere, a link on the way, a link
at the end), an input of the project (build.toml, a listed source, nixgen.toml, the generated
tree, git's directory), a FIFO, names and paths longer than the file system takes. Each is
refused with one error line naming the option, exit status 2, no traceback and nothing
written anywhere (the whole temporary directory is compared before and after).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.cmdline.cli import main

from .hostile import SECRET, outside_dir, project, snapshot
from .tiers import starts_processes

FAKE_NIX = """#!{python}
import sys
if sys.argv[1:2] == ["eval"]:
    print('{{"kernels": {{}}, "binding": null}}')
"""
FAKE_INSTANTIATE = """#!{python}
print('{{"gcc": {{}}, "clang": {{}}}}')
"""


@pytest.fixture
@starts_processes
def fake_nix(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `nix` that evaluates every variant to no compile commands (compdb writes `[]`)."""
    bin_dir = tmp_path_factory.mktemp("fake-nix")
    for name, text in (("nix", FAKE_NIX), ("nix-instantiate", FAKE_INSTANTIATE)):
        (bin_dir / name).write_text(text.format(python=sys.executable))
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    output = result.output
    assert "Traceback" not in output and "internal error" not in output, output
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result.exit_code, output


LONG_NAME = "a" * 300
LONG_PATH = "/".join(["abcdefgh"] * 500)  # 4.5 KB


def hostile_outputs(tmp_path: Path, root: Path) -> dict[str, tuple[str, str]]:
    """`-o` values, each with the words its error must say."""
    os.mkfifo(root / "fifo.json")
    (root / "leak.json").symlink_to(tmp_path / "elsewhere" / "precious.txt")
    (root / "out").symlink_to(tmp_path / "elsewhere")
    (root / ".git").mkdir()
    return {
        "empty": ("", "names the project directory itself"),
        "dot": (".", "names the project directory itself"),
        "up and back": ("torch-ext/..", "leads out of the project with `..`"),
        "parent": ("../compile_commands.json", "leads out of the project with `..`"),
        "absolute elsewhere": (str(tmp_path / "elsewhere" / "cc.json"), "is outside the project"),
        "build.toml": ("build.toml", "is an input of the project (`build.toml`)"),
        "nixgen.toml": ("nixgen.toml", "is an input of the project (`nixgen.toml`)"),
        "a source": ("relu/relu.cpp", "is an input of the project (`relu/relu.cpp`)"),
        "in the package": ("torch-ext/relu/cc.json", "is an input of the project"),
        "in the generated tree": ("nix/cc.json", "is an input of the project (`nix`)"),
        "git's directory": (".git/config", "is an input of the project (`.git`)"),
        "flake.nix": ("flake.nix", "is an input of the project (`flake.nix`)"),
        "a directory": ("torch-ext", "is a directory"),
        "a fifo": ("fifo.json", "is a FIFO"),
        "a link at the end": ("leak.json", "is a symbolic link"),
        "a link on the way": ("out/cc.json", "goes through `out`, which is a symbolic link"),
        "a long name": (LONG_NAME, "has a name of 300 bytes"),
        "a 4.5 KB path": (LONG_PATH, "bytes long with the project's path"),
        "a NUL": ("cc\0.json", "holds a NUL character"),
    }


CASES = [
    "empty", "dot", "up and back", "parent", "absolute elsewhere", "build.toml", "nixgen.toml",
    "a source", "in the package", "in the generated tree", "git's directory", "flake.nix",
    "a directory", "a fifo", "a link at the end", "a link on the way", "a long name",
    "a 4.5 KB path", "a NUL",
]  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_compdb_refuses_an_output_that_breaks_the_path_rule(
    tmp_path: Path, fake_nix: None, case: str
) -> None:
    outside_dir(tmp_path)
    root = project(tmp_path)
    (root / "nixgen.toml").write_text("# mine\n")
    value, words = hostile_outputs(tmp_path, root)[case]
    before = snapshot(tmp_path)
    for args in (["--dry-run"], ["--no-realise"]):
        code, output = invoke("compdb", str(root), "-o", value, *args)
        assert code == 2, output
        assert output.startswith("nixgen: error: --output: `"), output
        assert words in output, output
        assert output.count("\n") == 1, output
        assert snapshot(tmp_path) == before  # nothing written, here or elsewhere


def test_compdb_writes_inside_the_project_and_replaces_only_a_database(
    tmp_path: Path, fake_nix: None
) -> None:
    root = project(tmp_path)
    (root / "notes.json").write_text('{"mine": true}\n')
    # An absolute path inside the project is the same file as the relative one.
    code, output = invoke("compdb", str(root), "-o", str(root / "cc.json"), "--no-realise")
    assert code == 0, output
    assert json.loads((root / "cc.json").read_text()) == []
    code, output = invoke("compdb", str(root), "-o", "sub/dir/cc.json", "--no-realise")
    assert code == 0 and json.loads((root / "sub/dir/cc.json").read_text()) == []
    # A file that is no compilation database is the user's: kept without --force.
    code, output = invoke("compdb", str(root), "-o", "notes.json", "--no-realise")
    assert code == 2 and "is not a compilation database" in output, output
    assert (root / "notes.json").read_text() == '{"mine": true}\n'
    code, output = invoke("compdb", str(root), "-o", "notes.json", "--no-realise", "--force")
    assert code == 0 and json.loads((root / "notes.json").read_text()) == [], output
    # A database (an older one) is replaced; the same one is left as it is.
    (root / "cc.json").write_text('[{"directory": "/x", "file": "a.c", "command": "cc a.c"}]')
    code, output = invoke("compdb", str(root), "-o", "cc.json", "--no-realise")
    assert code == 0 and json.loads((root / "cc.json").read_text()) == []
    inode = (root / "cc.json").stat().st_ino
    code, output = invoke("compdb", str(root), "-o", "cc.json", "--no-realise")
    assert code == 0 and "is up to date" in output
    assert (root / "cc.json").stat().st_ino == inode
    assert not list(root.rglob(".nixgen-*"))


@pytest.mark.parametrize(
    "case", ["absolute elsewhere", "parent", "a link on the way", "build.toml", "in the package"]
)
def test_build_refuses_a_link_directory_that_breaks_the_path_rule(
    tmp_path: Path, case: str
) -> None:
    outside_dir(tmp_path)
    root = project(tmp_path)
    value, words = hostile_outputs(tmp_path, root)[case]
    value = {"parent": "../links", "a link on the way": "out/links"}.get(case, value)
    before = snapshot(tmp_path)
    code, output = invoke("build", str(root), "--out-link", value, "--dry-run")
    assert code == 2, output
    assert output.startswith("nixgen: error: --out-link: `") and words in output, output
    assert snapshot(tmp_path) == before


@pytest.mark.slow
def test_build_takes_an_absolute_link_directory_inside_the_project(tmp_path: Path) -> None:
    root = project(tmp_path)
    code, output = invoke("build", str(root), "--out-link", str(root / "results"), "--dry-run")
    assert code == 0, output


@pytest.mark.parametrize("verb", ["render", "build", "shell", "compdb"])
@pytest.mark.parametrize("value", ["a" * 4400, "/".join(["abcdefgh"] * 500), "a" * 256])
def test_an_output_directory_too_long_is_one_clear_error(
    tmp_path: Path, verb: str, value: str
) -> None:
    """`--out` of 4.4 KB (one name, or many short ones), or one name over 255 bytes: one
    error line before anything is read or written, by every verb that takes `--out`."""
    root = project(tmp_path)
    before = snapshot(tmp_path)
    args = [verb, str(root), "--out", value] + ([] if verb == "render" else ["--dry-run"])
    code, output = invoke(*args)
    assert code == 2, output
    assert "invalid output directory" in output and "bytes" in output, output[-300:]
    assert output.count("\n") == 1
    assert len(output) < 600
    assert snapshot(tmp_path) == before


def test_a_long_out_in_nixgen_toml_is_a_located_error(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "nixgen.toml").write_text(f'# settings\nout = "{"a" * 4400}"\n')
    before = snapshot(tmp_path)
    for verb in (["render"], ["validate"], ["show"], ["build", "--dry-run"]):
        code, output = invoke(verb[0], str(root), *verb[1:])
        assert code == 2, (verb, output)
        assert "nixgen.toml:2:7: error: out: invalid output directory" in output, output[:300]
        assert snapshot(tmp_path) == before


def test_the_outputs_outside_the_project_are_untouched_by_a_render_with_planted_links(
    tmp_path: Path,
) -> None:
    """Links planted where the render writes its temporary files and settings
    (`.nixgen.toml.tmp`, the old fixed name; `.nixgen-tmp-*`; `.nixgen-journal`'s
    temporary file) do not receive a byte; nixgen.toml stays a regular file."""
    other = outside_dir(tmp_path)
    root = project(tmp_path)
    for name in (".nixgen.toml.tmp", ".nixgen-tmp-nixgen.toml", ".nixgen-tmp-0000"):
        (root / name).symlink_to(other / "precious.txt")
    code, output = invoke("render", str(root), "--out", "gen", "--library", "vendored")
    assert code == 0, output
    assert (other / "precious.txt").read_bytes() == SECRET
    assert not (root / "nixgen.toml").is_symlink()
    assert 'out = "gen"' in (root / "nixgen.toml").read_text()


@pytest.mark.parametrize(
    ("value", "clash"),
    [
        ("relu", "relu/relu.cpp"),
        ("torch-ext", "torch-ext/relu"),
        ("torch-ext/relu/gen", "torch-ext/relu"),
    ],
)
def test_an_output_directory_among_the_inputs_is_refused(
    tmp_path: Path, value: str, clash: str
) -> None:
    """The generated tree is replaced as a whole: in a source directory (or the Python
    package) it would sit among, and be swapped with, what the build reads."""
    root = project(tmp_path)
    before = snapshot(tmp_path)
    for verb in (["render"], ["build", "--dry-run"], ["compdb", "--dry-run"]):
        code, output = invoke(verb[0], str(root), "--out", value, *verb[1:])
        assert code == 2, output
        assert f"invalid output directory `{value}`" in output and f"`{clash}`" in output
        assert snapshot(tmp_path) == before
