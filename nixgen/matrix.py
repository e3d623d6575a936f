"""CI matrices from the planned variants (the plan stage's output, laid out for CI).

`github` turns a variant list into a GitHub Actions matrix (``{"include": [...]}``) that a
workflow reads with ``fromJSON``. The render stage writes the same matrices into the
project's data, which the flake output ``githubActions`` only reads.

Row shapes. With at most `max_jobs` variants, one job per variant::

    {"name", "variant", "system", "runner", "backend", "attr", "attrs": [attr]}

With more, variants are grouped into jobs that each build several attributes, never
mixing systems or backends::

    {"name": "cuda x86_64-linux 1/3", "system", "runner", "backend",
     "attrs": [...], "variants": [...]}

Either way a workflow builds ``matrix.attrs``; ``attr`` is there for the common case.
`github_workflow` renders the workflow file for kernel projects.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from nixgen import tables
from nixgen.marker import MARKER
from nixgen.plan import Variant

#: GitHub Actions runs at most this many jobs per matrix.
GITHUB_MAX_JOBS = 256
#: Where `nixgen render --ci github` writes the workflow, relative to the project.
GITHUB_WORKFLOW = ".github/workflows/nixgen.yml"


class MatrixError(ValueError):
    """The variants cannot be laid out within the job limit."""


def runner(system: str) -> str:
    """The GitHub Actions runner label for a Nix system (``data/ci-runners.json``)."""
    runners = tables.table("ci-runners.json")
    if system not in runners:
        raise MatrixError(f"no GitHub runner is known for system {system!r}")
    return str(runners[system])


def attr(variant: Variant) -> str:
    """The flake attribute that builds `variant`: ``packages.<system>.<name>``."""
    return f"packages.{variant.system}.{variant.name}"


def job_name(variant: Variant) -> str:
    """The job's display name: the variant name, plus the system where the name lacks it
    (``torch-cpu`` is built on every system)."""
    if variant.name.endswith(f"-{variant.system}"):
        return variant.name
    return f"{variant.name} ({variant.system})"


def _row(variant: Variant) -> dict[str, Any]:
    path = attr(variant)
    return {
        "name": job_name(variant),
        "variant": variant.name,
        "system": variant.system,
        "runner": runner(variant.system),
        "backend": variant.backend,
        "attr": path,
        "attrs": [path],
        "variants": [variant.name],
    }


def _groups(variants: Sequence[Variant]) -> list[tuple[str, str, list[Variant]]]:
    groups: dict[tuple[str, str], list[Variant]] = {}
    for variant in variants:
        groups.setdefault((variant.system, variant.backend), []).append(variant)
    return [(system, backend, members) for (system, backend), members in sorted(groups.items())]


def _jobs(groups: list[tuple[str, str, list[Variant]]], size: int) -> int:
    return sum(math.ceil(len(members) / size) for _, _, members in groups)


def github(variants: Sequence[Variant], *, max_jobs: int = GITHUB_MAX_JOBS) -> dict[str, Any]:
    """The GitHub Actions matrix that builds `variants` in at most `max_jobs` jobs.

    Up to `max_jobs` variants: one job each, in the order given. More: the variants of
    each (system, backend), in the order given, are cut into consecutive slices of the
    smallest size that fits the limit; jobs are ordered by system, then backend.
    """
    if max_jobs < 1:
        raise MatrixError("the job limit must be at least 1")
    if len(variants) <= max_jobs:
        return {"include": [_row(v) for v in variants]}
    groups = _groups(variants)
    if len(groups) > max_jobs:
        raise MatrixError(
            f"{len(groups)} (system, backend) pairs cannot be built in {max_jobs} jobs"
        )
    size = next(k for k in range(2, len(variants) + 1) if _jobs(groups, k) <= max_jobs)
    rows = []
    for system, backend, members in groups:
        count = math.ceil(len(members) / size)
        for index in range(count):
            chunk = members[index * size : (index + 1) * size]
            rows.append(
                {
                    "name": f"{backend} {system} {index + 1}/{count}",
                    "system": system,
                    "runner": runner(system),
                    "backend": backend,
                    "attrs": [attr(v) for v in chunk],
                    "variants": [v.name for v in chunk],
                    # Every row has every key: here the space-separated lists.
                    "attr": " ".join(attr(v) for v in chunk),
                    "variant": " ".join(v.name for v in chunk),
                }
            )
    return {"include": rows}


def to_json(matrix: dict[str, Any]) -> str:
    """One line of JSON with sorted keys, ready for ``$GITHUB_OUTPUT`` and ``fromJSON``."""
    return json.dumps(matrix, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# ------------------------------------------------------------------------- the workflow


def _yaml_value(value: Any) -> str:
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

    from nixgen import jinja

    env = jinja.environment(jinja2.PackageLoader("nixgen", "templates"), finalize=_yaml_value)
    body = env.get_template("ci-github.yml.j2").render(
        workflow_name=f"nixgen: {project_name}", branches=["main"]
    )
    # The header is nixgen's own text (no project data), so it is not a YAML value.
    header = (
        f"# {MARKER} {nixgen_version} from build.toml (GitHub Actions workflow).\n"
        "# Do not edit: change build.toml and run `nixgen render --ci github`.\n"
    )
    lines = [line.rstrip() for line in (header + body).splitlines()]
    return ("\n".join(lines).rstrip("\n") + "\n").encode()
