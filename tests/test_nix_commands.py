"""The typed Nix command builder (`nixgen.building.nixcommand`) and the verbs that use it.

What a flake evaluates to is data: a drvPath (or any store path) from an evaluation
reaches a command line only as a `Derivation`, checked by the one rule of
`nixcommand.derivation`, and after ``--``. Hostile values (an option such as
``--post-build-hook=…`` or ``-L``, a path outside the store, a ``.drv`` with a newline, a
path climbing out with ``..``) are refused by `build`, `shell --test` and `compdb` alike,
before any ``nix build``; a fake `nix` (tests/fake_nix_argv.py) runs a post-build hook
as Nix would, so a value that got through would be seen. Derivation outputs are named as
the running Nix reads them (``DRV^*`` from 2.13), and Ctrl-C on each verb leaves no Nix
process: a fake `nix` that starts a child and waits is interrupted as a terminal does it
(SIGINT to nixgen's whole foreground group), and its process group must be gone.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nixgen.building import nixbuild, nixcommand
from nixgen.cmdline.cli import main

from .conftest import REPO
from .fake_nix_argv import Fake, drv
from .fake_nix_argv import demo as demo  # a fixture
from .fake_nix_argv import fake as fake  # a fixture
from .fakenix import bundled

HASH = "3" * 32
SYSTEM = nixbuild.host_system()


def hostile(hook: Path) -> list[object]:
    """drvPath values a hand-written flake could evaluate to, none a store derivation."""
    return [
        f"--post-build-hook={hook}",
        "--post-build-hook",
        "-L",
        "--option",
        f"/tmp/{HASH}-relu.drv",  # outside the store
        f"/nix/store/{HASH}-relu.drv\n--post-build-hook={hook}",  # a newline
        f"/nix/store/{HASH}-relu.drv --keep-going",
        f"/nix/store/{HASH}-relu.drv/../../../tmp/x.drv",
        "/nix/store/../../tmp/x.drv",
        f"/nix/store/{HASH}-relu.drv^out",
        f"/nix/store/{HASH}-relu",  # a store path, but no derivation
        f"/nix/store/{'e' * 32}-relu.drv",  # `e` is no digit of Nix's base 32
        f"/nix/store/{HASH}-.hidden.drv",
        f"/nix/store/{HASH}-{'a' * 300}.drv",  # longer than a store name may be
        "",
        42,
        None,
        [f"/nix/store/{HASH}-relu.drv"],
    ]


HOSTILE = len(hostile(Path("/hook.sh")))


@pytest.fixture
def hook(tmp_path: Path) -> tuple[Path, Path]:
    """A hook script and the file it would create if Nix ever ran it."""
    ran = tmp_path / "hook-ran"
    script = tmp_path / "hook.sh"
    script.write_text(f"#!/bin/sh\ntouch {ran}\n")
    script.chmod(0o755)
    return script, ran


# ------------------------------------------------------------------- the one check


def test_the_one_check_of_a_derivation_refuses_every_hostile_value(tmp_path: Path) -> None:
    for value in hostile(tmp_path / "hook.sh"):
        with pytest.raises(nixcommand.NotAStorePath, match="not a derivation in /nix/store"):
            nixcommand.derivation(value)
        assert not nixcommand.is_derivation(value)
        # A typed value checks itself when made: there is no unchecked one.
        with pytest.raises((nixcommand.NotAStorePath, TypeError)):
            nixcommand.Derivation(value)  # type: ignore[arg-type]
    good = f"/nix/store/{HASH}-relu-torch-ext-1.drv"
    assert nixcommand.derivation(good).path == good
    assert nixcommand.store_path(f"/nix/store/{HASH}-gcc-wrapper-14").path.endswith("14")
    with pytest.raises(nixcommand.NotAStorePath, match="not a derivation"):
        nixcommand.derivation(f"/nix/store/{HASH}-gcc-wrapper-14")


@pytest.mark.parametrize(
    "value", ["--post-build-hook=/tmp/x", "nix/store", "/nix/../tmp", "/a b", "/x\n-L"]
)
def test_a_store_directory_from_the_environment_is_checked(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("NIX_STORE_DIR", value)
    with pytest.raises(nixcommand.StoreDirError, match=r"\$NIX_STORE_DIR is .* not a store"):
        nixcommand.derivation(f"{value}/{HASH}-relu.drv")


def test_the_store_in_use_is_the_one_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NIX_STORE_DIR", "/other/store/")
    assert nixcommand.derivation(f"/other/store/{HASH}-x.drv").path.startswith("/other/")
    with pytest.raises(nixcommand.NotAStorePath, match="not a derivation in /other/store"):
        nixcommand.derivation(f"/nix/store/{HASH}-x.drv")


def write_fake_version(tmp_path: Path, version: str) -> Path:
    directory = tmp_path / f"nix-{version}"
    directory.mkdir()
    script = directory / "nix"
    script.write_text(f"#!/bin/sh\necho 'nix (Nix) {version}'\n")
    script.chmod(0o755)
    return directory


@pytest.mark.parametrize(
    ("version", "named"),
    [("2.8.0", "{}"), ("2.12.1", "{}"), ("2.13.0", "{}^*"), ("2.18.8", "{}^*"), ("2.26.3", "{}^*")],
)
@pytest.mark.slow
def test_outputs_are_named_as_the_running_nix_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, named: str
) -> None:
    """A fake `nix` that prints only its version: ``DRV^*`` from 2.13 (2.15 and later
    read a bare ``.drv`` as the file itself), the bare path before (2.8 refuses ``^``)."""
    monkeypatch.setenv("PATH", f"{write_fake_version(tmp_path, version)}:{os.environ['PATH']}")
    target = nixcommand.derivation(f"/nix/store/{HASH}-relu.drv")
    assert nixcommand.outputs_of(target) == named.format(target.path)
    command = nixcommand.build([target], nixcommand.Settings())
    assert command.argv[-2:] == ("--", named.format(target.path))
    assert nixcommand.link(target, tmp_path / "l").argv[-2:] == ("--", named.format(target.path))


@pytest.mark.slow
def test_the_version_is_asked_once_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "counting"
    directory.mkdir()
    count = tmp_path / "count"
    script = directory / "nix"
    script.write_text(f"#!/bin/sh\necho x >> {count}\necho 'nix (Nix) 2.26.3'\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{directory}:{os.environ['PATH']}")
    drvs = [nixcommand.derivation(f"/nix/store/{HASH}-v{i}.drv") for i in range(5)]
    nixcommand.build(drvs, nixcommand.Settings())
    for target in drvs:
        nixcommand.link(target, tmp_path / "l")
    assert nixcommand.nix_version() == (2, 26, 3)
    assert count.read_text().count("x") == 1


@pytest.mark.slow
def test_every_positional_of_every_command_follows_a_double_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{write_fake_version(tmp_path, '2.26.3')}:{os.environ['PATH']}")
    target = nixcommand.derivation(f"/nix/store/{HASH}-relu.drv")
    settings = nixcommand.Settings(
        overrides=(("nixpkgs", "path:/srv/-L"),), options=(("sandbox", "--x"),), offline=True
    )
    shell = nixcommand.installable(tmp_path, "devShells", SYSTEM, "default")
    commands = {
        "eval": nixcommand.eval_drv_paths(tmp_path, SYSTEM, ["a-b"], settings),
        "eval_json": nixcommand.eval_json(shell, "x: x", settings),
        "build": nixcommand.build([target], settings, builders="-L", cache=(("k", "v"),)),
        "link": nixcommand.link(target, tmp_path / "l"),
        "realise": nixcommand.realise([target], settings),
        "develop": nixcommand.develop(shell, settings),
    }
    for name, command in commands.items():
        argv = list(command.argv)
        assert argv[0] == "nix" and "--" in argv, name
        rest = argv[argv.index("--") + 1 :]
        assert len(rest) == 1 and rest[0].startswith(("/", ".")), (name, argv)
    # `nix develop --command` takes every argument after it: the installable comes before
    # it, and it is an `Installable`, whose text starts with `/` or `.`.
    develop = nixcommand.develop(shell, settings, command="pytest -x").argv
    assert develop[-5:] == (str(shell), "--command", "bash", "-c", "pytest -x")
    assert "--" not in develop
    with pytest.raises(ValueError, match="not a flake attribute name"):
        nixcommand.installable(tmp_path, "devShells", SYSTEM, "--option")


@pytest.mark.parametrize("name", ["--post-build-hook", "-L", "a b", "nixpkgs/", "1x"])
def test_an_input_name_that_is_none_is_refused(name: str) -> None:
    with pytest.raises(nixcommand.SettingsError, match="is not a flake input name"):
        nixcommand.Settings(overrides=((name, "path:/x"),))
    assert nixcommand.Settings(overrides=(("kernel-builder/nixpkgs", "path:/x"),))


@pytest.mark.parametrize("ref", ["-L", "--impure", "", "path:/x\n-L", "path:/x\x1b[2J"])
def test_a_reference_that_is_none_is_refused(ref: str) -> None:
    """Nix would take an override's reference as written even when it starts with `-`
    (checked on 2.26.3), but what nixgen passes is held to one rule all the same."""
    with pytest.raises(nixcommand.SettingsError, match="is not a flake reference"):
        nixcommand.Settings(overrides=(("nixpkgs", ref),))


# --------------------------------------------------------- the verbs, hostile flakes


def _no_build(fake: Fake, ran: Path, output: str) -> None:
    assert not ran.exists(), "the hook script ran"
    assert [c for c in fake.calls() if c[0] in ("build", "develop")] == [], fake.calls()
    assert "Traceback" not in output and "internal error" not in output, output


@pytest.mark.parametrize("index", range(HOSTILE))
def test_build_refuses_a_hostile_drv_path(runner, fake, demo, hook, index: int) -> None:
    script, ran = hook
    value = hostile(script)[index]
    variants = bundled(demo)
    fake.evaluates_to([value, *map(drv, variants[1:])])
    result = runner.invoke(main, ["build", str(demo)])
    assert result.exit_code == 1, result.output
    assert f"{variants[0]}.drvPath is " in result.output
    assert (
        "not a derivation in /nix/store" in result.output and "nothing was built" in result.output
    )
    _no_build(fake, ran, result.output)


@pytest.mark.parametrize("index", range(HOSTILE))
def test_shell_test_refuses_a_hostile_drv_path(runner, fake, demo, hook, index: int) -> None:
    script, ran = hook
    fake.evaluates_to([hostile(script)[index]])
    result = runner.invoke(main, ["shell", str(demo), "--test", "-c", "true"])
    assert result.exit_code == 1, result.output
    assert "not a derivation in /nix/store" in result.output
    _no_build(fake, ran, result.output)


def compdb_parts(cc_drv: object, input_drv: object) -> dict[str, Any]:
    cc = f"/nix/store/{HASH}-gcc-wrapper"
    part = {
        "objects": [],
        "cc": cc,
        "ccDrv": cc_drv,
        "inputs": [{"path": f"/nix/store/{'4' * 32}-torch", "drv": input_drv}],
    }
    return {"kernels": {"relu": part}, "binding": None}


@pytest.mark.parametrize("where", ["ccDrv", "inputs"])
@pytest.mark.parametrize("index", range(HOSTILE))
def test_compdb_refuses_a_hostile_drv_path(
    runner, fake, demo, hook, index: int, where: str
) -> None:
    script, ran = hook
    value = hostile(script)[index]
    good = f"/nix/store/{HASH}-good.drv"
    parts = compdb_parts(value, good) if where == "ccDrv" else compdb_parts(good, value)
    (fake.dir / "eval.json").write_text(json.dumps(parts))
    result = runner.invoke(main, ["compdb", str(demo)])
    assert result.exit_code == 1, result.output
    shown = "kernels.relu.ccDrv" if where == "ccDrv" else "kernels.relu.inputs[0].drv"
    assert f"gave {shown} = " in result.output, result.output
    assert "not a derivation in /nix/store" in result.output
    _no_build(fake, ran, result.output)
    assert not (demo / "compile_commands.json").exists()


@pytest.mark.parametrize(
    "parts",
    [[], {"kernels": []}, {"kernels": {"k": 1}}, {"kernels": {"k": {"objects": "x"}}}, "x"],
)
def test_compdb_refuses_an_evaluation_of_another_shape(runner, fake, demo, parts) -> None:
    (fake.dir / "eval.json").write_text(json.dumps(parts))
    result = runner.invoke(main, ["compdb", str(demo)])
    assert result.exit_code == 1, result.output
    assert "is flake.nix hand-written?" in result.output
    assert "internal error" not in result.output and "Traceback" not in result.output


def test_compdb_realises_the_outputs_after_a_double_dash(runner, fake, demo) -> None:
    """The inputs are built as `DRV^*` after `--` (a bare `.drv` builds nothing on a
    current Nix, so the include paths would be missing)."""
    good = f"/nix/store/{HASH}-good.drv"
    (fake.dir / "eval.json").write_text(json.dumps(compdb_parts(good, good)))
    runner.invoke(main, ["compdb", str(demo)])
    [build] = [c for c in fake.calls() if c[0] == "build"]
    assert build[build.index("--") :] == ["--", good + "^*"]


REAL_EVAL = """\
#!{python}
import os, sys
if sys.argv[1] == "eval":
    os.execv({real!r}, [{real!r}, *sys.argv[1:]])
os.execv({fake!r}, [{fake!r}, *sys.argv[1:]])
"""

#: A hand-written flake whose variant has what `compdb.APPLY` reads, with hostile drvPaths.
COMPDB_FLAKE = """\
{{ outputs = {{ self }}: {{ packages.{system}."{variant}" = {{
  passthru.nixgen = {{ binding = null; kernels.relu = {{
    stdenv.cc = {{ outPath = "/nix/store/{hash}-cc"; drvPath = {cc_drv}; }};
    buildInputs = [ {{ outPath = "/nix/store/{hash}-torch"; drvPath = {input_drv}; }} ];
  }}; }};
}}; }}; }}
"""


@pytest.mark.skipif(shutil.which("nix") is None, reason="nix is not installed")
@pytest.mark.parametrize("where", ["ccDrv", "inputs"])
def test_compdb_with_a_real_evaluation_of_a_hostile_flake(
    runner, fake, demo, hook, monkeypatch, where: str
) -> None:
    """Issue 43's case: a kept hand-written flake whose evaluation gives a
    `--post-build-hook=…` drvPath, evaluated by the real Nix (only `nix build` is the
    fake, which runs a hook as Nix would, as root): refused, nothing run."""
    from . import nixtools

    script, ran = hook
    real = shutil.which("nix", path=os.environ["PATH"].split(os.pathsep, 1)[1])
    assert real is not None
    fake_nix = fake.dir / "bin" / "nix"
    fake_nix.rename(fake.dir / "bin" / "fake-nix")
    fake_nix.write_text(
        REAL_EVAL.format(python=sys.executable, real=real, fake=str(fake.dir / "bin" / "fake-nix"))
    )
    fake_nix.chmod(0o755)
    monkeypatch.setenv("NIX_CONFIG", nixtools.NIX_CONFIG)
    variant = bundled(demo)[0]
    bad = json.dumps(f"--post-build-hook={script}")
    good = json.dumps(f"/nix/store/{HASH}-good.drv")
    (demo / "flake.nix").write_text(
        COMPDB_FLAKE.format(
            system=SYSTEM,
            variant=variant,
            hash=HASH,
            cc_drv=bad if where == "ccDrv" else good,
            input_drv=good if where == "ccDrv" else bad,
        )
    )
    result = runner.invoke(main, ["compdb", str(demo), "--variant", variant])
    assert result.exit_code == 1, result.output
    assert f'= "--post-build-hook={script}", not a derivation in /nix/store' in result.output
    _no_build(fake, ran, result.output)


# ------------------------------------------------------------------- Ctrl-C, per verb

#: A fake `nix` whose command named in $HANG_DIR/hang (`eval`, `build`, `develop`) starts
#: a child and waits, recording {pid, pgid, child}; the others answer as a Nix 2.24. Before
#: the one module ran every process, `compdb` killed only the `nix` it started, and such a
#: child was left running.
HANG = """\
#!{python}
import json, os, signal, subprocess, sys, time
root = os.environ["HANG_DIR"]
args = sys.argv[1:]
if args[:1] == ["--version"]:
    print("nix (Nix) 2.24.9")
    sys.exit(0)
if args[:1] == ["show-config"] or args[:2] == ["config", "show"]:
    print("sandbox = true")
    sys.exit(0)
if args[0] != open(os.path.join(root, "hang")).read().strip():
    if args[0] == "eval":
        print(open(os.path.join(root, "eval.json")).read())
    sys.exit(0)
# As Nix does, the command ends at SIGTERM but finishes what it is doing at SIGINT (here:
# ignores it), and so does its child (a builder); `nix develop`'s shell takes Ctrl-C.
interactive = args[0] == "develop"
signal.signal(signal.SIGINT, signal.SIG_DFL if interactive else signal.SIG_IGN)
child = subprocess.Popen(["sleep", "300"])
record = os.path.join(root, "record.json")
with open(record + ".tmp", "w") as f:
    json.dump({{"pid": os.getpid(), "pgid": os.getpgrp(), "child": child.pid}}, f)
os.rename(record + ".tmp", record)
time.sleep(300)
"""


def _live(pgid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                found.append(int(entry))
    return found


CASES = {
    # verb arguments, the fake's command that hangs, what `eval` prints
    "build-eval": (["build", "."], "eval", None),
    "build": (["build", "."], "build", "all"),
    "shell-test": (["shell", ".", "--test", "-c", "true"], "build", "one"),
    "shell": (["shell", ".", "-c", "true"], "develop", None),
    "compdb": (["compdb", "."], "eval", None),
}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.slow
def test_ctrl_c_leaves_no_nix_process(tmp_path: Path, demo: Path, case: str) -> None:
    args, hang, evaluated = CASES[case]
    directory = tmp_path / "hang"
    (directory / "bin").mkdir(parents=True)
    script = directory / "bin" / "nix"
    script.write_text(HANG.format(python=sys.executable))
    script.chmod(0o755)
    (directory / "hang").write_text(hang)
    variants = bundled(demo)
    drvs = [drv(v) for v in (variants if evaluated == "all" else variants[:1])]
    (directory / "eval.json").write_text(json.dumps(drvs))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("NIXGEN_")},
        "PATH": f"{directory / 'bin'}:{os.environ['PATH']}",
        "HANG_DIR": str(directory),
        "NO_COLOR": "1",
        "PYTHONPATH": str(REPO),
    }
    env.pop("NIX_STORE_DIR", None)
    env.pop("NIX_STORE", None)
    nixgen = subprocess.Popen(
        [sys.executable, "-m", "nixgen", *args],
        cwd=demo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # nixgen leads a group, as a shell's foreground job
    )
    record = directory / "record.json"
    try:
        deadline = time.monotonic() + 120
        while not record.exists():
            assert nixgen.poll() is None, nixgen.communicate()[1].decode()
            assert time.monotonic() < deadline, "the fake never started"
            time.sleep(0.05)
        info = json.loads(record.read_text())
        time.sleep(0.2)
        os.killpg(nixgen.pid, signal.SIGINT)  # Ctrl-C: the terminal's foreground group
        _, err = nixgen.communicate(timeout=60)
    finally:
        if nixgen.poll() is None:
            os.killpg(nixgen.pid, signal.SIGKILL)
            nixgen.wait()
    text = err.decode(errors="replace")
    assert nixgen.returncode == 130, text
    assert "Traceback" not in text
    deadline = time.monotonic() + 10
    while _live(info["pgid"]):
        assert time.monotonic() < deadline, f"left running: {_live(info['pgid'])}"
        time.sleep(0.05)
    assert info["child"] not in _live(info["pgid"])
    if case != "shell":
        # Not in nixgen's group: the terminal's Ctrl-C reached nixgen alone, which stopped it.
        assert info["pgid"] != nixgen.pid


# ------------------------------------------------------------------ the real Nix


@pytest.mark.skipif(shutil.which("nix") is None, reason="nix is not installed")
@pytest.mark.build
def test_build_links_each_variant_to_its_output_directory_on_the_real_nix(
    runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`nixgen build` of a small CPU project (`nixgen init -l cpp-cpu`, one variant) on the
    suite's real Nix (2.26, scripts/nix.sh): `build/<variant>` is the output directory,
    with the kernel's `metadata.json`, never the `.drv` file that a bare derivation path
    gives on Nix >= 2.15 (which builds nothing and exits 0). The kernel's source is new
    each run, so a compile really runs."""
    import uuid

    from nixgen.app import scaffold

    from . import nixtools

    root = tmp_path / "relu-real"
    scaffold.create(root, "relu-real", ["cpp-cpu"])
    source = root / "relu_cpu" / "relu_cpu.cpp"
    source.write_text(f"// {uuid.uuid4()}\n" + source.read_text())
    stub = nixtools.make_stub(tmp_path / "stub")
    monkeypatch.setenv("NIX_CONFIG", nixtools.NIX_CONFIG)
    version = nixtools.assert_real_nix()
    variant = f"torch213-cxx11-cpu-{SYSTEM}"
    result = runner.invoke(
        main, ["build", str(root), "--variant", variant, *nixtools.overrides(stub)]
    )
    assert result.exit_code == 0, result.output
    assert "building kernel relu_cpu" in result.output, result.output  # it was built
    link = root / "build" / variant
    assert link.is_symlink()
    out = link.resolve()
    assert out.is_dir(), f"build/{variant} -> {out} (Nix {version}) is no output directory"
    assert not out.name.endswith(".drv") and out.parent == Path("/nix/store")
    metadata = json.loads((out / "metadata.json").read_text())
    assert isinstance(metadata, dict) and metadata
