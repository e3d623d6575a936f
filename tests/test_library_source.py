"""Where a rendered project takes the static Nix library from (`nixgen.rendering.library`).

A vendored copy (`<out>/lib`) by default; a library directory in place with
`render --library path:DIR` (the examples name the repository's own `nix/` so in their
nixgen.toml: no copy is committed); the flake input `nixgen` with `render --library
input:URL`. Only the setting decides: a render never asks git, and `nixgen build` refuses a
`path:` library its flake would not see. The Nix tests build from a fresh `git clone` of the
repository's committed HEAD, as a user who clones it would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.checking import project
from nixgen.cmdline.cli import main
from nixgen.planning import variants as variants_mod

from .conftest import EXAMPLES, REPO, copy_out
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
    copy_out(EXAMPLES / name, target, "nix", "result*")
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
        settings = tomllib.loads((EXAMPLES / name / "nixgen.toml").read_text())
        assert settings["library"] == "path:../../nix", name
        assert f"examples/{name}/nixgen.toml" in listed


def test_an_example_copied_out_of_the_repository_gets_its_own_copy(tmp_path: Path) -> None:
    root = _copy_out("relu-cpu", tmp_path / "relu-cpu")
    result = _render(str(root))
    assert result.exit_code == 0, result.output
    assert "(import ./lib).project.entry {" in (root / "nix" / "default.nix").read_text()
    copied = (root / "nix" / "lib" / "project.nix").read_text()
    assert copied.partition("\n")[2] == (REPO / "nix" / "project.nix").read_text()


def test_an_example_copied_with_its_settings_names_the_missing_library(tmp_path: Path) -> None:
    """Its nixgen.toml's `path:../../nix` leads nowhere out of the repository: the render
    says so, located, and writes nothing (no silent fallback to a copy)."""
    root = _copy_out("relu-cpu", tmp_path / "relu-cpu")
    shutil.copy(EXAMPLES / "relu-cpu" / "nixgen.toml", root / "nixgen.toml")
    result = _render(str(root))
    assert result.exit_code == 2, result.output
    assert "`path:../../nix`:" in result.stderr
    assert "holds no nixgen library" in result.stderr and "`vendored`" in result.stderr
    assert "Traceback" not in result.output
    assert not (root / "nix").exists()


def _fake_checkout(base: Path) -> tuple[Path, Path]:
    """A directory holding a copy of nixgen's library (`nix/`, its data beside it) and a
    project two levels down; returns (library, project)."""
    skip = shutil.ignore_patterns("tests", "__pycache__")
    shutil.copytree(REPO / "nix", base / "nix", symlinks=True, ignore=skip)
    shutil.copytree(REPO / "nixgen" / "data", base / "nixgen" / "data")
    root = _copy_out("relu-cpu", base / "kernels" / "relu-cpu")
    return base / "nix", root


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def _unseen(root: Path) -> list[dict[str, object]]:
    """The problems `nixgen build --dry-run --json` reports for files the flake would not
    see (it runs nothing)."""
    result = CliRunner().invoke(main, ["build", "--dry-run", "--json", str(root)])
    assert result.exit_code == 0, result.output
    problems: list[dict[str, object]] = json.loads(result.stdout)["problems"]
    return problems


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.slow
def test_the_library_setting_alone_decides_what_render_writes_never_git(tmp_path: Path) -> None:
    """The same render, whether git tracks the library or not: vendored by default,
    in place with `path:`. `nixgen build` (here its dry run) then names the library's
    files git does not track, since its flake would not see them."""
    base = tmp_path / "checkout"
    _, root = _fake_checkout(base)
    assert _render(str(root)).exit_code == 0
    assert (root / "nix" / "lib" / "project.nix").is_file()
    vendored = _tree(root / "nix")
    result = _render("--library", "path:../../nix", str(root))
    assert result.exit_code == 0, result.output
    assert 'recorded `library = "path:../../nix"`' in result.stderr
    entry = (root / "nix" / "default.nix").read_text()
    assert "(import ../../../nix).project.entry {" in entry
    assert not (root / "nix" / "lib").exists()
    in_place = _tree(root / "nix")
    commit_all(base)
    again = _render("-v", str(root))
    assert again.exit_code == 0 and "is up to date" in again.stderr, again.output
    assert _tree(root / "nix") == in_place
    assert _unseen(root) == []
    # One library file git does not track: the render is the same, the build refuses it.
    _git("rm", "-q", "--cached", "nix/compile.nix", cwd=base)
    assert _render(str(root)).exit_code == 0
    assert _tree(root / "nix") == in_place
    [problem] = _unseen(root)
    assert "1 file(s) of the library `path:../../nix` are not tracked by git" in str(
        problem["message"]
    )
    assert "nix/compile.nix" in str(problem["message"])
    # Vendored again: git is not asked about the library.
    assert _render("--library", "vendored", str(root)).exit_code == 0
    assert _tree(root / "nix") == vendored
    assert not [p for p in _unseen(root) if "the library" in str(p["message"])]


@pytest.mark.slow
def test_a_path_library_outside_the_flakes_source_is_refused_by_build(tmp_path: Path) -> None:
    """Outside a git work tree a flake reads only the project directory: a library beside
    the project is refused before Nix runs (the render itself succeeds)."""
    _, root = _fake_checkout(tmp_path / "plain")
    assert _render("--library", "path:../../nix", str(root)).exit_code == 0
    result = CliRunner().invoke(main, ["build", "--dry-run", "--json", str(root)])
    problems = json.loads(result.stdout)["problems"]
    assert [p["message"] for p in problems] == [
        f"the library `path:../../nix` ({os.path.relpath(tmp_path / 'plain' / 'nix')}) lies "
        "outside the project directory (it is in no git work tree), and a flake reads only "
        "its own source tree, so the build would not see it"
    ], problems


def test_a_path_library_of_another_format_is_refused_before_rendering(tmp_path: Path) -> None:
    lib, root = _fake_checkout(tmp_path / "checkout")
    table = lib.parent / "nixgen" / "data" / "format.json"
    data = json.loads(table.read_text())
    data["format"] += 1
    table.write_text(json.dumps(data))
    result = _render("--library", "path:../../nix", str(root))
    assert result.exit_code == 2, result.output
    assert f"reads format {data['format']} of the generated files" in result.stderr
    assert not (root / "nix").exists() and not (root / "nixgen.toml").exists()


# ------------------------------------------------------------------------ --library


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        ("vendor", "did you mean `vendored`?"),
        ("inpt:github:o/nixgen", "did you mean `input:github:o/nixgen`?"),
        ("input:htps://example.org/nixgen.tar.gz", "did you mean `input:https://"),
        ("input:", "expected a flake URL after `input:`"),
        ("input:github:o/nix gen", "without spaces"),
        ("pth:../nixgen/nix", "did you mean `path:../nixgen/nix`?"),
        ("path:", "expected a directory after `path:`"),
        ("path:/srv/nixgen/nix", "must be relative to the project"),
        ("path:../my nixgen", "without spaces"),
        ("path:../.hidden/nix", "a Nix path literal cannot spell"),
        ("path:../no-such-dir", "holds no nixgen library"),
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
    from nixgen.app import settings
    from nixgen.building import offline

    (tmp_path / "nixgen.toml").write_text(f'library = "{library}"\n')
    # What `build --offline` and `shell --offline` pass: the project's setting.
    setting = settings.resolve(tmp_path).library
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
