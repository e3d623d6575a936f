"""Values several stages read, each with one home; a test fails when a second one comes back
(or evaluates both sides):

* the default output directory: `nixgen.core.paths.DEFAULT_OUT`, read by the CLI's
  help texts, nixgen.toml's settings, the pipeline and the renderer;
* the `pyext` default (`model.DEFAULT_PYEXT`) and GitHub's job limit
  (`ci.GITHUB_MAX_JOBS`), each read by `render` and `nixgen matrix`;
* the best (default) variant: `plan.best_variant`, the anchor's rule; `select_ci` takes
  it per backend, and the plan marks each system's `default`, which nix/project.nix's dev
  shell `default` reads (a test evaluates it).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nixgen.checking import project
from nixgen.cmdline.cli import main
from nixgen.core import paths, tables
from nixgen.planning import ci, plan
from nixgen.planning import variants as variants_mod
from nixgen.reading import model
from nixgen.rendering import nixlit, render

from . import nixtools
from .conftest import materialize
from .goldens import SYNTHETIC

REPO = Path(__file__).resolve().parent.parent


def test_a_project_without_settings_renders_into_the_default_output_directory(
    tmp_path: Path,
) -> None:
    """The default output directory is `paths.DEFAULT_OUT` wherever it applies: the verbs'
    help texts (below), nixgen.toml's settings, the pipeline and the renderer. (This replaced
    an identity check of three imports and a search of the package for `"nix"`.)"""
    root = materialize(SYNTHETIC["cpp-cpu"], tmp_path / "p")
    assert render.render(plan.make(project.read(root).build)).out_dir == paths.DEFAULT_OUT
    result = CliRunner().invoke(main, ["render", str(root)])
    assert result.exit_code == 0, result.output
    assert (root / paths.DEFAULT_OUT / "default.nix").is_file()
    assert f"./{paths.DEFAULT_OUT}" in (root / "flake.nix").read_text()


@pytest.mark.parametrize("verb", ["render", "watch", "build", "shell"])
def test_every_verb_names_the_one_default_output_directory(verb: str) -> None:
    shown = CliRunner().invoke(main, [verb, "--help"], terminal_width=400)
    assert shown.exit_code == 0, shown.output
    assert f"`out`, else {paths.DEFAULT_OUT})" in " ".join(shown.output.split())


def test_the_pyext_default_has_one_home(tmp_path: Path) -> None:
    """A framework without `pyext` gets `model.DEFAULT_PYEXT`, and so does the rendered
    extension and the pure-Python package (render reads the model's default)."""
    assert model.Torch(src=["a.cpp"]).pyext == list(model.DEFAULT_PYEXT)
    root = materialize(SYNTHETIC["cpp-cpu"], tmp_path / "p")
    build = project.read(root).build
    assert (
        isinstance(build.framework, model.Torch)
        and "pyext" not in (root / "build.toml").read_text()
    )
    tree = render.render(plan.make(build)).tree
    written = f"pyext = {nixlit.value(list(model.DEFAULT_PYEXT))};"
    assert written in tree["extension.nix"].decode()
    assert written in tree["noarch.nix"].decode()


def test_githubs_job_limit_has_one_home() -> None:
    """`nixgen matrix` states GitHub's limit and refuses more (test_matrix's
    `test_cli_max_jobs`: 257 is a usage error); the planner's default is the same value."""
    shown = CliRunner().invoke(main, ["matrix", "--help"], terminal_width=400)
    text = " ".join(shown.output.split())
    limit = ci.GITHUB_MAX_JOBS
    assert f"(GitHub allows {limit} per matrix). [default: {limit}; 1<=x<={limit}]" in text
    assert inspect.signature(ci.github).parameters["max_jobs"].default == limit


# -------------------------------------------------------------- the best (default) variant


def test_the_best_variant_is_the_anchors(tmp_path: Path) -> None:
    """The kernels toolchain's best variant (`bestBuildSet`): bundled, then CUDA before the
    other backends, the newest torch, the oldest toolkit. A CPU + CUDA project's default
    shell is CUDA's (it was the alphabetically first backend's, CPU's), and of the CUDA
    variants with the newest torch the oldest toolkit's (it was the newest's)."""
    from nixgen.checking import project

    from .conftest import EXAMPLES

    for example in ("relu-mixed", "relu-cuda"):
        build = project.read(EXAMPLES / example).build
        found = variants_mod.variants(build, system="x86_64-linux")
        best = variants_mod.best_variant(found)
        assert best.name == variants_mod.default_shell_variant(found)
        assert best.backend == "cuda" and best.bundle
        newest = max(
            (v for v in found if v.backend == "cuda" and v.bundle),
            key=lambda v: tables.version_key(v.torch or ""),
        ).torch
        same_torch = [v for v in found if v.backend == "cuda" and v.bundle and v.torch == newest]
        assert best == min(same_torch, key=lambda v: tables.version_key(v.backend_version or ""))
        # select_ci keeps the same rule per backend: its CUDA pick is the best variant.
        assert best in variants_mod.select_ci(found)


def test_compdb_without_a_variant_takes_the_plans_default(copy_example: Any) -> None:
    """`nixgen compdb` reads the default variant from the plan: no evaluation of the dev
    shell's name, whose project prefix it used to strip."""
    from nixgen.building import nixbuild
    from nixgen.checking import project

    root = copy_example("relu-mixed")
    system = nixbuild.host_system()
    found = variants_mod.variants(project.read(root).build, system=system)
    if not found:
        pytest.skip(f"relu-mixed has no variants for {system}")
    chosen = variants_mod.default_shell_variant(found)
    result = CliRunner().invoke(main, ["compdb", str(root), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "devShells" not in result.stdout
    assert f"#packages.{system}.{chosen}'" in result.stdout


@pytest.mark.nix
@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
def test_the_default_dev_shell_is_the_variant_python_chose(
    tmp_path: Path, copy_example: Any
) -> None:
    """nix/project.nix's `devShells.<system>.default` and `.test` are the shells of the
    variant the plan marks `default`, for a project of two backends."""
    from nixgen.checking import project

    root = copy_example("relu-mixed")
    assert CliRunner().invoke(main, ["render", str(root)]).exit_code == 0
    stub = nixtools.make_stub(tmp_path / "stub")
    build = project.read(root).build
    for system in ("x86_64-linux", "aarch64-darwin"):
        chosen = variants_mod.default_shell_variant(variants_mod.variants(build, system=system))
        shells = nixtools.flake_eval(
            root,
            f"devShells.{system}",
            stub=stub,
            apply="s: { default = s.default.name; test = s.test.name; }",
        )
        assert shells == {
            "default": f"{build.general.name}-{chosen}",
            "test": f"{build.general.name}-test-{chosen}",
        }, system


# -------------------------------------------------------------------- derivation names


@pytest.mark.nix
@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
def test_the_plans_labels_name_the_derivations_the_library_really_produces(
    tmp_path: Path,
) -> None:
    """`nixgen build` prints `Plan.labels[name]` for the derivations Nix reports: for a
    project whose kernel `big` builds one derivation per object (odd characters in a
    source name included), a one-source kernel, a binding and the extension, every name
    the flake's derivations really have is in the plan, with its label."""
    from nixgen.checking import project
    from nixgen.planning import kernels, plan

    from .test_shards import write_project

    root = tmp_path / "p"
    names = write_project(root, sources=kernels.OBJECT_THRESHOLD)
    odd = "big/odd name+x@1.cpp"
    (root / names[0]).rename(root / odd)
    text = (root / "build.toml").read_text().replace(f'"{names[0]}"', f'"{odd}"')
    (root / "build.toml").write_text(text)
    assert CliRunner().invoke(main, ["render", str(root)]).exit_code == 0
    build = project.read(root).build
    planned = plan.make(build)
    variant = next(v for v in planned.variants if v.system == "x86_64-linux")
    stub = nixtools.make_stub(tmp_path / "stub")
    got = nixtools.flake_eval(
        root,
        f"objects.x86_64-linux.{variant.name}",
        stub=stub,
        apply="o: { objects = map (d: d.name) (builtins.attrValues o.kernels.big);"
        " whole = map (d: d.name) (builtins.attrValues o.whole); binding = o.binding.name; }",
    )
    extension = nixtools.flake_eval(
        root,
        f"packages.x86_64-linux.{variant.name}",
        stub=stub,
        apply="p: { ext = (p.passthru.nixgen.unstamped or p).name;"
        " kernels = map (k: k.name) (builtins.attrValues p.nixgen.kernels); }",
    )
    labels = planned.labels
    assert len(got["objects"]) == kernels.OBJECT_THRESHOLD
    shown = {labels.get(name, f"UNLABELLED {name}") for name in got["objects"]}
    assert shown == {f"kernel big: object {s}" for s in [odd, *names[1:]]}
    # The planned name Nix reads is a store name: the odd characters became `-`.
    assert any(name.startswith("shard-big-odd-name+x-1.cpp-") for name in got["objects"]), got
    assert sorted(labels[name] for name in got["whole"]) == ["kernel small"]
    assert labels[got["binding"]] == "extension binding"
    assert labels[extension["ext"]] == "extension"
    assert sorted(labels[name] for name in extension["kernels"]) == ["kernel big", "kernel small"]

    # A project without a compiled extension: its variants are the pure-Python package.
    noarch = tmp_path / "noarch"
    (noarch / "torch-ext" / "noarch").mkdir(parents=True)
    (noarch / "torch-ext" / "noarch" / "__init__.py").write_text("")
    (noarch / "build.toml").write_text(
        '[general]\nname = "noarch"\nversion = 2\nedition = 6\nlicense = "MIT"\n'
        'backends = ["cpu"]\n\n[torch-noarch]\n'
    )
    assert CliRunner().invoke(main, ["render", str(noarch)]).exit_code == 0
    pure = plan.make(project.read(noarch).build)
    name = nixtools.flake_eval(
        noarch,
        f"packages.x86_64-linux.{pure.variants[0].name}",
        stub=stub,
        apply="p: (p.passthru.nixgen.unstamped or p).name",
    )
    assert pure.labels[name] == "python package"
