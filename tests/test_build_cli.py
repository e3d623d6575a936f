"""`nixgen build`: renders when stale, runs `nix build` per variant, shows progress and
failures. A fake `nix` on PATH replays internal-json logs, so these tests are fast and run
without Nix; the real builds are in test_init.py (and one real failure below)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from nixgen import plan, project, scaffold
from nixgen.cli import main, use_color
from nixgen.commands.build import _label, host_system
from nixgen.nixlog import NixLog, drv_name

from . import nixtools
from .conftest import REPO

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
import json, os, sys, time
from pathlib import Path

args = sys.argv[1:]
root = Path(os.environ["FAKE_NIX_DIR"])
installable = next(a for a in args if "#" in a)
flake = Path(installable.split("#", 1)[0])
with open(root / "calls.jsonl", "a") as calls:
    calls.write(json.dumps({{"args": args, "flake_nix": (flake / "flake.nix").is_file()}}) + "\\n")
variant = installable.rsplit(".", 1)[-1]
scenario = json.loads((root / "scenario.json").read_text())
case = scenario.get(variant, scenario.get("*"))
for line in case["stderr"]:
    sys.stderr.write(line + "\\n")
    sys.stderr.flush()
    time.sleep(case.get("delay", 0))
if case["exit"] == 0:
    out = root / "store" / variant
    out.mkdir(parents=True, exist_ok=True)
    (out / "metadata.json").write_text("{{}}")
    if "--out-link" in args:
        link = Path(args[args.index("--out-link") + 1])
        if link.is_symlink():
            link.unlink()
        link.symlink_to(out)
    print(json.dumps([{{"drvPath": "/nix/store/x.drv", "outputs": {{"out": str(out)}}}}]))
sys.exit(case["exit"])
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
    return [v.name for v in plan.variants(build, system=system) if v.bundle]


# ------------------------------------------------------------------------ log parsing


def test_nixlog_follows_builds_and_keeps_their_logs():
    state = NixLog(clock=iter(range(100)).__next__)
    changes = [state.feed(line) for line in SUCCESS]
    kinds = [(c[0], c[1].name) for c in changes if c]
    assert kinds == [
        ("start", "relu-demo-relu_cpu-1"),
        ("stop", "relu-demo-relu_cpu-1"),
        ("start", "relu-demo-torch-ext-1"),
        ("stop", "relu-demo-torch-ext-1"),
    ]
    assert state.running() == []
    assert list(state.builds[1].log) == ["Running phase: buildPhase"]
    assert state.failure_report(10) == []


def test_nixlog_reports_the_failing_derivation_with_its_log_tail():
    state = NixLog()
    for line in FAILURE:
        state.feed(line)
    assert state.failed_drvs() == [KERNEL_DRV]
    assert state.builds[1].failed
    report = state.failure_report(3)
    assert report[0] == "--- last 3 log lines of relu-demo-relu_cpu-1 ---"
    assert report[1:4] == ["step 8", "step 9", "relu_cpu/relu_cpu.cpp:3:9: error: expected ';'"]
    assert report[4] == f"--- (full log: nix log {KERNEL_DRV})"
    assert report[5] == f"error: builder for '{KERNEL_DRV}' failed with exit code 1"
    assert not any("\x1b" in line for line in report)


def test_nixlog_keeps_an_evaluation_error_and_stray_lines():
    state = NixLog()
    state.feed("not json at all")
    state.feed("@nix {broken")
    state.feed(nix_error("attribute 'torch999' missing"))
    assert state.failure_report(5) == ["error: attribute 'torch999' missing"]
    assert state.other == ["not json at all", "@nix {broken"]


def test_derivation_names_and_labels():
    assert drv_name(KERNEL_DRV) == "relu-demo-relu_cpu-1"
    label = lambda name: _label(name, "relu-demo", "1", ["relu_cpu", "relu_rs"])  # noqa: E731
    assert label("relu-demo-relu_cpu-1") == "kernel relu_cpu"
    assert label("relu-demo-relu_rs-1") == "kernel relu_rs"
    assert label("relu-demo-torch-ext-1") == "extension"
    assert label("source") == "source"


def test_host_system_is_a_nix_system():
    assert re.fullmatch(r"(x86_64|aarch64|[a-z0-9_]+)-(linux|darwin|[a-z]+)", SYSTEM)


# ------------------------------------------------------------------------------ the verb


def test_renders_when_stale_then_builds_each_bundled_variant(runner, fake_nix, demo):
    variants = bundled(demo)
    assert variants
    result = runner.invoke(main, ["build", str(demo), "--override-input", "nixpkgs", "path:/stub"])
    assert result.exit_code == 0, result.output
    assert "rendered nix/" in result.output
    assert (demo / "nix" / "project.nix").is_file()
    calls = fake_nix.calls()
    assert [c["args"][c["args"].index("--json") + 1] for c in calls] == [
        f"{demo.resolve()}#packages.{SYSTEM}.{v}" for v in variants
    ]
    assert all(c["flake_nix"] for c in calls), "the flake was rendered before nix ran"
    first = calls[0]["args"]
    assert first[0] == "build"
    assert "--log-format" in first and first[first.index("--log-format") + 1] == "internal-json"
    i = first.index("--override-input")
    assert first[i : i + 3] == ["--override-input", "nixpkgs", "path:/stub"]
    for index, name in enumerate(variants, start=1):
        assert f"[{index}/{len(variants)}] {name}: building kernel relu_cpu" in result.output
        assert f"[{index}/{len(variants)}] {name}: built extension (" in result.output
        assert f"[{index}/{len(variants)}] {name}: done in" in result.output
        assert (demo / "build" / name / "metadata.json").is_file()
    assert f"built {len(variants)} of {len(variants)} variant(s)" in result.output

    again = runner.invoke(main, ["build", str(demo), "--variant", variants[0]])
    assert again.exit_code == 0, again.output
    assert "rendered" not in again.output
    assert len(fake_nix.calls()) == len(variants) + 1


def test_chosen_variants_only(runner, fake_nix, demo):
    name = bundled(demo)[-1]
    result = runner.invoke(main, ["build", str(demo), "--variant", name, "--variant", name])
    assert result.exit_code == 0, result.output
    assert len(fake_nix.calls()) == 1
    assert "[1/1]" in result.output


def test_a_failure_ends_with_the_log_tail_and_stops(runner, fake_nix, demo):
    variants = bundled(demo)
    fake_nix.scenario(**{"*": {"stderr": FAILURE, "exit": 1}})
    result = runner.invoke(main, ["build", str(demo), "--log-lines", "2"])
    assert result.exit_code == 1
    assert len(fake_nix.calls()) == 1
    out = result.output
    assert f"[1/{len(variants)}] {variants[0]}: kernel relu_cpu failed" in out
    assert "--- last 2 log lines of relu-demo-relu_cpu-1 ---\nstep 9\n" in out
    assert "relu_cpu.cpp:3:9: error: expected ';'" in out
    assert f"nix log {KERNEL_DRV}" in out
    assert f"failed: {variants[0]}" in out
    assert "step 8" not in out


def test_keep_going_builds_the_others(runner, fake_nix, demo):
    variants = bundled(demo)
    if len(variants) < 2:
        pytest.skip("needs two variants")
    fake_nix.scenario(
        **{variants[0]: {"stderr": FAILURE, "exit": 1}, "*": {"stderr": SUCCESS, "exit": 0}}
    )
    result = runner.invoke(main, ["build", str(demo), "--keep-going"])
    assert result.exit_code == 1
    assert len(fake_nix.calls()) == len(variants)
    assert f"built {len(variants) - 1} of {len(variants)} variant(s)" in result.output
    assert (demo / "build" / variants[1]).is_symlink()


def test_an_evaluation_error_is_shown(runner, fake_nix, demo):
    fake_nix.scenario(**{"*": {"stderr": [nix_error("attribute 'x' missing")], "exit": 1}})
    result = runner.invoke(main, ["build", str(demo), "--variant", bundled(demo)[0]])
    assert result.exit_code == 1
    assert "error: attribute 'x' missing" in result.output


def test_an_unknown_variant_lists_the_valid_ones_and_runs_nothing(runner, fake_nix, demo):
    result = runner.invoke(main, ["build", str(demo), "--variant", "torch999-cpu"])
    assert result.exit_code == 2
    assert "unknown variant `torch999-cpu`" in result.output
    assert bundled(demo)[0] in result.output
    assert fake_nix.calls() == []


def test_other_system(runner, fake_nix, demo):
    result = runner.invoke(main, ["build", str(demo), "--system", "aarch64-linux"])
    assert result.exit_code == 0, result.output
    installables = [c["args"][c["args"].index("--json") + 1] for c in fake_nix.calls()]
    assert installables
    assert all("#packages.aarch64-linux." in i for i in installables)
    assert all(i.endswith("aarch64-linux") for i in installables)


def test_no_link(runner, fake_nix, demo):
    result = runner.invoke(main, ["build", str(demo), "--no-link"])
    assert result.exit_code == 0, result.output
    assert all("--no-link" in c["args"] for c in fake_nix.calls())
    assert not (demo / "build").exists()


def test_dry_run_writes_and_runs_nothing(runner, fake_nix, demo):
    result = runner.invoke(
        main, ["build", str(demo), "--dry-run", "--override-input", "nixpkgs", "path:/my stub"]
    )
    assert result.exit_code == 0, result.output
    assert "would render nix/" in result.output
    assert "--override-input nixpkgs 'path:/my stub'" in result.output
    assert fake_nix.calls() == []
    assert not (demo / "nix").exists()
    as_json = runner.invoke(main, ["build", str(demo), "--dry-run", "--json"])
    plan_ = json.loads(as_json.stdout)
    assert [v["name"] for v in plan_["variants"]] == bundled(demo)
    assert plan_["variants"][0]["command"][:2] == ["nix", "build"]
    assert "build.toml" not in plan_["render"]
    assert "flake.nix" in plan_["render"]


def test_json_needs_dry_run(runner, demo):
    result = runner.invoke(main, ["build", str(demo), "--json"])
    assert result.exit_code == 2


def test_without_nix_on_path(runner, demo, tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = runner.invoke(main, ["build", str(demo)])
    assert result.exit_code == 1
    assert "`nix` is not on PATH" in result.output


def test_invalid_project_is_exit_2(runner, fake_nix, tmp_path):
    (tmp_path / "build.toml").write_text('[general]\nname = "x"\n')
    result = runner.invoke(main, ["build", str(tmp_path)])
    assert result.exit_code == 2
    assert fake_nix.calls() == []


# ---------------------------------------------------------------- terminal and colour


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


def cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "from nixgen.cli import main; main(prog_name='nixgen')", *args]


def env_for(fake: FakeNix, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return {**env, **extra}


SLOW = [start(1, KERNEL_DRV), stop(1), start(2, EXT_DRV), stop(2)]


def test_terminal_gets_a_live_status_line_and_colour(fake_nix, demo):
    fake_nix.scenario(**{"*": {"stderr": SLOW, "exit": 0, "delay": 0.3}})
    code, out = run_in_pty(
        cli("build", str(demo), "--variant", bundled(demo)[0]), env_for(fake_nix)
    )
    assert code == 0, out
    assert "\r\x1b[K" in out
    assert re.search(r"\[1/1\] \S+: kernel relu_cpu · 0:0\d \(total 0:0\d\)", out)
    assert "\x1b[32mdone\x1b[0m" in out


def test_no_color_keeps_the_status_line_but_drops_colour(fake_nix, demo):
    fake_nix.scenario(**{"*": {"stderr": SLOW, "exit": 0, "delay": 0.3}})
    env = env_for(fake_nix, NO_COLOR="1")
    code, out = run_in_pty(cli("build", str(demo), "--variant", bundled(demo)[0]), env)
    assert code == 0, out
    assert "\r\x1b[K" in out
    assert not re.search(r"\x1b\[[0-9;]*m", out)


def test_not_a_terminal_gets_plain_lines(fake_nix, demo):
    done = subprocess.run(
        cli("build", str(demo), "--variant", bundled(demo)[0]),
        env=env_for(fake_nix),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout + done.stderr
    assert "\r" not in done.stderr
    assert "building kernel relu_cpu" in done.stderr


class _Stream:
    def __init__(self, tty: bool):
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_use_color_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color(_Stream(True))
    assert not use_color(_Stream(False))
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color(_Stream(True))
    monkeypatch.setenv("NO_COLOR", "")
    assert not use_color(_Stream(True)), "NO_COLOR set to anything, even empty, disables colour"


# ------------------------------------------------------------------- one real failure

BROKEN_TOML = """\
[general]
name = "broken"
version = 1
edition = 6
license = "Apache-2.0"
backends = ["cpu"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.oops]
language = "cpp-cpu"
src = ["oops/oops.cpp"]
"""


@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
@pytest.mark.build
def test_a_real_compile_error_shows_the_compiler_message(runner, tmp_path, monkeypatch):
    root = tmp_path / "broken"
    (root / "oops").mkdir(parents=True)
    (root / "torch-ext" / "broken").mkdir(parents=True)
    (root / "build.toml").write_text(BROKEN_TOML)
    (root / "oops" / "oops.cpp").write_text(
        textwrap.dedent("""\
            int answer() {
              return 42 +;
            }
        """)
    )
    (root / "torch-ext" / "torch_binding.cpp").write_text("// never compiled\n")
    (root / "torch-ext" / "broken" / "__init__.py").write_text("")
    stub = nixtools.make_stub(tmp_path)
    monkeypatch.setenv("NIX_CONFIG", nixtools.NIX_CONFIG)
    variant = next(n for n in bundled(root) if n.startswith("torch213"))
    result = runner.invoke(
        main,
        ["build", str(root), "--variant", variant, *nixtools.overrides(stub)],
    )
    assert result.exit_code == 1, result.output
    assert "kernel oops failed" in result.output
    assert "log lines of broken-oops-1 ---" in result.output
    assert re.search(r"oops/oops\.cpp:2:\d+: error: expected primary-expression", result.output)
    assert "nix log /nix/store/" in result.output
