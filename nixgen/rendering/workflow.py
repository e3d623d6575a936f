"""The GitHub Actions workflow of a kernel project (``.github/workflows/nixgen.yml``): the
template ``ci-github.yml.j2`` with nixgen's pinned actions (``data/actions.json``) and
nixgen.toml's ``[ci]`` settings (`nixgen.planning.runners`). The matrices it fans out over
are the plan's (`nixgen.planning.ci`), read from the flake; the runner and timeout of each
row come from the settings, resolved here for each (system, backend) the plan builds.

Jobs: ``matrix`` (reads the flake's matrix), ``shards`` and ``build`` (one per row: build,
test with the flake's checks, keep the variants), and on a release (a pushed tag) ``sign``
(the one job with ``id-token: write``: cosign keyless, ``metadata.json.sigstore`` beside
each ``metadata.json``) and ``upload`` (``nixgen upload``, in the deployment environment
that holds ``HF_TOKEN``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from nixgen.core import jinja, marker, tables

if TYPE_CHECKING:
    from nixgen.planning.runners import CiSettings

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


class Expression(str):
    """Text nixgen writes itself, as it is: a GitHub expression (``${{ … }}``) from its
    own words and names checked to hold no quote or brace, or a block of its own JSON."""


#: The deployment environment of the Cachix token, named only on pushes (never for a pull
#: request) and only when the repository has a cache (`vars.CACHIX_NAME`).
_CACHE_ENVIRONMENT = (
    "${{{{ github.event_name != 'pull_request' && vars.CACHIX_NAME != '' && '{name}' || '' }}}}"
)


class WorkflowValueError(ValueError):
    """A value for the workflow holds ``${{``: GitHub would evaluate it as an expression
    (nixgen.toml's values are checked when read, so this is a bug)."""


def _yaml_value(value: Any) -> str:
    # nixgen's own pins (a checked table of plain names, hex and tags) are written as
    # they are, so the version comment stays a comment; so are nixgen's own expressions.
    if isinstance(value, (ActionPin, Expression)):
        return str(value)
    # JSON is YAML: a JSON scalar can never open a block, a comment or an anchor.
    text = json.dumps(value, ensure_ascii=False)
    # GitHub evaluates `${{` wherever it appears in a value (a comment aside): no value
    # from a project or nixgen.toml may hold one.
    if "${{" in text:
        raise WorkflowValueError(f"a workflow value holds a GitHub expression: {text}")
    return text


def _runner_table(table: dict[str, Any]) -> str:
    """The build runners as JSON, one (system, backend) a line."""
    rows = [
        f"  {json.dumps(key)}: {json.dumps(value, sort_keys=True, ensure_ascii=False)}"
        for key, value in sorted(table.items())
    ]
    return "{\n" + ",\n".join(rows) + "\n}" if rows else "{}"


def _block(text: str, *, indent: int) -> Expression:
    """`text` as the lines of a YAML block scalar at `indent` spaces. The text is nixgen's
    JSON of checked values: printable, one line per row, no ``${{`` (checked here too)."""
    if "${{" in text or not all(line.isprintable() for line in text.split("\n")):
        raise WorkflowValueError(f"not a block nixgen writes: {text!r}")
    return Expression("\n".join(" " * indent + line for line in text.split("\n")))


def github_workflow(
    project_name: str,
    *,
    nixgen_version: str,
    pairs: Iterable[tuple[str, str]],
    settings: CiSettings | None = None,
) -> bytes:
    """The GitHub Actions workflow of a kernel project (``.github/workflows/nixgen.yml``).

    A `matrix` job evaluates the flake's ``githubActions.matrix`` (all variants) or, for
    pull requests, ``githubActions.pullRequestMatrix`` (one per system and backend) and
    adds to each row its ``runs-on`` and ``timeout-minutes`` from the table of `pairs`
    (the (system, backend) pairs the project builds) that `settings` (nixgen.toml's
    ``[ci]``) give; a `build` job fans out over it with ``fromJSON``, builds each row's
    ``attrs`` and runs their checks. A pushed tag (`settings.release_tags`) also signs and
    uploads. Every value from the project or nixgen.toml passes through JSON quoting.
    """
    import jinja2

    from nixgen.planning import runners

    ci = settings if settings is not None else runners.CiSettings()
    table = ci.build_table(pairs)
    cache_environment = ci.cache_environment or runners.DEFAULT_CACHE_ENVIRONMENT
    env = jinja.environment(jinja2.PackageLoader("nixgen", "templates"), finalize=_yaml_value)
    body = env.get_template("ci-github.yml.j2").render(
        workflow_name=f"nixgen: {project_name}",
        branches=["main"],
        release_tags=list(ci.release_tags or runners.DEFAULT_RELEASE_TAGS),
        actions=action_pins(),
        plan=ci.job("plan"),
        sign=ci.job("sign"),
        upload=ci.job("upload"),
        runners=_block(_runner_table(table), indent=8),
        environment=ci.environment or runners.DEFAULT_ENVIRONMENT,
        cache_environment=cache_environment,
        cache_environment_expression=Expression(
            _CACHE_ENVIRONMENT.format(name=runners.environment_name(cache_environment))
        ),
        nixgen=ci.nixgen or f"nixgen[hub]=={nixgen_version}",
        workflow_file=GITHUB_WORKFLOW,
    )
    # The header is nixgen's own text (no project data), so it is not a YAML value.
    header = marker.header(
        nixgen_version, "GitHub Actions workflow", rerun="nixgen render --ci github"
    )
    lines = [line.rstrip() for line in (header + body).splitlines()]
    return ("\n".join(lines).rstrip("\n") + "\n").encode()
