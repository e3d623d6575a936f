"""`nixgen build`: renders when stale, runs `nix build` per variant, shows progress and
failures. A fake `nix` on PATH replays internal-json logs, so these tests are fast and run
without Nix; the real builds are in test_init.py (and one real failure below)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from nixgen.app import scaffold
from nixgen.building.nixlog import NixLog, drv_name
from nixgen.checking import project
from nixgen.cmdline.cli import main, use_color
from nixgen.planning import variants

from . import nixtools
from .conftest import REPO
from .fakenix import (
    EXT_DRV,
    FAILURE,
    KERNEL_DRV,
    SUCCESS,
    SYSTEM,
    FakeNix,
    bundled,
    calls_of,
    event,
    log,
    nix_error,
    outputs,
    run_in_pty,
    start,
    stop,
)
from .fakenix import demo as demo  # a fixture
from .fakenix import fake_nix as fake_nix  # a fixture

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


def test_derivation_names():
    """(The labels of derivation names: `Plan.labels`, held to the names the library
    really gives by tests/test_shared_values.py.)"""
    assert drv_name(KERNEL_DRV) == "relu-demo-relu_cpu-1"


@pytest.mark.nix
@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
def test_host_system_is_the_system_nix_builds_for() -> None:
    """`build`'s host system (the variants it builds by default) is Nix's own
    `builtins.currentSystem` on this machine."""
    done = subprocess.run(
        ["nix-instantiate", "--eval", "--json", "--expr", "builtins.currentSystem"],
        env=nixtools.nix_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == SYSTEM


# ------------------------------------------------------------------------------ the verb


def test_renders_when_stale_then_builds_all_bundled_variants_in_one_nix_build(
    runner, fake_nix, demo
):
    variants = bundled(demo)
    assert len(variants) > 1
    result = runner.invoke(main, ["build", str(demo), "--override-input", "nixpkgs", "path:/stub"])
    assert result.exit_code == 0, result.output
    assert "rendered nix/" in result.output
    assert (demo / "nix" / "project.nix").is_file()
    # One evaluation for every variant, from the rendered flake.
    [evaluate] = calls_of(fake_nix, "eval")
    assert f"{demo.resolve()}#packages.{SYSTEM}" in evaluate
    assert evaluate[evaluate.index("--apply") + 1].endswith(
        "[ " + " ".join(f'"{v}"' for v in variants) + " ]"
    )
    i = evaluate.index("--override-input")
    assert evaluate[i : i + 3] == ["--override-input", "nixpkgs", "path:/stub"]
    assert all(c["flake_nix"] for c in fake_nix.calls() if c["args"][0] == "eval")
    # One build of all their derivations, with Nix's JSON log.
    [build] = calls_of(fake_nix, "build")
    assert build[-len(variants) :] == [outputs(v) for v in variants]
    assert build[build.index("--log-format") + 1] == "internal-json"
    assert "--no-link" in build and not any("#" in a for a in build)
    out = result.output
    assert "building kernel relu_cpu" in out
    assert "built extension (" in out
    for name in variants:
        assert re.search(rf"\[\d/{len(variants)}\] {name}: done", out), out
        assert (demo / "build" / name / "metadata.json").is_file()
    assert f"built {len(variants)} of {len(variants)} variant(s)" in out
    # Links point at the built outputs, without building again.
    links = calls_of(fake_nix, "link")
    assert [a[-1] for a in links] == [outputs(v) for v in variants]

    again = runner.invoke(main, ["build", str(demo), "--variant", variants[0]])
    assert again.exit_code == 0, again.output
    assert "rendered" not in again.output
    assert len(calls_of(fake_nix, "eval")) == 2


def test_a_relative_project_path_links_into_the_project(runner, fake_nix, demo, monkeypatch):
    monkeypatch.chdir(demo.parent)
    name = bundled(demo)[0]
    result = runner.invoke(main, ["build", demo.name, "--variant", name])
    assert result.exit_code == 0, result.output
    assert (demo / "build" / name / "metadata.json").is_file()
    assert not (demo / demo.name).exists()


def test_out_renders_and_builds_from_the_chosen_output_directory(runner, fake_nix, demo):
    """`nixgen build --out gen/nix` keeps the project's generated tree where render put it."""
    import shutil

    (demo / "flake.nix").unlink(missing_ok=True)
    shutil.rmtree(demo / "nix", ignore_errors=True)
    name = bundled(demo)[0]
    result = runner.invoke(main, ["build", str(demo), "--out", "gen/nix", "--variant", name])
    assert result.exit_code == 0, result.output
    assert "rendered gen/nix/" in result.output
    assert (demo / "gen" / "nix" / "project.nix").is_file() and not (demo / "nix").exists()
    assert "./gen/nix" in (demo / "flake.nix").read_text()


def test_chosen_variants_only(runner, fake_nix, demo):
    name = bundled(demo)[-1]
    result = runner.invoke(main, ["build", str(demo), "--variant", name, "--variant", name])
    assert result.exit_code == 0, result.output
    [build] = calls_of(fake_nix, "build")
    assert [a for a in build if a.endswith(".drv^*")] == [outputs(name)]
    assert f"[1/1] {name}: done" in result.output


def test_backend_selects_its_variants(runner, fake_nix, tmp_path):
    root = tmp_path / "mixed"
    scaffold.create(root, "mixed", ["cpp-cpu", "cpp-cuda"])
    all_ = bundled(root)
    cpu = [
        v.name
        for v in variants.variants(project.read(root).build, system=SYSTEM)
        if v.bundle and v.backend == "cpu"
    ]
    assert cpu and len(cpu) < len(all_)
    result = runner.invoke(main, ["build", str(root), "--backend", "cpu", "--no-link"])
    assert result.exit_code == 0, result.output
    [build] = calls_of(fake_nix, "build")
    assert [a for a in build if a.endswith(".drv^*")] == [outputs(v) for v in cpu]
    none = runner.invoke(main, ["build", str(root), "--backend", "rocm"])
    assert none.exit_code == 2
    assert "no variants of backend rocm" in none.output
    bad = runner.invoke(main, ["build", str(root), "--backend", "gpu"])
    assert bad.exit_code == 2
    assert "'gpu' is not one of" in bad.output


def test_max_jobs_and_cores_go_to_nix_build(runner, fake_nix, demo):
    result = runner.invoke(main, ["build", str(demo), "--max-jobs", "3", "--cores", "0"])
    assert result.exit_code == 0, result.output
    [build] = calls_of(fake_nix, "build")
    assert build[build.index("--max-jobs") + 1] == "3"
    assert build[build.index("--cores") + 1] == "0"
    assert all(a[a.index("--max-jobs") + 1] == "0" for a in calls_of(fake_nix, "link"))


def test_builders_go_to_nix_build_as_written(runner, fake_nix, demo):
    spec = "ssh-ng://me@big x86_64-linux /k 16 2 big-parallel - -; ssh://other aarch64-linux"
    result = runner.invoke(
        main, ["build", str(demo), "--max-jobs", "0", "--builders", spec, "--no-link"]
    )
    assert result.exit_code == 0, result.output
    [build] = calls_of(fake_nix, "build")
    assert build[build.index("--builders") + 1] == spec
    assert build[build.index("--max-jobs") + 1] == "0"
    as_json = runner.invoke(main, ["build", str(demo), "--dry-run", "--json", "--builders", ""])
    planned = json.loads(as_json.stdout)["result"]["build"]
    assert planned[planned.index("--builders") + 1] == ""  # none, not nix.conf's
    assert (
        "--builders"
        not in json.loads(runner.invoke(main, ["build", str(demo), "--dry-run", "--json"]).stdout)[
            "result"
        ]["build"]
    )
    help_text = runner.invoke(main, ["build", "--help"]).output
    assert "--builders SPEC" in help_text and "Remote builders" in help_text


def test_a_remote_build_is_one_build_on_its_machine():
    """Nix 2.8 logs a build handed to a builder twice: its own activity naming the machine,
    then the builder's, relayed over ssh-ng, without one. Both are one build."""
    remote = event(
        action="start",
        id=1,
        level=3,
        type=105,
        fields=[KERNEL_DRV, "ssh-ng://b", 1, 1],
        text=f"building '{KERNEL_DRV}' on 'ssh-ng://b'",
    )
    nix_log = NixLog()
    changes = [
        nix_log.feed(line)
        for line in [remote, start(2, KERNEL_DRV), log(2, "compiling"), stop(2), stop(1)]
    ]
    assert [c[0] if c else None for c in changes] == ["start", None, None, None, "stop"]
    (build,) = nix_log.builds.values()
    assert build.machine == "ssh-ng://b" and list(build.log) == ["compiling"]
    assert build.finished is not None and not build.failed


def test_a_project_path_with_a_space_is_built_from_its_directory(runner, fake_nix, tmp_path):
    root = tmp_path / "my kernels" / "relu demo"
    scaffold.create(root, "relu-demo", ["cpp-cpu"])
    result = runner.invoke(main, ["build", str(root), "--variant", bundled(root)[0]])
    assert result.exit_code == 0, result.output
    [call] = [c for c in fake_nix.calls() if c["args"][0] == "eval"]
    assert f".#packages.{SYSTEM}" in call["args"]
    assert call["cwd"] == str(root.resolve())
    assert call["flake_nix"]


def test_a_failure_ends_with_the_log_tail_and_stops(runner, fake_nix, demo):
    variants = bundled(demo)
    fake_nix.scenario(**{"*": {"stderr": FAILURE, "exit": 1}})
    result = runner.invoke(main, ["build", str(demo), "--log-lines", "2"])
    assert result.exit_code == 1
    assert len(calls_of(fake_nix, "build")) == 1
    out = result.output
    assert "kernel relu_cpu failed" in out
    assert "--- last 2 log lines of relu-demo-relu_cpu-1 ---\nstep 9\n" in out
    assert "relu_cpu.cpp:3:9: error: expected ';'" in out
    assert f"nix log {KERNEL_DRV}" in out
    assert f"built 0 of {len(variants)} variant(s)" in out
    assert f"failed: {', '.join(variants)}" in out
    assert "step 8" not in out
    assert not (demo / "build").exists() or not any((demo / "build").iterdir())


def test_keep_going_builds_the_others(runner, fake_nix, demo):
    variants = bundled(demo)
    fake_nix.scenario(
        **{variants[0]: {"stderr": FAILURE, "exit": 1}, "*": {"stderr": SUCCESS, "exit": 0}}
    )
    result = runner.invoke(main, ["build", str(demo), "--keep-going"])
    assert result.exit_code == 1
    [build] = calls_of(fake_nix, "build")
    assert "--keep-going" in build
    assert f"built {len(variants) - 1} of {len(variants)} variant(s)" in result.output
    assert f"failed: {variants[0]}" in result.output
    assert (demo / "build" / variants[1]).is_symlink()
    assert not (demo / "build" / variants[0]).exists()


def test_an_evaluation_error_is_shown_and_nothing_is_built(runner, fake_nix, demo):
    fake_nix.scenario(
        **{"@eval": {"stderr": [nix_error("attribute 'x' missing")], "exit": 1}, "*": {}}
    )
    result = runner.invoke(main, ["build", str(demo), "--variant", bundled(demo)[0]])
    assert result.exit_code == 1
    assert "error: attribute 'x' missing" in result.output
    assert "evaluating relu-demo" in result.output
    assert calls_of(fake_nix, "build") == []


def test_an_unknown_variant_lists_the_valid_ones_and_runs_nothing(runner, fake_nix, demo):
    result = runner.invoke(main, ["build", str(demo), "--variant", "torch999-cpu"])
    assert result.exit_code == 2
    assert "unknown variant `torch999-cpu`" in result.output
    assert bundled(demo)[0] in result.output
    assert fake_nix.calls() == []


def test_other_system(runner, fake_nix, demo):
    result = runner.invoke(main, ["build", str(demo), "--system", "aarch64-linux"])
    assert result.exit_code == 0, result.output
    [evaluate] = calls_of(fake_nix, "eval")
    assert f"{demo.resolve()}#packages.aarch64-linux" in evaluate
    assert all(d.endswith("aarch64-linux.drv^*") for d in calls_of(fake_nix, "build")[0][-2:])


def test_no_link(runner, fake_nix, demo):
    result = runner.invoke(main, ["build", str(demo), "--no-link"])
    assert result.exit_code == 0, result.output
    assert calls_of(fake_nix, "link") == []
    assert not (demo / "build").exists()


def test_dry_run_writes_and_runs_nothing(runner, fake_nix, demo):
    result = runner.invoke(
        main, ["build", str(demo), "--dry-run", "--override-input", "nixpkgs", "path:/my stub"]
    )
    assert result.exit_code == 0, result.output
    assert "would render nix/" in result.output
    assert "--override-input nixpkgs 'path:/my stub'" in result.output
    assert "nix build" in result.output
    assert fake_nix.calls() == []
    assert not (demo / "nix").exists()
    as_json = runner.invoke(main, ["build", str(demo), "--dry-run", "--json", "--cores", "2"])
    envelope = json.loads(as_json.stdout)
    assert envelope["version"] == 1 and envelope["command"] == "build" and envelope["ok"]
    plan_ = envelope["result"]
    assert plan_["variants"] == bundled(demo)
    assert plan_["eval"][:2] == ["nix", "eval"]
    assert plan_["build"][:2] == ["nix", "build"]
    assert plan_["build"][plan_["build"].index("--cores") + 1] == "2"
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
    assert result.exit_code == 2
    assert "`nix` is not on PATH" in result.output


def test_invalid_project_is_exit_2(runner, fake_nix, tmp_path):
    (tmp_path / "build.toml").write_text('[general]\nname = "x"\n')
    result = runner.invoke(main, ["build", str(tmp_path)])
    assert result.exit_code == 2
    assert fake_nix.calls() == []


# ---------------------------------------------------------------- terminal and colour


def cli(*args: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from nixgen.cmdline.cli import main; main(prog_name='nixgen')",
        *args,
    ]


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
    assert re.search(r"\[0/1 variants\] kernel relu_cpu \(total 0:0\d\)", out)
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


def test_use_color_follows_the_stream_and_the_environment(monkeypatch):
    for name in ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert use_color(_Stream(True))
    assert not use_color(_Stream(False))
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color(_Stream(True))
    monkeypatch.setenv("NO_COLOR", "")
    assert use_color(_Stream(True)), "an empty NO_COLOR is unset (no-color.org)"
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    assert not use_color(_Stream(True)), "TERM=dumb has no colours"
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert use_color(_Stream(False)), "FORCE_COLOR colours a pipe too"
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color(_Stream(True)), "NO_COLOR wins over FORCE_COLOR"


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
    nixtools.assert_real_nix()  # Nix >= 2.15 "builds" a bare .drv: nothing, exit 0
    variant = next(n for n in bundled(root) if n.startswith("torch213"))
    result = runner.invoke(
        main,
        ["build", str(root), "--variant", variant, *nixtools.overrides(stub)],
    )
    assert result.exit_code == 1, result.output
    assert "kernel oops (torch213-cxx11-cpu-x86_64-linux) failed" in result.output
    assert "log lines of broken-oops-1 ---" in result.output
    assert re.search(r"oops/oops\.cpp:2:\d+: error: expected primary-expression", result.output)
    assert "nix log /nix/store/" in result.output
