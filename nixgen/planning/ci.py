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
The workflow file that reads them is rendered by `nixgen.rendering.workflow`.

Shards (`github_shards`, `nixgen matrix --shards K`): a variant whose kernels build one
derivation per object (as its plan says, `KernelPlan.objects`; the Nix library's
`compile.withObjects` reads the same) is also split into K jobs that each build a
disjoint part of its derivations (the flake output ``objects.<system>.<variant>``: each
kernel object, its other kernels whole, the binding's objects) and push them to the project's binary
cache; the variant's own job then substitutes every object and builds only the archives
and the link. The parts are balanced by cost (one per source, or a measured cost per
source): list scheduling, heaviest first, so every part's cost is within the largest
derivation's cost of the mean.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from nixgen.core import tables
from nixgen.planning.kernels import OBJECT_THRESHOLD, kernel_plan
from nixgen.planning.variants import Variant
from nixgen.reading import model

#: GitHub Actions runs at most this many jobs per matrix.
GITHUB_MAX_JOBS = 256


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


# ----------------------------------------------------------------------------- shards

#: The extensions the Nix library's binding compiles (nix/compile.nix `cxxExtensions`):
#: the `cxx` kind of data/source-kinds.json.
BINDING_EXTENSIONS = tables.SOURCE_KINDS["cxx"]


def _binding_sources(build: model.Build) -> list[str]:
    fw = build.framework
    sources = fw.src if isinstance(fw, model.COMPILED_FRAMEWORKS) else []
    return [str(s) for s in sources if "." in s and s.rpartition(".")[2] in BINDING_EXTENSIONS]


def _objects(build: model.Build, variant: Variant) -> list[tuple[str, list[str]]]:
    """The derivations a shard of `variant` builds, as (attribute under
    ``objects.<system>.<variant>``, the sources it compiles): each object of its kernels
    built one derivation per object (``kernels.<kernel>.<key>``), by kernel name, then
    its other kernels whole (``whole.<kernel>``; a crate lists no C++ source and costs
    one source), then the binding's objects (``binding``). Empty when no kernel is built
    per object (nothing worth a shard)."""
    kernels = {
        str(name): (kernel, kernel_plan(build, str(name), kernel))
        for name, kernel in build.kernels.items()
    }
    names = sorted(name for name in variant.kernels if name in kernels)
    out = [
        (f"kernels.{name}.{obj.key}", [source])
        for name in names
        for source, obj in (kernels[name][1].objects or {}).items()
    ]
    if not out:
        return []
    for name in names:
        kernel, planned = kernels[name]
        if not planned.per_object:
            compiled = tables.COMPILED_EXTENSIONS.get(kernel.language, ())
            out.append((f"whole.{name}", [str(s) for s in kernel.src if _ext(s) in compiled]))
    binding = _binding_sources(build)
    if binding:
        out.append(("binding", binding))
    return out


def _ext(path: str) -> str:
    return path.rpartition(".")[2] if "." in path else ""


def partition(costs: Sequence[float], count: int) -> list[list[int]]:
    """`count` disjoint parts covering ``range(len(costs))``, balanced by cost: list
    scheduling, heaviest first (ties in the order given), each item to the lightest part
    so far (ties to the first). Each part's indices are ascending."""
    loads = [0.0] * count
    parts: list[list[int]] = [[] for _ in range(count)]
    for index in sorted(range(len(costs)), key=lambda i: -costs[i]):
        lightest = min(range(count), key=lambda p: loads[p])
        loads[lightest] += costs[index]
        parts[lightest].append(index)
    return [sorted(part) for part in parts]


def github_shards(
    build: model.Build,
    variants: Sequence[Variant],
    count: int,
    *,
    costs: Mapping[str, float] | None = None,
    max_jobs: int = GITHUB_MAX_JOBS,
) -> dict[str, Any]:
    """The GitHub Actions matrix of the shard jobs: `count` per variant that has object
    derivations, in the order of `variants`, each building a disjoint part of them.

    Rows: ``{"name", "system", "runner", "backend", "variant", "shard" ("i/K"),
    "objects" (how many derivations), "cost" (their sources' total, as text, to 3
    decimals), "attrs"}``, ``attrs`` naming ``objects.<system>.<variant>.kernels.
    <kernel>.<key>`` (one source each), ``….whole.<kernel>`` and ``….binding``
    (`_objects`). `costs` maps a source path to its measured cost (seconds of compile
    time); a source it lacks costs the mean of those it holds. Without it every source
    costs 1.
    """
    if count < 1:
        raise MatrixError(f"the shard count must be at least 1, not {count}")
    sharded = [(v, objs) for v in variants if (objs := _objects(build, v))]
    if not sharded:
        raise MatrixError(
            "no variant has a kernel built one derivation per object (a C++ kernel with "
            f"at least {OBJECT_THRESHOLD} compiled sources): there is nothing to shard"
        )
    fewest = min(sharded, key=lambda pair: len(pair[1]))
    if count > len(fewest[1]):
        raise MatrixError(
            f"{count} shards for variant {fewest[0].name}, which has {len(fewest[1])} "
            f"derivations to shard (objects, other kernels, the binding): at most "
            f"{len(fewest[1])}"
        )
    if count * len(sharded) > max_jobs:
        raise MatrixError(
            f"{count} shards for each of {len(sharded)} variants is "
            f"{count * len(sharded)} jobs; GitHub runs at most {max_jobs} per matrix: "
            f"at most {max_jobs // len(sharded)} shards (or fewer variants: --system, "
            "--pull-request)"
        )
    table = dict(costs or {})
    default = sum(table.values()) / len(table) if table else 1.0
    rows = []
    for variant, objs in sharded:
        weights = [
            sum(float(table.get(s, default)) for s in sources) if sources else default
            for _, sources in objs
        ]
        for index, part in enumerate(partition(weights, count)):
            cost = sum(weights[i] for i in part)
            rows.append(
                {
                    "name": f"{job_name(variant)} objects {index + 1}/{count}",
                    "system": variant.system,
                    "runner": runner(variant.system),
                    "backend": variant.backend,
                    "variant": variant.name,
                    "shard": f"{index + 1}/{count}",
                    "objects": str(len(part)),
                    # To the millisecond (`%g` writes 123456.7 as 1.23457e+05).
                    "cost": f"{cost:.3f}".rstrip("0").rstrip("."),
                    "attrs": [
                        f"objects.{variant.system}.{variant.name}.{objs[i][0]}" for i in part
                    ],
                }
            )
    return {"include": rows}


def to_json(matrix: dict[str, Any]) -> str:
    """One line of JSON with sorted keys, ready for ``$GITHUB_OUTPUT`` and ``fromJSON``."""
    return json.dumps(matrix, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
