"""Which variants of a project a verb builds on a system, read from the project's plan (no
planning again): `choose` (`nixgen build`: the names asked for, else every bundled variant,
narrowed by backend), the error for a `--variant` that is no variant of the system, and the
hint naming the systems that have some (`nixgen build`, `shell`, `compdb`)."""

from __future__ import annotations

from collections.abc import Sequence

from nixgen.core.errors import Problem, ProblemError, did_you_mean, error
from nixgen.planning.plan import Plan
from nixgen.planning.variants import best_variant


def choose(
    planned: Plan,
    system: str,
    names: Sequence[str] = (),
    backends: Sequence[str] = (),
    *,
    quick: bool = False,
) -> list[str]:
    """The variants `nixgen build` builds for `system`: `names` (``--variant``, each once,
    in order), else with `quick` the best one (`best_variant`, the one `nixgen shell`
    enters), else every bundled variant of `system`; of `backends` only when given. A
    `ProblemError` for a name that is no variant of `system`, and when nothing is chosen."""
    available = planned.for_system(system)
    known = [v.name for v in available]
    if backends:
        available = [v for v in available if v.backend in backends]
    if names:
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ProblemError([unknown_variant(planned, n, system, known) for n in unknown])
        chosen = list(dict.fromkeys(names))
    elif quick and available:
        chosen = [best_variant(available).name]
    else:
        chosen = [v.name for v in available if v.bundle]
    if not chosen:
        which = f" of backend {', '.join(backends)}" if backends else ""
        raise ProblemError(
            [
                error(
                    f"{planned.build.general.name} has no variants{which} for {system}",
                    hint=other_systems(planned, system, backends),
                )
            ]
        )
    return chosen


def unknown_variant(
    planned: Plan, name: str, system: str, names: list[str], *, flag: bool = True
) -> Problem:
    """The error for `--variant NAME` that is no variant of `system`: the system it is a
    variant of, or the closest name (without `flag`, for a verb that has no --system: only
    which machine it needs)."""
    owner = next(
        (
            s
            for s in planned.systems
            if s != system and name in {v.name for v in planned.for_system(s)}
        ),
        None,
    )
    if owner is not None and not flag:
        return error(
            f"variant `{name}` is for {owner}, not {system}: run this on an {owner} machine"
        )
    if owner is not None:
        return error(
            f"variant `{name}` is for {owner}, not {system}: pass --system {owner} (Nix builds "
            "it on a machine of that system, e.g. one of --builders)"
        )
    return error(
        f"unknown variant `{name}` for {system}{did_you_mean(name, names)}; valid variants: "
        f"{', '.join(names) or 'none'}"
    )


def other_systems(
    planned: Plan, system: str, backends: Sequence[str] = (), *, flag: bool = True
) -> str | None:
    """Which `--system` to pass instead, when other systems have variants (without `flag`,
    for a verb that has no --system: which machine it needs)."""
    others = [
        s
        for s in planned.systems
        if s != system and any(not backends or v.backend in backends for v in planned.for_system(s))
    ]
    if not others:
        return None
    if not flag:
        return f"it has some for {', '.join(others)}: run it on a machine of that system"
    return f"it has some for {', '.join(others)}: pass --system {others[0]}"
