"""Where a rendered project takes the static Nix library from (`nixgen.rendering.library`).

A vendored copy (`<out>/lib`) by default; the repository's own `nix/` in place for a project
tracked in nixgen's repository (the examples: no copy is committed); the flake input
`nixgen` with `render --library input:URL`. The Nix tests build from a fresh `git clone` of
the repository's committed HEAD, as a user who clones it would.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.checking import project
from nixgen.cmdline.cli import main
from nixgen.planning import variants as variants_mod
from nixgen.rendering import library

from .conftest import EXAMPLES, REPO
from .cudatools import HAVE_WHEELS, SKIP_REASON
from .nixtools import (
    NixError,
    commit_all,
    flake_build,
    flake_eval,
    make_stub,
    needs_nix,
    nix_env,
    nix_parse,
)

SYSTEM = "x86_64-linux"
NAMES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "build.toml").is_file())


def _git(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def _tracks_the_library() -> bool:
    return shutil.which("git") is not None and (
        _git("ls-files", "--error-unmatch", "nix/default.nix").returncode == 0
    )


in_git = pytest.mark.skipif(not _tracks_the_library(), reason="not a git checkout of nixgen")


def _copy_out(name: str, target: Path) -> Path:
    """Example `name` copied out of the repository, without its generated Nix."""
    shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns("nix", "result*"))
    return target


def _render(*args: str) -> object:
    return CliRunner().invoke(main, ["render", *args])


# ----------------------------------------------------------------- in place, vendored


@in_git
@pytest.mark.slow
def test_the_examples_commit_no_copy_of_the_library() -> None:
    listed = _git("ls-files", "examples").stdout.splitlines()
    assert listed, "no example is tracked"
    assert [f for f in listed if "/nix/lib/" in f] == []
    for name in NAMES:
        entry = (EXAMPLES / name / "nix" / "default.nix").read_text()
        assert "(import ../../../nix).project.entry {" in entry, name


def test_an_example_copied_out_of_the_repository_gets_its_own_copy(tmp_path: Path) -> None:
    root = _copy_out("relu-cpu", tmp_path / "relu-cpu")
    result = _render(str(root))
    assert result.exit_code == 0, result.output
    assert "(import ./lib).project.entry {" in (root / "nix" / "default.nix").read_text()
    copied = (root / "nix" / "lib" / "project.nix").read_text()
    assert copied.partition("\n")[2] == (REPO / "nix" / "project.nix").read_text()


def _fake_checkout(base: Path) -> tuple[Path, Path]:
    """A git repository holding a copy of nixgen's library (`nix/`, its data beside it) and
    a project; returns (library, project)."""
    skip = shutil.ignore_patterns("tests", "__pycache__")
    shutil.copytree(REPO / "nix", base / "nix", symlinks=True, ignore=skip)
    shutil.copytree(REPO / "nixgen" / "data", base / "nixgen" / "data")
    root = _copy_out("relu-cpu", base / "kernels" / "relu-cpu")
    return base / "nix", root


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.slow
def test_the_library_is_used_in_place_only_where_git_tracks_it_beside_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib, root = _fake_checkout(tmp_path / "checkout")
    monkeypatch.setattr(library, "shipped", lambda: lib)
    entry = root / "nix" / "default.nix"
    # Not a git repository yet: a copy.
    assert _render(str(root)).exit_code == 0
    assert (root / "nix" / "lib" / "project.nix").is_file()
    commit_all(tmp_path / "checkout")
    result = _render("-v", str(root))
    assert result.exit_code == 0, result.output
    assert "(import ../../../nix).project.entry {" in entry.read_text()
    assert not (root / "nix" / "lib").exists()
    # One library file git does not track: no flake of the project would see it.
    _git("rm", "-q", "--cached", "nix/compile.nix", cwd=tmp_path / "checkout")
    assert _render(str(root)).exit_code == 0
    assert "(import ./lib).project.entry {" in entry.read_text()
    # Explicitly vendored, though tracked: a copy.
    _git("add", "nix/compile.nix", cwd=tmp_path / "checkout")
    assert _render("--library", "vendored", str(root)).exit_code == 0
    assert (root / "nix" / "lib" / "compile.nix").is_file()


# ------------------------------------------------------------------------ --library


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        ("vendor", "did you mean `vendored`?"),
        ("inpt:github:o/nixgen", "did you mean `input:github:o/nixgen`?"),
        ("input:htps://example.org/nixgen.tar.gz", "did you mean `input:https://"),
        ("input:", "expected a flake URL after `input:`"),
        ("input:github:o/nix gen", "without spaces"),
    ],
)
def test_a_bad_library_is_a_usage_error_with_the_closest_choice(
    tmp_path: Path, value: str, hint: str
) -> None:
    root = _copy_out("relu-cpu", tmp_path / "relu-cpu")
    result = _render("--library", value, str(root))
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nixgen: error: --library: "), result.stderr
    assert hint in lines[0]
    assert "Traceback" not in result.output
    assert not (root / "nix").exists() and not (root / "nixgen.toml").exists()


def test_a_bad_library_in_nixgen_toml_is_located(tmp_path: Path) -> None:
    root = _copy_out("relu-cpu", tmp_path / "relu-cpu")
    (root / "nixgen.toml").write_text('out = "nix"\nlibrary = "vendord"\n')
    result = _render(str(root))
    assert result.exit_code == 2
    assert "nixgen.toml:2" in result.stderr and "did you mean `vendored`?" in result.stderr
    assert "Traceback" not in result.output
    assert not (root / "nix").exists()


@pytest.mark.parametrize(
    ("library", "named"),
    [
        ("input:github:o/nixgen/0123abc", True),
        ("input:git+file:///srv/nixgen", False),
        ("vendored", False),
    ],
)
def test_offline_names_a_library_input_that_must_be_downloaded(
    tmp_path: Path, library: str, named: bool
) -> None:
    from nixgen.app import config
    from nixgen.building import offline

    (tmp_path / "nixgen.toml").write_text(f'library = "{library}"\n')
    # What `build --offline` and `shell --offline` pass: the project's setting.
    setting = config.read(tmp_path).library
    missing = dict(offline.missing_inputs(tmp_path, [], setting))
    assert ("nixgen" in missing) is named
    if named:
        assert missing["nixgen"] == library.removeprefix("input:")
        assert "nixgen" not in dict(offline.missing_inputs(tmp_path, ["nixgen"], setting))
        message = offline.missing_message(offline.missing_inputs(tmp_path, [], setting))
        assert "--override-input nixgen path:DIR" in message


@needs_nix
def test_library_input_pins_the_url_and_writes_no_copy(tmp_path: Path) -> None:
    root = _copy_out("relu-cpu", tmp_path / "relu-cpu")
    # A URL with Nix's string metacharacters stays one string.
    url = 'path:/srv/nix"gen${abort"x"}\\'
    result = _render("--library", f"input:{url}", str(root))
    assert result.exit_code == 0, result.output
    assert 'recorded `library = "input:' in result.stderr
    assert not (root / "nix" / "lib").exists()
    flake = (root / "flake.nix").read_text()
    nix_parse(flake)
    entry = (root / "nix" / "default.nix").read_text()
    nix_parse(entry)
    assert "{ nixgen }:\nnixgen.project.entry {" in entry
    done = subprocess.run(
        ["nix-instantiate", "--eval", "--strict", "--json", "-E", "(import ./flake.nix).inputs"],
        cwd=root,
        env=nix_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout)["nixgen"] == {
        "url": url,
        "inputs": {
            "nixpkgs": {"follows": "nixpkgs"},
            "kernel-builder": {"follows": "kernel-builder"},
        },
    }
    assert tomllib.loads((root / "nixgen.toml").read_text())["library"] == f"input:{url}"
    # A later plain render keeps it (nixgen.toml); `--library vendored` goes back to a copy.
    again = _render("-v", str(root))
    assert again.exit_code == 0 and "is up to date" in again.stderr, again.output
    assert _render("--library", "vendored", str(root)).exit_code == 0
    assert (root / "nix" / "lib" / "project.nix").is_file()
    assert "nixgen.url" not in (root / "flake.nix").read_text()


# ------------------------------------------------------- Nix, from a fresh clone


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh `git clone` of the repository (its committed HEAD: what a user gets)."""
    if not _tracks_the_library():
        pytest.skip("not a git checkout of nixgen")
    target = tmp_path_factory.mktemp("clone") / "nixgen"
    done = _git("clone", "-q", "--no-hardlinks", str(REPO), str(target))
    assert done.returncode == 0, done.stderr
    return target


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


def _variants(name: str) -> list[variants_mod.Variant]:
    return variants_mod.variants(project.read(EXAMPLES / name).build, system=SYSTEM)


def _drv_paths(flake_dir: Path, names: list[str], stub: Path) -> list[str]:
    apply = "ps: map (n: ps.${n}.drvPath) [ " + " ".join(f'"{n}"' for n in names) + " ]"
    return flake_eval(flake_dir, f"packages.{SYSTEM}", stub=stub, apply=apply)


@needs_nix
@pytest.mark.nix
@pytest.mark.parametrize("name", NAMES)
def test_every_example_of_a_fresh_clone_instantiates_every_variant(
    clone: Path, stub: Path, name: str
) -> None:
    assert not (clone / "examples" / name / "nix" / "lib").exists()
    names = [v.name for v in _variants(name)]
    drvs = _drv_paths(clone / "examples" / name, names, stub)
    assert len(drvs) == len(names) > 0
    assert all(Path(d).is_file() for d in drvs), "not instantiated"


@needs_nix
@pytest.mark.build
@pytest.mark.parametrize("name", ["relu-cpu", "relu-rust", "relu-mixed"])
def test_the_cpu_examples_of_a_fresh_clone_build(clone: Path, stub: Path, name: str) -> None:
    """One CPU variant of each CPU example, built for real (`nix build` of the clone's
    `examples/<name>` flake: git+file of the clone, ?dir=examples/<name>)."""
    variant = next(v.name for v in _variants(name) if v.backend == "cpu")
    [out] = flake_build(clone / "examples" / name, variant, stub=stub, timeout=3600)
    meta = json.loads((out / "metadata.json").read_text())
    assert (out / f"{meta['id']}.abi3.so").is_file(), sorted(p.name for p in out.iterdir())


@needs_nix
@pytest.mark.build
@pytest.mark.skipif(not HAVE_WHEELS, reason=SKIP_REASON)
def test_the_cuda_example_of_a_fresh_clone_builds(clone: Path, stub: Path) -> None:
    """One CUDA 13.0 variant of relu-cuda (relu-xpu instantiates only: no SYCL compiler
    here)."""
    variant = next(v.name for v in _variants("relu-cuda") if v.backend_version == "13.0")
    [out] = flake_build(clone / "examples" / "relu-cuda", variant, stub=stub, timeout=3600)
    meta = json.loads((out / "metadata.json").read_text())
    assert (out / f"{meta['id']}.abi3.so").is_file(), sorted(p.name for p in out.iterdir())


@needs_nix
@pytest.mark.nix
def test_library_input_from_a_local_flake_gives_the_in_place_derivations(
    clone: Path, stub: Path, tmp_path: Path
) -> None:
    """relu-cpu copied out and rendered with `--library input:git+file://<clone>` takes the
    clone's library: the same derivations as the clone's own example, which imports that
    library in place."""
    root = _copy_out("relu-cpu", tmp_path / "relu-cpu")
    result = _render("--library", f"input:git+file://{clone}", str(root))
    assert result.exit_code == 0, result.output
    assert not (root / "nix" / "lib").exists()
    names = [v.name for v in _variants("relu-cpu")]
    through_input = _drv_paths(root, names, stub)
    assert through_input == _drv_paths(clone / "examples" / "relu-cpu", names, stub)
    assert all(Path(d).is_file() for d in through_input)


@needs_nix
@pytest.mark.nix
def test_a_library_input_of_another_format_fails_saying_so(
    clone: Path, stub: Path, tmp_path: Path
) -> None:
    """An input whose library reads another format of the generated files (a newer
    nixgen) fails first, naming both formats and what to do, before any key is misread."""
    other = tmp_path / "other-nixgen"
    assert _git("clone", "-q", "--no-hardlinks", str(clone), str(other)).returncode == 0
    table = other / "nixgen" / "data" / "format.json"
    data = json.loads(table.read_text())
    data["format"] += 1
    table.write_text(json.dumps(data, indent=2) + "\n")
    commit_all(other)
    root = _copy_out("relu-cpu", tmp_path / "relu-cpu")
    result = _render("--library", f"input:git+file://{other}", str(root))
    assert result.exit_code == 0, result.output
    with pytest.raises(NixError) as failed:
        flake_eval(root, f"packages.{SYSTEM}.kernels.drvPath", stub=stub)
    have = data["format"] - 1
    assert (
        f"for library format {have}; this library reads format {data['format']}: "
        "run `nixgen render`" in failed.value.stderr
    )
