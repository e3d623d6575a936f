"""nixgen.toml's ``[ci]`` table: where the generated workflow's jobs run, for how long, and
its release settings. Typed and located as nixgen.toml's other keys (exit 2, the file, line
and key, what was expected, the closest valid choice, nothing written); each build job's
runner and timeout resolved from the most specific setting; `nixgen show` prints them;
the workflow carries them as data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nixgen.cmdline.cli import main
from nixgen.planning import ci, runners
from nixgen.rendering import workflow as workflow_mod

from . import workflows
from .conftest import EXAMPLES, copy_out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "relu-mixed"
    copy_out(EXAMPLES / "relu-mixed", root, "nix", "build")
    return root


def render(root: Path, settings: str) -> Any:
    (root / "nixgen.toml").write_text(settings)
    return CliRunner().invoke(main, ["render", str(root), "--ci", "github"])


def test_defaults_are_todays_runners() -> None:
    settings = runners.CiSettings()
    for system in ("x86_64-linux", "aarch64-linux", "aarch64-darwin"):
        assert settings.build_job(system, "cpu") == {
            "runs-on": ci.runner(system),
            "timeout-minutes": 360,
        }
    assert {job: settings.job(job) for job in runners.SINGLE_JOBS} == {
        "plan": {"runs-on": "ubuntu-latest", "timeout-minutes": 30},
        "sign": {"runs-on": "ubuntu-latest", "timeout-minutes": 15},
        "upload": {"runs-on": "ubuntu-latest", "timeout-minutes": 60},
    }


def test_the_most_specific_setting_wins_key_by_key() -> None:
    settings, problems = runners.parse(
        {
            "build": {
                "timeout-minutes": 100,
                "runs-on": "big",
                "x86_64-linux": {"runs-on": ["self-hosted", "x64"], "timeout-minutes": 200},
                "cuda": {"runs-on": {"group": "gpu"}},
                "x86_64-linux/cuda": {"timeout-minutes": 900},
            }
        }
    )
    assert problems == []
    got = settings.build_table(
        [("x86_64-linux", "cuda"), ("x86_64-linux", "cpu"), ("aarch64-linux", "cuda"),
         ("aarch64-linux", "cpu")]
    )  # fmt: skip
    assert got == {
        # pair (timeout) > backend (runs-on)
        "x86_64-linux/cuda": {"runs-on": {"group": "gpu"}, "timeout-minutes": 900},
        # system
        "x86_64-linux/cpu": {"runs-on": ["self-hosted", "x64"], "timeout-minutes": 200},
        # backend (runs-on) > [ci.build] (timeout)
        "aarch64-linux/cuda": {"runs-on": {"group": "gpu"}, "timeout-minutes": 100},
        # [ci.build] itself
        "aarch64-linux/cpu": {"runs-on": "big", "timeout-minutes": 100},
    }
    assert list(got) == sorted(got)


def test_every_selector_is_a_system_a_backend_or_a_pair_the_build_table_has() -> None:
    selectors = runners.selectors()
    assert {"x86_64-linux", "aarch64-darwin", "cuda", "metal", "x86_64-linux/cuda"} <= set(
        selectors
    )
    # No CUDA on macOS, no Metal on Linux, nothing for a backend without a build set.
    assert not {"aarch64-darwin/cuda", "x86_64-linux/metal", "neuron"} & set(selectors)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "[ci]\nenviroment = 'x'\n",
            "nixgen.toml:2:1: error: ci.enviroment: unknown key `enviroment`; did you mean "
            "`environment`?",
            None,
        ),
        (
            "[ci.build.cdua]\nruns-on = 'x'\n",
            "nixgen.toml:1:11: error: ci.build.cdua: unknown key `cdua`; did you mean `cuda`?",
            "a backend (`cpu`, `cuda`",
        ),
        (
            '[ci.build."aarch64-darwin/cuda"]\ntimeout-minutes = 5\n',
            'error: ci.build."aarch64-darwin/cuda": unknown key',
            "`<system>/<backend>`",
        ),
        (
            "[ci.build]\ntimeout-minutes = 0\n",
            "nixgen.toml:2:19: error: ci.build.timeout-minutes: expected a whole number of "
            "minutes from 1 to 7200",
            None,
        ),
        (
            "[ci.sign]\ntimeout-minutes = true\n",
            "error: ci.sign.timeout-minutes: expected a whole number",
            None,
        ),
        (
            "[ci.plan]\nruns-on = []\n",
            "nixgen.toml:2:11: error: ci.plan.runs-on: expected at least one runner label",
            None,
        ),
        (
            "[ci.plan]\nruns-on = 3\n",
            "error: ci.plan.runs-on: expected a runner label",
            "a table with a runner group and/or labels",
        ),
        (
            "[ci.build.cuda]\nruns-on = { grup = 'gpu' }\n",
            "error: ci.build.cuda.runs-on.grup: unknown key `grup`; did you mean `group`?",
            None,
        ),
        (
            "[ci.build.cuda]\nruns-on = {}\n",
            "error: ci.build.cuda.runs-on: expected a runner label",
            "name a `group` or `labels`",
        ),
        (
            "[ci.upload]\nruns-on = ['${{ secrets.X }}']\n",
            "error: ci.upload.runs-on[0]: expected a runner label, not a GitHub expression",
            None,
        ),
        (
            "[ci.build.x86_64-linux]\nruns-on = ' ubuntu-latest'\n",
            "error: ci.build.x86_64-linux.runs-on: expected a runner label without leading",
            None,
        ),
        (
            '[ci]\nenvironment = "it\'s"\n',
            "nixgen.toml:2:15: error: ci.environment: expected the name of a GitHub deployment "
            "environment: letters, digits",
            None,
        ),
        (
            "[ci]\ncache-environment = 'a}}b'\n",
            "error: ci.cache-environment: expected the name of a GitHub deployment environment",
            None,
        ),
        (
            "[ci]\nnixgen = '--index-url=https://evil.example'\n",
            "error: ci.nixgen: expected a pip requirement, not an option",
            None,
        ),
        (
            "[ci]\nrelease-tags = 'v*'\n",
            "error: ci.release-tags: expected a list of tag patterns",
            None,
        ),
        (
            "[ci]\nrelease-tags = ['v*', '${{ github.ref }}']\n",
            "error: ci.release-tags[1]: expected a tag pattern, not a GitHub expression",
            None,
        ),
        ("ci = 3\n", "nixgen.toml:1:6: error: ci: expected a table (`[ci]`)", None),
        ("[ci]\nbuild = 3\n", "error: ci.build: expected a table (`[ci.build]`)", None),
    ],
)
def test_a_bad_ci_table_is_located_and_writes_nothing(
    project: Path, text: str, line: str, message: str | None
) -> None:
    done = render(project, text)
    assert done.exit_code == 2, done.output
    assert line in done.stderr, done.stderr
    if message is not None:
        assert message in done.stderr
    assert "Traceback" not in done.output
    assert not (project / workflow_mod.GITHUB_WORKFLOW).exists()
    assert not (project / "nix").exists()


def test_every_problem_is_reported_at_once(project: Path) -> None:
    done = render(
        project,
        "[ci]\nenvironment = ''\n[ci.plan]\ntimeout-minutes = -1\n[ci.build.cuda]\nruns-on = 1\n",
    )
    assert done.exit_code == 2
    errors = [line for line in done.stderr.splitlines() if ": error: " in line]
    assert [e.split(": error: ")[1].split(":")[0] for e in errors] == [
        "ci.environment",
        "ci.plan.timeout-minutes",
        "ci.build.cuda.runs-on",
    ]


def test_validate_checks_the_ci_table_too(project: Path) -> None:
    (project / "nixgen.toml").write_text("[ci.build]\ntimout-minutes = 5\n")
    done = CliRunner().invoke(main, ["validate", str(project)])
    assert done.exit_code == 2
    assert "ci.build.timout-minutes: unknown key `timout-minutes`; did you mean" in done.stderr


def test_show_prints_the_ci_settings(project: Path) -> None:
    (project / "nixgen.toml").write_text(
        '[ci]\nenvironment = "hub"\n[ci.build."x86_64-linux/cuda"]\n'
        'runs-on = { group = "gpu" }\ntimeout-minutes = 900\n'
    )
    done = CliRunner().invoke(main, ["show", str(project)])
    assert done.exit_code == 0, done.output
    assert '  ci.environment = "hub"' in done.stderr
    assert '  ci.build."x86_64-linux/cuda".runs-on = {"group": "gpu"}' in done.stderr
    assert '  ci.build."x86_64-linux/cuda".timeout-minutes = 900' in done.stderr


def test_the_workflow_carries_the_settings(project: Path) -> None:
    done = render(
        project,
        """
[ci]
release-tags = ["release-*"]
environment = "hub"
cache-environment = "cache"
[ci.plan]
runs-on = ["ubuntu-24.04"]
timeout-minutes = 9
[ci.build.cuda]
runs-on = { group = "gpu", labels = "linux" }
[ci.upload]
timeout-minutes = 240
""",
    )
    assert done.exit_code == 0, done.output
    workflow = workflows.load(project / workflow_mod.GITHUB_WORKFLOW)
    jobs = workflow["jobs"]
    assert workflow["on"]["push"]["tags"] == ["release-*"]
    assert (jobs["matrix"]["runs-on"], jobs["matrix"]["timeout-minutes"]) == (["ubuntu-24.04"], 9)
    assert (jobs["upload"]["runs-on"], jobs["upload"]["timeout-minutes"]) == ("ubuntu-latest", 240)
    assert jobs["upload"]["environment"] == "hub"
    assert "&& 'cache' ||" in jobs["build"]["environment"]
    table = json.loads(jobs["matrix"]["env"]["RUNNERS"])
    assert table["x86_64-linux/cuda"]["runs-on"] == {"group": "gpu", "labels": "linux"}
    assert table["x86_64-linux/cpu"]["runs-on"] == "ubuntu-latest"
    # Rendering again is byte-identical; --check agrees.
    again = CliRunner().invoke(main, ["render", str(project), "--ci", "github", "--check"])
    assert again.exit_code == 0, again.output


def test_a_value_holding_an_expression_never_reaches_the_workflow() -> None:
    """nixgen.toml refuses `${{` (above); the renderer refuses it too, for any value."""
    with pytest.raises(workflow_mod.WorkflowValueError):
        workflow_mod.github_workflow(
            "x",
            nixgen_version="0",
            pairs=[],
            settings=runners.CiSettings(nixgen="${{ secrets.HF_TOKEN }}"),
        )
