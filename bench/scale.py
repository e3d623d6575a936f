#!/usr/bin/env python3
"""How a large kernel's build scales past one machine: measured here, modelled for many.

    bench/scale.py [--sources 256] [--depth 400] [--validate-sources 64] [--cores 1,16]
                   [--probe-sources 32] [--poll S] [--what-if SECONDS]… [--corpus NAME]
                   [--skip-validation] [--timeout 1500]

1. Costs: a synthetic cpp-cpu kernel of SOURCES sources (`bench/synth.big_kernel`, each
   source instantiating `Unroll<DEPTH>`: about 0.7 s of g++ here at 600) is built with one
   derivation per object (the Nix library's mode from 32 sources), one derivation at a time
   on one core (`--max-jobs 1 --cores 1`), so each derivation's time, read from Nix's
   internal-json log as it arrives, is its cost alone. Also the per-derivation gap (Nix's
   own scheduling between builds: the wall time less the builds' sum, per derivation).
   `--corpus NAME` does the same for a real project's build.toml from tests/corpus (its
   sources materialized as placeholder files: real structure and flags, light compiles).
2. Model: list scheduling over the variant's derivation graph (every object; then the
   kernel's archive; the binding's objects; then the extension's link), on N builders of C
   cores each (each object is a one-core job, so a builder runs C at once), objects in
   longest-first order, each derivation paying the measured gap. Beside it the anchor's
   bound: one derivation per variant, so ONE machine of C cores whatever N (the same
   compile work on C cores, without the per-derivation gaps: optimistic for the anchor).
3. Validation (fresh derivations: a new salt): the costs of a VALIDATE_SOURCES kernel
   (a serial build as in step 1: Nix's own work per build grows with the number of builds
   waiting, so costs are taken at the size they predict), then two more such kernels built
   on 1 builder (this machine, `--max-jobs 1 --cores 1`) and on 2 builders (this machine
   with one job plus a loopback ssh-ng builder with one job, `tests/remote_builder.py`),
   each against the model's prediction. The loopback
   builder shares this machine's 2 cores: 2 builders of 1 core is what it can measure (the
   model is given that real capacity: N=2, C=1), and the remote derivations pay ssh-ng's
   copies, which the model's gap does not hold (the error shows what that costs).

Prints one table. Every build is bounded (`--timeout`, seconds per Nix run), the builder's
server is stopped and its store removed whatever happens.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import attrs

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.synth import big_kernel  # noqa: E402
from nixgen.building.nixlog import NixLog  # noqa: E402
from nixgen.checking import project  # noqa: E402
from nixgen.planning import variants  # noqa: E402
from tests.nixtools import make_stub, nix_env, overrides  # noqa: E402
from tests.remote_builder import RemoteBuilder, placement  # noqa: E402

SYSTEM = "x86_64-linux"
RUN_ID = f"{time.time_ns():x}.{os.getpid()}"
BUILDERS = (1, 2, 4, 16, 64)


# ---------------------------------------------------------------------------- Nix runs


class Run:
    """One `nix build` of a variant: its wall time and each derivation's duration."""

    def __init__(self, wall: float, log: NixLog, stderr: str):
        self.wall = wall
        self.log = log
        self.stderr = stderr
        #: The 1-minute load average when it ended (the machine is shared: context).
        self.load = os.getloadavg()[0]

    def durations(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for build in self.log.builds.values():
            if build.finished is not None:
                out[build.drv] = build.finished - build.started
        return out


def nix_build(
    installable: str, stub: Path, *, args: Sequence[str], env: dict[str, str], timeout: float
) -> Run:
    """`nix build` with the internal-json log read as it arrives (each derivation timed
    from its start to its stop event)."""
    command = ["nix", "build", "--no-link", "--log-format", "internal-json", *args]
    command += [installable, *overrides(stub)]
    log = NixLog()
    lines: list[str] = []
    start = time.monotonic()
    process = subprocess.Popen(
        command, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    assert process.stderr is not None
    deadline = start + timeout
    for line in process.stderr:
        lines.append(line)
        log.feed(line)
        if time.monotonic() > deadline:
            process.kill()
            raise SystemExit(f"scale: `nix build` ran past {timeout:.0f} s")
    code = process.wait()
    wall = time.monotonic() - start
    if code != 0:
        raise SystemExit(f"scale: nix build failed ({code}):\n{''.join(lines)[-4000:]}")
    if not log.builds:
        raise SystemExit("scale: nothing was built (a salt did not make new derivations)")
    return Run(wall, log, "".join(lines))


class Project:
    """A rendered project, its one measured variant, and the test nixpkgs."""

    def __init__(self, root: Path, stub: Path, name: str, backend: str = "cpu"):
        self.root = root
        self.stub = stub
        self.name = name
        build = project.read(root).build
        chosen = [
            v.name
            for v in variants.variants(build, system=SYSTEM)
            if v.bundle and v.backend == backend
        ]
        if not chosen:
            raise SystemExit(f"scale: {name} has no bundled {backend} variant for {SYSTEM}")
        self.variant = chosen[0]
        self.installable = f"path:{root}#packages.{SYSTEM}.{self.variant}"

    def prebuild_toolchain(self, env: dict[str, str], timeout: float) -> None:
        """Build here what is not the project's (the stand-in stdenv, Python, torch), as a
        binary cache would serve it: the timed runs build the project's derivations only."""
        drv = json.loads(
            subprocess.run(
                ["nix", "eval", "--json", f"{self.installable}.drvPath", *overrides(self.stub)],
                env=env, capture_output=True, text=True, check=True, timeout=timeout,
            ).stdout
        )  # fmt: skip
        requisites = subprocess.run(
            ["nix-store", "-q", "--requisites", drv],
            env=env, capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        mine = f"-{self.name}-"
        toolchain = [p for p in requisites if p.endswith(".drv") and mine not in p]
        subprocess.run(
            ["nix-store", "--realise", "--max-jobs", "2", *toolchain],
            env=env, capture_output=True, check=True, timeout=timeout,
        )  # fmt: skip


def render(root: Path, env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "nixgen", "render", str(root)],
        env={**env, "PYTHONPATH": str(REPO)},
        check=True,
        capture_output=True,
        timeout=300,
    )


# ------------------------------------------------------------------------- the graph


class Graph:
    """A variant's derivations by role, with each one's cost in seconds."""

    def __init__(self, run: Run, name: str):
        self.objects: list[float] = []
        self.binding: list[float] = []
        self.archive: list[float] = []
        self.link: list[float] = []
        self.other: list[float] = []
        for drv, seconds in run.durations().items():
            self._add(drv.rsplit("/", 1)[-1].split("-", 1)[1].removesuffix(".drv"), name, seconds)
        total = sum(self.objects + self.binding + self.archive + self.link + self.other)
        count = len(self.objects) + len(self.binding) + len(self.archive) + len(self.link)
        count += len(self.other)
        #: Nix's time between builds, per derivation (scheduling, locks, registration).
        self.gap = max(0.0, (run.wall - total) / max(count, 1))
        self.wall = run.wall

    def _add(self, drv_name: str, name: str, seconds: float) -> None:
        part = drv_name.removeprefix(f"{name}-")
        if part.endswith(("-torch-binding-1", "-tvm-ffi-binding-1")) or "binding" in part:
            self.binding.append(seconds)
        elif part.startswith(("torch-ext", "tvm-ffi-ext")):
            self.link.append(seconds)
        elif "-" in part.removesuffix("-1") and part.count("-") >= 2:
            self.objects.append(seconds)  # <kernel>-<source>-<version>
        elif drv_name.startswith(f"{name}-"):
            self.archive.append(seconds)  # the kernel: archive of its objects
        else:
            self.other.append(seconds)

    def scaled(self, sources: int) -> Graph:
        """The same graph with `sources` objects of the measured costs (cycled)."""
        copy = object.__new__(Graph)
        copy.__dict__.update(self.__dict__)
        copy.objects = [self.objects[i % len(self.objects)] for i in range(sources)]
        return copy

    def heavier(self, median: float) -> Graph:
        """The same graph with every object's cost scaled so their median is `median`
        seconds (what-if: real objects, torch-heavy C++ or `.cu` files, cost far more)."""
        copy = object.__new__(Graph)
        copy.__dict__.update(self.__dict__)
        factor = median / statistics.median(self.objects) if self.objects else 1.0
        copy.objects = [c * factor for c in self.objects]
        return copy


@attrs.frozen
class Machines:
    """Where builds run: `local` one-core slots here (no dispatch), `remote` one-core slots
    on builders (each remote build pays `dispatch` seconds: ssh-ng connection, copies both
    ways), and Nix's `poll` interval: a build Nix postponed because every builder was busy
    is retried on its next poll (`build-poll-interval`, 5 s by default), so once builders
    are in use a freed slot starts its next build on a poll tick."""

    local: int
    remote: int = 0
    dispatch: float = 0.0
    poll: float = 5.0


def schedule(graph: Graph, machines: Machines) -> float:
    """List scheduling of the variant's graph: objects and the binding (longest first,
    each on the slot where it would start first; a builder before this machine on a tie,
    as Nix asks its build hook first), the archive after every object, the link after the
    archive and the binding. Returns the wall time."""
    gap = graph.gap
    slots: list[tuple[float, bool]] = [(0.0, False)] * machines.local
    slots += [(0.0, True)] * machines.remote
    if not slots:
        raise ValueError("no build slots")

    def start_on(free: float, remote: bool, ready: float) -> float:
        at = max(free, ready)
        # With builders, a build that finds every slot busy is postponed by Nix's build
        # hook (even for a slot here: the hook declines only while one is free) and
        # retried on a poll tick; only the first wave starts at once.
        if machines.remote and at > 0:
            at = math.ceil(at / machines.poll - 1e-9) * machines.poll
        return at

    def place(cost: float, ready: float) -> float:
        best = min(
            range(len(slots)),
            key=lambda i: (start_on(*slots[i], ready), not slots[i][1]),
        )
        free, remote = slots[best]
        begin = start_on(free, remote, ready)
        end = begin + cost + gap + (machines.dispatch if remote else 0.0)
        slots[best] = (end, remote)
        return end

    objects_done = 0.0
    compiled = 0.0
    jobs = [(c, True) for c in graph.objects] + [(c, False) for c in graph.binding]
    for cost, is_object in sorted(jobs, reverse=True):
        end = place(cost, 0.0)
        compiled = max(compiled, end)
        if is_object:
            objects_done = max(objects_done, end)
    archive = objects_done
    for cost in graph.archive:
        archive = place(cost, archive)
    done = max(archive, compiled)
    for cost in graph.link + graph.other:
        done = place(cost, done)
    return done


def predict(graph: Graph, builders: int, cores: int, *, dispatch: float, poll: float) -> float:
    """`builders` machines of `cores` cores, every derivation built on them (`--max-jobs
    0`); with `builders` 0: this machine alone, `cores` jobs."""
    if builders == 0:
        return schedule(graph, Machines(local=cores))
    return schedule(graph, Machines(0, builders * cores, dispatch, poll))


def anchor(graph: Graph, cores: int) -> float:
    """The anchor's bound: the variant is one derivation, so one machine of `cores` cores
    whatever the number of builders; its compile steps run `cores` at once (ninja), with
    no per-object derivation (no gap), then the archive and the link."""
    free = [0.0] * cores
    for cost in sorted(graph.objects + graph.binding, reverse=True):
        heapq.heappush(free, heapq.heappop(free) + cost)
    return max(free) + sum(graph.archive) + sum(graph.link) + sum(graph.other)


# ------------------------------------------------------------------------------ main


def synthetic(work: Path, stub: Path, sources: int, depth: int, tag: str) -> Project:
    root = big_kernel(work / f"{tag}-{sources}", sources, depth=depth, salt=f"{RUN_ID} {tag}")
    render(root, nix_env())
    return Project(root, stub, f"big{sources}")


def corpus_project(work: Path, stub: Path, name: str, backend: str) -> Project:
    from tests.conftest import CORPUS, materialize

    source = CORPUS / f"{name}.toml"
    if not source.exists():
        choices = ", ".join(sorted(p.stem for p in CORPUS.glob("*.toml"))[:20])
        raise SystemExit(f"scale: no corpus file {source.name}; some choices: {choices}")
    root = materialize(source, work / name)
    # New derivations: a salt in every source (materialize writes placeholders).
    for path in root.rglob("*"):
        if path.is_file() and path.suffix in (".cpp", ".cu", ".h", ".cuh", ".hpp", ".cc"):
            path.write_text(path.read_text() + f"// {RUN_ID}\n")
    render(root, nix_env())
    built = project.read(root).build
    return Project(root, stub, built.general.name, backend)


def table(title: str, graph: Graph, cores: Sequence[int], dispatch: float, poll: float) -> None:
    print(f"\n{title}")
    print(
        f"  {len(graph.objects)} objects, {sum(graph.objects):.1f} s of object builds "
        f"(median {statistics.median(graph.objects or [0.0]):.2f} s), binding "
        f"{sum(graph.binding):.1f} s, archive {sum(graph.archive):.1f} s, link "
        f"{sum(graph.link):.1f} s; Nix's gap {graph.gap:.2f} s per derivation; remote "
        f"dispatch {dispatch:.2f} s per derivation, poll {poll:.0f} s"
    )
    head = f"  {'cores':>5} {'1 machine':>10} " + "".join(f"{f'N={n}':>14}" for n in BUILDERS)
    print(head + f"{'anchor, any N':>15}")
    for c in cores:
        here = predict(graph, 0, c, dispatch=dispatch, poll=poll)
        cells = ""
        for n in BUILDERS:
            t = predict(graph, n, c, dispatch=dispatch, poll=poll)
            cells += f"{t:>7.0f} s {here / t:>4.1f}x"
        print(f"  {c:>5} {here:>8.0f} s {cells}{anchor(graph, c):>13.0f} s")
    print("  (N builders of C cores, every derivation remote; speedup over 1 machine of C cores)")


def fit_dispatch(run: Run, graph: Graph, slots: int, poll: float) -> float:
    """The per-build dispatch cost (ssh-ng connection, copies both ways) that makes the
    model reproduce `run`, a build of `graph` with every derivation on `slots` remote
    slots: fitted on that probe, then only used for other runs."""
    low, high = 0.0, max(run.wall, 1.0)
    for _ in range(40):
        mid = (low + high) / 2
        if schedule(graph, Machines(0, slots, mid, poll)) < run.wall:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def poll_interval(env: dict[str, str]) -> float:
    done = subprocess.run(
        ["nix", "show-config"], env=env, capture_output=True, text=True, check=False
    )
    for line in done.stdout.splitlines():
        name, _, value = line.partition(" = ")
        if name.strip() == "build-poll-interval":
            return float(value)
    return 5.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=int, default=256)
    parser.add_argument("--depth", type=int, default=400, help="template depth per source")
    parser.add_argument("--validate-sources", type=int, default=64)
    parser.add_argument("--probe-sources", type=int, default=32, help="remote-only probe")
    parser.add_argument("--cores", default="1,16", help="cores per builder, comma-separated")
    parser.add_argument("--corpus", default=None, help="also a tests/corpus project (stem)")
    parser.add_argument("--corpus-backend", default="cpu", help="its variant's backend")
    parser.add_argument(
        "--poll", type=float, default=None, help="Nix's build-poll-interval (default: nix.conf's)"
    )
    parser.add_argument(
        "--what-if",
        type=float,
        action="append",
        default=None,
        help="also model objects of this many seconds (repeatable; default 30)",
    )
    parser.add_argument("--skip-validation", action="store_true")
    parser.add_argument("--timeout", type=float, default=1500, help="seconds per Nix run")
    args = parser.parse_args()
    cores = [int(c) for c in args.cores.split(",")]
    args.what_if = [30.0] if args.what_if is None else args.what_if
    env = nix_env()
    poll = poll_interval(env) if args.poll is None else args.poll
    if args.poll is not None:
        env["NIX_CONFIG"] += f"\nbuild-poll-interval = {int(args.poll)}"
    print(f"bench/scale.py on {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="nixgen-scale-") as tmp:
        work = Path(tmp)
        stub = make_stub(work / "stub")
        serial = ["--max-jobs", "1", "--cores", "1"]

        big = synthetic(work, stub, args.sources, args.depth, "costs")
        big.prebuild_toolchain(env, args.timeout)
        calibration = nix_build(big.installable, stub, args=serial, env=env, timeout=args.timeout)
        graph = Graph(calibration, big.name)
        print(
            f"  costs: {args.sources} sources built serially here in {calibration.wall:.1f} s "
            f"(load {calibration.load:.1f})"
        )

        probe = synthetic(work, stub, args.probe_sources, args.depth, "probe")
        with RemoteBuilder(build_users=False, max_jobs=2, cores=1, lifetime=args.timeout) as b:
            probed = nix_build(
                probe.installable,
                stub,
                args=["--max-jobs", "0", "--builders", b.spec()],
                env=b.env(env),
                timeout=args.timeout,
            )
        dispatch = fit_dispatch(probed, graph.scaled(args.probe_sources), 2, poll)
        where = placement(probed.stderr)
        print(
            f"  dispatch: {args.probe_sources} sources, all on the loopback builder "
            f"({len(where.remote)} remote builds, {len(where.local)} here) in "
            f"{probed.wall:.1f} s: fitted dispatch {dispatch:.2f} s per remote build"
        )
        table(
            f"{args.sources}-source synthetic kernel (depth {args.depth}), predicted wall time",
            graph,
            cores,
            dispatch,
            poll,
        )

        for seconds in args.what_if:
            table(
                f"what-if, modelled only: the same kernel with objects of {seconds:g} s "
                "(median; real torch C++ or multi-capability .cu sources)",
                graph.heavier(seconds),
                cores,
                dispatch,
                poll,
            )

        if args.corpus:
            real = corpus_project(work, stub, args.corpus, args.corpus_backend)
            real.prebuild_toolchain(env, args.timeout)
            run = nix_build(real.installable, stub, args=serial, env=env, timeout=args.timeout)
            table(
                f"{args.corpus} ({real.variant}), measured {run.wall:.1f} s serially",
                Graph(run, real.name),
                cores,
                dispatch,
                poll,
            )

        if args.skip_validation:
            return
        n = args.validate_sources
        # Nix's own work per build grows with the builds waiting (its worker wakes each
        # of them when a slot frees), so costs for the validation come from a kernel of
        # the validation's size: its own serial build, then fresh derivations measured.
        costs = synthetic(work, stub, n, args.depth, "vcosts")
        run = nix_build(costs.installable, stub, args=serial, env=env, timeout=args.timeout)
        model = Graph(run, costs.name)
        print(
            f"\nvalidation: {n}-source kernels, fresh derivations, costs from a first "
            f"{n}-source serial build ({run.wall:.1f} s, load {run.load:.1f}); dispatch as above"
        )
        one = synthetic(work, stub, n, args.depth, "one")
        measured_1 = nix_build(one.installable, stub, args=serial, env=env, timeout=args.timeout)
        two = synthetic(work, stub, n, args.depth, "two")
        with RemoteBuilder(build_users=False, max_jobs=1, cores=1, lifetime=args.timeout) as b:
            measured_2 = nix_build(
                two.installable,
                stub,
                args=[*serial, "--builders", b.spec(max_jobs=1)],
                env=b.env(env),
                timeout=args.timeout,
            )
        where = placement(measured_2.stderr)
        remote_objects = sum(1 for d in where.remote if "-big-s" in d)
        cases = (
            ("1 builder  (here, 1 job)", Machines(local=1), measured_1),
            (
                "2 builders (here + loopback, 1 job each)",
                Machines(1, 1, dispatch, poll),
                measured_2,
            ),
        )
        for label, machines, run in cases:
            p = schedule(model, machines)
            print(
                f"  {label}: measured {run.wall:6.1f} s, model {p:6.1f} s, "
                f"error {100 * (p - run.wall) / run.wall:+.1f}% (load {run.load:.1f})"
            )
        print(
            f"  2 builders: {remote_objects} of {n} objects built on the loopback builder, "
            f"{n - remote_objects} here (load {os.getloadavg()[0]:.1f}; the loopback builder "
            "shares this machine's 2 cores: 2 one-core builders is its real capacity)"
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
