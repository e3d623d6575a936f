"""`nixgen variants`: what a project builds, pinned for the corpus and checked against Nix.

* every corpus file that loads has its `nixgen variants --json` pinned in
  tests/golden_variants/<stem>.json (update: ``NIXGEN_UPDATE_GOLDEN=1 .venv/bin/python -m
  pytest tests/test_variants_cli.py -k golden``);
* every variant name nixgen emits parses with the locked `kernels` client's
  ``parse_variant`` (through tests/client.py), round-trips, and means what nixgen meant
  (torch, backend, system);
* the generated flake's `variants` and `githubActions` outputs and
  ``(import <generated>/nix).variants`` give what `nixgen variants` / `nixgen matrix`
  print, for the examples and every corpus file that loads;
* listing variants through the flake imports no nixpkgs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nixgen.app.pipeline import prepare
from nixgen.checking import project
from nixgen.cmdline.cli import main
from nixgen.planning import variants
from tests import client
from tests.nixtools import (
    flake_eval,
    have_nix,
    kernel_builder,
    make_stub,
    nix_env,
    nix_eval_json,
    overrides,
)

from .conftest import CORPUS, EXAMPLES, copy_out, materialize
from .corpus_table import LOADING

GOLDEN = Path(__file__).parent / "golden_variants"
UPDATE = os.environ.get("NIXGEN_UPDATE_GOLDEN") == "1"
EXAMPLE_NAMES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "build.toml").exists())


#: Corpus projects whose flakes are evaluated: every one that loads.
NIX_SAMPLE = [p.stem for p in LOADING]


def run(runner: CliRunner, *args: str) -> Any:
    return runner.invoke(main, list(args), catch_exceptions=False)


def variants_json(runner: CliRunner, path: Path, *args: str) -> str:
    result = run(runner, "variants", str(path), "--json", *args)
    assert result.exit_code == 0, result.output
    envelope = json.loads(result.stdout)
    assert (envelope["version"], envelope["command"], envelope["ok"]) == (1, "variants", True)
    # The plan alone, as the golden files hold it.
    return json.dumps(envelope["result"], indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# ----------------------------------------------------------------------------- golden


@pytest.mark.parametrize("path", LOADING, ids=lambda p: p.stem)
def test_golden_variants(runner: CliRunner, path: Path) -> None:
    out = variants_json(runner, path)
    golden = GOLDEN / f"{path.stem}.json"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        golden.write_text(out)
    assert golden.exists(), f"no golden file: rerun with NIXGEN_UPDATE_GOLDEN=1 ({golden})"
    assert out == golden.read_text(), f"{golden.name} is stale (NIXGEN_UPDATE_GOLDEN=1)"


def test_no_orphan_golden_files() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(p.stem for p in LOADING)


def test_golden_files_are_not_trivial() -> None:
    counts = {p.stem: len(json.loads(p.read_text())) for p in GOLDEN.glob("*.json")}
    assert sum(counts.values()) > 500
    assert counts["kernels-examples__relu-tpu"] == 1  # torch-tpu only


# ------------------------------------------------------------------ the kernels client


def check_parses(v: dict[str, Any]) -> None:
    """`v` (a variant as JSON) parses in the client (`tests/client.py`), round-trips, and the
    client reads nixgen's meaning."""
    parsed = client.parse_variant(v["name"])
    assert parsed.name == v["name"]
    assert parsed.backend == v["backend"]
    if v["framework"] == "torch-noarch":
        assert parsed.framework == "torch-noarch" and parsed.system is None
        return
    assert parsed.system == v["system"]
    if v["backendVersion"] is not None:
        major, minor = ([*v["backendVersion"].split("."), "0"])[:2]
        assert parsed.backend_version == (int(major), int(minor))
    if v["framework"] == "tvm-ffi":
        assert (parsed.framework, parsed.framework_version) == ("tvm-ffi", v["tvmFfi"])
    elif v["stableAbi"] is not None:
        assert (parsed.framework, parsed.framework_version) == ("torch-stable-abi", v["stableAbi"])
    else:
        assert (parsed.framework, parsed.framework_version) == ("torch", v["torch"])
        assert parsed.cxx11_abi is (None if v["system"].endswith("darwin") else True)


@pytest.mark.parametrize("path", LOADING, ids=lambda p: p.stem)
def test_corpus_names_parse_in_the_kernels_client(path: Path) -> None:
    for v in variants.variants(project.read(path, check_files=False).build):
        check_parses(v.to_json())


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_example_names_parse_in_the_kernels_client(name: str) -> None:
    found = variants.variants(project.read(EXAMPLES / name).build)
    assert found
    for v in found:
        check_parses(v.to_json())


# -------------------------------------------------------------------------------- CLI


def test_json_is_the_plan(runner: CliRunner) -> None:
    build = project.read(EXAMPLES / "relu-mixed").build
    out = json.loads(variants_json(runner, EXAMPLES / "relu-mixed"))
    assert out == [v.to_json() for v in variants.variants(build)]
    assert len(out) == 19


def test_table(runner: CliRunner) -> None:
    result = run(runner, "variants", str(EXAMPLES / "relu-mixed"), "--system", "x86_64-linux")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "NAME",
        "SYSTEM",
        "BACKEND",
        "TORCH",
        "VERSION",
        "KERNELS",
        "BUNDLE",
    ]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["torch213-cxx11-cu130-x86_64-linux"][1:] == [
        "x86_64-linux", "cuda", "2.13", "13.0", "relu_cuda", "yes"
    ]  # fmt: skip
    assert rows["torch211-cxx11-cpu-x86_64-linux"][-2:] == ["leaky_relu_rs,relu_cpu", "no"]
    assert len(rows) == 9
    # The count is a status line: on stderr, apart from the table.
    assert result.stderr.strip().splitlines()[-1] == "9 variant(s), 8 in the bundle"


def test_table_shows_the_stable_abi_torch(runner: CliRunner) -> None:
    path = CORPUS / "kernels-examples__relu-torch-stable-abi.toml"
    result = run(runner, "variants", str(path), "--system", "aarch64-darwin")
    assert "torch-stable-abi211-cpu-aarch64-darwin" in result.stdout
    assert "2.13 (stable ABI 2.11)" in result.stdout
    assert "torch-metal" in result.stdout


def test_filters(runner: CliRunner) -> None:
    every = json.loads(variants_json(runner, EXAMPLES / "relu-mixed"))
    cuda_arm = json.loads(
        variants_json(
            runner, EXAMPLES / "relu-mixed", "--backend", "cuda", "--system", "aarch64-linux"
        )
    )
    assert cuda_arm == [
        v for v in every if v["backend"] == "cuda" and v["system"] == "aarch64-linux"
    ]
    assert len(cuda_arm) == 6
    assert json.loads(variants_json(runner, EXAMPLES / "relu-mixed", "--backend", "rocm")) == []


def test_no_variants(runner: CliRunner) -> None:
    result = run(runner, "variants", str(EXAMPLES / "relu-cpu"), "--backend", "rocm")
    assert result.exit_code == 0
    assert result.stdout == "" and "no variants" in result.stderr


def test_unknown_system_is_a_usage_error(runner: CliRunner) -> None:
    result = run(runner, "variants", str(EXAMPLES / "relu-cpu"), "--system", "x86_64-darwin")
    assert result.exit_code == 2
    assert "x86_64-linux" in result.stderr  # the choices are listed


def test_planning_warnings_go_to_stderr(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "build.toml").write_text(
        textwrap.dedent(
            """\
            [general]
            name = "tt"
            version = 1
            edition = 6
            license = "MIT"
            backends = ["cuda"]
            [general.cuda]
            minver = "99.0"
            [torch]
            src = ["b.cpp"]
            [kernel.k]
            language = "cpp-cuda"
            src = ["k.cu"]
            """
        )
    )
    result = run(runner, "variants", str(tmp_path), "--json")
    assert result.exit_code == 0
    answer = json.loads(result.stdout)
    assert answer["result"] == []
    assert "nothing will be built" in answer["problems"][0]["message"]
    assert "nothing will be built" in result.stderr and "build.toml:6" in result.stderr


def test_invalid_project_exits_2(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "build.toml").write_text('[general]\nname = "x"\n')
    result = run(runner, "variants", str(tmp_path))
    assert result.exit_code == 2


@pytest.mark.slow
def test_variants_imports_neither_jinja_nor_tomlkit() -> None:
    """`nixgen variants` stays fast: no template engine, no round-trip TOML library."""
    code = textwrap.dedent(
        f"""
        import sys
        from nixgen.cmdline.cli import main
        try:
            main(["variants", {str(EXAMPLES / "relu-mixed")!r}, "--json"])
        except SystemExit as exit:
            assert not exit.code, exit.code
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("jinja2", "tomlkit"))
        print("HEAVY", heavy, file=sys.stderr)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "torch213-cxx11-cu130-x86_64-linux" in done.stdout
    assert "HEAVY []" in done.stderr


# ---------------------------------------------------------------------------------- Nix


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


def render_into(root: Path) -> Path:
    """Render the project at `root` and return `root`. Files are written plainly: the
    write stage's fsyncs would triple this module's run time and are tested elsewhere."""
    rendered = prepare(root).rendered
    files = {**{f"nix/{k}": v for k, v in rendered.tree.items()}, **rendered.root}
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Rendered copies of the examples and of the corpus sample, outside any git tree."""

    base = tmp_path_factory.mktemp("generated")
    out: dict[str, Path] = {}
    for name in EXAMPLE_NAMES:
        target = base / name
        copy_out(EXAMPLES / name, target, "nix", "flake.nix", "build")
        out[name] = render_into(target)
    for stem in NIX_SAMPLE:
        out[stem] = render_into(materialize(CORPUS / f"{stem}.toml", base / stem))
    return out


def python_variants(root: Path, system: str | None = None) -> list[dict[str, Any]]:
    build = project.read(root, check_files=False).build
    return [v.to_json() for v in variants.variants(build, system=system)]


def test_the_sample_is_big_enough() -> None:
    assert len(NIX_SAMPLE) >= 50


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
def test_nix_library_lists_the_same_variants(generated: dict[str, Path]) -> None:
    """``(import <generated>/nix).variants system`` equals variants.variants, field for field,
    for every system and for all at once (one nix-instantiate for every project)."""
    roots = sorted(generated.items())
    systems = [None, *variants.SYSTEMS]
    expr = "[ " + " ".join(
        "(let p = import " + str(root / "nix") + "; in ["
        + " ".join(
            f"(map (v: removeAttrs v [ \"ci\" \"default\" ]) "
            f"(p.variants {json.dumps(s) if s else 'null'}))"
            for s in systems
        )
        + "])"
        for _, root in roots
    ) + " ]"  # fmt: skip
    got = nix_eval_json(expr)
    for (name, root), per_system in zip(roots, got, strict=True):
        for system, nix_list in zip(systems, per_system, strict=True):
            assert nix_list == python_variants(root, system), (name, system)


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
@pytest.mark.parametrize("name", [*EXAMPLE_NAMES, *NIX_SAMPLE])
def test_flake_outputs_equal_nixgen_variants_and_matrix(
    generated: dict[str, Path], stub: Path, name: str
) -> None:
    """The flake's `variants` and `githubActions` outputs are what `nixgen variants` and
    `nixgen matrix [--pull-request]` print, for every example and every corpus project."""
    root = generated[name]
    got = flake_eval(root, "variants", stub=stub)
    expected = {
        system: [v["name"] for v in python_variants(root, system)] for system in variants.SYSTEMS
    }
    assert got == expected
    runner = CliRunner()
    matrices = {
        key: json.loads(run(runner, "matrix", str(root), *flags).stdout)
        for key, flags in (("matrix", ()), ("pullRequestMatrix", ("--pull-request",)))
    }
    assert flake_eval(root, "githubActions", stub=stub) == matrices


@pytest.fixture(scope="module")
def thrower(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A nixpkgs stand-in that throws as soon as anything imports or uses it, and a kernels
    toolchain stand-in beside it (``kernel_builder``) whose overlay throws the same way."""
    path = tmp_path_factory.mktemp("thrower") / "nixpkgs"
    path.mkdir()
    (path / "default.nix").write_text('throw "nixgen test: nixpkgs was imported"\n')
    (path / "flake.nix").write_text(
        '{ outputs = _: { lib = throw "nixgen test: nixpkgs lib was used"; }; }\n'
    )
    toolchain = kernel_builder(path)
    (toolchain / "nix-builder").mkdir(parents=True)
    (toolchain / "nix-builder" / "overlay.nix").write_text(
        'throw "nixgen test: the kernels toolchain was imported"\n'
    )
    (toolchain / "flake.nix").write_text(
        '{ inputs.nixpkgs.url = "github:NixOS/nixpkgs/ec1a11210589d294f0ac99d3290a27e6c73dfa1d";'
        " outputs = _: { }; }\n"
    )
    return path


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
def test_listing_variants_imports_no_nixpkgs(generated: dict[str, Path], thrower: Path) -> None:
    root = generated["relu-mixed"]
    got = flake_eval(root, "variants", stub=thrower)
    assert got["x86_64-linux"][0] == "torch211-cxx11-cpu-x86_64-linux"
    matrix = flake_eval(root, "githubActions", stub=thrower)
    assert len(matrix["matrix"]["include"]) == 19
    # The control: building anything does import it.
    args = ["nix", "eval", "--raw", f"path:{root}#packages.x86_64-linux.kernels.drvPath",
            *overrides(thrower)]  # fmt: skip
    done = subprocess.run(args, env=nix_env(), capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "nixpkgs was imported" in done.stderr
