"""Where the generated workflow's jobs run, for how long, and what its release jobs use:
the ``[ci]`` table of nixgen.toml, typed, checked and resolved per job::

    [ci]
    release-tags = ["v*"]          # the tags whose push builds, signs and uploads
    environment = "release"        # the upload job's deployment environment (HF_TOKEN)
    cache-environment = "cachix"   # the environment of the Cachix token (pushes only)
    nixgen = "nixgen[hub]==0.1.0"  # what the upload job installs (a pip requirement)

    [ci.plan]                      # the job that reads the build matrix from the flake
    runs-on = "ubuntu-latest"
    timeout-minutes = 30

    [ci.build]                     # every build (and shard) job
    timeout-minutes = 360
    [ci.build.aarch64-linux]       # ... of one system
    runs-on = ["self-hosted", "ARM64"]
    [ci.build.cuda]                # ... of one backend, on every system
    runs-on = { group = "gpu-builders" }
    [ci.build."x86_64-linux/cuda"] # ... of one backend on one system
    timeout-minutes = 720

    [ci.sign]                      # the release jobs
    [ci.upload]

`runs-on` is what GitHub's ``runs-on`` takes: a label, a list of labels (a runner must have
them all), or a table with a runner ``group`` and/or its ``labels``. A build job's setting
is the most specific one that says it: ``"<system>/<backend>"``, then the backend, then the
system, then ``[ci.build]``, then nixgen's default (`DEFAULTS`, and for `runs-on` the
runner of the system in ``data/ci-runners.json``); each key is resolved on its own.

Every string here ends up in the workflow as data (JSON-quoted YAML, or a value of the
matrix), never as shell code; one that holds ``${{`` (which GitHub would evaluate) or an
invisible character is refused here, where the user can be told which key it was.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from nixgen.core import tables
from nixgen.core.errors import PathPart, Problem, did_you_mean, error, one_of, unknown_key
from nixgen.planning.variants import SYSTEMS, build_configs

#: The jobs of the generated workflow that run once (the build and shard jobs run per
#: matrix row and are set in ``[ci.build]``).
SINGLE_JOBS = ("plan", "sign", "upload")
JOB_KEYS = ("runs-on", "timeout-minutes")
TOP_KEYS = tuple(
    sorted(("build", "cache-environment", "environment", "nixgen", *SINGLE_JOBS, "release-tags"))
)

#: GitHub stops a job after this many minutes on a self-hosted runner (5 days); a
#: GitHub-hosted one after 360.
MAX_TIMEOUT = 7200

#: Where a job runs and for how long when nixgen.toml does not say: the build jobs run
#: on the runner of their system (``data/ci-runners.json``); the others on ubuntu-latest.
DEFAULT_RUNS_ON = "ubuntu-latest"
DEFAULT_TIMEOUTS = {"plan": 30, "build": 360, "sign": 15, "upload": 60}
DEFAULT_ENVIRONMENT = "release"
DEFAULT_CACHE_ENVIRONMENT = "cachix"
DEFAULT_RELEASE_TAGS = ("v*",)

#: A `runs-on` value as GitHub reads it: a label, labels, or ``{"group", "labels"}``.
RunsOn = str | tuple[str, ...] | Mapping[str, Any]


def default_runner(system: str) -> str:
    """The GitHub-hosted runner label of a Nix system (``data/ci-runners.json``); a
    system without one raises `KeyError`."""
    runners = tables.table("ci-runners.json")
    if system not in runners or system.startswith("_"):
        raise KeyError(system)
    return str(runners[system])


@attrs.frozen
class Job:
    """One job's settings (None: not set here)."""

    runs_on: RunsOn | None = None
    timeout_minutes: int | None = None


@attrs.frozen(kw_only=True)
class CiSettings:
    """nixgen.toml's ``[ci]`` table (None or empty: not set)."""

    release_tags: tuple[str, ...] | None = None
    environment: str | None = None
    cache_environment: str | None = None
    nixgen: str | None = None
    plan: Job = Job()
    sign: Job = Job()
    upload: Job = Job()
    #: ``[ci.build]`` itself.
    build: Job = Job()
    #: ``[ci.build.<selector>]``: a system, a backend or ``<system>/<backend>``.
    selectors: Mapping[str, Job] = attrs.field(factory=dict)

    def job(self, name: str) -> dict[str, Any]:
        """`runs-on` (as JSON) and `timeout-minutes` of a job of `SINGLE_JOBS`."""
        job: Job = getattr(self, name)
        return {
            "runs-on": to_json(job.runs_on if job.runs_on is not None else DEFAULT_RUNS_ON),
            "timeout-minutes": job.timeout_minutes or DEFAULT_TIMEOUTS[name],
        }

    def build_job(self, system: str, backend: str) -> dict[str, Any]:
        """`runs-on` (as JSON) and `timeout-minutes` of the build and shard jobs of
        (`system`, `backend`): the most specific setting of each, else the defaults."""
        chain = [
            self.selectors.get(f"{system}/{backend}"),
            self.selectors.get(backend),
            self.selectors.get(system),
            self.build,
        ]
        jobs = [job for job in chain if job is not None]
        runs_on = next((j.runs_on for j in jobs if j.runs_on is not None), None)
        timeout = next((j.timeout_minutes for j in jobs if j.timeout_minutes is not None), None)
        return {
            "runs-on": to_json(runs_on if runs_on is not None else default_runner(system)),
            "timeout-minutes": timeout or DEFAULT_TIMEOUTS["build"],
        }

    def build_table(self, pairs: Iterable[tuple[str, str]]) -> dict[str, dict[str, Any]]:
        """`build_job` of each (system, backend), keyed ``"<system>/<backend>"``, sorted:
        the table the workflow's plan job adds to each matrix row."""
        return {f"{s}/{b}": self.build_job(s, b) for s, b in sorted(set(pairs))}

    def to_json(self) -> dict[str, Any]:
        """What nixgen.toml sets, in its own key names (for `nixgen show --json`)."""
        out: dict[str, Any] = {}
        for key, value in (
            ("release-tags", list(self.release_tags) if self.release_tags else None),
            ("environment", self.environment),
            ("cache-environment", self.cache_environment),
            ("nixgen", self.nixgen),
        ):
            if value is not None:
                out[key] = value
        for name in SINGLE_JOBS:
            own = _job_json(getattr(self, name))
            if own:
                out[name] = own
        build = _job_json(self.build)
        for selector, part in self.selectors.items():
            build[selector] = _job_json(part)
        if build:
            out["build"] = build
        return out


def _job_json(job: Job) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if job.runs_on is not None:
        out["runs-on"] = to_json(job.runs_on)
    if job.timeout_minutes is not None:
        out["timeout-minutes"] = job.timeout_minutes
    return out


def to_json(runs_on: RunsOn) -> Any:
    """A `runs-on` value as JSON (and YAML): a string, a list, or a mapping."""
    if isinstance(runs_on, str):
        return runs_on
    if isinstance(runs_on, tuple):
        return list(runs_on)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in runs_on.items()}


def selectors() -> tuple[str, ...]:
    """The keys ``[ci.build]`` accepts for a part of the builds: each system, each backend
    with a build set, and each ``<system>/<backend>`` that nixgen's build table has."""
    pairs = sorted({(s, c.backend) for c in build_configs() for s in c.systems if s in SYSTEMS})
    return (*SYSTEMS, *tables.BUILD_SET_BACKENDS, *(f"{s}/{b}" for s, b in pairs))


# ---------------------------------------------------------------------- parsing


def parse(data: Any, path: Sequence[PathPart] = ("ci",)) -> tuple[CiSettings, list[Problem]]:
    """The settings of nixgen.toml's ``[ci]`` table (`data`), and every problem with it,
    located by key path (below `path`). A bad value is left unset."""
    problems: list[Problem] = []
    if not isinstance(data, Mapping):
        return CiSettings(), [error("expected a table (`[ci]`)", path)]
    _unknown_keys(data, TOP_KEYS, path, problems)
    tags = _release_tags(data.get("release-tags"), (*path, "release-tags"), problems)
    environment = _environment(data.get("environment"), (*path, "environment"), problems)
    cache_environment = _environment(
        data.get("cache-environment"), (*path, "cache-environment"), problems
    )
    nixgen = _requirement(data.get("nixgen"), (*path, "nixgen"), problems)
    jobs = {
        name: _job(data.get(name), (*path, name), problems) for name in SINGLE_JOBS if name in data
    }
    build = data.get("build", {})
    allowed = selectors()
    chosen: dict[str, Job] = {}
    if not isinstance(build, Mapping):
        problems.append(error("expected a table (`[ci.build]`)", (*path, "build")))
        build = {}
    for key, value in build.items():
        if key in JOB_KEYS:
            continue
        if key not in allowed:
            problems.append(
                attrs.evolve(
                    error(
                        f"unknown key `{key}`{did_you_mean(key, (*JOB_KEYS, *allowed))}; "
                        f"expected {one_of(JOB_KEYS)}, a system ({one_of(SYSTEMS)}), a "
                        f"backend ({one_of(tables.BUILD_SET_BACKENDS)}) or "
                        "`<system>/<backend>` (`x86_64-linux/cuda`)",
                        (*path, "build", key),
                    ),
                    at_key=True,
                )
            )
            continue
        chosen[key] = _job(value, (*path, "build", key), problems)
    own = {k: v for k, v in build.items() if k in JOB_KEYS}
    settings = CiSettings(
        release_tags=tags,
        environment=environment,
        cache_environment=cache_environment,
        nixgen=nixgen,
        build=_job(own, (*path, "build"), problems),
        selectors=dict(sorted(chosen.items())),
        **jobs,
    )
    return settings, problems


def _unknown_keys(
    data: Mapping[str, Any],
    allowed: Sequence[str],
    path: Sequence[PathPart],
    problems: list[Problem],
) -> None:
    for key in data:
        if key not in allowed:
            problems.append(unknown_key(key, allowed, path))


def _job(data: Any, path: Sequence[PathPart], problems: list[Problem]) -> Job:
    if not isinstance(data, Mapping):
        problems.append(error(f"expected a table with {one_of(JOB_KEYS)}", path))
        return Job()
    _unknown_keys(data, JOB_KEYS, path, problems)
    runs_on = _runs_on(data["runs-on"], (*path, "runs-on"), problems) if "runs-on" in data else None
    timeout = data.get("timeout-minutes")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= MAX_TIMEOUT
    ):
        problems.append(
            error(
                f"expected a whole number of minutes from 1 to {MAX_TIMEOUT} (GitHub stops a "
                "job on a self-hosted runner after 5 days, on a GitHub-hosted one after 360 "
                "minutes)",
                (*path, "timeout-minutes"),
            )
        )
        timeout = None
    return Job(runs_on=runs_on, timeout_minutes=timeout)


_RUNS_ON = (
    'a runner label (`"ubuntu-latest"`), a list of labels (`["self-hosted", "linux"]`) '
    'or a table with a runner group and/or labels (`{ group = "gpu-builders" }`)'
)


def _runs_on(value: Any, path: Sequence[PathPart], problems: list[Problem]) -> RunsOn | None:
    before = len(problems)
    if isinstance(value, str):
        _text(value, path, problems, what="a runner label")
        return value if len(problems) == before else None
    if isinstance(value, list):
        labels = _labels(value, path, problems)
        return labels if len(problems) == before else None
    if isinstance(value, Mapping):
        _unknown_keys(value, ("group", "labels"), path, problems)
        out: dict[str, Any] = {}
        if "group" in value:
            group = value["group"]
            if isinstance(group, str):
                _text(group, (*path, "group"), problems, what="a runner group name")
                out["group"] = group
            else:
                problems.append(error("expected a runner group name", (*path, "group")))
        if "labels" in value:
            labels = value["labels"]
            if isinstance(labels, str):
                _text(labels, (*path, "labels"), problems, what="a runner label")
                out["labels"] = labels
            elif isinstance(labels, list):
                out["labels"] = _labels(labels, (*path, "labels"), problems)
            else:
                problems.append(
                    error("expected a runner label or a list of labels", (*path, "labels"))
                )
        if not out and len(problems) == before:
            problems.append(error(f"expected {_RUNS_ON}: name a `group` or `labels`", path))
        return out if len(problems) == before else None
    problems.append(error(f"expected {_RUNS_ON}", path))
    return None


def _labels(value: list[Any], path: Sequence[PathPart], problems: list[Problem]) -> tuple[str, ...]:
    if not value:
        problems.append(error("expected at least one runner label", path))
    for index, label in enumerate(value):
        if not isinstance(label, str):
            problems.append(error("expected a runner label (a string)", (*path, index)))
        else:
            _text(label, (*path, index), problems, what="a runner label")
    return tuple(label for label in value if isinstance(label, str))


def _text(value: str, path: Sequence[PathPart], problems: list[Problem], *, what: str) -> None:
    """A string the workflow will carry as data: not empty, no surrounding space, nothing
    invisible, and no ``${{`` (GitHub would evaluate it as an expression)."""
    if not value.strip():
        problems.append(error(f"expected {what}, not an empty string", path))
    elif value != value.strip():
        problems.append(error(f"expected {what} without leading or trailing spaces", path))
    elif not value.isprintable():
        problems.append(error(f"expected {what} without control or invisible characters", path))
    elif "${{" in value:
        problems.append(
            error(
                f"expected {what}, not a GitHub expression: the workflow carries this value "
                "as it is, and `${{` would make GitHub evaluate it",
                path,
            )
        )


#: The deployment environment names nixgen writes: GitHub's limit of 255 characters, and
#: letters, digits, `.`, `_` and `-` only (the cache environment's name is written inside
#: a GitHub expression's quotes).
_ENVIRONMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")


def environment_name(name: str) -> str:
    """`name`, when it is a deployment environment name nixgen writes (`_ENVIRONMENT`);
    else `ValueError` (nixgen.toml's are checked when read)."""
    if not _ENVIRONMENT.fullmatch(name):
        raise ValueError(f"not an environment name nixgen writes: {name!r}")
    return name


def _environment(value: Any, path: Sequence[PathPart], problems: list[Problem]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _ENVIRONMENT.fullmatch(value):
        problems.append(
            error(
                "expected the name of a GitHub deployment environment: letters, digits, "
                "`.`, `_` and `-`, starting with a letter or digit, at most 255 characters "
                '(`"release"`)',
                path,
            )
        )
        return None
    return value


def _requirement(value: Any, path: Sequence[PathPart], problems: list[Problem]) -> str | None:
    if value is None:
        return None
    before = len(problems)
    if not isinstance(value, str):
        problems.append(error('expected a pip requirement (`"nixgen[hub]==0.1.0"`)', path))
        return None
    _text(value, path, problems, what="a pip requirement")
    if len(problems) == before and value.startswith("-"):
        problems.append(
            error(
                "expected a pip requirement, not an option: the upload job passes it to "
                "`pip install` after `--`",
                path,
            )
        )
    return value if len(problems) == before else None


def _release_tags(
    value: Any, path: Sequence[PathPart], problems: list[Problem]
) -> tuple[str, ...] | None:
    if value is None:
        return None
    before = len(problems)
    if not isinstance(value, list) or not value:
        problems.append(error('expected a list of tag patterns (`["v*"]`)', path))
        return None
    for index, pattern in enumerate(value):
        if not isinstance(pattern, str):
            problems.append(error("expected a tag pattern (a string)", (*path, index)))
        else:
            _text(pattern, (*path, index), problems, what="a tag pattern")
    return tuple(value) if len(problems) == before else None
