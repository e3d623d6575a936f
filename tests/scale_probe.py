"""Generate big kernel projects and measure nixgen on them (time and peak memory).

As a script::

    python tests/scale_probe.py 1000 10000        # validate and render at each size

prints, for each size, the wall time and the peak resident memory (``ru_maxrss`` of the
``nixgen`` process, from ``wait4``) of ``nixgen validate`` and of ``nixgen render`` (a
first render into an empty project, then a second one with nothing to change). As a module,
`generate` writes such a project for the tests (``test_scale``, ``test_crash_safety``).
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

LANGUAGES = ("cpp-cpu", "cpp-cuda", "cpp-rocm", "cpp-xpu", "cpp-metal", "rust-cpu")
_EXTENSION = {
    "cpp-cpu": "cpp",
    "cpp-cuda": "cu",
    "cpp-rocm": "hip",
    "cpp-xpu": "cpp",
    "cpp-metal": "mm",
}
_EXTRA = {
    "cpp-cuda": 'cuda-capabilities = ["8.0", "9.0"]\ncuda-flags = ["-lineinfo"]\n',
    "cpp-rocm": 'rocm-archs = ["gfx942"]\nhip-flags = ["-O3"]\n',
    "cpp-xpu": 'sycl-flags = ["-fsycl"]\n',
    "rust-cpu": 'features = ["fast"]\n',
}


def build_toml(kernels: int, *, flag: str = "-O2", name: str = "scale") -> str:
    """An edition-6 build.toml with `kernels` kernels cycling through every language, the
    Rust ones left to nixgen.toml (`nixgen_toml`: a [torch] project's Rust kernels are
    nixgen's own); `flag` goes into each C++ kernel's cxx-flags (change it to change every
    kernel file)."""
    lines = [
        "[general]",
        f'name = "{name}"',
        "version = 1",
        "edition = 6",
        'license = "Apache-2.0"',
        'backends = ["cpu", "cuda", "rocm", "xpu", "metal"]',
        "",
        "[torch]",
        'src = ["torch-ext/torch_binding.cpp"]',
        "",
    ]
    for index in range(kernels):
        language = LANGUAGES[index % len(LANGUAGES)]
        if language == "rust-cpu":
            continue
        lines.append(f"[kernel.k{index}]")
        lines.append(f'language = "{language}"')
        lines.append("depends = []")
        lines.append(f'src = ["k{index}/k{index}.{_EXTENSION[language]}"]')
        lines.append(f'cxx-flags = ["{flag}"]')
        lines.append(_EXTRA.get(language, ""))
    return "\n".join(lines)


def nixgen_toml(kernels: int) -> str:
    """The nixgen.toml of `build_toml(kernels)`: its Rust kernels."""
    lines = []
    for index in range(kernels):
        if LANGUAGES[index % len(LANGUAGES)] == "rust-cpu":
            lines.append(f"[kernel.k{index}]")
            lines.append('language = "rust-cpu"')
            lines.append(f'cargo-manifest = "k{index}/Cargo.toml"')
            lines.append(f'src = ["k{index}/Cargo.lock", "k{index}/src/lib.rs"]')
            lines.append(_EXTRA["rust-cpu"])
    return "\n".join(lines)


def write_tomls(root: Path, kernels: int, *, flag: str = "-O2", name: str = "scale") -> None:
    """Write the build.toml and nixgen.toml of a project of `kernels` kernels at `root`."""
    (root / "build.toml").write_text(build_toml(kernels, flag=flag, name=name))
    (root / "nixgen.toml").write_text(nixgen_toml(kernels))


def generate(root: Path, kernels: int, *, flag: str = "-O2", name: str = "scale") -> Path:
    """Write a project with `kernels` kernels (and every file it lists) under `root`."""
    root.mkdir(parents=True, exist_ok=True)
    write_tomls(root, kernels, flag=flag, name=name)
    package = root / "torch-ext" / name.replace("-", "_")
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (root / "torch-ext" / "torch_binding.cpp").write_text("// binding\n")
    for index in range(kernels):
        language = LANGUAGES[index % len(LANGUAGES)]
        directory = root / f"k{index}"
        if language == "rust-cpu":
            (directory / "src").mkdir(parents=True, exist_ok=True)
            (directory / "Cargo.toml").write_text(f'[package]\nname = "k{index}"\n')
            (directory / "Cargo.lock").write_text("version = 3\n")
            (directory / "src" / "lib.rs").write_text("")
        else:
            directory.mkdir(exist_ok=True)
            (directory / f"k{index}.{_EXTENSION[language]}").write_text("")
    return root


#: Runs a command and reports its peak RSS. A child's ``ru_maxrss`` counts the memory of
#: the process it was forked from (the kernel keeps the high-water mark across exec), so
#: the command is forked from this small launcher, never from a big test process.
_LAUNCHER = """
import json, os, sys
report, command = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.execv(command[0], command)
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as handle:
    json.dump({"code": os.waitstatus_to_exitcode(status), "maxrss": usage.ru_maxrss}, handle)
"""


def measure(args: list[str], cwd: Path) -> tuple[int, float, int, str]:
    """Run ``python -m nixgen ARGS``; return exit code, seconds, peak RSS in KiB, output."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    with tempfile.TemporaryDirectory(prefix="nixgen-measure-") as scratch:
        report = Path(scratch) / "report.json"
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, str(report), sys.executable, "-m", "nixgen", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            check=False,
        )
        seconds = time.perf_counter() - start
        result = json.loads(report.read_text())
    return result["code"], seconds, result["maxrss"], done.stdout.decode(errors="replace")


def probe(kernels: int, work: Path) -> dict[str, tuple[int, float, int]]:
    """Validate and render (twice) a fresh project of `kernels` kernels."""
    root = generate(work / f"scale-{kernels}", kernels)
    results = {}
    for label, args in (
        ("validate", ["validate", "."]),
        ("render", ["render", "."]),
        ("render again", ["render", "."]),
    ):
        code, seconds, peak, output = measure(args, root)
        if code != 0:
            raise SystemExit(f"{label} of {kernels} kernels failed ({code}):\n{output}")
        results[label] = (code, seconds, peak)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 10000])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nixgen-scale-") as work:
        print(f"{'kernels':>8}  {'command':<13} {'seconds':>8}  {'peak RSS':>10}")
        for kernels in args.sizes:
            for label, (_, seconds, peak) in probe(kernels, Path(work)).items():
                print(f"{kernels:>8}  {label:<13} {seconds:>8.2f}  {peak / 1024:>7.1f} MiB")


if __name__ == "__main__":
    main()
