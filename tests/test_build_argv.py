"""`nixgen build` and the commands it runs: a value read from an evaluation or a log is
data, never an option of Nix; links go only where the project says; what is printed is
true (no "done" before a failure, duplicates counted once); Ctrl-C always ends it.

A fake `nix` on PATH stands in for Nix: `eval` prints the drvPaths the test chose,
`build` parses its options as Nix does (`--post-build-hook PATH` runs PATH after the
build, as Nix runs a hook as root; `--` ends the options) and replays a log.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from nixgen.building import nixbuild, process

from .conftest import REPO
from .fake_nix_argv import build, drv, event
from .fake_nix_argv import demo as demo  # a fixture
from .fake_nix_argv import fake as fake  # a fixture
from .fakenix import bundled

pytestmark = pytest.mark.slow  # starts processes (tests/tiers.py)

# ------------------------------------------------------------- evaluation is data


def test_the_hook_probe_an_option_like_drv_path_runs_nothing(runner, fake, demo, tmp_path):
    """A flake whose drvPaths are `--post-build-hook` and a script: the script must not
    run (Nix would run it as root), and the build fails saying why."""
    variants = bundled(demo)
    assert len(variants) >= 2
    ran = tmp_path / "hook-ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {ran}\n")
    hook.chmod(0o755)
    fake.evaluates_to(["--post-build-hook", str(hook), *map(drv, variants[2:])])
    result = build(runner, demo)
    assert not ran.exists(), "the hook script ran"
    assert result.exit_code == 1, result.output
    assert fake.builds() == []
    assert '.drvPath is "--post-build-hook", not a derivation in /nix/store' in result.output
    assert "nothing was built" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "value",
    [
        "/nix/store/not-a-hash-relu.drv",
        f"/nix/store/{'e' * 32}-relu.drv",  # `e` is no digit of Nix's base 32
        f"/tmp/{'3' * 32}-relu.drv",
        f"/nix/store/{'3' * 32}-relu",
        f"/nix/store/{'3' * 32}-relu.drv --option x y",
        42,
    ],
)
def test_a_drv_path_that_is_no_store_derivation_is_refused(runner, fake, demo, value):
    variants = bundled(demo)
    fake.evaluates_to([value, *map(drv, variants[1:])])
    result = build(runner, demo)
    assert result.exit_code == 1, result.output
    assert "not a derivation in /nix/store" in result.output
    assert fake.builds() == []


def test_the_store_in_use_is_the_one_checked(runner, fake, demo, monkeypatch):
    monkeypatch.setenv("NIX_STORE_DIR", "/other/store")
    variants = bundled(demo)
    fake.evaluates_to([drv(v) for v in variants])
    result = build(runner, demo, "--no-link")
    assert result.exit_code == 1
    assert "not a derivation in /other/store" in result.output
    fake.evaluates_to([f"/other/store/{'3' * 32}-{v}.drv" for v in variants])
    assert build(runner, demo, "--no-link").exit_code == 0


def test_every_positional_of_every_nix_command_follows_a_double_dash(runner, fake, demo):
    variants = bundled(demo)
    fake.evaluates_to([drv(v) for v in variants])
    result = build(runner, demo)
    assert result.exit_code == 0, result.output
    calls = fake.calls()
    assert {c[0] for c in calls} == {"eval", "build"}
    for call in calls:
        rest = call[call.index("--") + 1 :]
        assert rest and all(not a.startswith("-") for a in rest), call
        assert not any(a.endswith(".drv") or "#" in a for a in call[: call.index("--")]), call


def test_two_variants_of_one_derivation_are_built_once_and_both_linked(runner, fake, demo):
    variants = bundled(demo)[:2]
    same = drv("shared")
    fake.evaluates_to([same, same])
    args = [a for v in variants for a in ("--variant", v)]
    result = build(runner, demo, *args)
    assert result.exit_code == 0, result.output
    [call] = fake.builds()
    assert call.count(same + "^*") == 1
    assert f"variants {', '.join(variants)} are the same derivation" in result.output
    for name in variants:
        assert (demo / "build" / name).is_symlink(), name
    assert "built 2 of 2 variant(s)" in result.output


# ---------------------------------------------------------------- the truth, live


def test_a_failed_variant_is_never_printed_done(runner, fake, demo):
    """Nix 2.8's order (seen on a real `nix build --keep-going` of one failing and one
    good derivation): both top-level builds stop at the very end, and the failure is
    reported after the stops. The stop alone is no "done"."""
    variants = bundled(demo)[:2]
    bad, good = drv(variants[0], "4"), drv(variants[1], "5")
    fake.evaluates_to([bad, good])
    counts = {"action": "result", "id": 7, "type": 105}
    fake.log(
        event(action="start", id=7, type=104, fields=[]),
        event(action="start", id=1, type=105, fields=[bad, "", 1, 1]),
        event(**counts, fields=[0, 2, 1, 0]),
        event(**counts, fields=[0, 1, 0, 1]),
        event(action="start", id=2, type=105, fields=[good, "", 1, 1]),
        event(**counts, fields=[1, 1, 0, 1]),
        event(action="stop", id=2),
        event(action="stop", id=1),
        event(action="stop", id=7),
        event(action="msg", level=0, msg=f"error: builder for '{bad}' failed with exit code 3"),
        exit=1,
    )
    for extra in ([], ["--no-link"]):
        args = ["--keep-going", "--variant", variants[0], "--variant", variants[1], *extra]
        result = build(runner, demo, *args)
        assert result.exit_code == 1, result.output
        assert f"{variants[0]}: done" not in result.output
        assert f"{variants[1]}: done" in result.output
        assert "built 1 of 2 variant(s)" in result.output
        assert f"failed: {variants[0]}" in result.output
        assert result.output.index(f"{variants[1]}: done") < result.output.index("error: builder")


def test_two_ctrl_c_end_a_build_whose_nix_ignores_sigterm(fake, demo, tmp_path):
    variants = bundled(demo)
    fake.evaluates_to([drv(v) for v in variants])
    (fake.dir / "ignore-signals").write_text("")
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "PYTHONPATH": str(REPO),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "nixgen", "build", str(demo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,  # the test's Ctrl-C reaches nixgen alone, not the fake
    )
    try:
        deadline = time.monotonic() + 60
        while not (fake.dir / "build-started").exists():
            assert time.monotonic() < deadline and process.poll() is None, "build never started"
            time.sleep(0.05)
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=8)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail("nixgen build waited for a Nix that ignores SIGTERM")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, out
    assert b"Traceback" not in out


def test_stop_kills_after_the_grace_period(monkeypatch):
    monkeypatch.setattr(process, "STOP_GRACE", 0.2)
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal,time; signal.signal(signal.SIGTERM, "
            "signal.SIG_IGN); print(flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        start_new_session=True,  # as `process.run` starts every command
    )
    assert child.stdout is not None
    child.stdout.readline()
    started = time.monotonic()
    process.stop(child)
    assert child.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 5


# ----------------------------------------------------------------------- the links


def test_a_link_directory_that_is_a_link_out_of_the_project_is_refused(
    runner, fake, demo, tmp_path
):
    outside = tmp_path / "outside"
    outside.mkdir()
    (demo / "build").symlink_to(outside)
    fake.evaluates_to([drv(v) for v in bundled(demo)])
    result = build(runner, demo)
    assert result.exit_code == 2, result.output
    assert "--out-link: `build` is a symbolic link" in result.output
    assert "--out-link" in result.output
    assert list(outside.iterdir()) == []
    assert fake.calls() == []


def test_an_out_link_leaving_the_project_through_dot_dot_is_refused(runner, fake, demo, tmp_path):
    fake.evaluates_to([drv(v) for v in bundled(demo)])
    result = build(runner, demo, "--out-link", "../elsewhere")
    assert result.exit_code == 2, result.output
    assert "leads out of the project with `..`" in result.output
    assert not (tmp_path / "elsewhere").exists()


def test_a_hand_written_file_where_a_link_goes_is_a_clear_error(runner, fake, demo):
    variants = bundled(demo)
    (demo / "build").mkdir()
    (demo / "build" / variants[0]).write_text("my notes\n")
    fake.evaluates_to([drv(v) for v in variants])
    result = build(runner, demo)
    assert result.exit_code == 2, result.output
    assert f"build/{variants[0]}: is a file, not a link to a build" in result.output
    assert "failed" not in result.output
    assert (demo / "build" / variants[0]).read_text() == "my notes\n"
    assert fake.builds() == []


REAL_EVAL = """\
#!{python}
import os, sys
if sys.argv[1] == "eval":
    os.execv({real!r}, [{real!r}, *sys.argv[1:]])
os.execv({fake!r}, [{fake!r}, *sys.argv[1:]])
"""


@pytest.mark.skipif(shutil.which("nix") is None, reason="nix is not installed")
def test_the_hook_probe_with_a_real_evaluation(runner, fake, demo, tmp_path, monkeypatch):
    """The same probe, the drvPaths evaluated by the real Nix from a hand-written
    flake.nix (only `nix build` is the fake, which runs a hook as Nix would)."""
    from . import nixtools

    real = shutil.which("nix", path=os.environ["PATH"].split(os.pathsep, 1)[1])
    assert real is not None
    variants = bundled(demo)[:2]
    ran = tmp_path / "hook-ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {ran}\n")
    hook.chmod(0o755)
    fake_nix = fake.dir / "bin" / "nix"
    fake_nix.rename(fake.dir / "bin" / "fake-nix")
    fake_nix.write_text(
        REAL_EVAL.format(python=sys.executable, real=real, fake=str(fake.dir / "bin" / "fake-nix"))
    )
    fake_nix.chmod(0o755)
    monkeypatch.setenv("NIX_CONFIG", nixtools.NIX_CONFIG)
    system = nixbuild.host_system()
    (demo / "flake.nix").write_text(
        "{ outputs = { self }: { packages." + system + " = {\n"
        f'  "{variants[0]}" = {{ drvPath = "--post-build-hook"; }};\n'
        f'  "{variants[1]}" = {{ drvPath = "{hook}"; }};\n'
        "}; }; }\n"
    )
    args = [a for v in variants for a in ("--variant", v)]
    result = build(runner, demo, *args)
    assert not ran.exists(), "the hook script ran"
    assert result.exit_code == 1, result.output
    assert '.drvPath is "--post-build-hook", not a derivation in /nix/store' in result.output
    assert fake.builds() == []


def test_a_failure_nix_ties_to_no_derivation_prints_no_variant_done(runner, fake, demo):
    variants = bundled(demo)[:1]
    target = drv(variants[0], "7")
    fake.evaluates_to([target])
    fake.log(
        event(action="start", id=1, type=105, fields=[target, "", 1, 1]),
        event(action="stop", id=1),
        event(action="msg", level=0, msg="error: unexpected end-of-file"),
        exit=1,
    )
    result = build(runner, demo, "--variant", variants[0])
    assert result.exit_code == 1, result.output
    assert f"{variants[0]}: done" not in result.output
    assert f"failed: {variants[0]}" in result.output
