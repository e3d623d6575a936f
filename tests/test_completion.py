"""`nixgen completion`: click's scripts for bash, zsh and fish, and what they complete."""

from __future__ import annotations

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


def test_rejects_another_shell(runner):
    result = runner.invoke(main, ["completion", "tcsh"])
    assert result.exit_code == 2
    assert "bash" in result.output


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
