"""`nixgen completion`: the scripts of kernel-builder's five shells (click's bash, zsh and
fish, nixgen's PowerShell and elvish), what they complete, and each script run by its own
shell where that shell is installed (bash here always; zsh, fish and elvish when present;
PowerShell is not packaged for Debian, so its script is checked by its structure and its
protocol)."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nixgen.app import scaffold
from nixgen.cmdline.cli import main

MARKERS = {
    "bash": ["_NIXGEN_COMPLETE=bash_complete", "complete -o nosort -F _nixgen_completion nixgen"],
    "zsh": [
        "#compdef nixgen",
        "_NIXGEN_COMPLETE=zsh_complete",
        "compdef _nixgen_completion nixgen",
    ],
    "fish": ["_NIXGEN_COMPLETE=fish_complete", "complete --no-files --command nixgen"],
    "powershell": [
        "Register-ArgumentCompleter -Native -CommandName 'nixgen'",
        "$env:_NIXGEN_COMPLETE = 'powershell_complete'",
        "[System.Management.Automation.CompletionResult]::new(",
    ],
    "elvish": [
        "set edit:completion:arg-completer[nixgen] = {|@words|",
        "tmp E:_NIXGEN_COMPLETE = elvish_complete",
        "tmp E:COMP_WORDS = (put $words | to-json)",
    ],
}


@pytest.mark.parametrize(
    # click asks `bash --version` before it writes bash's script: a process.
    "shell",
    [pytest.param(s, marks=pytest.mark.slow) if s == "bash" else s for s in sorted(MARKERS)],
)
def test_prints_the_script_of_each_shell(runner, shell):
    result = runner.invoke(main, ["completion", shell])
    assert result.exit_code == 0
    for marker in MARKERS[shell]:
        assert marker in result.output, marker


def test_the_five_shells_of_kernel_builder(runner):
    """kernel-builder's `completions <bash|elvish|fish|powershell|zsh>`, all five."""
    assert set(MARKERS) == {"bash", "elvish", "fish", "powershell", "zsh"}
    assert runner.invoke(main, ["completions", "elvish"]).exit_code == 0  # its spelling too


def test_rejects_another_shell(runner):
    result = runner.invoke(main, ["completion", "tcsh"])
    assert result.exit_code == 2
    assert "bash" in result.output and "powershell" in result.output


def complete(runner, words: str, cwd_args: dict | None = None) -> list[str]:
    """What bash completion offers for the last word of `words`."""
    parts = words.split(" ")
    env = {
        "_NIXGEN_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(parts) - 1),
    }
    result = runner.invoke(main, [], env=env, prog_name="nixgen")
    assert result.exit_code == 0, result.output
    return [line.split(",", 1)[1] for line in result.output.splitlines() if line]


def test_completes_verbs(runner):
    assert complete(runner, "nixgen wa") == ["watch"]
    assert {"build", "init", "schema", "completion"} <= set(complete(runner, "nixgen "))


def test_completes_choices(runner):
    assert complete(runner, "nixgen init x --language cpp-c") == ["cpp-cpu", "cpp-cuda"]
    assert complete(runner, "nixgen completion f") == ["fish"]


def test_completes_the_variants_of_the_project_here(runner, tmp_path, monkeypatch):
    scaffold.create(tmp_path, "relu-demo", ["cpp-cpu"])
    monkeypatch.chdir(tmp_path)
    offered = complete(runner, "nixgen build --system x86_64-linux --variant torch2")
    assert offered
    assert all(v.startswith("torch2") and v.endswith("-cpu-x86_64-linux") for v in offered)


def test_variant_completion_is_quiet_outside_a_project(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert complete(runner, "nixgen build --variant torch") == []


# --------------------------------------------------------- PowerShell and elvish: protocol


def answer(runner, shell: str, env: dict[str, str]) -> list[list[str]]:
    """nixgen's answer to a completion request of `shell`: TYPE, VALUE, HELP per line."""
    result = runner.invoke(
        main, [], env={"_NIXGEN_COMPLETE": f"{shell}_complete", **env}, prog_name="nixgen"
    )
    assert result.exit_code == 0, result.output
    lines = [line.split("\t") for line in result.output.splitlines() if line]
    assert all(len(fields) == 3 for fields in lines), lines
    return lines


def test_powershell_passes_the_line_up_to_the_cursor(runner):
    got = answer(runner, "powershell", {"COMP_WORDS": "nixgen wa", "COMP_CWORD": "wa"})
    assert got == [["plain", "watch", got[0][2]]] and got[0][2]
    got = answer(
        runner,
        "powershell",
        {"COMP_WORDS": "nixgen init x --language cpp-c", "COMP_CWORD": "cpp-c"},
    )
    assert [value for _, value, _ in got] == ["cpp-cpu", "cpp-cuda"]
    after_space = answer(
        runner, "powershell", {"COMP_WORDS": "nixgen completion ", "COMP_CWORD": ""}
    )
    assert [v for _, v, _ in after_space] == ["bash", "elvish", "fish", "powershell", "zsh"]
    paths = answer(
        runner, "powershell", {"COMP_WORDS": "nixgen init x --dir sr", "COMP_CWORD": "sr"}
    )
    assert paths == [["dir", "sr", ""]]  # the script completes paths itself


def test_elvish_passes_its_words_as_json(runner):
    words = json.dumps(["nixgen", "init", "x", "--language", "cpp-c"])
    got = answer(runner, "elvish", {"COMP_WORDS": words})
    assert [value for _, value, _ in got] == ["cpp-cpu", "cpp-cuda"]
    got = answer(runner, "elvish", {"COMP_WORDS": json.dumps(["nixgen", "completion", ""])})
    assert [v for _, v, _ in got] == ["bash", "elvish", "fish", "powershell", "zsh"]
    assert answer(runner, "elvish", {"COMP_WORDS": "not json"}) == []


def test_the_powershell_script_is_well_formed(runner):
    """No PowerShell here: its brackets balance outside strings, every variable it reads
    is set in it or is a parameter of the completer, and it restores the environment."""
    script = runner.invoke(main, ["completion", "powershell"]).output
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("#"))
    depth = {"{": 0, "(": 0, "[": 0}
    closing = {"}": "{", ")": "(", "]": "["}
    quote = None
    for i, char in enumerate(code):
        if quote:
            if char == quote and code[i - 1] != "`":
                quote = None
            continue
        if char in "'\"":
            quote = char
        elif char in depth:
            depth[char] += 1
        elif char in closing:
            depth[closing[char]] -= 1
            assert depth[closing[char]] >= 0, code[: i + 1]
    assert quote is None and depth == {"{": 0, "(": 0, "[": 0}
    assert "param($wordToComplete, $commandAst, $cursorPosition)" in code
    import re

    used = set(re.findall(r"\$([A-Za-z_]\w*)", code)) - {"env", "null", "true", "false"}
    assigned = set(re.findall(r"\$([A-Za-z_]\w*)\s*(?:,\s*\$\w+\s*)*=", code))
    assigned |= set(re.findall(r"foreach \(\$(\w+) in", code))
    assigned |= {"wordToComplete", "commandAst", "cursorPosition", "kind", "value", "help"}
    assert used <= assigned, used - assigned
    assert "finally" in code and "SetEnvironmentVariable($name, $saved[$name])" in code


# ------------------------------------------------------------- each script, in its shell


def _pty_session(argv: list[str], steps: list[bytes], cwd: Path, *, done: bytes) -> bytes:
    """Run `argv` on a pseudo-terminal and type each of `steps`, each once the shell has
    been quiet for a moment (at most 10 s); then read until `done` appears (at most 20 s).
    All the output. The shell's own start-up files are not read (each argv says how)."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.chdir(cwd)
        os.environ.update({"TERM": "dumb", "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"})
        os.execvp(argv[0], argv)
    out = b""

    def read(until: float, *, quiet: float | None = None, seen: bytes | None = None) -> None:
        nonlocal out
        last = time.monotonic()
        while time.monotonic() < until:
            if seen is not None and seen in out:
                return
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    return
                last = time.monotonic()
            elif quiet is not None and time.monotonic() - last > quiet and out:
                return

    try:
        for data in steps:
            read(time.monotonic() + 10, quiet=0.5)
            os.write(fd, data)
        read(time.monotonic() + 20, seen=done)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)
    return out


#: How each shell starts without its start-up files, and loads nixgen's script.
SESSIONS = {
    "bash": (["bash", "--norc", "--noprofile", "-i"], b'eval "$(nixgen completion bash)"\r'),
    "zsh": (
        ["zsh", "-f", "-i"],
        b'autoload -Uz compinit && compinit -u && eval "$(nixgen completion zsh)"\r',
    ),
    "fish": (["fish", "--no-config", "-i"], b"nixgen completion fish | source\r"),
    "elvish": (["elvish", "-norc"], b"eval (nixgen completion elvish | slurp)\r"),
}


@pytest.mark.slow
@pytest.mark.parametrize("shell", sorted(SESSIONS))
def test_each_script_completes_in_its_shell(shell, tmp_path):
    """`nixgen completion el<Tab>` then Enter, typed into the shell itself: the verb and
    the shell name complete, so the command prints the elvish script."""
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    if shutil.which("nixgen", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("no nixgen executable beside this Python")
    argv, load = SESSIONS[shell]
    steps = [load, b"nixgen complet\t", b" el\t", b"\r"]
    out = _pty_session(argv, steps, tmp_path, done=b"completion for elvish")
    assert b"completion for elvish" in out, out[-2000:].decode("utf-8", "replace")


@pytest.mark.slow
@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "elvish"])
def test_each_script_parses_in_its_shell(runner, shell, tmp_path):
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    script = tmp_path / f"nixgen.{shell}"
    script.write_text(runner.invoke(main, ["completion", shell]).output)
    check = {"bash": ["bash", "-n"], "zsh": ["zsh", "-n"], "fish": ["fish", "--no-execute"]}
    if shell == "elvish":
        done = subprocess.run(
            ["elvish", "-compileonly", str(script)], capture_output=True, text=True
        )
        # Outside an interactive session elvish has no `edit:` module; all else compiles.
        assert done.returncode == 0 or "edit:completion:arg-completer" in done.stderr, done.stderr
        return
    done = subprocess.run([*check[shell], str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
