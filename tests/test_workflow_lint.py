"""The workflows nixgen writes, and its own, pass the ecosystem's GitHub Actions linters.

zizmor (``--offline``: every audit that needs no GitHub API, under each of its personas:
regular, pedantic and auditor) and check-jsonschema's vendored ``github-workflows`` schema
read every workflow `nixgen render --ci github` can write (nixgen.toml's ``[ci]`` unset and
set) and the repository's own ``.github/workflows/ci.yml``: 0 findings. Both linters are
test extras (``pyproject.toml``), so a missing one fails here rather than skipping the check.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from nixgen.cmdline.cli import main
from nixgen.core import tables
from nixgen.rendering import workflow as workflow_mod

from .conftest import copy_out

ROOT = Path(__file__).resolve().parent.parent
OWN_WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
PINNED = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)@(?P<commit>[0-9a-f]{40})$")


def tool(name: str) -> str:
    """A linter from the test extras: next to this Python first (the venv), then PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"{name} is missing: install the test extras (pip install -e '.[test]')"
    return found


#: zizmor's personas: its default, pedantic (style and hardening findings too) and
#: auditor (everything, false positives included).
PERSONAS = ("regular", "pedantic", "auditor")

#: A nixgen.toml that sets every key of `[ci]`: build runners by system, backend and pair
#: (labels, a runner group), timeouts, the release jobs' GitHub-hosted runners, the
#: environments, the release tags and the requirement the upload job installs.
CONFIGURED = """
[ci]
release-tags = ["v*", "release-*"]
environment = "hub-upload"
cache-environment = "binary-cache"
nixgen = "nixgen[hub] @ git+https://github.com/example/nixgen@0123456789abcdef"

[ci.plan]
runs-on = "ubuntu-24.04"
timeout-minutes = 10

[ci.build]
timeout-minutes = 300

[ci.build.aarch64-linux]
runs-on = ["ubuntu-24.04-arm"]

[ci.build.cuda]
runs-on = { group = "gpu-builders", labels = ["linux", "x64"] }
timeout-minutes = 1200

[ci.build."x86_64-linux/cpu"]
runs-on = ["self-hosted", "linux", "x64"]

[ci.sign]
timeout-minutes = 5

[ci.upload]
runs-on = "ubuntu-24.04"
timeout-minutes = 120
"""


def zizmor(workflow: Path, persona: str) -> subprocess.CompletedProcess[str]:
    # `--color=never`: zizmor colours its report whenever `CI` is set (as on CI runners),
    # and the findings are read back from the text.
    return subprocess.run(
        [
            tool("zizmor"),
            "--offline",
            "--no-progress",
            "--color=never",
            f"--persona={persona}",
            str(workflow),
        ],
        capture_output=True,
        text=True,
        cwd=workflow.parent,
    )


def lint(workflow: Path) -> None:
    """Both linters on `workflow`: exit 0 and no finding, with their output on failure."""
    for persona in PERSONAS:
        run = zizmor(workflow, persona)
        assert run.returncode == 0, f"zizmor ({persona}) on {workflow}:\n{run.stdout}{run.stderr}"
        assert "No findings to report" in run.stdout + run.stderr, run.stdout + run.stderr
    schema = subprocess.run(
        [tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(workflow)],
        capture_output=True,
        text=True,
    )
    assert schema.returncode == 0, f"github-workflows schema on {workflow}:\n{schema.stdout}"


def uses(workflow: Path) -> list[str]:
    data: dict[str, Any] = yaml.safe_load(workflow.read_text())
    return [
        step["uses"] for job in data["jobs"].values() for step in job["steps"] if "uses" in step
    ]


def rendered_workflows(tmp_path: Path) -> dict[str, Path]:
    """Every workflow `render --ci github` writes, by what it shows: a plain project
    (one backend), a mixed one (the sharded builds of large variants), and the mixed one
    with every `[ci]` setting of nixgen.toml (`CONFIGURED`)."""
    out = {}
    for name, example, settings in (
        ("relu-cpu", "relu-cpu", None),
        ("relu-mixed", "relu-mixed", None),
        ("relu-mixed-configured", "relu-mixed", CONFIGURED),
    ):
        root = tmp_path / name
        copy_out(ROOT / "examples" / example, root)
        if settings is not None:
            (root / "nixgen.toml").write_text(settings)
        result = CliRunner().invoke(main, ["render", str(root), "--ci", "github"])
        assert result.exit_code == 0, result.output
        out[name] = root / workflow_mod.GITHUB_WORKFLOW
    return out


@pytest.mark.slow
def test_generated_workflows_pass_zizmor_and_the_schema(tmp_path: Path) -> None:
    workflows = rendered_workflows(tmp_path)
    for workflow in workflows.values():
        lint(workflow)


def test_generated_workflows_pin_every_action_by_commit(tmp_path: Path) -> None:
    pins = tables.table("actions.json")["actions"]
    for workflow in rendered_workflows(tmp_path).values():
        text = workflow.read_text()
        seen = uses(workflow)
        assert seen, "the workflow uses no action"
        for ref in seen:
            match = PINNED.match(ref)
            assert match, f"{ref} is not pinned by a full commit SHA"
            entry = pins[match["repo"]]
            assert match["commit"] == entry["commit"]
            # The version is a comment on the same line (what Dependabot and zizmor read).
            assert f"{ref} # {entry['version']}\n" in text
        # Checkouts keep no credentials in .git/config (zizmor's artipacked).
        data = yaml.safe_load(text)
        for job_name, job in data["jobs"].items():
            # Read-only, but for the signing job (tests/test_release_workflow.py).
            wanted = {"id-token": "write"} if job_name == "sign" else {"contents": "read"}
            assert job["permissions"] == wanted, job_name
            for step in job["steps"]:
                if step.get("uses", "").startswith("actions/checkout@"):
                    assert step["with"]["persist-credentials"] is False
        assert data["permissions"] == {}


@pytest.mark.slow
def test_a_self_hosted_runner_for_a_single_job_is_what_the_auditor_reports(
    tmp_path: Path,
) -> None:
    """Naming a self-hosted runner (or a runner group) in nixgen.toml is the user's call,
    and zizmor's auditor persona says so for the jobs it can see (the plan, sign and upload
    jobs; a build job's runner comes from its matrix row, which zizmor does not read):
    exactly its `self-hosted-runner` finding, nothing else; the other personas stay clean."""
    root = tmp_path / "relu-cpu"
    copy_out(ROOT / "examples" / "relu-cpu", root)
    (root / "nixgen.toml").write_text(
        '[ci.plan]\nruns-on = ["self-hosted", "linux"]\n[ci.sign]\nruns-on = { group = "g" }\n'
    )
    result = CliRunner().invoke(main, ["render", str(root), "--ci", "github"])
    assert result.exit_code == 0, result.output
    workflow = root / workflow_mod.GITHUB_WORKFLOW
    for persona in ("regular", "pedantic"):
        run = zizmor(workflow, persona)
        assert run.returncode == 0 and "No findings to report" in run.stdout + run.stderr
    run = zizmor(workflow, "auditor")
    found = re.findall(r"^\w+\[([a-z-]+)\]", run.stdout, re.MULTILINE)
    assert found == ["self-hosted-runner", "self-hosted-runner"], run.stdout
    assert "2 findings" in run.stdout + run.stderr


@pytest.mark.slow
def test_own_workflow_passes_the_linters_and_agrees_with_the_table() -> None:
    lint(OWN_WORKFLOW)
    pins = tables.table("actions.json")["actions"]
    text = OWN_WORKFLOW.read_text()
    for ref in uses(OWN_WORKFLOW):
        match = PINNED.match(ref)
        assert match, f"{ref} in ci.yml is not pinned by a full commit SHA"
        entry = pins[match["repo"]]
        assert f"{match['repo']}@{entry['commit']} # {entry['version']}\n" in text


@pytest.mark.parametrize("repo", sorted(tables.table("actions.json")["actions"]))
def test_action_table_entries_are_well_formed(repo: str) -> None:
    entry = tables.table("actions.json")["actions"][repo]
    assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"]), entry
    # The recorded version is the tracked tag or a more specific one of the same series.
    assert entry["version"] == entry["track"] or entry["version"].startswith(entry["track"] + ".")
    assert re.fullmatch(r"v\d+(\.\d+)*", entry["version"]), entry
    # The pin is written raw into YAML: nothing in it may start a new token.
    assert str(workflow_mod.action_pins()[repo]) == f"{repo}@{entry['commit']} # {entry['version']}"
    json.dumps(entry)
