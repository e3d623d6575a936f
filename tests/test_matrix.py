"""`nixgen matrix`, the flake's `githubActions` outputs and the generated workflows.

The matrix must be valid for GitHub Actions (a JSON Schema of what `strategy.matrix`
accepts, with GitHub's 256-job limit), equal to the flake's `githubActions` outputs, and
every attribute it names must evaluate in the flake. The workflow written by
`nixgen render --ci github` is parsed, and its two steps are run against a generated flake
with a `nix` wrapper that points nixpkgs at the test stub.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import os
import shutil
import stat
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from nixgen import __version__
from nixgen.app.pipeline import prepare
from nixgen.checking import project
from nixgen.cmdline.cli import main
from nixgen.core import marker
from nixgen.planning import ci, variants
from nixgen.rendering import render
from nixgen.rendering import workflow as workflow_mod
from tests.nixtools import (
    flake_check,
    flake_eval,
    flake_show,
    have_nix,
    make_stub,
    nix_config,
    overrides,
)

from .conftest import CORPUS_FILES, EXAMPLES, REPO
from .corpus_table import LOADING

EXAMPLE_NAMES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "build.toml").exists())

#: What GitHub Actions accepts as a dynamic `strategy.matrix` built only from `include`:
#: at most 256 jobs; each row's keys usable as `matrix.<key>`; values strings or lists
#: of strings. nixgen's rows all have the same keys, whatever the grouping: the job's name,
#: system, runner and backend, the lists `attrs` and `variants`, and `attr` and `variant`,
#: the same lists space-separated (one attribute when the job builds one variant).
GITHUB_MATRIX_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["include"],
    "additionalProperties": False,
    "properties": {
        "include": {
            "type": "array",
            "maxItems": 256,
            "items": {
                "type": "object",
                "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_-]*$"},
                "additionalProperties": {
                    "anyOf": [
                        {"type": "string", "minLength": 1},
                        {"type": "array", "items": {"type": "string", "minLength": 1}},
                    ]
                },
                "required": [
                    "name",
                    "system",
                    "runner",
                    "backend",
                    "attrs",
                    "variants",
                    "attr",
                    "variant",
                ],
                "properties": {
                    "attrs": {"type": "array", "minItems": 1},
                    "variants": {"type": "array", "minItems": 1},
                    "attr": {"type": "string", "pattern": r"^packages\.[a-z0-9_]+-[a-z]+\."},
                },
            },
        }
    },
}


VALIDATOR = jsonschema.Draft202012Validator(GITHUB_MATRIX_SCHEMA)


@functools.cache
def published_matrix_validator() -> Any:
    """GitHub's `strategy.matrix` as the published github-workflows schema defines it
    (SchemaStore's, vendored by check-jsonschema, the schema tests/test_workflow_lint.py
    checks whole workflows with): the oracle of what a matrix may hold."""
    vendor = importlib.resources.files("check_jsonschema.builtin_schemas.vendor")
    workflows = json.loads(vendor.joinpath("github-workflows.json").read_text())
    return jsonschema.Draft7Validator(
        {"$ref": "#/definitions/matrix", "definitions": workflows["definitions"]}
    )


def validate_matrix(value: dict[str, Any]) -> None:
    # An empty matrix never reaches GitHub (which refuses one): the workflow skips the build
    # job when the plan step counts 0 jobs (`needs.matrix.outputs.jobs != '0'`).
    if value["include"]:
        published_matrix_validator().validate(value)
    VALIDATOR.validate(value)
    for row in value["include"]:
        assert row["attrs"] == row["attr"].split(" ")
        assert row["variants"] == row["variant"].split(" ")
        assert row["attrs"] == [f"packages.{row['system']}.{v}" for v in row["variants"]]
        assert row["runner"] == ci.runner(row["system"])
    names = [row["name"] for row in value["include"]]
    assert len(set(names)) == len(names), "job names must tell jobs apart"


def variants_of(path: Path) -> list[variants.Variant]:
    return variants.variants(project.read(path, check_files=False).build)


def fake_variants(per_group: dict[tuple[str, str], int]) -> list[variants.Variant]:
    out = []
    for (system, backend), count in per_group.items():
        for index in range(count):
            out.append(
                variants.Variant(
                    name=f"torch2{index}-cxx11-{backend}-{system}",
                    system=system,
                    backend=backend,
                    framework="torch",
                    torch=f"2.{index}",
                    backend_version=None,
                    tvm_ffi=None,
                    stable_abi=None,
                    bundle=True,
                    kernels=("k",),
                )
            )
    return sorted(out, key=lambda v: (v.system, v.name))


# ------------------------------------------------------------------------------ shapes


def test_one_job_per_variant() -> None:
    found = variants_of(EXAMPLES / "relu-mixed")
    value = ci.github(found)
    validate_matrix(value)
    rows = value["include"]
    assert [r["variant"] for r in rows] == [v.name for v in found]
    assert rows[0] == {
        "name": "torch212-cpu-aarch64-darwin",
        "variant": "torch212-cpu-aarch64-darwin",
        "system": "aarch64-darwin",
        "runner": "macos-latest",
        "backend": "cpu",
        "attr": "packages.aarch64-darwin.torch212-cpu-aarch64-darwin",
        "attrs": ["packages.aarch64-darwin.torch212-cpu-aarch64-darwin"],
        "variants": ["torch212-cpu-aarch64-darwin"],
    }


def test_noarch_jobs_are_named_with_their_system() -> None:
    path = next(p for p in CORPUS_FILES if p.stem == "community__einops")
    rows = ci.github(variants_of(path))["include"]
    assert "torch-cuda (x86_64-linux)" in [r["name"] for r in rows]
    validate_matrix({"include": rows})


def test_beyond_the_limit_variants_are_grouped() -> None:
    found = fake_variants(
        {
            ("x86_64-linux", "cuda"): 300,
            ("x86_64-linux", "cpu"): 100,
            ("aarch64-linux", "cuda"): 150,
            ("aarch64-darwin", "metal"): 7,
        }
    )
    value = ci.github(found)
    validate_matrix(value)
    rows = value["include"]
    assert len(rows) <= 256
    # Each variant is built exactly once, by a job of its own system and backend.
    built = Counter(v for row in rows for v in row["variants"])
    assert sorted(built) == sorted(v.name for v in found) and set(built.values()) == {1}
    by_name = {v.name: v for v in found}
    for row in rows:
        assert {(by_name[v].system, by_name[v].backend) for v in row["variants"]} == {
            (row["system"], row["backend"])
        }
    # The smallest slice that fits: one variant fewer per job would exceed the limit.
    size = max(len(row["variants"]) for row in rows)
    assert sum(-(-n // (size - 1)) for n in (300, 100, 150, 7)) > 256
    assert size == 3 and rows[0]["name"] == "metal aarch64-darwin 1/3"
    assert rows[-1]["name"].startswith("cuda x86_64-linux ")


def test_the_limit_itself_is_one_job_per_variant() -> None:
    found = fake_variants({("x86_64-linux", "cuda"): 256})
    assert all("attr" in row for row in ci.github(found)["include"])
    assert len(ci.github(found + fake_variants({("x86_64-linux", "cpu"): 1}))["include"]) < 256


def test_too_few_jobs_for_the_groups() -> None:
    found = fake_variants({("x86_64-linux", "cuda"): 2, ("x86_64-linux", "cpu"): 2})
    with pytest.raises(ci.MatrixError, match="2 \\(system, backend\\) pairs"):
        ci.github(found, max_jobs=1)


def test_unknown_system_has_no_runner() -> None:
    with pytest.raises(ci.MatrixError, match="no GitHub runner"):
        ci.runner("riscv64-linux")


def test_the_runner_table_covers_every_system() -> None:
    assert all(ci.runner(s) for s in variants.SYSTEMS)


@pytest.mark.parametrize("path", LOADING, ids=lambda p: p.stem)
def test_corpus_matrices_are_valid(path: Path) -> None:
    found = variants_of(path)
    validate_matrix(ci.github(found))
    validate_matrix(ci.github(variants.select_ci(found)))
    validate_matrix(ci.github(found, max_jobs=8) if len(found) > 8 else ci.github(found))


def test_the_schema_rejects_what_github_rejects() -> None:
    good = ci.github(variants_of(EXAMPLES / "relu-cpu"))
    validate_matrix(good)
    too_many = {"include": good["include"][:1] * 257}
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate(too_many)
    bad_key = {"include": [{**good["include"][0], "bad key": "x"}]}
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate(bad_key)
    no_attrs = {"include": [{k: v for k, v in good["include"][0].items() if k != "attrs"}]}
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate(no_attrs)


# --------------------------------------------------------------------------------- CLI


def run(runner: CliRunner, *args: str) -> Any:
    return runner.invoke(main, ["matrix", *args], catch_exceptions=False)


def test_cli_prints_one_line_of_json(runner: CliRunner) -> None:
    result = run(runner, str(EXAMPLES / "relu-mixed"), "--format", "github")
    assert result.exit_code == 0
    assert result.stdout.count("\n") == 1  # safe for `echo "matrix=…" >> $GITHUB_OUTPUT`
    value = json.loads(result.stdout)
    assert value == ci.github(variants_of(EXAMPLES / "relu-mixed"))


def test_cli_pull_request_and_system(runner: CliRunner) -> None:
    result = run(runner, str(EXAMPLES / "relu-mixed"), "--pull-request", "--system", "x86_64-linux")
    rows = json.loads(result.stdout)["include"]
    assert [r["variant"] for r in rows] == [
        "torch213-cxx11-cpu-x86_64-linux",
        "torch213-cxx11-cu126-x86_64-linux",
    ]


def test_cli_max_jobs(runner: CliRunner) -> None:
    result = run(runner, str(EXAMPLES / "relu-mixed"), "--max-jobs", "7")
    value = json.loads(result.stdout)
    validate_matrix(value)
    assert len(value["include"]) == 7
    result = run(runner, str(EXAMPLES / "relu-mixed"), "--max-jobs", "3")
    assert result.exit_code == 2
    assert "5 (system, backend) pairs cannot be built in 3 jobs" in result.stderr
    assert run(runner, str(EXAMPLES / "relu-mixed"), "--max-jobs", "257").exit_code == 2


def test_cli_nothing_to_build(runner: CliRunner) -> None:
    path = next(p for p in CORPUS_FILES if p.stem == "kernels-examples__relu-nki")
    result = run(runner, str(path))
    assert result.exit_code == 0 and result.stdout == '{"include":[]}\n'
    assert "nothing will be built" in result.stderr


def test_cli_only_knows_github(runner: CliRunner) -> None:
    assert run(runner, str(EXAMPLES / "relu-cpu"), "--format", "gitlab").exit_code == 2


# ------------------------------------------------------------------------- the flake


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Rendered copies of the examples (with the GitHub workflow), outside any git tree."""
    from nixgen.app.pipeline import with_github_workflow

    base = tmp_path_factory.mktemp("examples")
    out = {}
    for name in EXAMPLE_NAMES:
        root = base / name
        shutil.copytree(
            EXAMPLES / name, root, ignore=shutil.ignore_patterns("nix", "flake.nix", "build")
        )
        loaded, rendered, _, _ = prepare(root, "nix")
        rendered = with_github_workflow(loaded, rendered)
        files = {**{f"nix/{k}": v for k, v in rendered.tree.items()}, **rendered.root}
        for rel, data in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        out[name] = root
    return out


def cli_matrix(root: Path, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["matrix", str(root), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
def test_flake_github_actions_equal_nixgen_matrix(
    examples: dict[str, Path], stub: Path, name: str
) -> None:
    root = examples[name]
    got = flake_eval(root, "githubActions", stub=stub)
    assert got == {
        "matrix": cli_matrix(root),
        "pullRequestMatrix": cli_matrix(root, "--pull-request"),
    }
    validate_matrix(got["matrix"])


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_every_matrix_attr_evaluates(examples: dict[str, Path], stub: Path, name: str) -> None:
    """Each row's attribute is a derivation of the flake (drvPath), all in one eval."""
    root = examples[name]
    pairs = str(len(cli_matrix(root, "--pull-request")["include"]))
    rows = cli_matrix(root)["include"] + cli_matrix(root, "--max-jobs", pairs)["include"]
    attrs = sorted({a for row in rows for a in row["attrs"]})
    paths = [a.split(".")[1:] for a in attrs]
    apply = (
        f"packages: map (p: (builtins.getAttr (builtins.elemAt p 1) "
        f"(builtins.getAttr (builtins.elemAt p 0) packages)).drvPath) "
        f"(builtins.fromJSON {json.dumps(json.dumps(paths))})"
    )
    drvs = flake_eval(root, "packages", stub=stub, apply=apply)
    assert len(drvs) == len(attrs) and all(d.endswith(".drv") for d in drvs)


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
def test_matrix_attrs_evaluate_as_workflows_name_them(
    examples: dict[str, Path], stub: Path
) -> None:
    root = examples["relu-mixed"]
    rows = cli_matrix(root, "--pull-request")["include"]
    for row in rows[:3]:
        drv = flake_eval(root, f"{row['attr']}.drvPath", stub=stub)
        assert drv.startswith("/nix/store/") and drv.endswith(".drv")


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
def test_flake_stays_within_the_schema(examples: dict[str, Path], stub: Path) -> None:
    root = examples["relu-mixed"]
    stderr = flake_check(root, stub=stub)
    warnings = [line for line in stderr.splitlines() if line.startswith("warning: unknown")]
    # One warning each, in an order that is Nix's own (2.8 and 2.26 differ).
    assert sorted(warnings) == [
        "warning: unknown flake output 'githubActions'",
        "warning: unknown flake output 'objects'",
        "warning: unknown flake output 'variants'",
    ]
    shown = flake_show(root, stub=stub)
    assert sorted(shown) == [
        "checks",
        "devShells",
        "githubActions",
        "objects",
        "packages",
        "variants",
    ]
    for system, packages in shown["packages"].items():
        assert all(p["type"] == "derivation" for p in packages.values()), system
        assert {"kernels", "default"} <= set(packages)
        shells = shown["devShells"][system]
        assert all(s["type"] == "derivation" for s in shells.values()), system
        assert {"default", "test"} <= set(shells)
        assert set(shown["checks"][system]) == set(packages) - {
            "kernels",
            "default",
            *(p for p in packages if p.startswith("bundle-")),
        }
    x86 = shown["packages"]["x86_64-linux"]
    assert {"bundle-cpu", "bundle-cuda", "torch213-cxx11-cu130-x86_64-linux"} <= set(x86)


# -------------------------------------------------------------------------- workflows


def load_yaml(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict)
    return data


def test_render_ci_github_writes_the_workflow(copy_example: Any, runner: CliRunner) -> None:
    root = copy_example("relu-cpu")
    result = runner.invoke(main, ["render", str(root), "--ci", "github"])
    assert result.exit_code == 0, result.output
    path = root / workflow_mod.GITHUB_WORKFLOW
    text = path.read_text()
    assert marker.parse(text.encode()) == marker.Header(__version__, "GitHub Actions workflow")
    workflow = load_yaml(path)
    assert workflow["name"] == "nixgen: relu-cpu"
    assert set(workflow["on"]) == {"push", "pull_request", "workflow_dispatch"}
    plan_job, build_job = workflow["jobs"]["matrix"], workflow["jobs"]["build"]
    assert build_job["needs"] == ["matrix", "shards"]
    assert build_job["strategy"]["matrix"] == "${{ fromJSON(needs.matrix.outputs.matrix) }}"
    assert build_job["runs-on"] == "${{ matrix.runner }}"
    assert build_job["name"] == "${{ matrix.name }}"
    assert plan_job["outputs"]["matrix"] == "${{ steps.matrix.outputs.matrix }}"
    evaluate = next(s for s in plan_job["steps"] if s.get("id") == "matrix")
    assert evaluate["env"]["OUTPUT"] == (
        "${{ github.event_name == 'pull_request' && 'pullRequestMatrix' || 'matrix' }}"
    )
    build = build_job["steps"][-1]
    assert build["env"]["ATTRS"] == "${{ join(matrix.attrs, ' ') }}"
    # Every `matrix.<key>` the workflow reads is in every row nixgen emits.
    used = {"name", "runner", "attrs"}
    single = ci.github(variants_of(root))["include"]
    grouped = ci.github(variants_of(root), max_jobs=3)["include"]
    assert all(used <= set(row) for row in single + grouped)
    # Rendering again changes nothing; --check agrees.
    again = runner.invoke(main, ["render", str(root), "--ci", "github"])
    assert "up to date" in again.stderr
    assert runner.invoke(main, ["render", str(root), "--ci", "github", "--check"]).exit_code == 0


def test_workflow_uses_the_kernels_cache_and_pushes_only_with_a_secret(
    copy_example: Any, runner: CliRunner
) -> None:
    root = copy_example("relu-cpu")
    assert runner.invoke(main, ["render", str(root), "--ci", "github"]).exit_code == 0
    workflow = load_yaml(root / workflow_mod.GITHUB_WORKFLOW)
    flake = (root / "flake.nix").read_text()
    assert f'extra-substituters = [ "{render.SUBSTITUTER}" ];' in flake
    assert f'extra-trusted-public-keys = [ "{render.SUBSTITUTER_KEY}" ];' in flake
    for job in workflow["jobs"].values():
        nix = next(s for s in job["steps"] if s.get("uses", "").startswith("cachix/install-nix"))
        # The flake's nixConfig (the kernels cache) is accepted, not ignored.
        assert "accept-flake-config = true" in nix["with"]["extra_nix_config"]
    build = workflow["jobs"]["build"]
    assert build["env"]["CACHIX_AUTH_TOKEN"] == "${{ secrets.CACHIX_AUTH_TOKEN }}"
    names = [s.get("uses", s.get("name")) for s in build["steps"]]
    push = next(s for s in build["steps"] if s.get("uses", "").startswith("cachix/cachix-action"))
    # Before the build (its post step pushes what was built); skipped without the secret.
    assert names.index(push["uses"]) < names.index("Build")
    assert push["if"] == "env.CACHIX_AUTH_TOKEN != '' && vars.CACHIX_NAME != ''"
    assert push["with"] == {
        "name": "${{ vars.CACHIX_NAME }}",
        "authToken": "${{ secrets.CACHIX_AUTH_TOKEN }}",
    }


def test_workflow_is_protected_and_checked(copy_example: Any, runner: CliRunner) -> None:
    root = copy_example("relu-cpu")
    assert runner.invoke(main, ["render", str(root)]).exit_code == 0
    # Without --ci the workflow is not written; --check with --ci reports it missing.
    assert not (root / workflow_mod.GITHUB_WORKFLOW).exists()
    stale = runner.invoke(main, ["render", str(root), "--ci", "github", "--check"])
    assert stale.exit_code == 1 and ".github/workflows/nixgen.yml" in stale.stdout
    # A hand-written workflow (no marker) is the user's: kept as is.
    path = root / workflow_mod.GITHUB_WORKFLOW
    path.parent.mkdir(parents=True)
    path.write_text("name: mine\n")
    assert runner.invoke(main, ["render", str(root), "--ci", "github"]).exit_code == 0
    assert path.read_text() == "name: mine\n"


def test_workflow_values_are_json_quoted() -> None:
    text = workflow_mod.github_workflow("a: b # c", nixgen_version="0.0.0").decode()
    assert load_yaml_text(text)["name"] == "nixgen: a: b # c"


def load_yaml_text(text: str) -> dict[str, Any]:
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def test_nixgen_repository_ci() -> None:
    workflow = load_yaml(REPO / ".github/workflows/ci.yml")
    steps = workflow["jobs"]["test"]["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@")
    assert steps[-1]["run"].endswith(".ci/run")
    assert {"push", "pull_request"} <= set(workflow["on"])


def write_fake_nix(directory: Path, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    fake = directory / "nix"
    fake.write_text("#!/bin/sh\n" + body)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    return directory


def step_script(root: Path, job: str, index: int) -> str:
    return load_yaml(root / workflow_mod.GITHUB_WORKFLOW)["jobs"][job]["steps"][index]["run"]


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
@pytest.mark.parametrize("event", ["push", "pull_request"])
def test_workflow_steps_run_against_the_flake(
    examples: dict[str, Path], stub: Path, tmp_path: Path, event: str
) -> None:
    """Run the workflow's two scripts as GitHub would (the `OUTPUT` and `ATTRS`
    expressions evaluated by hand): the matrix step yields the flake's matrix, and the
    build step asks `nix build` for exactly the row's attributes."""
    root = examples["relu-mixed"]
    real_nix = shutil.which("nix")
    bin_dir = write_fake_nix(
        tmp_path / "eval-bin",
        f'exec {real_nix} "$@" {" ".join(overrides(stub))}\n',
    )
    output_file = tmp_path / "github_output"
    output_file.write_text("")
    env = {
        **os.environ,
        "NIX_CONFIG": nix_config(),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(output_file),
        "OUTPUT": "pullRequestMatrix" if event == "pull_request" else "matrix",
    }
    done = subprocess.run(
        ["bash", "-e", "-c", step_script(root, "matrix", 2)],
        cwd=root, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    outputs = dict(line.split("=", 1) for line in output_file.read_text().splitlines())
    value = json.loads(outputs["matrix"])
    flags = ["--pull-request"] if event == "pull_request" else []
    assert value == cli_matrix(root, *flags)
    assert outputs["jobs"] == str(len(value["include"]))

    record = tmp_path / "build-args"
    bin_dir = write_fake_nix(tmp_path / "build-bin", f'printf "%s\\n" "$@" > {record}\n')
    for row in [value["include"][0], ci.github(variants_of(root), max_jobs=5)["include"][-1]]:
        env["PATH"] = f"{bin_dir}:{os.environ['PATH']}"
        env["ATTRS"] = " ".join(row["attrs"])  # ${{ join(matrix.attrs, ' ') }}
        done = subprocess.run(
            ["bash", "-e", "-c", step_script(root, "build", -1)],
            cwd=root, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        args = record.read_text().splitlines()
        assert args == ["build", "-L", "--no-link", *[f".#{a}" for a in row["attrs"]]]
