"""nixgen.toml as a hostile or careless project has it: its keys spelled every way TOML allows,
a link out of the project, a FIFO, option-shaped `[override-input]` names, and two renders
recording different settings at once.

The rules: the file is read by the path rule of every read (a link only to a file inside the
project, no special file, bounded); it is edited by `nixgen.core.tomledit`, which knows a key
by its parsed name, so a setting is replaced wherever and however it is written and never
repeated; an input name or flake reference that Nix could read as an option is refused
where it is read, and the one builder of `--override-input` arguments refuses it too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tomli
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nixgen.app import config
from nixgen.building import nixcommand
from nixgen.cmdline.cli import main
from nixgen.core.errors import NixgenError, ProblemError

from .hostile import env, nixgen, outside_dir, project, snapshot


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output and "internal error" not in result.output
    return result.exit_code, result.output


# ------------------------------------------------------------------ a key however spelled

#: `out`, as TOML lets it be written: bare, quoted, literal, escaped.
SPELLINGS = ["out", '"out"', "'out'", '"o\\u0075t"', '"\\u006fut"']


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.slow
def test_recording_out_replaces_the_key_however_it_is_spelled(
    tmp_path: Path, spelling: str
) -> None:
    root = project(tmp_path)
    (root / "nixgen.toml").write_text(
        f'# keep me\n{spelling} = "gen"  # where it goes\n\n[override-input]\n'
        'nixpkgs = "path:/srv/nixpkgs"\n'
    )
    code, output = invoke("render", str(root), "--out", "gen2")
    assert code == 0, output
    text = (root / "nixgen.toml").read_text()
    assert tomli.loads(text) == {
        "out": "gen2",
        "override-input": {"nixpkgs": "path:/srv/nixpkgs"},
    }
    assert "# keep me" in text and "# where it goes" in text
    # every later verb reads it
    for verb in (["show"], ["validate"], ["render"], ["build", "--dry-run"]):
        code, output = invoke(verb[0], str(root), *verb[1:])
        assert code == 0, (verb, output)
    assert (root / "gen2" / "default.nix").is_file()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spelling=st.sampled_from(SPELLINGS),
    library=st.sampled_from(["library", '"library"', "'library'", '"libr\\u0061ry"']),
    value=st.sampled_from(["gen", "a/b", "x.y-z_1"]),
    dotted=st.booleans(),
)
def test_record_keeps_one_key_per_setting(
    tmp_path_factory: pytest.TempPathFactory,
    spelling: str,
    library: str,
    value: str,
    dotted: bool,
) -> None:
    """Whatever the spellings (and a table written as a table or as dotted keys),
    recording `out` and `library` gives a file that parses (no key twice) to exactly the
    settings asked for, the rest unchanged."""
    root = tmp_path_factory.mktemp("settings")
    table = (
        'override-input.nixpkgs = "path:/srv/nixpkgs"\n'
        if dotted
        else '\n[override-input]\nnixpkgs = "path:/srv/nixpkgs"\n'
    )
    (root / "nixgen.toml").write_text(f'{spelling} = "old"\n{library} = "vendored"\n{table}')
    current, snapshot = config.read_with_snapshot(root)
    recorded = config.record(
        root, {"out": value, "library": "input:github:o/nixgen"}, current, snapshot
    )
    assert recorded is not None
    assert tomli.loads(recorded.data.decode()) == {
        "out": value,
        "library": "input:github:o/nixgen",
        "override-input": {"nixpkgs": "path:/srv/nixpkgs"},
    }


# ------------------------------------------------------------------ where the file is


def test_a_nixgen_toml_linked_out_of_the_project_is_refused_by_every_verb(
    tmp_path: Path,
) -> None:
    other = outside_dir(tmp_path)
    (other / "nixgen.toml").write_text('out = "../../elsewhere/stolen"\n')
    root = project(tmp_path)
    (root / "nixgen.toml").symlink_to(other / "nixgen.toml")
    before = snapshot(tmp_path)
    for verb in (
        ["validate"],
        ["show"],
        ["render"],
        ["render", "--out", "gen"],
        ["build", "--dry-run"],
        ["compdb", "--dry-run"],
    ):
        code, output = invoke(verb[0], str(root), *verb[1:])
        assert code == 2, (verb, output)
        assert "nixgen.toml: error: is a symbolic link to" in output, output
        assert "outside the project" in output
        assert snapshot(tmp_path) == before, verb


def test_a_nixgen_toml_linked_to_a_file_of_the_project_is_read_and_written_there(
    tmp_path: Path,
) -> None:
    root = project(tmp_path)
    (root / "settings").mkdir()
    (root / "settings" / "nixgen.toml").write_text('out = "gen"\n')
    (root / "nixgen.toml").symlink_to("settings/nixgen.toml")
    assert config.read(root).out == "gen"
    code, output = invoke("render", str(root), "--out", "gen2")
    assert code == 0, output
    assert (root / "nixgen.toml").is_symlink()
    assert tomli.loads((root / "settings" / "nixgen.toml").read_text()) == {"out": "gen2"}


@pytest.mark.parametrize("kind", ["fifo", "directory", "big"])
@pytest.mark.slow
def test_a_nixgen_toml_that_is_no_file_is_refused_without_blocking(
    tmp_path: Path, kind: str
) -> None:
    root = project(tmp_path)
    path = root / "nixgen.toml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.write_text("# x\n" * 400_000)
    done = nixgen("validate", ".", cwd=root, timeout=20)
    assert done.returncode == 2, done.stderr
    expected = {"fifo": "is a FIFO", "directory": "is a directory", "big": "is larger than"}
    assert expected[kind] in done.stderr
    assert done.stderr.startswith("nixgen.toml: error: ")


# ------------------------------------------------------------- option-shaped input names


@pytest.mark.parametrize(
    ("name", "ref", "words"),
    [
        ('"--post-build-hook"', '"/tmp/evil.sh"', "starts with `-`: Nix would read it"),
        ('"-x"', '"path:/srv/nixpkgs"', "starts with `-`"),
        ('"nix pkgs"', '"path:/srv/nixpkgs"', "is not a flake input name"),
        ('"a\\nb"', '"path:/srv/nixpkgs"', "is not a flake input name"),
        ("nixpkgs", '"--impure"', "is not a flake reference"),
        ("nixpkgs", '"path:/a\\nb"', "is not a flake reference"),
        ("nixpkgs", '""', "expected a flake reference"),
    ],
)
def test_an_override_that_nix_could_read_as_an_option_is_refused_where_read(
    tmp_path: Path, name: str, ref: str, words: str
) -> None:
    root = project(tmp_path)
    (root / "nixgen.toml").write_text(f"# settings\n[override-input]\n{name} = {ref}\n")
    for verb in (["validate"], ["show"], ["build", "--dry-run"], ["shell", "--dry-run"]):
        code, output = invoke(verb[0], str(root), *verb[1:])
        assert code == 2, (verb, output)
        assert output.startswith(f"{root / 'nixgen.toml'}:3:"), output
        assert "error: override-input." in output and words in output, output
        assert "--post-build-hook" not in output.split("error:")[0]


@pytest.mark.parametrize(
    ("name", "ref"), [("--post-build-hook", "/tmp/evil.sh"), ("nixpkgs", "--impure")]
)
def test_an_option_shaped_override_on_the_command_line_is_refused(
    tmp_path: Path, name: str, ref: str
) -> None:
    root = project(tmp_path)
    code, output = invoke("build", str(root), "--dry-run", "--override-input", name, ref)
    assert code == 2, output
    assert output.startswith("nixgen: error: --override-input: `")


def test_the_override_builder_never_emits_an_option_shaped_name() -> None:
    settings = nixcommand.Settings(overrides=(("nixpkgs", "path:/srv/n"), ("a/b", "github:o/r")))
    assert settings.for_flake() == [
        "--override-input", "nixpkgs", "path:/srv/n", "--override-input", "a/b", "github:o/r",
    ]  # fmt: skip
    for pair in [("--foo", "x"), ("-x", "y"), ("nixpkgs", "--impure"), ("n", ""), ("", "x")]:
        with pytest.raises(NixgenError):
            nixcommand.Settings(overrides=(pair,))
    with pytest.raises(ProblemError):
        config.checked_overrides([("-x", "y")], option="--override-input")


# ----------------------------------------------------------- two renders recording at once


def _consistent(root: Path) -> str:
    """Which library the project is rendered with, after checking that nixgen.toml,
    nix/ and flake.nix all say the same."""
    setting = config.read(root).library or "vendored"
    vendored_tree = (root / "nix" / "lib").is_dir()
    flake_input = "nixgen.url" in (root / "flake.nix").read_text()
    assert vendored_tree == (setting == "vendored"), (setting, vendored_tree)
    assert flake_input == (setting != "vendored"), (setting, flake_input)
    return setting


#: A render whose tree write is followed by a pause (`write.write` wrapped): what a slow
#: machine or a second render starting at the wrong moment looks like.
SLOW_RENDER = """
import sys, time
import nixgen.writing.write as w
real = w.write
def slow(*args, **kwargs):
    result = real(*args, **kwargs)
    sys.stderr.write("tree written\\n"); sys.stderr.flush()
    time.sleep(2)
    return result
w.write = slow
sys.argv = ["nixgen", "render", ".", "--library", sys.argv[1]]
import nixgen.cmdline.entry
nixgen.cmdline.entry.main()
"""


@pytest.mark.slow
def test_two_renders_recording_different_libraries_leave_one_consistent_project(
    tmp_path: Path,
) -> None:
    """Before, a render took the lock only around the tree and recorded `library` in
    nixgen.toml afterwards: a second render between the two (here: while the first pauses
    after its tree) left nixgen.toml saying one library and nix/ holding the other. Now
    each holds the project lock from reading nixgen.toml to its last write, and writes
    the three in one transaction."""
    root = project(tmp_path)
    values = ["vendored", "input:github:owner/nixgen/0123abc"]
    for first, second in (values, values[::-1]):
        slow = subprocess.Popen(
            [sys.executable, "-c", SLOW_RENDER, first],
            cwd=root,
            env=env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert slow.stderr is not None
        line = slow.stderr.readline()
        assert b"tree written" in line, line + slow.stderr.read()
        other = nixgen("render", ".", "--library", second, cwd=root)
        assert other.returncode == 0, other.stderr
        _, err = slow.communicate(timeout=120)
        assert slow.returncode == 0, err.decode()
        _consistent(root)
        assert not [p for p in root.iterdir() if p.name.startswith(".nixgen")]


@pytest.mark.slow
def test_a_render_killed_at_any_moment_while_recording_is_completed_by_the_next(
    tmp_path: Path,
) -> None:
    """SIGKILL a `render --library` that changes nix/, flake.nix and nixgen.toml at random
    moments. Whenever the kill left the new nix/ or the new flake.nix on disk, the next
    render completes that render (all three new), never goes back to a mix of old and
    new settings; in every case the three agree afterwards."""
    import random

    root = project(tmp_path)
    values = ["vendored", "input:github:owner/nixgen/0123abc"]
    assert nixgen("render", ".", cwd=root).returncode == 0
    rng = random.Random(43)
    for run in range(16):
        wanted = values[(run + 1) % 2]
        child = subprocess.Popen(
            [sys.executable, "-m", "nixgen", "render", ".", "--library", wanted],
            cwd=root,
            env=env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.3, 1.5))
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
        child.wait()
        new_tree = (root / "nix" / "lib").is_dir() == (wanted == "vendored")
        new_flake = ("nixgen.url" in (root / "flake.nix").read_text()) == (wanted != "vendored")
        done = nixgen("render", ".", cwd=root)
        assert done.returncode == 0, done.stderr
        setting = _consistent(root)
        if new_tree or new_flake:
            assert setting == wanted, (run, new_tree, new_flake)
        assert not [p for p in root.iterdir() if p.name.startswith(".nixgen")]


def test_a_render_made_before_nixgen_toml_changed_is_not_written(tmp_path: Path) -> None:
    """`build`, `compdb`, `shell` and `watch` render and write without holding the lock
    from their first read: the render carries the nixgen.toml it was made from
    (`Rendered.settings`), and the writer refuses it once another run changed that file."""
    from nixgen.app import pipeline
    from nixgen.core.errors import OutputError
    from nixgen.writing import write

    root = project(tmp_path)
    (root / "nixgen.toml").write_text('library = "vendored"\n')
    rendered = pipeline.prepare(root).rendered
    assert rendered.settings == {"nixgen.toml": b'library = "vendored"\n'}
    (root / "nixgen.toml").write_text('library = "input:github:owner/nixgen/0123abc"\n')
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match=r"nixgen\.toml: changed while nixgen ran"):
        write.write(root, rendered)
    assert snapshot(tmp_path) == before
    rendered = pipeline.prepare(root).rendered  # made anew: written
    write.write(root, rendered)
    _consistent(root)
