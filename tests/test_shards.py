"""`nixgen matrix --shards K`: CI shards over the binary cache.

The shard matrix splits each large variant's derivations (its kernels' object
derivations, its other kernels, its binding's objects: the flake output
`objects.<system>.<variant>`) into K disjoint, covering parts balanced by cost; bad K is
a located error. The names it gives are the flake's (the same key rule in Python and
Nix), the workflow's shard jobs read and skip as documented, and a local replay (the K
shard builds into one store, then the variant) shows that the variant's own build then
compiles nothing: it builds only the kernel's archive and the extension's link.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nixgen.checking import project
from nixgen.cmdline.cli import main
from nixgen.core.errors import ProblemError
from nixgen.planning import ci, kernels, variants
from nixgen.rendering import workflow as workflow_mod
from tests.nixtools import flake_eval, have_nix, make_stub, nix_config, nix_env, overrides

from . import workflows
from .projects import write_project

SYSTEM = "x86_64-linux"


def run_matrix(root: Path, *args: str) -> Any:
    result = CliRunner().invoke(main, ["matrix", str(root), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def units(root: Path, variant: str) -> dict[str, list[str]]:
    """What a shard of `variant` can build: attribute → the sources it compiles."""
    build = project.read(root).build
    found = next(v for v in project_variants(root) if v.name == variant)
    prefix = f"objects.{found.system}.{found.name}."
    return {prefix + attr: sources for attr, sources in ci._objects(build, found)}


def project_variants(root: Path) -> list[Any]:

    return variants.variants(project.read(root).build)


# ----------------------------------------------------------------------- the matrix


@pytest.mark.parametrize("count", [1, 2, 3, 5, 39])
def test_shards_are_disjoint_covering_and_balanced(tmp_path: Path, count: int) -> None:
    root = tmp_path / "p"
    big = write_project(root)
    # 39 shards of each variant of every system would be more than GitHub's 256 jobs.
    system = ["--system", SYSTEM] if count > 36 else []
    value = run_matrix(root, "--shards", str(count), *system)
    # The variants' own jobs are the matrix without --shards.
    assert value["include"] == run_matrix(root, *system)["include"]
    rows = value["shards"]["include"]
    variants = [row["variant"] for row in value["include"]]
    assert [row["variant"] for row in rows] == [v for v in variants for _ in range(count)]
    for variant in variants:
        mine = [row for row in rows if row["variant"] == variant]
        assert [row["shard"] for row in mine] == [f"{i}/{count}" for i in range(1, count + 1)]
        expected = units(root, variant)
        # Every kernel object, the small kernel whole, the binding's objects.
        assert len(expected) == len(big) + 2
        assert {a.split(".", 3)[3] for a in expected} >= {"whole.small", "binding"}
        built = Counter(attr for row in mine for attr in row["attrs"])
        assert set(built) == set(expected) and set(built.values()) == {1}
        # Balanced by source count: within the largest derivation's cost of the mean.
        costs = [sum(len(expected[a]) for a in row["attrs"]) for row in mine]
        assert [int(row["cost"]) for row in mine] == costs
        assert [int(row["objects"]) for row in mine] == [len(row["attrs"]) for row in mine]
        mean = sum(costs) / count
        largest = max(len(s) for s in expected.values())
        assert all(abs(c - mean) <= largest for c in costs), costs
        for row in mine:
            assert row["runner"] == ci.runner(row["system"])
            assert row["name"] == f"{ci.job_name(_variant(root, variant))} objects {row['shard']}"
    names = [row["name"] for row in rows]
    assert len(set(names)) == len(names)


def _variant(root: Path, name: str) -> Any:
    return next(v for v in project_variants(root) if v.name == name)


def test_a_cost_table_balances_by_measured_cost(tmp_path: Path) -> None:
    root = tmp_path / "p"
    big = write_project(root)
    # Ten heavy sources: by count they would pile up; by cost they spread out.
    table = {s: (40.0 if i < 10 else 1.5) for i, s in enumerate(big)}
    (tmp_path / "costs.json").write_text(json.dumps(table))
    value = run_matrix(root, "--shards", "4", "--costs", str(tmp_path / "costs.json"))
    variant = value["include"][0]["variant"]
    rows = [r for r in value["shards"]["include"] if r["variant"] == variant]
    expected = units(root, variant)
    mean_cost = sum(table.values()) / len(table)
    cost = {
        a: sum(table.get(s, mean_cost) for s in src) or mean_cost for a, src in expected.items()
    }
    loads = [sum(cost[a] for a in row["attrs"]) for row in rows]
    assert [float(r["cost"]) for r in rows] == pytest.approx(loads, abs=5e-4)
    mean = sum(loads) / 4
    assert all(abs(load - mean) <= max(cost.values()) for load in loads), loads
    # The heavy ten: no shard holds more than three of them.
    heavy = {a for a, src in expected.items() if src and src[0] in big[:10]}
    assert max(len(heavy & set(r["attrs"])) for r in rows) == 3


def test_output_is_byte_identical(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write_project(root)
    runs = [CliRunner().invoke(main, ["matrix", str(root), "--shards", "3"]) for _ in range(2)]
    assert runs[0].exit_code == 0 and runs[0].stdout_bytes == runs[1].stdout_bytes


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shards", "0"], "Invalid value for '--shards': 0 is not in the range x>=1"),
        (["--shards", "-2"], "Invalid value for '--shards': -2 is not in the range x>=1"),
        (["--shards", "x"], "'x' is not a valid integer"),
        (
            ["--shards", "40"],
            "40 shards for variant torch212-cpu-aarch64-darwin, which has 39 derivations to shard",
        ),
        (["--costs", "costs.json"], "Invalid value for --costs: needs --shards K"),
        (["--shards", "2", "--costs", "bad.json"], '"big/s000.cpp": expected a positive number'),
        (["--shards", "2", "--costs", "list.json"], "expected a JSON object mapping source"),
        (["--shards", "2", "--costs", "nojson.json"], "not a JSON file"),
    ],
)
@pytest.mark.slow
def test_bad_shard_arguments_are_clear_errors(
    tmp_path: Path, args: list[str], message: str
) -> None:
    root = tmp_path / "p"
    write_project(root)
    (tmp_path / "costs.json").write_text("{}")
    (tmp_path / "bad.json").write_text('{"big/s000.cpp": 0}')
    (tmp_path / "list.json").write_text("[1]")
    (tmp_path / "nojson.json").write_text("{")
    args = [str(tmp_path / a) if a.endswith(".json") else a for a in args]
    done = subprocess.run(
        [sys.executable, "-m", "nixgen", "matrix", str(root), *args],
        capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_project_without_large_kernels_has_nothing_to_shard(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write_project(root, sources=kernels.OBJECT_THRESHOLD - 1)
    result = CliRunner().invoke(main, ["matrix", str(root), "--shards", "2"])
    assert result.exit_code == 2
    assert "no variant has a kernel built one derivation per object" in result.stderr
    assert f"at least {kernels.OBJECT_THRESHOLD} compiled sources" in result.stderr


def test_too_many_shard_jobs_name_the_largest_count(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write_project(root, sources=200)
    jobs = len(run_matrix(root)["include"])
    result = CliRunner().invoke(main, ["matrix", str(root), "--shards", "200"])
    assert result.exit_code == 2
    assert f"at most {256 // jobs} shards" in result.stderr


def test_pull_request_shards_only_its_variants(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write_project(root)
    value = run_matrix(root, "--pull-request", "--shards", "2")
    assert {r["variant"] for r in value["shards"]["include"]} == {
        v for r in value["include"] for v in r["variants"]
    }


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
def test_the_object_rules_are_the_nix_librarys() -> None:
    """Python knows what the library's binding compiles (`compile.cxxExtensions`); the
    object keys are nixgen's alone (`kernels.object_key`), plain hex whatever the file."""
    sources = ["big/s000.cpp", 'a b/$(x)".cu', "ünï/-x.cpp", "x" * 300 + ".cc"]
    expr = "let n = import ./nix; in { binding = n.compile.cxxExtensions; }"
    done = subprocess.run(
        ["nix-instantiate", "--eval", "--strict", "--json", "--expr", expr],
        cwd=Path(__file__).resolve().parent.parent,
        env=nix_env(), capture_output=True, text=True, check=True,
    )  # fmt: skip
    got = json.loads(done.stdout)
    assert got == {"binding": list(ci.BINDING_EXTENSIONS)}
    keys = [kernels.object_key(s) for s in sources]
    assert all(re.fullmatch("[0-9a-f]{16}", k) for k in keys)
    assert len(set(keys)) == len(keys)


# --------------------------------------------------------------------- the workflow


def workflow() -> dict[str, Any]:
    return workflows.load(
        workflow_mod.github_workflow("shard", nixgen_version="0.0.0", pairs=[(SYSTEM, "cpu")])
    )


def test_workflow_has_shard_jobs_that_the_builds_need() -> None:
    jobs = workflow()["jobs"]
    assert list(jobs) == ["matrix", "shards", "build", "sign", "upload"]
    shards, build = jobs["shards"], jobs["build"]
    assert shards["needs"] == "matrix"
    assert shards["if"] == "needs.matrix.outputs.shard-jobs != '0'"
    assert shards["strategy"]["matrix"] == "${{ fromJSON(needs.matrix.outputs.shards) }}"
    # The runner and timeout of the variant's (system, backend), as its build job's.
    assert shards["runs-on"] == build["runs-on"] == "${{ matrix.runs-on }}"
    assert shards["timeout-minutes"] == build["timeout-minutes"]
    assert build["needs"] == ["matrix", "shards"]
    # Skipped or failed shards do not stop the builds (they compile what is missing).
    assert build["if"].startswith("${{ !cancelled() && needs.matrix.result == 'success'")
    steps = shards["steps"]
    assert steps[0]["id"] == "cache"
    assert all(s["if"] == "steps.cache.outputs.push == 'true'" for s in steps[1:])
    push = next(s for s in steps if s.get("uses", "").startswith("cachix/cachix-action"))
    assert push["with"]["authToken"] == "${{ env.CACHIX_AUTH_TOKEN }}"
    assert shards["env"]["CACHIX_AUTH_TOKEN"] == build["env"]["CACHIX_AUTH_TOKEN"]
    assert shards["environment"] == build["environment"]
    own = workflows.step(workflow(), "shards", "build")
    assert own["env"]["ATTRS"] == "${{ join(matrix.attrs, ' ') }}"
    assert own["run"] == workflows.step(workflow(), "build", "build")["run"]


def test_workflow_is_byte_identical() -> None:
    def render() -> bytes:
        return workflow_mod.github_workflow("x", nixgen_version="1", pairs=[(SYSTEM, "cpu")])

    assert render() == render()


@pytest.mark.parametrize(
    ("token", "name", "push"), [("", "", "false"), ("t", "", "false"), ("t", "c", "true")]
)
@pytest.mark.slow
def test_shard_jobs_skip_cleanly_without_the_cache_secret(
    tmp_path: Path, token: str, name: str, push: str
) -> None:
    # A pull request's token is always empty (the job's env says so).
    done, outputs = workflows.run_step(
        workflow(), "shards", "cache", cwd=tmp_path, tmp=tmp_path,
        expressions={"CACHIX_AUTH_TOKEN": token, "CACHIX_NAME": name},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert outputs == {"push": push}
    skipped = "::notice title=Shard skipped::no binary cache to push to" in done.stdout
    assert skipped == (push == "false")


@pytest.mark.parametrize("event", ["push", "pull_request"])
@pytest.mark.slow
def test_matrix_job_reads_the_committed_shards(tmp_path: Path, event: str) -> None:
    root = tmp_path / "p"
    write_project(root)
    flags = ["--pull-request"] if event == "pull_request" else []
    value = run_matrix(root, *flags)
    found = variants.variants(project.read(root, check_files=False).build)
    data = workflows.load(
        workflow_mod.github_workflow(
            "shard", nixgen_version="0.0.0", pairs=[(v.system, v.backend) for v in found]
        )
    )
    table = json.loads(data["jobs"]["matrix"]["env"]["RUNNERS"])

    def run() -> dict[str, str]:
        done, outputs = workflows.run_step(
            data, "matrix", "shards", cwd=root, tmp=tmp_path,
            expressions={"MATRIX": json.dumps(value)},  # ${{ steps.matrix.outputs.matrix }}
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return outputs

    assert run() == {"shards": '{"include":[]}', "jobs": "0"}
    (root / ".github").mkdir()
    # The file holds every variant's shards; a pull request runs those of its variants,
    # each row with its (system, backend)'s runner and timeout.
    (root / ".github" / "nixgen-shards.json").write_text(
        json.dumps(run_matrix(root, "--shards", "3"))
    )
    got = run()
    shards = json.loads(got["shards"])
    wanted = {v for row in value["include"] for v in row["variants"]}
    every = run_matrix(root, "--shards", "3")["shards"]["include"]
    assert shards == {
        "include": [
            {**r, **table[f"{r['system']}/{r['backend']}"]} for r in every if r["variant"] in wanted
        ]
    }
    assert all(r["runs-on"] == r["runner"] for r in shards["include"])
    assert got["jobs"] == str(3 * len(wanted))


# ------------------------------------------------------------------ flake and replay


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


def render(root: Path) -> None:
    result = CliRunner().invoke(main, ["render", str(root)], catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
def test_every_shard_attr_is_a_derivation_of_the_flake(stub: Path, tmp_path: Path) -> None:
    root = tmp_path / "p"
    write_project(root)
    render(root)
    value = run_matrix(root, "--shards", "2", "--system", SYSTEM)
    apply = (
        "objects: builtins.mapAttrs (v: o: { kernels = builtins.mapAttrs (k: builtins.attrNames)"
        " o.kernels; whole = builtins.attrNames o.whole; binding = o ? binding; }) objects"
    )
    got = flake_eval(root, f"objects.{SYSTEM}", stub=stub, apply=apply)
    for row in value["include"]:
        variant = row["variant"]
        attrs = sorted(a for r in value["shards"]["include"] if r["variant"] == variant
                       for a in r["attrs"])  # fmt: skip
        names = [
            f"objects.{SYSTEM}.{variant}.kernels.big.{k}" for k in got[variant]["kernels"]["big"]
        ]
        names += [f"objects.{SYSTEM}.{variant}.whole.{k}" for k in got[variant]["whole"]]
        names += [f"objects.{SYSTEM}.{variant}.binding"] if got[variant]["binding"] else []
        assert attrs == sorted(names)


def _dry_run(root: Path, attr: str, stub: Path) -> list[str]:
    """The derivations `nix build --dry-run` says it would build (none: `[]`)."""
    done = subprocess.run(
        ["nix", "build", "--dry-run", f"path:{root}#{attr}", *overrides(stub)],
        env=nix_env(), capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    match = re.search(r"(?:these \d+ derivations|this derivation) will be built:\n((?:  .*\n)*)",
                      done.stderr)  # fmt: skip
    return [] if match is None else [line.strip() for line in match.group(1).splitlines()]


def _own(derivations: list[str]) -> set[str]:
    """The project's own derivations among `derivations` (named for it: `shard-…`), not
    the check hooks, the Python environment and the client every project's build needs,
    which are built once per store."""
    return {d for d in derivations if Path(d).name.split("-", 1)[1].startswith("shard-")}


@pytest.mark.build
@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
def test_replay_shards_then_the_variant_compiles_nothing(stub: Path, tmp_path: Path) -> None:
    """The workflow's shard jobs and then its build job, replayed into one store: after
    the K shard builds, the variant's build builds only the kernel's archive and the
    extension (no object, no kernel, no binding); Nix's own `--dry-run` list says so,
    before and after, and the build's log shows no compiler run but the link."""
    count = 3
    root = tmp_path / "p"
    # New derivations for this run: the store keeps what earlier runs built.
    big = write_project(root, sources=33, small=False, salt=uuid.uuid4().hex)
    render(root)
    value = run_matrix(root, "--shards", str(count), "--system", SYSTEM)
    variant = value["include"][-1]["variant"]
    rows = [r for r in value["shards"]["include"] if r["variant"] == variant]
    attr = f"packages.{SYSTEM}.{variant}"
    # Nix's names for what the shards build, and for the archive and the link.
    objects = flake_eval(
        root, f"objects.{SYSTEM}.{variant}", stub=stub,
        apply="o: map (d: d.drvPath) (builtins.attrValues o.kernels.big) ++ [ o.binding.drvPath ]",
    )  # fmt: skip
    archive = flake_eval(root, f"{attr}.nixgen.kernels.big.drvPath", stub=stub)
    # The link is the extension's; the variant's package copies it with the flake's
    # provenance in its metadata.json (`nixgen.provenance.stamp`, a copy, no compile).
    link = flake_eval(root, attr, stub=stub, apply="v: (v.passthru.nixgen.unstamped or v).drvPath")
    stamp = flake_eval(root, f"{attr}.drvPath", stub=stub)
    assert len(objects) == len(big) + 1
    before = _dry_run(root, attr, stub)
    assert set(objects) | {archive, link, stamp} <= set(before)

    env = {**os.environ, "NIX_CONFIG": nix_config()}
    for row in rows:
        # The shard job's build step, as the workflow runs it.
        installables = [f"path:{root}#{a}" for a in row["attrs"]]
        done = subprocess.run(
            ["nix", "build", "--no-link", "--max-jobs", "2", *installables, *overrides(stub)],
            env=env, capture_output=True, text=True, check=False, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
    after = _dry_run(root, attr, stub)
    # The project's own derivations (named for it: `shard-…`); the check hooks, the
    # Python environment and the client the build job also needs are shared by every
    # project, and are left to build only where no earlier build put them in the store.
    assert _own(after) == {archive, link, stamp}, sorted(_own(after) ^ {archive, link, stamp})
    assert all(d in before for d in after)

    done = subprocess.run(
        ["nix", "build", "--no-link", "-L", f"path:{root}#{attr}", *overrides(stub)],
        env=env, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    log = done.stderr
    # Nix built the two and the stamp, and their ninja steps are the archive and the link:
    # no object.
    built = re.findall(r"^building '(/nix/store/[^']+\.drv)'", log, re.MULTILINE)
    assert _own(built) == {archive, link, stamp}
    steps = re.findall(r"^shard-[a-z-]+> \[\d+/\d+\] (.*)$", log, re.MULTILINE)
    assert len(steps) == 2 and steps[0] == "libbig.a" and steps[1].endswith(".abi3.so"), steps
    print(
        f"replay: K={count}, shard sizes {[int(r['objects']) for r in rows]} "
        f"(costs {[r['cost'] for r in rows]}); before {len(before)} derivations to build, "
        f"after the shards {len(after)}: {sorted(p.split('-', 1)[1] for p in after)}"
    )


# ------------------------------------------------------------------ real projects


def _large_corpus() -> list[Path]:
    from .conftest import CORPUS_FILES

    out = []
    for path in CORPUS_FILES:
        try:
            build = project.read(path, check_files=False).build
        except ProblemError:  # the corpus holds projects that are rejected on purpose
            continue
        if any(kernels.object_sources(k) for k in build.kernels.values()):
            out.append(path)
    return out


def test_real_large_projects_shard_into_disjoint_covering_parts(tmp_path: Path) -> None:
    """Every corpus project with a per-object kernel, 4 shards of each x86_64-linux
    variant: disjoint and covering, within the largest derivation of the mean."""
    from .conftest import materialize

    large = _large_corpus()
    assert len(large) >= 3, [p.stem for p in large]
    for path in large:
        root = materialize(path, tmp_path / path.stem)
        value = run_matrix(root, "--shards", "4", "--system", SYSTEM)
        by_variant: dict[str, list[dict[str, Any]]] = {}
        for row in value["shards"]["include"]:
            by_variant.setdefault(row["variant"], []).append(row)
        assert by_variant, path.stem
        for variant, rows in by_variant.items():
            expected = units(root, variant)
            built = Counter(a for row in rows for a in row["attrs"])
            assert set(built) == set(expected) and set(built.values()) == {1}, path.stem
            costs = [int(row["cost"]) for row in rows]
            largest = max(max(len(s), 1) for s in expected.values())
            assert max(costs) - min(costs) <= largest, (path.stem, costs)


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
def test_flash_attn3_shards_name_the_flakes_objects(stub: Path, tmp_path: Path) -> None:
    """The largest real project (CUDA kernels of hundreds of sources): the shard matrix
    of one variant names exactly the flake's `objects` of that variant."""
    from .conftest import CORPUS, materialize

    root = materialize(CORPUS / "community__flash-attn3.toml", tmp_path / "fa3")
    render(root)
    value = run_matrix(root, "--shards", "16", "--system", SYSTEM)
    variant = value["shards"]["include"][0]["variant"]
    rows = [r for r in value["shards"]["include"] if r["variant"] == variant]
    apply = (
        "o: builtins.concatLists (builtins.attrValues (builtins.mapAttrs (k: v: map (key: "
        '"kernels.${k}.${key}") (builtins.attrNames v)) o.kernels)) ++ map (k: "whole.${k}") '
        '(builtins.attrNames o.whole) ++ (if o ? binding then [ "binding" ] else [ ])'
    )
    names = flake_eval(root, f"objects.{SYSTEM}.{variant}", stub=stub, apply=apply)
    prefix = f"objects.{SYSTEM}.{variant}."
    assert sorted(a for r in rows for a in r["attrs"]) == sorted(prefix + n for n in names)
    sizes = [int(r["objects"]) for r in rows]
    print(f"flash-attn3 {variant}: {len(names)} derivations in 16 shards of {sizes}")
