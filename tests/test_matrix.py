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
import re
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
    kernel_builder,
    make_stub,
    nix_config,
    nix_here,
    overrides,
)

from . import workflows
from .conftest import CORPUS_FILES, EXAMPLES, REPO, copy_out
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
        copy_out(EXAMPLES / name, root, "nix", "flake.nix", "build")
        rendered = with_github_workflow(prepare(root))
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
    # Nix lists them in its own attribute order (symbol order, not the flake's text).
    assert sorted(warnings) == [
        "warning: unknown flake output 'githubActions'",
        "warning: unknown flake output 'objects'",
        "warning: unknown flake output 'variants'",
    ]
    shown = flake_show(root, stub=stub, all_systems=True)
    assert sorted(shown) == [
        "checks",
        "devShells",
        "githubActions",
        "legacyPackages",
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


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
def test_flake_answers_the_community_ci_output_names(examples: dict[str, Path], stub: Path) -> None:
    """kernels-community's build workflow lists a kernel flake's backends with
    `nix eval .#backendBundle --apply builtins.attrNames --json --system S` (`backendCi` for
    a pull request), then builds `.#backendBundle.<backend>` or `.#backendCi.<backend>`.
    nixgen's flake answers both names (in `legacyPackages.<system>`, where Nix looks after
    `packages`), with the kernels toolchain's meaning: every backend with a variant on the
    system; `backendBundle.<b>` its bundled variants (the derivation `bundle-<b>`),
    `backendCi.<b>` the one variant a pull request builds, each as `<variant>/`."""
    root = examples["relu-mixed"]
    found = variants_of(root)
    for system in variants.SYSTEMS:
        backends = sorted({v.backend for v in found if v.system == system})
        for output in ("backendBundle", "backendCi"):
            args = ["eval", f".#{output}", "--apply", "builtins.attrNames", "--json"]
            done = nix_here(root, [*args, "--system", system], stub=stub)
            assert json.loads(done.stdout) == backends, (system, output)
    system = "x86_64-linux"
    mine = [v for v in found if v.system == system]
    entries = flake_eval(
        root, f"legacyPackages.{system}", stub=stub,
        apply="l: builtins.mapAttrs (_: builtins.mapAttrs (_: d: map (e: e.name) d.entries)) l",
    )  # fmt: skip
    picked = {v.backend: v for v in variants.select_ci(found) if v.system == system}
    assert set(entries) == {"backendBundle", "backendCi"}
    for backend in {v.backend for v in mine}:
        bundled = [v.name for v in mine if v.backend == backend and v.bundle]
        assert entries["backendBundle"][backend] == bundled
        assert entries["backendCi"][backend] == [picked[backend].name]
    drvs = flake_eval(
        root, f"legacyPackages.{system}.backendBundle", stub=stub,
        apply="s: builtins.mapAttrs (_: d: d.drvPath) s",
    )  # fmt: skip
    for backend, drv in drvs.items():
        assert drv == flake_eval(root, f"packages.{system}.bundle-{backend}.drvPath", stub=stub)
    # The community's exact installable resolves to a derivation (Nix's own search).
    done = nix_here(root, ["build", "--dry-run", ".#backendCi.cuda"], stub=stub)
    assert done.returncode == 0


@pytest.mark.build
@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
def test_the_community_build_step_feeds_nixgen_upload(
    examples: dict[str, Path], stub: Path, tmp_path: Path
) -> None:
    """The community CI's release build of a backend (`nix build .#backendBundle.<b>`,
    then `cp -rL result build`) on a nixgen flake gives `build/<variant>/` as `nixgen
    upload` reads it: one folder per bundled variant of the backend, its metadata.json
    inside."""
    root = tmp_path / "relu-cpu"
    copy_out(examples["relu-cpu"], root)
    # upload compares the builds with what the current sources build: through the stand-ins.
    (root / "nixgen.toml").write_text(
        "offline = true\n[override-input]\n"
        f'nixpkgs = "path:{stub.resolve()}"\n'
        f'kernel-builder = "path:{kernel_builder(stub)}"\n'
    )
    nix_here(root, ["build", ".#backendCi.cpu", "--out-link", "result"], stub=stub, timeout=1200)
    subprocess.run(["cp", "-rL", "result", "build"], cwd=root, check=True)
    subprocess.run(["chmod", "-R", "u+w", "build"], cwd=root, check=True)
    picked = [v for v in variants.select_ci(variants_of(root)) if v.system == "x86_64-linux"]
    assert sorted(p.name for p in (root / "build").iterdir()) == [picked[0].name]
    assert json.loads((root / "build" / picked[0].name / "metadata.json").read_text())["name"]
    result = CliRunner().invoke(main, ["upload", str(root), "--repo-id", "me/relu", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert f"build/{picked[0].name}/metadata.json" in result.stdout.splitlines()


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
    assert workflow["on"]["push"] == {"branches": ["main"], "tags": ["v*"]}
    assert list(workflow["jobs"]) == ["matrix", "shards", "build", "sign", "upload"]
    plan_job, build_job = workflow["jobs"]["matrix"], workflow["jobs"]["build"]
    assert build_job["needs"] == ["matrix", "shards"]
    assert build_job["strategy"]["matrix"] == "${{ fromJSON(needs.matrix.outputs.matrix) }}"
    # Each row's runner and timeout: nixgen.toml's [ci.build], added by the plan job.
    assert build_job["runs-on"] == "${{ matrix.runs-on }}"
    assert build_job["timeout-minutes"] == "${{ matrix.timeout-minutes }}"
    assert build_job["name"] == "${{ matrix.name }}"
    assert plan_job["outputs"]["matrix"] == "${{ steps.matrix.outputs.matrix }}"
    evaluate = workflows.step(workflow, "matrix", "matrix")
    assert evaluate["env"]["OUTPUT"] == (
        "${{ github.event_name == 'pull_request' && 'pullRequestMatrix' || 'matrix' }}"
    )
    assert json.loads(plan_job["env"]["RUNNERS"]) == {
        f"{s}/cpu": {"runs-on": ci.runner(s), "timeout-minutes": 360}
        for s in ("aarch64-darwin", "aarch64-linux", "x86_64-linux")
    }
    build = workflows.step(workflow, "build", "build")
    assert build["env"]["ATTRS"] == "${{ join(matrix.attrs, ' ') }}"
    # Every `matrix.<key>` the workflow reads from nixgen's rows is in every row nixgen
    # emits; `runs-on` and `timeout-minutes` are the plan job's.
    expressions = " ".join(re.findall(r"\$\{\{(.*?)\}\}", text))
    read = set(re.findall(r"(?<![\w.])matrix\.([a-z-]+)", expressions))
    assert read == {"name", "attrs", "system", "variants", "runs-on", "timeout-minutes"}
    single = ci.github(variants_of(root))["include"]
    grouped = ci.github(variants_of(root), max_jobs=3)["include"]
    assert all(read - {"runs-on", "timeout-minutes"} <= set(row) for row in single + grouped)
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
    with_nix = []
    for name, job in workflow["jobs"].items():
        nix = [s for s in job["steps"] if s.get("uses", "").startswith("cachix/install-nix")]
        # The flake's nixConfig (the kernels cache) is accepted, not ignored.
        assert all("accept-flake-config = true" in s["with"]["extra_nix_config"] for s in nix)
        with_nix += [name] if nix else []
    # The release jobs read artifacts: no Nix, no flake.
    assert with_nix == ["matrix", "shards", "build"]
    build = workflow["jobs"]["build"]
    assert build["env"]["CACHIX_AUTH_TOKEN"] == (
        "${{ github.event_name != 'pull_request' && secrets.CACHIX_AUTH_TOKEN || '' }}"
    )
    assert build["environment"] == (
        "${{ github.event_name != 'pull_request' && vars.CACHIX_NAME != '' && 'cachix' || '' }}"
    )
    names = [s.get("uses", s.get("name")) for s in build["steps"]]
    push = next(s for s in build["steps"] if s.get("uses", "").startswith("cachix/cachix-action"))
    # Before the build (its post step pushes what was built); skipped without the secret.
    assert names.index(push["uses"]) < names.index("Build")
    assert push["if"] == "steps.cache.outputs.push == 'true'"
    assert push["with"] == {
        "name": "${{ env.CACHIX_NAME }}",
        "authToken": "${{ env.CACHIX_AUTH_TOKEN }}",
    }


@pytest.mark.parametrize(
    ("token", "name", "release", "push", "keep"),
    [
        ("", "", "false", "false", "true"),
        ("t", "", "false", "false", "true"),
        ("", "c", "false", "false", "true"),
        ("t", "c", "false", "true", "false"),
        ("t", "c", "true", "true", "true"),
        ("", "", "true", "false", "true"),
    ],
)
@pytest.mark.slow
def test_build_jobs_keep_their_variants_without_a_cache_and_on_a_release(
    tmp_path: Path, token: str, name: str, release: str, push: str, keep: str
) -> None:
    """A build job pushes to Cachix only with its name and token (which a pull request
    never gets), and keeps its variants as an artifact whenever nothing else keeps them,
    and on every release (the sign and upload jobs read the artifact)."""
    workflow = workflows.load(
        workflow_mod.github_workflow("x", nixgen_version="0", pairs=[("x86_64-linux", "cpu")])
    )
    given = {"CACHIX_AUTH_TOKEN": token, "CACHIX_NAME": name, "RELEASE": release}
    done, outputs = workflows.run_step(
        workflow, "build", "cache", cwd=tmp_path, expressions=given, tmp=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert outputs == {"push": push, "keep": keep}


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
    text = workflow_mod.github_workflow("a: b # c", nixgen_version="0.0.0", pairs=[]).decode()
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


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
@pytest.mark.parametrize("event", ["push", "pull_request"])
def test_workflow_steps_run_against_the_flake(
    examples: dict[str, Path], stub: Path, tmp_path: Path, event: str
) -> None:
    """Run the workflow's scripts as GitHub would (the expressions evaluated by hand): the
    matrix step yields the flake's matrix with each row's runner and timeout, the build
    and test steps ask `nix build` for exactly the row's attributes and checks, and the
    keep step copies each variant out of the store into build/<variant>."""
    root = examples["relu-mixed"]
    workflow = workflows.load(root / workflow_mod.GITHUB_WORKFLOW)
    real_nix = shutil.which("nix")
    bin_dir = write_fake_nix(
        tmp_path / "eval-bin",
        f'exec {real_nix} "$@" {" ".join(overrides(stub))}\n',
    )
    output = "pullRequestMatrix" if event == "pull_request" else "matrix"
    done, outputs = workflows.run_step(
        workflow, "matrix", "matrix", cwd=root, expressions={"OUTPUT": output},
        path=f"{bin_dir}:{os.environ['PATH']}", runner={"NIX_CONFIG": nix_config()},
        tmp=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    value = json.loads(outputs["matrix"])
    flags = ["--pull-request"] if event == "pull_request" else []
    table = json.loads(workflow["jobs"]["matrix"]["env"]["RUNNERS"])
    expected = cli_matrix(root, *flags)
    assert value == {
        "include": [
            {**row, **table[f"{row['system']}/{row['backend']}"]} for row in expected["include"]
        ]
    }
    assert all(
        row["runs-on"] == row["runner"] and row["timeout-minutes"] == 360
        for row in value["include"]
    )
    published_matrix_validator().validate(value)
    assert outputs["jobs"] == str(len(value["include"]))

    record = tmp_path / "nix-args"
    variant_out = tmp_path / "store" / "variant"
    (variant_out / "pkg").mkdir(parents=True)
    (tmp_path / "store" / "elsewhere.py").write_text("x = 1\n")
    (variant_out / "metadata.json").write_text("{}\n")
    (variant_out / "pkg" / "linked.py").symlink_to(tmp_path / "store" / "elsewhere.py")
    bin_dir = write_fake_nix(
        tmp_path / "build-bin",
        f'printf "%s\\n" "$@" >> {record}\n'
        f'case " $* " in *" --print-out-paths "*) echo {variant_out};; esac\n',
    )
    path = f"{bin_dir}:{os.environ['PATH']}"
    for row in [value["include"][0], ci.github(variants_of(root), max_jobs=5)["include"][-1]]:
        given = {
            "ATTRS": " ".join(row["attrs"]),  # ${{ join(matrix.attrs, ' ') }}
            "SYSTEM": row["system"],
            "VARIANTS": " ".join(row["variants"]),
        }
        for step_id, keys in (("build", ["ATTRS"]), ("test", ["SYSTEM", "VARIANTS"])):
            record.write_text("")
            done, _ = workflows.run_step(
                workflow, "build", step_id, cwd=root, path=path, tmp=tmp_path,
                expressions={k: given[k] for k in keys},
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            args = record.read_text().splitlines()
            wanted = (
                [f".#{a}" for a in row["attrs"]]
                if step_id == "build"
                else [f".#checks.{row['system']}.{v}" for v in row["variants"]]
            )
            assert args == ["build", "-L", "--no-link", *wanted]
        work = tmp_path / f"work-{len(row['variants'])}"
        work.mkdir()
        record.write_text("")
        done, _ = workflows.run_step(
            workflow, "build", "keep", cwd=work, path=path, tmp=tmp_path,
            expressions={"SYSTEM": row["system"], "VARIANTS": given["VARIANTS"]},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        # One evaluation per variant, of the attribute the row built.
        asked = [line for line in record.read_text().splitlines() if line.startswith(".#")]
        assert asked == [f".#{a}" for a in row["attrs"]]
        for variant in row["variants"]:
            copied = work / "build" / variant
            assert (copied / "metadata.json").read_text() == "{}\n"
            # Links are followed: the artifact holds files, writable ones.
            assert not (copied / "pkg" / "linked.py").is_symlink()
            assert (copied / "pkg" / "linked.py").read_text() == "x = 1\n"
            assert os.access(copied / "metadata.json", os.W_OK)


@pytest.mark.slow
def test_a_workflow_older_than_the_flake_says_so(tmp_path: Path) -> None:
    """A row of a (system, backend) the workflow has no runner for (the flake gained a
    backend, the workflow was not rendered again) fails the plan job, naming the fix."""
    workflow = workflows.load(
        workflow_mod.github_workflow("x", nixgen_version="0", pairs=[("x86_64-linux", "cpu")])
    )
    rows = [{"name": "a", "system": "x86_64-linux", "backend": b} for b in ("cpu", "cuda")]
    bin_dir = write_fake_nix(tmp_path / "bin", f"echo '{json.dumps({'include': rows})}'\n")
    done, outputs = workflows.run_step(
        workflow, "matrix", "matrix", cwd=tmp_path, expressions={"OUTPUT": "matrix"},
        path=f"{bin_dir}:{os.environ['PATH']}", tmp=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1
    assert "::error title=Stale workflow::the flake builds for x86_64-linux/cuda" in done.stdout
    assert "nixgen render --ci github" in done.stdout
    assert outputs == {}
