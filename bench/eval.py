#!/usr/bin/env python3
"""How evaluation scales with a kernel's sources: `nix eval` of one variant's drvPath.

    bench/eval.py [--sources 100,1000,3500] [--languages cpp-cpu,cpp-rocm]
                  [--repo DIR] [--stack-unlimited] [--timeout 600] [--json FILE]

For each language and size, `bench/synth.wide_kernel` writes a project with ONE kernel of
that many listed sources (one in five a header, 100 a directory: the shape of the field's
largest kernels), `nixgen render` renders it (with the nixgen of `--repo`, default this
checkout: point it at a `git worktree` of an older commit to compare), and one Nix process
evaluates the first variant's drvPath through the stand-ins (`tests/nixpkgs`,
`tests/kernel-builder`), writing its derivations (`--read-write-mode`: every object
derivation is instantiated, as `nix build` would). Printed per run: the evaluation's wall
time and CPU time (user + system: on a shared machine the wall time also holds the wait for
the cores and for the store's database), its peak resident memory (`ru_maxrss` from
`wait4`, of a launcher that forks Nix), the size of the kernel's `configurePhase` (bytes,
and bytes per source), and the ratio of the CPU time to the smallest size's (linear: the
ratio of the sizes). A run that fails (the
default stack overflowing, say) is reported with the last line of its error.
`--stack-unlimited` runs Nix under `ulimit -s unlimited` (what an older library needs at
these sizes).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.synth import wide_kernel  # noqa: E402
from tests.nixtools import make_stub, nix_env, toolchain_input  # noqa: E402

#: Forks the command and writes its exit code, peak RSS (KiB) and the seconds it ran: the
#: child's `ru_maxrss` counts the process it was forked from, so fork from this small one.
_LAUNCHER = """
import json, os, sys, time
report, command = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp(command[0], command)
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - start
with open(report, "w") as handle:
    json.dump({"code": os.waitstatus_to_exitcode(status), "maxrss": usage.ru_maxrss,
               "seconds": seconds, "cpu": usage.ru_utime + usage.ru_stime}, handle)
"""

EXPR = """
let
  p = import ROOT/nix;
  nixpkgs = STUB;
  kernel-builder = TOOLCHAIN;
  v = builtins.head (p.variants "x86_64-linux");
  d = p.variantPackage { inherit nixpkgs kernel-builder; inherit (v) system; } v;
  k = d.nixgen.kernels.ck;
in {
  inherit (v) name;
  drvPath = d.drvPath;
  configure = builtins.stringLength k.configurePhase;
  objects = builtins.length (k.nixgen.objects or [ ]);
}
"""


def render(root: Path, repo: Path = REPO) -> None:
    """`nixgen render` of `root` with the nixgen of `repo`."""
    env = {**os.environ, "PYTHONPATH": str(repo), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "nixgen", "render", "."],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"nixgen render {root} failed:\n{done.stdout}{done.stderr}")


def evaluate_variant(
    root: Path, stub: Path, *, timeout: float, stack_unlimited: bool
) -> dict[str, object]:
    """Evaluate the first variant of the rendered project `root` (see `EXPR`)."""
    expr = (
        EXPR.replace("ROOT", str(root))
        .replace("STUB", str(stub))
        .replace("TOOLCHAIN", toolchain_input(stub))
    )
    return evaluate(expr, timeout=timeout, stack_unlimited=stack_unlimited)


def evaluate(
    expr: str, *, timeout: float, stack_unlimited: bool = False, write: bool = True
) -> dict[str, object]:
    """`nix-instantiate --eval --strict --json` of `expr` with the default stack (or none,
    `stack_unlimited`), writing its derivations and sources to the store (`write`,
    `--read-write-mode`; else their paths are only computed, the same paths): its JSON
    value's keys (an attribute set) and `code`, `seconds` (wall), `cpu` (user + system)
    and `maxrss` (KiB), or `error` (the first `error:` line) when it fails."""
    command = [
        "nix-instantiate",
        "--eval",
        "--strict",
        "--json",
        *(["--read-write-mode"] if write else []),
        "--expr",
        expr,
    ]
    if stack_unlimited:
        command = ["bash", "-c", 'ulimit -s unlimited && exec "$@"', "bash", *command]
    with tempfile.TemporaryDirectory(prefix="nixgen-eval-") as scratch:
        report = Path(scratch) / "report.json"
        try:
            done = subprocess.run(
                [sys.executable, "-c", _LAUNCHER, str(report), *command],
                env=nix_env(),
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
        measured = json.loads(report.read_text())
    if measured["code"] != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        errors = [line for line in lines if line.lstrip().startswith("error:")]
        error = (errors or lines or [""])[-1 if not errors else 0]
        return {"error": error.strip(), "seconds": measured["seconds"]}
    return {**json.loads(done.stdout), **measured}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", default="100,1000,3500")
    parser.add_argument("--languages", default="cpp-cpu,cpp-rocm")
    parser.add_argument("--repo", type=Path, default=REPO, help="the nixgen to render with")
    parser.add_argument("--stack-unlimited", action="store_true")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sources.split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="nixgen-bench-eval-") as scratch:
        work = Path(scratch)
        stub = make_stub(work / "stub")
        print(
            f"{'language':<10} {'sources':>7} {'eval s':>8} {'cpu s':>7} {'ratio':>6} "
            f"{'peak MiB':>9} {'objects':>7} {'configure B':>12} {'B/source':>8}"
        )
        for language in args.languages.split(","):
            first: float | None = None
            for size in sizes:
                root = wide_kernel(work / f"{language}-{size}", size, language=language)
                render(root, args.repo.resolve())
                start = time.perf_counter()
                result = evaluate_variant(
                    root, stub, timeout=args.timeout, stack_unlimited=args.stack_unlimited
                )
                result.setdefault("seconds", time.perf_counter() - start)
                result.update(language=language, sources=size)
                results.append(result)
                seconds = float(result["seconds"])  # type: ignore[arg-type]
                if "error" in result:
                    print(f"{language:<10} {size:>7} {seconds:>8.2f}  failed: {result['error']}")
                    continue
                first = first or float(result["cpu"])  # type: ignore[arg-type]
                peak = int(result["maxrss"]) / 1024  # type: ignore[call-overload]
                configure = int(result["configure"])  # type: ignore[call-overload]
                cpu = float(result["cpu"])  # type: ignore[arg-type]
                print(
                    f"{language:<10} {size:>7} {seconds:>8.2f} {cpu:>7.2f} {cpu / first:>6.1f} "
                    f"{peak:>9.0f} {result['objects']:>7} {configure:>12} "
                    f"{configure / size:>8.0f}",
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
