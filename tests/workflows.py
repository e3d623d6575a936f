"""Reading and running the GitHub workflows nixgen writes, as far as a machine without
GitHub can: the YAML parsed, a job's step found by its `id`, and its `run` script run
with bash as the runner would (`bash -e`, `$GITHUB_OUTPUT` a file read back), its literal
`env` values passed as written and its expressions (`${{ … }}`) given by the test.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

#: What marks a value GitHub evaluates.
EXPRESSION = "${{"
#: The condition of a release run, as the workflow writes it in each release job.
RELEASE = "github.event_name == 'push' && startsWith(github.ref, 'refs/tags/')"


def load(source: Path | bytes | str) -> dict[str, Any]:
    text = source.read_text() if isinstance(source, Path) else source
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def step(workflow: Mapping[str, Any], job: str, step_id: str) -> dict[str, Any]:
    """The step of `job` whose `id` is `step_id`."""
    found = [s for s in workflow["jobs"][job]["steps"] if s.get("id") == step_id]
    assert len(found) == 1, (job, step_id, [s.get("id") for s in workflow["jobs"][job]["steps"]])
    return dict(found[0])


def run_step(
    workflow: Mapping[str, Any],
    job: str,
    step_id: str,
    *,
    cwd: Path,
    expressions: Mapping[str, str] = {},
    path: str | None = None,
    runner: Mapping[str, str] = {},
    tmp: Path,
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Run a step's script; the process and what it wrote to `$GITHUB_OUTPUT`.

    The environment: this process's and `runner` (what the runner machine has, such as
    `NIX_CONFIG`), the job's and the step's literal `env` values, then `expressions` (the
    values of the `env` keys GitHub would evaluate: every one of the step's, and those of
    the job's that the test sets; the others are left unset), `PATH`
    (`path`, else this process's) and a fresh `$GITHUB_OUTPUT` in `tmp`."""
    found = step(workflow, job, step_id)
    job_env, step_env = workflow["jobs"][job].get("env", {}), found.get("env", {})
    env_spec = {**job_env, **step_env}
    env: dict[str, str] = {**os.environ, **runner}
    for key, value in env_spec.items():
        if isinstance(value, str) and EXPRESSION in value:
            # The step's own must be given; the job's only where the test needs them.
            assert key in expressions or key not in step_env, (
                f"{job}.{step_id}: give the value of {key} ({value})"
            )
            if key in expressions:
                env[key] = expressions[key]
        else:
            env[key] = value if isinstance(value, str) else str(value)
    extra = set(expressions) - set(env_spec)
    assert not extra, f"{job}.{step_id} has no env {sorted(extra)}"
    output = tmp / f"github_output-{job}-{step_id}"
    output.write_text("")
    env |= {"PATH": path or os.environ["PATH"], "GITHUB_OUTPUT": str(output)}
    done = subprocess.run(
        ["bash", "-e", "-c", found["run"]],
        cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if line)
    return done, outputs


def strings(value: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """Every string in a parsed workflow (keys too), with where it is."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield f"{where}.{key}", str(key)
            yield from strings(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from strings(item, f"{where}[{index}]")
    elif isinstance(value, str):
        yield where, value


def secrets_used(value: Any) -> set[str]:
    """The names of the secrets a parsed job (or workflow) reads."""
    return {m for _, text in strings(value) for m in re.findall(r"secrets\.([A-Za-z0-9_]+)", text)}
