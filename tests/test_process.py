"""`nixgen.building.process`, the one module that runs processes: nothing it starts is left
running (a normal exit, a timeout, an exception in a callback, Ctrl-C, SIGTERM, SIGHUP and
SIGKILL of nixgen), its output is bounded, a missing program is a clear error, and every
process gets the clean environment.

The commands are small Python or shell programs standing in for Nix (no Nix is needed):
each records its process id, its process group and a child it started, so the tests can
check with /proc that the whole group is gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from nixgen.building import process
from nixgen.building.process import Command

from .conftest import REPO

pytestmark = [
    pytest.mark.slow,  # starts processes (tests/tiers.py)
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc"),
]


def live_members(pgid: int) -> list[int]:
    """The processes of group `pgid` that are not zombies (read from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] not in ("Z", "X")


def gone(pgid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while live_members(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


#: A stand-in for a long Nix: records {pid, pgid, child} in $RECORD, starts a child of its
#: own (a `sleep`, in its group, as Nix starts builders and git), then waits.
LONG = textwrap.dedent(
    """\
    import json, os, subprocess, sys, time
    child = subprocess.Popen(["sleep", "300"])
    record = os.environ["RECORD"]
    with open(record + ".tmp", "w") as f:
        json.dump({"pid": os.getpid(), "pgid": os.getpgrp(), "child": child.pid}, f)
    os.rename(record + ".tmp", record)
    print("started", flush=True)
    time.sleep(300)
    """
)


def python(code: str) -> Command:
    """A `Command` running `code` with this Python (made here for the runner's own tests;
    in nixgen only `nixcommand` and `gitcommand` make them)."""
    return Command((sys.executable, "-c", code))


def wait_for(path: Path, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    return json.loads(path.read_text())


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "record.json"
    monkeypatch.setenv("RECORD", str(path))
    return path


# ------------------------------------------------------------------ plain runs


def test_output_exit_status_and_input() -> None:
    done = process.run(
        python("import sys; d = sys.stdin.read(); print(d.upper()); sys.exit(3)"),
        cwd=None,
        input="hello",
    )
    assert (done.code, done.stdout) == (3, "HELLO\n")
    killed = process.run(
        python("import os, signal; os.kill(os.getpid(), signal.SIGTERM)"), cwd=None
    )
    assert killed.code == 128 + signal.SIGTERM


def test_a_missing_program_is_a_clear_error_with_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(process.ProgramMissing) as caught:
        process.run(Command(("no-such-program-x1",), install="install it"), cwd=tmp_path)
    assert str(caught.value) == "`no-such-program-x1` is not on PATH: install it"
    assert caught.value.exit_code == 2
    with pytest.raises(process.ProgramMissing, match="is not on PATH"):
        process.run_interactive(Command(("no-such-program-x1",)), cwd=tmp_path)


def test_output_is_bounded_and_a_long_line_is_read_in_pieces() -> None:
    # 5 MB on stdout in one line, 3 MB of stderr lines.
    code = (
        "import sys; sys.stdout.write('x' * 5_000_000); "
        "[sys.stderr.write(f'{i:07d}' + 'e' * 92 + '\\n') for i in range(30_000)]"
    )
    pieces: list[str] = []
    done = process.run(
        python(code),
        cwd=None,
        on_stdout=pieces.append,
        stdout_limit=1_500_000,
        stderr_limit=100_000,
    )
    assert done.code == 0
    assert done.stdout_truncated and len(done.stdout) <= 1_500_000
    assert max(map(len, pieces)) <= process.READ_PIECE and "".join(pieces) == "x" * 5_000_000
    assert done.stderr_truncated and len(done.stderr) <= 100_000
    assert done.stderr.endswith(f"{29_999:07d}" + "e" * 92 + "\n")  # the tail is kept


def test_the_environment_is_the_clean_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_DIR", "/elsewhere/.git")
    monkeypatch.setenv("GIT_WORK_TREE", "/elsewhere")
    done = process.run(python("import os, json; print(json.dumps(dict(os.environ)))"), cwd=None)
    env = json.loads(done.stdout)
    assert "GIT_DIR" not in env and "GIT_WORK_TREE" not in env
    count = int(env["GIT_CONFIG_COUNT"])
    pairs = {env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"] for i in range(count)}
    assert pairs["core.fsmonitor"] == "false"


# -------------------------------------------------------- nothing left running


def test_what_a_command_leaves_in_its_group_is_ended_when_it_exits(record: Path) -> None:
    """A command that exits leaving a child behind (which holds the output pipe open):
    `run` returns, and the child is gone."""
    code = (
        "import json, os, subprocess\n"
        "c = subprocess.Popen(['sleep', '300'])\n"
        "info = {'pgid': os.getpgrp(), 'child': c.pid}\n"
        "open(os.environ['RECORD'], 'w').write(json.dumps(info))\n"
    )
    started = time.monotonic()
    done = process.run(python(code), cwd=None, timeout=60)
    assert done.code == 0
    assert time.monotonic() - started < 30
    info = json.loads(record.read_text())
    assert gone(info["pgid"]) and not alive(info["child"])


def test_a_timeout_stops_the_group_and_says_so(record: Path) -> None:
    with pytest.raises(process.ProcessTimeout, match=r"did not finish within 1 s"):
        process.run(python(LONG), cwd=None, timeout=1)
    info = json.loads(record.read_text())
    assert info["pgid"] == info["pid"], "the command leads a process group of its own"
    assert gone(info["pgid"]) and not alive(info["child"])


def test_an_error_in_a_callback_stops_the_group(record: Path) -> None:
    def fail(line: str) -> None:
        raise RuntimeError("the reader failed")

    with pytest.raises(RuntimeError, match="the reader failed"):
        process.run(python(LONG), cwd=None, on_stdout=fail)
    info = json.loads(record.read_text())
    assert gone(info["pgid"]) and not alive(info["child"])


def test_a_command_that_ignores_sigterm_is_killed_after_the_grace(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process, "STOP_GRACE", 0.5)
    code = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" + LONG
    started = time.monotonic()
    with pytest.raises(process.ProcessTimeout):
        process.run(python(code), cwd=None, timeout=1)
    assert time.monotonic() - started < 10
    info = json.loads(record.read_text())
    assert gone(info["pgid"]) and not alive(info["child"])


#: nixgen's entry point with one `process.run` of LONG: what a verb does with a Nix.
DRIVER = textwrap.dedent(
    """\
    import sys
    from nixgen.building import process
    from nixgen.cmdline import entry, streams
    from nixgen.cmdline.cli import handle_errors
    import click

    @click.command()
    @handle_errors
    def verb():
        process.run(process.Command((sys.executable, "-c", {long!r})), cwd=None)

    sys.argv = ["nixgen"]
    import nixgen.cmdline.cli as cli
    cli.main = verb
    entry.main()
    """
)


def start_driver(tmp_path: Path) -> subprocess.Popen[bytes]:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(long=LONG))
    return subprocess.Popen(
        [sys.executable, str(script)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        start_new_session=True,  # nixgen leads its own group, as a shell's foreground job
    )


@pytest.mark.parametrize(
    ("how", "status"),
    [
        ("ctrl-c", 130),  # the terminal's SIGINT reaches nixgen's whole foreground group
        ("sigterm", 128 + signal.SIGTERM),
        ("sighup", 128 + signal.SIGHUP),
    ],
)
def test_nixgen_interrupted_or_told_to_end_leaves_no_process(
    tmp_path: Path, record: Path, how: str, status: int
) -> None:
    driver = start_driver(tmp_path)
    try:
        info = wait_for(record)
        assert info["pgid"] != os.getpgid(driver.pid), "the command has a group of its own"
        if how == "ctrl-c":
            os.killpg(driver.pid, signal.SIGINT)
        else:
            driver.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGHUP)
        _, err = driver.communicate(timeout=30)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
    assert driver.returncode == status, err
    assert err.decode().strip().endswith("interrupted"), err
    assert b"Traceback" not in err
    assert gone(info["pgid"]) and not alive(info["child"])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_nixgen_killed_outright_takes_its_command_along(tmp_path: Path, record: Path) -> None:
    """SIGKILL gives nixgen no chance to clean up: the command gets SIGTERM from the
    kernel (``PR_SET_PDEATHSIG``), as Nix would, and ends."""
    driver = start_driver(tmp_path)
    try:
        info = wait_for(record)
        driver.kill()
        driver.wait(timeout=30)
        deadline = time.monotonic() + 10
        while alive(info["pid"]):
            assert time.monotonic() < deadline, "the command outlived a SIGKILLed nixgen"
            time.sleep(0.05)
    finally:
        os.killpg(info["pgid"], signal.SIGKILL) if live_members(info["pgid"]) else None


def test_interactive_commands_share_the_terminal_and_pass_their_status_on(
    tmp_path: Path,
) -> None:
    """`run_interactive` (``nix develop``'s shell): the command stays in nixgen's process
    group, starts with SIGINT at its default even though nixgen ignores it meanwhile, and
    its status comes back as a shell reports it."""
    code = (
        "import os, signal, sys\n"
        "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
        "sys.exit(7 if os.getpgrp() == int(sys.argv[1]) else 1)\n"
    )
    command = Command((sys.executable, "-c", code, str(os.getpgrp())))
    assert process.run_interactive(command, cwd=tmp_path) == 7
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN, "nixgen's handler is back"
    killed = Command((sys.executable, "-c", "import os, signal; os.kill(os.getpid(), 9)"))
    assert process.run_interactive(killed, cwd=tmp_path) == 137
