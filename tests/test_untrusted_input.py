"""Every input nixgen parses from a file, a flag or another program is bounded (size,
depth, number range, time), and text from a build log is printed only once made safe
for a terminal. Each case ends in a one-line error or a clean result: never a
traceback, a hang or "internal error"; a child killed by a signal exits as a shell says.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nixgen.building.nixlog import NixLog
from nixgen.checking import spdx
from nixgen.cmdline.cli import main
from nixgen.core import bounded
from nixgen.core.console import terminal_safe

from .conftest import REPO
from .fake_nix_argv import Fake, build, drv, event, install_fake, make_demo
from .fakenix import bundled
from .hostile import nixgen, project


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Fake:
    return install_fake(tmp_path, monkeypatch)


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    return make_demo(tmp_path)


# --------------------------------------------------------------------- Nix's log


@pytest.mark.parametrize(
    "line",
    [
        "@nix []",
        "@nix 1",
        '@nix "start"',
        "@nix null",
        "@nix " + "[" * 100_000 + "]" * 100_000,
        '@nix {"action": "start", "id": [1], "type": 105, "fields": ["x"]}',
        '@nix {"action": "stop", "id": {"a": 1}}',
        '@nix {"action": "start", "id": 1, "type": 105, "fields": 7}',
    ],
)
def test_a_log_line_that_is_json_but_no_event_is_kept_as_text(line):
    log = NixLog()
    log.feed(line)  # no AttributeError, TypeError or RecursionError
    assert isinstance(log.failure_report(5), list)


@pytest.mark.slow
def test_nix_eval_printing_deeply_nested_json_fails_clearly(runner, fake, demo):
    (fake.dir / "eval.json").write_text("[" * 200_000 + "]" * 200_000)
    result = build(runner, demo)
    assert result.exit_code == 1, result.output
    assert "`nix eval` printed no list of derivations (nested more than" in result.output


def test_bounded_json_refuses_what_python_accepts():
    for text in ["NaN", "[Infinity]", '{"a": -Infinity}', "1e400", "[" * 65 + "]" * 65]:
        with pytest.raises(ValueError):
            bounded.json_loads(text)
    assert bounded.json_loads('{"a": [1, 2.5, "[[["]}') == {"a": [1, 2.5, "[[["]}
    assert bounded.number(10**400, low=0, high=1e9) is None


# ---------------------------------------------------------------- terminal escapes

HOSTILE = (
    "\x1b]0;owned\x07\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"
    "\x1bP+q544e\x1b\\\x1b[2J\x1b[31mred\x1b[0m\rover\x9b1mC1\x07bell\x1b"
)


def test_the_sanitiser_leaves_only_printable_text():
    assert terminal_safe(HOSTILE) == "clickredoverC1bell"
    assert terminal_safe("tab\tkept, ünïcode kept") == "tab\tkept, ünïcode kept"


@pytest.mark.slow
def test_escapes_in_build_logs_never_reach_the_terminal(runner, fake, demo):
    """Both -L (each line as it comes) and the failure tail print the log sanitised."""
    variants = bundled(demo)[:1]
    target = drv(variants[0], "6")
    fake.evaluates_to([target])
    fake.log(
        event(action="start", id=1, type=105, fields=[target, "", 1, 1]),
        event(action="result", id=1, type=101, fields=[f"compiling {HOSTILE}"]),
        event(action="stop", id=1),
        event(action="msg", level=0, msg=f"error: builder for '{target}' failed {HOSTILE}"),
        "a stray line " + HOSTILE,
        exit=1,
    )
    result = runner.invoke(main, ["-L", "build", str(demo), "--variant", variants[0]])
    assert result.exit_code == 1, result.output
    out = result.output
    assert "compiling clickredoverC1bell" in out  # -L and the tail
    assert out.count("compiling clickredoverC1bell") == 2
    for control in ("\x1b", "\x07", "\x9b", "\r"):
        assert control not in out, repr(out)


# ------------------------------------------------------------------- --costs


def shard_project(tmp_path: Path) -> Path:
    sources = [f"big/s{i:03d}.cpp" for i in range(40)]
    text = (
        '[general]\nname = "big"\nversion = 1\nedition = 6\nlicense = "MIT"\n'
        'backends = ["cpu"]\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n'
        '[kernel.big]\nlanguage = "cpp-cpu"\ndepends = ["torch"]\n'
        f"src = {json.dumps(sources)}\n"
    )
    root = tmp_path / "big"
    for rel in [*sources, "torch-ext/torch_binding.cpp", "torch-ext/big/__init__.py"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("// x\n")
    (root / "build.toml").write_text(text)
    return root


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"big/s000.cpp": ' + "9" * 400 + "}", '"big/s000.cpp": expected a positive number'),
        ('{"big/s000.cpp": 1e400}', "not a JSON file (`1e400` is out of range)"),
        ('{"big/s000.cpp": Infinity}', "not a JSON file (`Infinity` is not a number"),
        ('{"big/s000.cpp": NaN}', "not a JSON file (`NaN` is not a number"),
        ('{"big/s000.cpp": 1e300}', "at most 604800, got 1e+300"),
        ('{"a": ' * 3000 + "1" + "}" * 3000, "nested more than"),
        ("9" * 5000, "not a JSON file"),
    ],
)
@pytest.mark.slow
def test_costs_out_of_range_are_usage_errors(tmp_path, content, message):
    root = shard_project(tmp_path)
    (tmp_path / "costs.json").write_text(content)
    done = nixgen("matrix", "--shards", "2", "--costs", str(tmp_path / "costs.json"), cwd=root)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert len(done.stderr.splitlines()) <= 2


@pytest.mark.parametrize("kind", ["fifo", "zero", "large", "dir"])
@pytest.mark.slow
def test_costs_from_a_fifo_a_device_or_a_huge_file_are_refused_unread(tmp_path, kind):
    root = shard_project(tmp_path)
    path = tmp_path / "costs.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "large":
        path.write_text('{"x": 1, "pad": "' + "x" * (5 * 1024 * 1024) + '"}')
    else:
        path.mkdir()
    done = nixgen("matrix", "--shards", "2", "--costs", str(path), cwd=root, timeout=30)
    assert done.returncode == 2, done.stderr
    expected = {
        "fifo": "a FIFO",
        "zero": "a device",
        "large": "larger than",
        "dir": "a directory",
    }[kind]
    assert expected in done.stderr, done.stderr


# -------------------------------------------------------- numbers in build.toml


@pytest.mark.slow
def test_a_cuda_capability_of_hundreds_of_digits_is_a_located_error(tmp_path):
    text = (
        '[general]\nname = "cap"\nversion = 1\nedition = 6\nlicense = "MIT"\n'
        'backends = ["cuda"]\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n'
        '[kernel.c]\nlanguage = "cpp-cuda"\ndepends = ["torch"]\nsrc = ["c/c.cu"]\n'
        f'cuda-capabilities = ["{"9" * 400}.0", "8.{"0" * 400}"]\n'
    )
    root = tmp_path / "c"
    for rel in ("torch-ext/torch_binding.cpp", "torch-ext/cap/__init__.py", "c/c.cu"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("// x\n")
    (root / "build.toml").write_text(text)
    for verb in ("validate", "render", "variants"):
        done = nixgen(verb, cwd=root)
        assert done.returncode == 2, done.stderr
        assert "build.toml:15:22:" in done.stderr and "invalid CUDA capability" in done.stderr


@pytest.mark.parametrize("flag", ["--max-jobs", "--cores"])
def test_a_huge_job_or_core_count_is_a_usage_error(runner, fake, demo, flag):
    result = runner.invoke(main, ["build", str(demo), flag, "9" * 30])
    assert result.exit_code == 2, result.output
    assert "is not in the range 0<=x<=65536" in result.output
    assert fake.calls() == []


# ------------------------------------------------------------------- licenses


def test_a_license_expression_of_thousands_of_unknown_identifiers_answers_at_once():
    expression = " AND ".join(f"NOT-A-LICENSE-{i}" for i in range(3000))
    started = time.monotonic()
    message = spdx.problem(expression)
    assert time.monotonic() - started < 5
    assert message is not None and "no SPDX expression needs more than" in message
    many = " AND ".join(f"NOPE{i}" for i in range(60))
    message = spdx.problem(many)
    assert message is not None and "and 55 more unknown identifiers" in message


def test_a_license_after_with_is_named_a_license_not_unknown():
    message = spdx.problem("MIT WITH MIT")
    assert message is not None
    assert "did you mean `MIT`" not in message and "unknown" not in message
    assert "`MIT` is a license, not a license exception" in message
    message = spdx.problem("Classpath-exception-2.0")
    assert message is not None and "is a license exception, which only follows `WITH`" in message
    assert spdx.problem("GPL-2.0-only WITH Classpath-exception-2.0") is None


@pytest.mark.slow
def test_init_says_so_for_mit_with_mit(tmp_path):
    done = nixgen("init", "x", "--license", "MIT WITH MIT", cwd=tmp_path)
    assert done.returncode == 2
    assert "`MIT` is a license, not a license exception" in done.stderr


# --------------------------------------------------------------- a full stdout


@pytest.mark.parametrize("args", [["--help"], ["-V"], ["completion", "bash"], ["build", "--help"]])
@pytest.mark.slow
def test_output_to_a_full_disk_is_one_line(tmp_path, args):
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "nixgen", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    assert done.returncode == 2
    full = "nixgen: error: cannot write to standard output (No space left on device)\n"
    assert done.stderr == full


# ------------------------------------------------------------ `nixgen shell` exits

SHELL_NIX = """\
#!{python}
import os, signal, sys
# What nixgen checks first: a Nix 2.24 with the sandbox on.
if sys.argv[1:2] == ["--version"]:
    print("nix (Nix) 2.24.9")
    sys.exit(0)
if sys.argv[1:2] == ["show-config"] or sys.argv[1:3] == ["config", "show"]:
    print("sandbox = true")
    sys.exit(0)
if sys.argv[1] == "develop":
    os.kill(os.getpid(), signal.{signal})
sys.exit(0)
"""


@pytest.mark.parametrize(("name", "status"), [("SIGTERM", 143), ("SIGKILL", 137), ("SIGHUP", 129)])
@pytest.mark.slow
def test_shell_passes_a_signalled_nix_develop_on_as_128_plus_n(tmp_path, name, status):
    root = project(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nix").write_text(SHELL_NIX.format(python=sys.executable, signal=name))
    (bin_dir / "nix").chmod(0o755)
    done = nixgen(
        "shell", ".", cwd=root, env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    )
    assert done.returncode == status, done.stderr
