"""The GitHub Actions workflow of a kernel project (``.github/workflows/nixgen.yml``): the
template ``ci-github.yml.j2`` with nixgen's pinned actions (``data/actions.json``). The
matrices it fans out over are the plan's (`nixgen.planning.ci`), read from the flake.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from nixgen.core import jinja, marker, tables

#: Where `nixgen render --ci github` writes the workflow, relative to the project.
GITHUB_WORKFLOW = ".github/workflows/nixgen.yml"


@attrs.frozen
class ActionPin:
    """A GitHub Action pinned by commit (``data/actions.json``), written as
    ``owner/name@<commit> # <version>``: the form zizmor and Dependabot read."""

    repo: str
    commit: str
    version: str

    def __str__(self) -> str:
        return f"{self.repo}@{self.commit} # {self.version}"


def action_pins() -> dict[str, ActionPin]:
    """The pinned actions by ``owner/name`` (``data/actions.json``, updated by
    ``scripts/update_actions.py``)."""
    actions = tables.table("actions.json")["actions"]
    return {
        repo: ActionPin(repo, entry["commit"], entry["version"])
        for repo, entry in sorted(actions.items())
    }


def _yaml_value(value: Any) -> str:
    # nixgen's own pins (a checked table of plain names, hex and tags) are written as
    # they are, so the version comment stays a comment.
    if isinstance(value, ActionPin):
        return str(value)
    # JSON is YAML: a JSON scalar can never open a block, a comment or an anchor.
    return json.dumps(value, ensure_ascii=False)


def github_workflow(project_name: str, *, nixgen_version: str) -> bytes:
    """The GitHub Actions workflow of a kernel project (``.github/workflows/nixgen.yml``).

    A `matrix` job evaluates the flake's ``githubActions.matrix`` (all variants) or, for
    pull requests, ``githubActions.pullRequestMatrix`` (one per system and backend); a
    `build` job fans out over it with ``fromJSON`` and builds each row's ``attrs``.
    Every value from the project passes through JSON quoting.
    """
    import jinja2

    env = jinja.environment(jinja2.PackageLoader("nixgen", "templates"), finalize=_yaml_value)
    body = env.get_template("ci-github.yml.j2").render(
        workflow_name=f"nixgen: {project_name}", branches=["main"], actions=action_pins()
    )
    # The header is nixgen's own text (no project data), so it is not a YAML value.
    header = marker.header(
        nixgen_version, "GitHub Actions workflow", rerun="nixgen render --ci github"
    )
    lines = [line.rstrip() for line in (header + body).splitlines()]
    return ("\n".join(lines).rstrip("\n") + "\n").encode()
