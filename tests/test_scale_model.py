"""The many-machines model of bench/scale.py: list scheduling over a variant's derivation
graph, checked on graphs whose wall time is known by hand (no Nix, no builds)."""

from __future__ import annotations

import pytest

from bench.scale import Graph, Machines, anchor, predict, schedule


def graph(objects: list[float], *, archive: float = 1.0, link: float = 2.0) -> Graph:
    g = object.__new__(Graph)
    g.objects, g.binding, g.archive, g.link, g.other = objects, [], [archive], [link], []
    g.gap, g.wall = 0.0, 0.0
    return g


def test_one_slot_is_the_sum_and_more_slots_split_the_objects() -> None:
    g = graph([3.0] * 8)
    assert schedule(g, Machines(local=1)) == pytest.approx(8 * 3 + 1 + 2)
    assert schedule(g, Machines(local=4)) == pytest.approx(2 * 3 + 1 + 2)
    # Past one slot per object, the slowest object, the archive and the link remain.
    assert schedule(graph([5.0, 1.0, 1.0]), Machines(local=64)) == pytest.approx(5 + 1 + 2)


def test_builders_start_postponed_builds_on_the_poll_and_pay_the_dispatch() -> None:
    g = graph([3.0] * 4)
    # Two remote slots, poll 5 s: the first wave at 0 (ends 3.5 with dispatch), the
    # second on the tick at 5 (ends 8.5), the archive on the tick at 10, the link at 15.
    wall = schedule(g, Machines(local=0, remote=2, dispatch=0.5, poll=5.0))
    assert wall == pytest.approx(15 + 2 + 0.5)


def test_the_anchor_is_one_machine_whatever_the_builders() -> None:
    g = graph([2.0] * 64)
    assert anchor(g, 16) == pytest.approx(8 + 1 + 2)
    many = predict(g, 64, 16, dispatch=0.0, poll=1.0)
    one = predict(g, 1, 16, dispatch=0.0, poll=1.0)
    assert many < one
    # Heavier objects gain from more builders; the anchor stays on one machine.
    assert predict(g.heavier(30.0), 64, 1, dispatch=0.0, poll=5.0) < anchor(g.heavier(30.0), 1)
