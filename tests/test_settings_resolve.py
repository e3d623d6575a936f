"""The settings a verb runs with (`nixgen.app.settings`): the command line (the environment
applied to it by click), then nixgen.toml, then the defaults, resolved once before anything
else runs, and read by every verb from that one value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nixgen.app import config
from nixgen.app.settings import Given, resolve
from nixgen.cmdline.cli import main
from nixgen.core.errors import ProblemError
from nixgen.rendering import library
from nixgen.rendering.render import OutDirError

from .hostile import project

SETTINGS_FILE = """\
out = "gen"
library = "input:github:o/nixgen/0123abc"
offline = true

[override-input]
nixpkgs = "path:/srv/nixpkgs"
kernel-builder = "path:/srv/kernel-builder"
"""


def test_without_nixgen_toml_the_defaults(tmp_path: Path) -> None:
    root = project(tmp_path)
    found = resolve(root)
    assert (found.out, found.library, found.offline, found.overrides) == (
        "nix",
        library.COPY,
        False,
        (),
    )
    assert found.root == root
    assert found.snapshot == {"nixgen.toml": None}


def test_nixgen_toml_then_the_command_line_per_setting(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "nixgen.toml").write_text(SETTINGS_FILE)
    found = resolve(root)
    assert found.out == "gen"
    assert found.library == library.Library(url="github:o/nixgen/0123abc")
    assert found.offline is True
    assert found.overrides == (
        ("nixpkgs", "path:/srv/nixpkgs"),
        ("kernel-builder", "path:/srv/kernel-builder"),
    )
    assert found.snapshot == {"nixgen.toml": SETTINGS_FILE.encode()}
    given = Given(
        out="other",
        library="vendored",
        overrides=(("nixpkgs", "path:/elsewhere"),),
    )
    found = resolve(root, given)
    assert (found.out, found.library) == ("other", library.COPY)
    # An input given replaces the file's of the same name; the others stay.
    assert found.overrides == (
        ("kernel-builder", "path:/srv/kernel-builder"),
        ("nixpkgs", "path:/elsewhere"),
    )
    assert found.offline is True  # --offline only turns it on


@pytest.mark.parametrize(
    ("given", "error"),
    [
        ({"out": "../outside"}, OutDirError),
        ({"library": "vendord"}, library.LibraryError),
        ({"library": "path:/abs/nix"}, library.LibraryError),
        ({"overrides": (("--impure", "path:/x"),)}, ProblemError),
    ],
)
def test_a_bad_command_line_value_is_refused_when_given(
    given: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        Given(**given)


@pytest.mark.slow
def test_the_environment_reaches_the_settings_through_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NIXGEN_OUT wins over nixgen.toml's `out` (as --out does), and NIXGEN_OFFLINE turns
    offline on: what `nixgen build --dry-run --json` would render and run says so."""
    root = project(tmp_path)
    (root / "nixgen.toml").write_text('out = "gen"\n')
    monkeypatch.setenv("NIXGEN_OUT", "from-env")
    monkeypatch.setenv("NIXGEN_OFFLINE", "1")
    result = CliRunner().invoke(main, ["build", "--dry-run", "--json", str(root)])
    assert result.exit_code == 0, result.output
    planned = json.loads(result.stdout)["result"]
    assert planned["render"] and all(
        f.startswith("from-env/") for f in planned["render"] if f != "flake.nix"
    )
    assert "--offline" in planned["eval"] and "--offline" in planned["build"]


@pytest.mark.slow
@pytest.mark.parametrize("verb", [["build", "--dry-run"], ["render"], ["compdb", "--dry-run"]])
def test_a_run_reads_nixgen_toml_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verb: list[str]
) -> None:
    """Each verb resolves its settings once (the build verb used to read nixgen.toml four
    times, once per setting and again for the render's snapshot)."""
    root = project(tmp_path)
    (root / "nixgen.toml").write_text('out = "nix"\noffline = false\n')
    reads: list[str] = []
    real = config.read_with_snapshot

    def counted(project: Path | str) -> Any:
        reads.append(str(project))
        return real(project)

    monkeypatch.setattr(config, "read_with_snapshot", counted)
    monkeypatch.setattr(config, "read", lambda *_: pytest.fail("nixgen.toml read again"))
    result = CliRunner().invoke(main, [*verb, str(root)])
    assert result.exit_code == 0, result.output
    assert len(reads) == 1, reads
