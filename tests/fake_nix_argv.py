"""The fake `nix` of the tests of what `nixgen build` runs (test_build_argv.py and the
project-boundary and untrusted-input tests): `eval` prints the drvPaths the test chose,
`build` parses its options as Nix 2.24 does (`--post-build-hook PATH` runs PATH after the
build, `--` ends the options, `DRV^*` names DRV's outputs and a bare `DRV` the derivation
file, which builds nothing) and replays a log; with the `fake` and `demo` fixtures."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from nixgen.app import scaffold
from nixgen.cmdline.cli import main

from .tiers import starts_processes

FAKE = """\
#!{python}
import json, os, signal, sys, time
from pathlib import Path

root = Path(os.environ["ARGV_FAKE_DIR"])
args = sys.argv[1:]
# What nixgen checks first (nixcheck, not recorded): a Nix 2.24 with the sandbox on.
if args[:1] == ["--version"]:
    print("nix (Nix) 2.24.9")
    sys.exit(0)
if args[:1] == ["show-config"] or args[:2] == ["config", "show"]:
    print("sandbox = true")
    sys.exit(0)
with open(root / "calls.jsonl", "a") as calls:
    calls.write(json.dumps(args) + "\\n")

def event(**fields):
    sys.stderr.write("@nix " + json.dumps(fields) + "\\n")
    sys.stderr.flush()

if args[0] == "eval":
    print((root / "eval.json").read_text())
    sys.exit(0)
# Nix's option parser: options until `--`, then positionals.
hook, positional, i = None, [], 1
while i < len(args):
    if args[i] == "--":
        positional += args[i + 1 :]
        break
    if args[i] == "--post-build-hook":
        hook = args[i + 1]
        i += 2
        continue
    if args[i].startswith("--post-build-hook="):
        hook = args[i].split("=", 1)[1]
    if not args[i].startswith("-"):
        positional.append(args[i])
    i += 1
# Nix 2.24: `DRV^*` is DRV's outputs; a bare `…drv` is the derivation file itself, already
# valid, so nothing is built (and a link points at the file).
after = args[args.index("--") + 1 :] if "--" in args else []
built = [a[:-2] for a in after if a.endswith(".drv^*")]
files = [a for a in after if not a.endswith(".drv^*")]
if "--out-link" in args:
    link = Path(args[args.index("--out-link") + 1])
    if link.is_symlink():
        link.unlink()
    if files:
        (root / "a.drv").write_text("Derive(...)")
    link.symlink_to(root / "a.drv" if files else root)
    sys.exit(0)
if not built:
    print(json.dumps([{{"path": f}} for f in files]))
    sys.exit(0)
(root / "build-started").write_text("")
if (root / "ignore-signals").exists():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        time.sleep(1)
for line in (root / "log.jsonl").read_text().splitlines() if (root / "log.jsonl").exists() else []:
    sys.stderr.write(line + "\\n")
    sys.stderr.flush()
if hook:
    os.system(hook)
code = int((root / "exit").read_text()) if (root / "exit").exists() else 0
if code == 0:
    print(json.dumps([{{"drvPath": d, "outputs": {{"out": str(root)}}}} for d in built]))
sys.exit(code)
"""


def drv(name: str, digit: str = "3") -> str:
    return f"/nix/store/{digit * 32}-{name}.drv"


def event(**fields: Any) -> str:
    return "@nix " + json.dumps(fields)


class Fake:
    def __init__(self, directory: Path):
        self.dir = directory

    def evaluates_to(self, drvs: list[object]) -> None:
        (self.dir / "eval.json").write_text(json.dumps(drvs))

    def log(self, *lines: str, exit: int = 0) -> None:
        (self.dir / "log.jsonl").write_text("".join(line + "\n" for line in lines))
        (self.dir / "exit").write_text(str(exit))

    def calls(self) -> list[list[str]]:
        path = self.dir / "calls.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []

    def builds(self) -> list[list[str]]:
        return [c for c in self.calls() if c[0] == "build" and "--out-link" not in c]


def install_fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Fake:
    """The fake `nix` first on PATH (for this test)."""
    directory = tmp_path / "fake"
    (directory / "bin").mkdir(parents=True)
    script = directory / "bin" / "nix"
    script.write_text(FAKE.format(python=sys.executable))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{directory / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ARGV_FAKE_DIR", str(directory))
    monkeypatch.delenv("NIX_STORE_DIR", raising=False)
    monkeypatch.delenv("NIX_STORE", raising=False)
    return Fake(directory)


def make_demo(tmp_path: Path) -> Path:
    root = tmp_path / "relu-demo"
    scaffold.create(root, "relu-demo", ["cpp-cpu"])
    return root


@pytest.fixture
@starts_processes
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Fake:
    return install_fake(tmp_path, monkeypatch)


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    return make_demo(tmp_path)


def build(runner: Any, demo: Path, *args: str) -> Any:
    return runner.invoke(main, ["build", str(demo), *args])
