#!/usr/bin/env python3
"""Build speed of generated kernels: every figure is a ratio from one run on this machine.

    bench/build_speed.py [--runs N] [--sources 64,256] [--skip MEASURE ...]

Measures (targets from issue 14; see docs/build-performance.md):
  1. parallel: a synthetic cpp-cpu kernel with 64 and 256 sources, its kernel derivation
     built with `--cores 2` against `--cores 1` (ninja -j2 against -j1), and against CMake +
     Ninja (configure and build) of the same sources with the same flags;
  2. objects: the 256-source kernel with one derivation per object (full build, 2 jobs of
     1 core); then one source edited: the rebuild against compiling that object by hand
     and archiving it with the other objects;
  3. eval: every variant's drvPath of the largest real project (flash-attn3), objects on
     (the default for its large kernels) and off;
  4. variants: `nixgen build --backend cpu` of a 3-kernel project, one invocation against
     one per variant; Nix evaluations counted and derivations running at once read from
     Nix's JSON log.

Every build starts from new derivations: a salt in the sources, unique to this run of the
bench (the Nix store keeps earlier runs' outputs), and a timed build that Nix finds already
built stops the bench. The machine is shared:
each measure alternates its two sides and reports medians, and the load average is
printed with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_VENV_PYTHON = REPO / ".venv" / "bin" / "python"
if _VENV_PYTHON.exists() and Path(sys.prefix).resolve() != (REPO / ".venv").resolve():
    os.execv(str(_VENV_PYTHON), [str(_VENV_PYTHON), __file__, *sys.argv[1:]])
sys.path.insert(0, str(REPO))

from nixgen.checking import project  # noqa: E402
from nixgen.planning import variants as variants_mod  # noqa: E402
from tests.conftest import CORPUS, materialize  # noqa: E402
from tests.nixtools import kernel_builder, make_stub, nix_env  # noqa: E402

PYTHON = sys.executable
SYSTEM = "x86_64-linux"
FLAGS = ["-std=c++20", "-O2", "-fPIC", "-D_GLIBCXX_USE_CXX11_ABI=1", "-fno-gnu-unique"]
FLAGS += ["-DCPU_KERNEL"]
ROWS: list[tuple[str, str, str, str]] = []
#: Part of every salt: the store keeps what earlier runs built, so salts must be new per run.
RUN_ID = f"{time.time_ns():x}.{os.getpid()}"
ENV: dict[str, str] = {}

HEADER = """\
#pragma once
#include <algorithm>
#include <numeric>
#include <vector>
// salt: {salt}
template <int N> struct Unroll {{
  static double run(const double *x) {{ return x[N % 64] * N + Unroll<N - 1>::run(x); }}
}};
template <> struct Unroll<0> {{
  static double run(const double *x) {{ return x[0]; }}
}};
"""
SOURCE = """\
#include "common.h"
double synth_kernel_{i}(std::vector<double> v) {{
  std::sort(v.begin(), v.end());
  return std::accumulate(v.begin(), v.end(), 0.0) + Unroll<{depth}>::run(v.data());
}}
"""
KERNEL_EXPR = """\
{ root, nixpkgs, kernel-builder, variant, objects }:
let
  packages = (import (root + "/nix")).packages {
    inherit nixpkgs kernel-builder objects;
    system = "x86_64-linux";
  };
in
packages.${variant}.nixgen.kernels.big
"""
EVAL_EXPR = """\
{ root, nixpkgs, kernel-builder, objects }:
let
  p = import (root + "/nix");
  packages = p.packages { inherit nixpkgs kernel-builder objects; system = "x86_64-linux"; };
in
map (v: packages.${v.name}.drvPath) (p.variants "x86_64-linux")
"""


def row(measure: str, result: str, target: str, met: bool | None) -> None:
    status = "n/a" if met is None else ("met" if met else "MISSED")
    ROWS.append((measure, result, target, status))
    print(f"  {measure}: {result} (target {target}: {status})", file=sys.stderr, flush=True)


def run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    kwargs.setdefault("env", ENV)
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return done


def timed(cmd: list[str], **kwargs: object) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = run(cmd, **kwargs)
    return time.perf_counter() - start, done


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


# ------------------------------------------------------------------ synthetic kernel


class Kernel:
    """A project with one cpp-cpu kernel `big` of `n` sources, rendered by nixgen."""

    def __init__(self, work: Path, n: int, stub: Path, depth: int):
        self.root = work / f"k{n}"
        self.n = n
        self.stub = stub
        self.depth = depth
        self.sources = [f"big/s{i:03d}.cpp" for i in range(n)]
        big = self.root / "big"
        big.mkdir(parents=True)
        (self.root / "torch-ext" / f"speed{n}").mkdir(parents=True)
        (self.root / "torch-ext" / f"speed{n}" / "__init__.py").write_text("")
        (self.root / "torch-ext" / "torch_binding.cpp").write_text("// binding\n")
        src = ", ".join(f'"{s}"' for s in ["big/common.h", *self.sources])
        (self.root / "build.toml").write_text(
            f'[general]\nname = "speed{n}"\nversion = 1\nedition = 6\n'
            f'license = "Apache-2.0"\nbackends = ["cpu"]\n\n'
            f'[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n'
            f'[kernel.big]\nlanguage = "cpp-cpu"\nsrc = [{src}]\n'
        )
        for i, rel in enumerate(self.sources):
            (self.root / rel).write_text(SOURCE.format(i=i, depth=depth))
        self.salt("0")
        run([PYTHON, "-m", "nixgen", "render", str(self.root)])
        build = project.read(self.root).build
        self.variant = next(
            v.name
            for v in variants_mod.variants(build, system=SYSTEM)
            if v.backend == "cpu" and v.bundle
        )
        (self.root.parent / "kernel.nix").write_text(KERNEL_EXPR)

    def salt(self, salt: str) -> None:
        """New derivations for every object: the shared header changes."""
        (self.root / "big" / "common.h").write_text(HEADER.format(salt=f"{RUN_ID} {salt}"))

    def args(self, *, objects: str) -> list[str]:
        """`nix-build` arguments selecting the kernel derivation."""
        return [
            str(self.root.parent / "kernel.nix"),
            *("--arg", "root", str(self.root), "--arg", "nixpkgs", str(self.stub)),
            *("--arg", "kernel-builder", str(kernel_builder(self.stub))),
            *("--argstr", "variant", self.variant, "--argstr", "objects", objects),
        ]

    def nix_build(self, *, cores: int, objects: str) -> tuple[float, str]:
        """Build the kernel derivation (2 jobs, `cores` each); wall time and Nix's stderr."""
        command = ["nix-build", "--no-out-link", "--cores", str(cores), "--max-jobs", "2"]
        took, done = timed([*command, *self.args(objects=objects)])
        fresh(done.stderr, f"the {self.n}-source kernel")
        return took, done.stderr

    def cmake(self, build: Path) -> float:
        """CMake + Ninja from nothing (configure and build), the anchor's way."""
        lists = self.root / "CMakeLists.txt"
        lists.write_text(
            "cmake_minimum_required(VERSION 3.20)\nproject(speed CXX)\n"
            f"add_library(big STATIC {' '.join(self.sources)})\n"
            f"target_compile_options(big PRIVATE {' '.join(FLAGS)})\n"
        )
        shutil.rmtree(build, ignore_errors=True)
        start = time.perf_counter()
        run(["cmake", "-S", str(self.root), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE="])
        run(["cmake", "--build", str(build), "-j", "2"])
        return time.perf_counter() - start


def parallel(kernel: Kernel, runs: int) -> None:
    par, ser, cm = [], [], []
    for r in range(runs):
        kernel.salt(f"p{r}a")
        par.append(kernel.nix_build(cores=2, objects="ninja")[0])
        kernel.salt(f"p{r}b")
        ser.append(kernel.nix_build(cores=1, objects="ninja")[0])
        cm.append(kernel.cmake(kernel.root.parent / f"cmake{kernel.n}"))
    p, s, c = statistics.median(par), statistics.median(ser), statistics.median(cm)
    row(
        f"1. {kernel.n} sources: serial / parallel (2 cores)",
        f"{s:.1f} s / {p:.1f} s = {s / p:.2f}x",
        ">= 1.7x" if kernel.n == 256 else "report",
        s / p >= 1.7 if kernel.n == 256 else None,
    )
    row(
        f"1. {kernel.n} sources: nixgen / CMake+Ninja",
        f"{p:.1f} s / {c:.1f} s = {p / c:.2f}x",
        "<= 1.15x" if kernel.n == 256 else "report",
        p / c <= 1.15 if kernel.n == 256 else None,
    )


def reproducible(kernel: Kernel) -> None:
    """`nix-build --check` of the ninja-mode kernel: a second build, byte for byte."""
    kernel.salt("check")
    kernel.nix_build(cores=2, objects="ninja")
    done = subprocess.run(
        ["nix-build", "--no-out-link", "--check", "--cores", "2", *kernel.args(objects="ninja")],
        env=ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    row(
        f"1. {kernel.n} sources, parallel: nix-build --check",
        "identical" if done.returncode == 0 else "DIFFERS",
        "identical",
        done.returncode == 0,
    )


def fresh(stderr: str, what: str) -> None:
    """Stop when a timed build built nothing: its figure would time a store lookup."""
    if built_count(stderr) == 0:
        raise SystemExit(f"bench: {what} was already built (a salt did not change it)")


def built_count(stderr: str) -> int:
    match = re.search(r"these (\d+) derivations will be built", stderr)
    if match:
        return int(match.group(1))
    return 1 if "this derivation will be built" in stderr else 0


def objects(kernel: Kernel, runs: int) -> None:
    kernel.salt("objects")
    full, _ = kernel.nix_build(cores=1, objects="objects")
    row(
        f"2. {kernel.n} sources, full build with one derivation per object (--max-jobs 2)",
        f"{full:.1f} s",
        "report",
        None,
    )
    edited = kernel.root / kernel.sources[0]
    original = edited.read_text()
    flags = [*FLAGS, "-I", str(kernel.root / "big")]
    rebuild, by_hand, counts = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        # The other objects, for the by-hand archive: the members of the built archive.
        members = Path(tmp) / "members"
        members.mkdir()
        out = run(["nix-build", *kernel.args(objects="objects"), "--no-out-link"]).stdout.strip()
        run(["ar", "x", f"{out}/lib/libbig.a"], cwd=members)
        others = sorted(str(p) for p in members.iterdir() if not p.name.startswith("big%2Fs000"))
        for r in range(max(3, runs)):
            edited.write_text(original + f"// edit {RUN_ID} {r}\n")
            took, stderr = kernel.nix_build(cores=1, objects="objects")
            rebuild.append(took)
            counts.append(built_count(stderr))
            start = time.perf_counter()
            run(["g++", *flags, "-c", str(edited), "-o", f"{tmp}/one.o"])
            run(["ar", "rcsD", f"{tmp}/lib{r}.a", f"{tmp}/one.o", *others])
            by_hand.append(time.perf_counter() - start)
    edited.write_text(original)
    rb, bh = statistics.median(rebuild), statistics.median(by_hand)
    row(
        f"2. {kernel.n} sources, one edited: rebuild / (compile one + archive)",
        f"{rb:.2f} s / {bh:.2f} s = {rb / bh:.2f}x ({max(counts)} derivations built)",
        "<= 3x",
        rb / bh <= 3,
    )


# ------------------------------------------------------------------------ evaluation


def evaluation(work: Path, stub: Path, runs: int) -> None:
    source = CORPUS / "community__flash-attn3.toml"
    root = materialize(source, work / "fa3")
    run([PYTHON, "-m", "nixgen", "render", str(root)])
    (work / "eval.nix").write_text(EVAL_EXPR)
    results: dict[str, list[tuple[float, float]]] = {"auto": [], "ninja": []}
    for _ in range(runs):
        for mode in results:
            # Not --readonly-mode: the toolchain's overlay is imported from the store.
            cmd = ["/usr/bin/time", "-f", "%U %S", "nix-instantiate"]
            cmd += ["--eval", "--strict", "--json", str(work / "eval.nix")]
            cmd += ["--arg", "root", str(root), "--arg", "nixpkgs", str(stub)]
            cmd += ["--arg", "kernel-builder", str(kernel_builder(stub))]
            cmd += ["--argstr", "objects", mode]
            took, done = timed(cmd)
            user, system = map(float, done.stderr.strip().splitlines()[-1].split())
            results[mode].append((took, user + system))
            count = len(json.loads(done.stdout))
    for mode, label in (("auto", "objects (default)"), ("ninja", "ninja mode")):
        wall = statistics.median(t for t, _ in results[mode])
        cpu = statistics.median(c for _, c in results[mode])
        row(
            f"3. eval {source.stem}, {count} variants' drvPaths, {label}",
            f"{wall:.2f} s wall, {cpu:.2f} s CPU",
            "<= 2 s",
            wall <= 2,
        )


# ------------------------------------------------------------------------- variants


NIX_WRAPPER = """\
#!/usr/bin/env bash
echo "$*" >> {log}/calls
exec {nix} "$@" 2> >(tee -a {log}/stderr >&2)
"""


def concurrency(stderr: str) -> int:
    """The most derivations Nix was building at once, from its internal-json log."""
    running, most = set(), 0
    for line in stderr.splitlines():
        if not line.startswith("@nix "):
            continue
        try:
            event = json.loads(line[5:])
        except ValueError:
            continue
        if event.get("action") == "start" and event.get("type") == 105:
            running.add(event["id"])
            most = max(most, len(running))
        elif event.get("action") == "stop":
            running.discard(event.get("id"))
    return most


def variants(work: Path, stub: Path, runs: int) -> None:
    root = work / "three"
    (root / "torch-ext" / "three").mkdir(parents=True)
    (root / "torch-ext" / "three" / "__init__.py").write_text("")
    (root / "torch-ext" / "torch_binding.cpp").write_text("// binding\n")
    toml = '[general]\nname = "three"\nversion = 1\nedition = 6\nlicense = "Apache-2.0"\n'
    toml += 'backends = ["cpu"]\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n'
    for k in ("a", "b", "c"):
        (root / k).mkdir()
        (root / k / f"{k}.cpp").write_text("// first\n")
        toml += f'\n[kernel.{k}]\nlanguage = "cpp-cpu"\nsrc = ["{k}/{k}.cpp"]\n'
    (root / "build.toml").write_text(toml)
    build = project.read(root).build
    names = [v.name for v in variants_mod.variants(build, system=SYSTEM) if v.bundle]
    log = work / "nixlog"
    bin_dir = work / "bin"
    bin_dir.mkdir()
    nix = shutil.which("nix")
    assert nix is not None
    (bin_dir / "nix").write_text(NIX_WRAPPER.format(log=log, nix=nix))
    (bin_dir / "nix").chmod(0o755)
    env = {**ENV, "PATH": f"{bin_dir}{os.pathsep}{ENV['PATH']}"}
    common = ["--no-link", "--override-input", "nixpkgs", f"path:{stub}"]
    common += ["--override-input", "kernel-builder", f"path:{kernel_builder(stub)}"]

    def salt(tag: str) -> None:
        for k in ("a", "b", "c"):
            text = f"int {k}_kernel(int x) {{ return x + 1; }} // {RUN_ID} {tag}\n"
            (root / k / f"{k}.cpp").write_text(text)

    def measure(cmds: list[list[str]]) -> tuple[float, int, int]:
        shutil.rmtree(log, ignore_errors=True)
        log.mkdir()
        start = time.perf_counter()
        for cmd in cmds:
            run(cmd, env=env)
        took = time.perf_counter() - start
        calls = (log / "calls").read_text().splitlines()
        evaluations = sum(1 for c in calls if "#" in c)
        most = concurrency((log / "stderr").read_text())
        if most == 0:
            raise SystemExit("bench: the 3-kernel project was already built (salt unchanged)")
        return took, evaluations, most

    salt("warm")
    run([PYTHON, "-m", "nixgen", "build", str(root), "--backend", "cpu", *common], env=env)
    one: list[tuple[float, int, int]] = []
    each: list[tuple[float, int, int]] = []
    nixgen = [PYTHON, "-m", "nixgen", "build", str(root)]
    for r in range(runs):
        salt(f"one{r}")
        one.append(measure([[*nixgen, "--backend", "cpu", *common]]))
        salt(f"each{r}")
        each.append(measure([[*nixgen, "--variant", n, *common] for n in names]))
    o = statistics.median(t for t, _, _ in one)
    e = statistics.median(t for t, _, _ in each)
    row(
        f"4. nixgen build of {len(names)} CPU variants x 3 kernels: per variant / one",
        f"{e:.1f} s / {o:.1f} s = {e / o:.2f}x",
        "report",
        None,
    )
    row(
        "4. one invocation: evaluations, most derivations building at once",
        f"{one[0][1]} evaluation(s), {max(c for _, _, c in one)} at once "
        f"(per variant: {each[0][1]} evaluations, {max(c for _, _, c in each)} at once)",
        "1 evaluation, > 1 at once",
        one[0][1] == 1 and max(c for _, _, c in one) > 1,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=3, help="repetitions of each build (edits: 3, eval: 5 at least)"
    )
    parser.add_argument("--sources", default="64,256", help="kernel sizes for measure 1")
    parser.add_argument("--depth", type=int, default=60, help="template depth of a source")
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=["parallel", "objects", "eval", "variants"]
    )
    args = parser.parse_args()
    global ENV
    ENV = nix_env({"PYTHONPATH": str(REPO)})
    print(f"bench: {os.cpu_count()} cores, load {load()}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="nixgen-speed-") as tmp:
        work = Path(tmp)
        stub = make_stub(work / "stub")
        sizes = [int(s) for s in args.sources.split(",")]
        kernels = {n: Kernel(work, n, stub, args.depth) for n in sizes}
        if "parallel" not in args.skip:
            for n in sizes:
                parallel(kernels[n], args.runs)
            reproducible(kernels[sizes[0]])
        if "objects" not in args.skip:
            objects(kernels[max(sizes)], args.runs)
        if "eval" not in args.skip:
            evaluation(work, stub, max(args.runs, 5))
        if "variants" not in args.skip:
            variants(work, stub, max(args.runs, 2))
    print(f"load average at the end: {load()}", file=sys.stderr)
    width = [max(len(r[i]) for r in ROWS) for i in range(4)]
    header = ("measure", "result", "target", "status")
    width = [max(w, len(h)) for w, h in zip(width, header, strict=True)]
    print(" | ".join(h.ljust(w) for h, w in zip(header, width, strict=True)))
    print("-+-".join("-" * w for w in width))
    for r in ROWS:
        print(" | ".join(c.ljust(w) for c, w in zip(r, width, strict=True)))


if __name__ == "__main__":
    main()
