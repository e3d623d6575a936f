"""A fake `nix` for the tests of the verbs that run Nix (`build`, `shell`, `test`, `check`):
an executable on PATH that records its calls and replays internal-json logs from a scenario
(so those tests are fast and need no Nix), the logs' events, the `fake_nix` and `demo`
fixtures (import them into a test module to use them), and a pseudo-terminal runner."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nixgen.app import scaffold
from nixgen.building.nixbuild import host_system
from nixgen.checking import project
from nixgen.planning import variants as variants_mod

from .conftest import REPO
from .tiers import starts_processes

HASH = "0" * 32
KERNEL_DRV = f"/nix/store/{HASH}-relu-demo-relu_cpu-1.drv"
EXT_DRV = f"/nix/store/{'1' * 32}-relu-demo-torch-ext-1.drv"
SYSTEM = host_system()


def event(**fields: Any) -> str:
    return "@nix " + json.dumps(fields)


def start(id_: int, drv: str) -> str:
    return event(
        action="start", id=id_, level=3, type=105, fields=[drv, "", 1, 1], text=f"building '{drv}'"
    )


def log(id_: int, text: str) -> str:
    return event(action="result", id=id_, type=101, fields=[text])


def stop(id_: int) -> str:
    return event(action="stop", id=id_)


def nix_error(message: str) -> str:
    return event(action="msg", level=0, msg=f"\x1b[31;1merror:\x1b[0m {message}")


SUCCESS = [
    event(action="msg", level=1, msg="warning: not writing modified lock file"),
    start(1, KERNEL_DRV),
    log(1, "Running phase: buildPhase"),
    stop(1),
    start(2, EXT_DRV),
    log(2, "Running phase: installPhase"),
    stop(2),
]
FAILURE = [
    start(1, KERNEL_DRV),
    *(log(1, f"step {i}") for i in range(10)),
    log(1, "relu_cpu/relu_cpu.cpp:3:9: \x1b[01;31merror:\x1b[0m expected ';'"),
    nix_error(f"builder for '{KERNEL_DRV}' failed with exit code 1"),
    stop(1),
    nix_error(f"1 dependencies of derivation '{EXT_DRV}' failed to build"),
]

FAKE_NIX = """\
#!{python}
# A stand-in `nix`: `eval` prints one drvPath per variant named in --apply; `build` of
# drvs' outputs (`DRV^*`) replays each variant's scenario (then starts and stops the
# variant's own drv); `build --max-jobs 0 --out-link L -- DRV^*` links an output that
# exists. `--version` and
# `show-config` (what nixgen checks first, not recorded) answer a Nix 2.24 with the sandbox
# on, or the scenario's "@version" and "@sandbox".
import json, os, re, sys, time
from pathlib import Path

args = sys.argv[1:]
root = Path(os.environ["FAKE_NIX_DIR"])
scenario = json.loads((root / "scenario.json").read_text())
if args[:1] == ["--version"]:
    print(scenario.get("@version", "nix (Nix) 2.24.9"))
    sys.exit(0)
if args[:1] == ["show-config"] or args[:2] == ["config", "show"]:
    print("sandbox = " + scenario.get("@sandbox", "true"))
    sys.exit(0)
ref = next((a.split("#", 1)[0] for a in args if "#" in a), None)
flake = Path(os.getcwd()) / ref if ref else None
with open(root / "calls.jsonl", "a") as calls:
    record = {{"args": args, "cwd": os.getcwd()}}
    record["flake_nix"] = bool(flake and (flake / "flake.nix").is_file())
    calls.write(json.dumps(record) + "\\n")

def drv(variant):
    return f"/nix/store/{{'2' * 32}}-{{variant}}.drv"

def variant_of(path):
    return path.rsplit("/", 1)[-1].split("-", 1)[1].removesuffix(".drv")

def event(**fields):
    sys.stderr.write("@nix " + json.dumps(fields) + "\\n")
    sys.stderr.flush()

if args[0] == "eval":
    case = scenario.get("@eval", {{"stderr": [], "exit": 0}})
    for line in case["stderr"]:
        sys.stderr.write(line + "\\n")
    if case["exit"] == 0:
        variants = re.findall(r'"([^"]+)"', args[args.index("--apply") + 1])
        print(json.dumps([drv(v) for v in variants]))
    sys.exit(case["exit"])

# Installables as Nix reads them: `DRV^*` (2.13 and later) is DRV's outputs; a bare
# `…drv` is those outputs on Nix before 2.15 and the derivation file itself from 2.15 on
# (already valid: nothing is built, and a link points at the .drv file).
found = re.search(r"([0-9]+)[.]([0-9]+)", scenario.get("@version", "nix (Nix) 2.24.9"))
version = (int(found[1]), int(found[2]))
positional = args[args.index("--") + 1 :] if "--" in args else []
for a in positional:
    if "^" in a and version < (2, 13):
        event(action="msg", level=0, msg=f"error: '{{a}}' is not a valid URL")
        sys.exit(1)
drvs = [a[:-2] for a in positional if a.endswith(".drv^*")]
drvs += [a for a in positional if a.endswith(".drv") and version < (2, 15)]
files = [a for a in positional if a.endswith(".drv") and version >= (2, 15)]
if "--out-link" in args:
    if files:
        out = root / "store" / (variant_of(files[0]) + ".drv")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("Derive(...)")
    else:
        out = root / "store" / variant_of(drvs[0])
    if not out.exists():
        event(action="msg", level=0, msg="error: unable to start any build")
        sys.exit(1)
    link = Path(args[args.index("--out-link") + 1])
    if link.is_symlink():
        link.unlink()
    link.symlink_to(out)
    sys.exit(0)

failed = False
for index, path in enumerate(drvs):
    variant = variant_of(path)
    case = scenario.get(variant, scenario.get("*"))
    for line in case["stderr"]:
        if line.startswith("@nix "):
            fields = json.loads(line[5:])
            if "id" in fields:
                fields["id"] += 1000 * index
            line = "@nix " + json.dumps(fields)
        sys.stderr.write(line + "\\n")
        sys.stderr.flush()
        time.sleep(case.get("delay", 0))
    if case["exit"] == 0:
        event(action="start", id=999 + 1000 * index, type=105, fields=[path, "", 1, 1])
        out = root / "store" / variant
        out.mkdir(parents=True, exist_ok=True)
        (out / "metadata.json").write_text("{{}}")
        event(action="stop", id=999 + 1000 * index)
        continue
    failed = True
    message = f"error: 1 dependencies of derivation '{{path}}' failed to build"
    event(action="msg", level=0, msg=message)
    if "--keep-going" not in args:
        break
if failed:
    sys.exit(1)
outputs = [{{"out": str(root / "store" / variant_of(d))}} for d in drvs]
results = [{{"drvPath": d, "outputs": o}} for d, o in zip(drvs, outputs)]
print(json.dumps(results + [{{"path": f}} for f in files]))
"""


class FakeNix:
    def __init__(self, directory: Path):
        self.dir = directory

    def scenario(self, **cases: Any) -> None:
        (self.dir / "scenario.json").write_text(json.dumps(cases))

    def calls(self) -> list[dict[str, Any]]:
        path = self.dir / "calls.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
@starts_processes
def fake_nix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeNix:
    directory = tmp_path / "fake-nix"
    (directory / "bin").mkdir(parents=True)
    script = directory / "bin" / "nix"
    script.write_text(FAKE_NIX.format(python=sys.executable))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{directory / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NIX_DIR", str(directory))
    fake = FakeNix(directory)
    fake.scenario(**{"*": {"stderr": SUCCESS, "exit": 0}})
    return fake


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    root = tmp_path / "relu-demo"
    scaffold.create(root, "relu-demo", ["cpp-cpu"])
    return root


def bundled(root: Path, system: str = SYSTEM) -> list[str]:
    build = project.read(root).build
    return [v.name for v in variants_mod.variants(build, system=system) if v.bundle]


def calls_of(fake: FakeNix, kind: str) -> list[list[str]]:
    """The argument lists of the fake's calls: `eval`, `build` (of drvs) or `link`."""
    out = []
    for call in fake.calls():
        args = call["args"]
        is_link = "--out-link" in args
        if (kind == "eval" and args[0] == "eval") or (
            args[0] == "build" and (kind == "link") == is_link and kind != "eval"
        ):
            out.append(args)
    return out


def drv(variant: str) -> str:
    return f"/nix/store/{'2' * 32}-{variant}.drv"


def outputs(variant: str) -> str:
    """The installable nixgen gives a Nix 2.13 or newer (the fake's 2.24) for the outputs
    of `variant`'s derivation: ``DRV^*``."""
    return drv(variant) + "^*"


def run_in_pty(args: list[str], env: dict[str, str], timeout: float = 60) -> tuple[int, str]:
    """Run `args` with a pseudo-terminal as stdin, stdout and stderr; return its output."""
    master, slave = pty.openpty()
    process = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], timeout)
            if not ready:
                process.kill()
                raise TimeoutError(f"no output for {timeout}s")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    return process.wait(timeout=timeout), b"".join(chunks).decode("utf-8", "replace")


def nixgen(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`nixgen ARGS` as a process (its real stdout, stderr and exit status)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("NIXGEN_")}
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), base.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "nixgen", *args],
        cwd=cwd,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
