"""The fast tier's rule, held structurally (tests/conftest.py imports these hooks).

`pytest -m "not slow"` is the edit-test loop: it must stay under a minute on a quiet two-core
machine (CONTRIBUTING, "Testing"). A test is `slow` when it starts a process (Nix,
git, `python -m nixgen`, a compiler, a fake `nix`), evaluates or builds, or is simply long:

* a test marked `nix` or `build` is `slow` as well (added here; `-m build` and `-m nix` keep
  their meaning), and so is every test that uses a fixture declared `@starts_processes` (a
  fake `nix` on PATH, a tree rendered by a subprocess): the fixture says it once;
* a test that is not `slow` and starts a process during its setup, call or teardown fails,
  naming the program: every way a Python process starts another (`subprocess`, `os.system`,
  `os.posix_spawn`, `os.fork`, `multiprocessing`, `pty`) ends in one of the functions
  `_guard` replaces;
* a test that is not `slow` and spends more than `CPU_LIMIT_S` seconds of CPU (all its
  threads, setup to teardown), or keeps its thread waiting (asleep, on a socket, a lock or
  the disk) more than `WAIT_LIMIT_S` seconds, fails. Neither counts the time a busy machine
  keeps a runnable test off the CPU (Linux's per-thread schedstat tells the two apart), so
  the verdict does not depend on how loaded the machine is.

So a new test cannot silently slow the fast tier: it is marked `slow` (a decorator, or the
module's `pytestmark`) or it fails.
"""

from __future__ import annotations

import _posixsubprocess  # type: ignore[import-not-found]
import inspect
import os
import subprocess
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest

__all__ = [
    "pytest_collection_modifyitems",
    "pytest_runtest_call",
    "pytest_runtest_setup",
    "pytest_runtest_teardown",
    "starts_processes",
]

#: The markers that make a test slow without saying so (they say why).
IMPLIES_SLOW = ("nix", "build")
#: Seconds of CPU a fast test may spend, setup and teardown included (the costliest fast
#: tests take about a third of it here).
CPU_LIMIT_S = 2.0
#: Seconds a fast test's thread may wait (sleep, a socket, the disk), setup and teardown
#: included.
WAIT_LIMIT_S = 2.0
#: The test thread's time on the CPU and waiting for one (ns): wall time less both is time
#: spent waiting for something else. Linux only; elsewhere the wait check is off.
_SCHEDSTAT = "/proc/thread-self/schedstat"


class UnmarkedProcess(BaseException):
    """A process started by a test that is not marked `slow`. A BaseException, so that the
    code under test (which may catch OSError or Exception around a spawn) does not swallow it;
    the hook also fails the test when something swallowed it all the same."""


_SPAWNERS: list[tuple[Any, str]] = [
    (subprocess, "_fork_exec"),  # subprocess.Popen (its own name for the next one)
    (_posixsubprocess, "fork_exec"),  # multiprocessing's spawn
    (os, "posix_spawn"),  # subprocess.Popen's fast path
    (os, "posix_spawnp"),
    (os, "fork"),  # multiprocessing's fork, pty.fork, os.spawn*
    (os, "forkpty"),
    (os, "system"),
]


def _what(name: str, args: tuple[Any, ...]) -> str:
    if name.endswith("fork_exec") and args:
        argv = args[0]
    elif name.startswith("posix_spawn") and len(args) > 1:
        argv = args[1]
    else:
        return f"os.{name}{args[:1]!r}" if name == "system" else f"os.{name}()"
    try:
        return " ".join(os.fsdecode(a) for a in argv)[:200]
    except TypeError:
        return repr(argv)[:200]


@contextmanager
def _guard(item: pytest.Item) -> Iterator[None]:
    originals = [(owner, name, getattr(owner, name)) for owner, name in _SPAWNERS]

    def refuse(name: str) -> Callable[..., Any]:
        def spawn(*args: Any, **kwargs: Any) -> Any:
            started = _what(name, args)
            item.stash.setdefault(_STARTED, []).append(started)
            raise UnmarkedProcess(
                f"{item.nodeid} starts a process ({started}) but is not marked slow: "
                "mark it @pytest.mark.slow (or its module's pytestmark); "
                'the fast tier (pytest -m "not slow") starts none'
            )

        return spawn

    for owner, name, _ in originals:
        setattr(owner, name, refuse(name))
    try:
        yield
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


_STARTED = pytest.StashKey[list[str]]()
_F = TypeVar("_F", bound=Callable[..., Any])


def starts_processes(fixture: _F) -> _F:
    """Declare that a fixture starts processes, or makes its tests start them (a fake `nix`
    on PATH): every test that uses it is `slow`. Put it under `@pytest.fixture`."""
    if not inspect.isfunction(fixture):
        raise TypeError("@starts_processes goes under @pytest.fixture, on the function")
    fixture.starts_processes = True  # type: ignore[attr-defined]
    return fixture


def _uses_a_process_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        getattr(defs[-1].func, "starts_processes", False)
        for defs in info.name2fixturedefs.values()
        if defs
    )


_COST = pytest.StashKey[tuple[float, float]]()  # CPU seconds, waiting seconds


def _scheduled() -> float | None:
    """Seconds the calling thread has run or been runnable (None without schedstat)."""
    try:
        with open(_SCHEDSTAT) as f:
            running, queued = f.read().split()[:2]
    except (OSError, ValueError):
        return None
    return (int(running) + int(queued)) / 1e9


def _is_slow(item: pytest.Item) -> bool:
    return item.get_closest_marker("slow") is not None


def _phase(item: pytest.Item, *, last: bool = False) -> Generator[None, Any, Any]:
    if _is_slow(item):
        return (yield)
    item.stash[_STARTED] = []
    cpu, clock, scheduled = time.process_time(), time.monotonic(), _scheduled()
    try:
        with _guard(item):
            result = yield
    finally:
        now = _scheduled()
        waited = 0.0
        if scheduled is not None and now is not None:
            waited = max(0.0, time.monotonic() - clock - (now - scheduled))
        spent, waits = item.stash.get(_COST, (0.0, 0.0))
        item.stash[_COST] = (spent + time.process_time() - cpu, waits + waited)
    if item.stash[_STARTED]:  # the code under test swallowed UnmarkedProcess
        pytest.fail(
            f"starts a process ({'; '.join(item.stash[_STARTED])}) but is not marked slow",
            pytrace=False,
        )
    spent, waits = item.stash[_COST]
    if last and (spent > CPU_LIMIT_S or waits > WAIT_LIMIT_S):
        pytest.fail(
            f"spent {spent:.1f} s of CPU and waited {waits:.1f} s, over the fast tier's "
            f"{CPU_LIMIT_S} s and {WAIT_LIMIT_S} s per test: mark it @pytest.mark.slow or "
            "make it cheaper",
            pytrace=False,
        )
    return result


def cost(item: pytest.Item) -> tuple[float, float] | None:
    """A fast test's CPU and waiting seconds, once it has run (for reports)."""
    return item.stash.get(_COST, None)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _is_slow(item):
            continue
        if any(item.get_closest_marker(m) for m in IMPLIES_SLOW) or _uses_a_process_fixture(item):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _phase(item, last=True))
