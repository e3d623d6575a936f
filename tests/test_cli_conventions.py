"""The command-line conventions a kernel author meets: per-project settings in nixgen.toml
(`--out` remembered, override inputs, located errors, validated with build.toml), the one
error format, `watch --once`, `--no-link`/`--out-link`, `variants --names/--quiet`,
`-vv`, `--no-progress` and its environment twins, `init`'s project shapes, a variant of
another system, the docs a newcomer reads."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.app import scaffold
from nixgen.cmdline.cli import main

from . import nixtools
from .conftest import REPO
from .fakenix import SYSTEM, FakeNix, nixgen
from .fakenix import demo as demo  # a fixture
from .fakenix import fake_nix as fake_nix  # a fixture

# ------------------------------------------------------- 4. nixgen.toml, the --out error


@pytest.mark.slow
def test_out_is_remembered_in_nixgen_toml(runner: CliRunner, demo: Path) -> None:
    done = runner.invoke(main, ["render", str(demo), "--out", "gen"])
    assert done.exit_code == 0, done.output
    assert 'recorded `out = "gen"` in nixgen.toml' in done.stderr
    assert tomllib.loads((demo / "nixgen.toml").read_text()) == {"out": "gen"}
    plain = runner.invoke(main, ["render", str(demo)])
    assert plain.exit_code == 0, plain.output
    assert not (demo / "nix").exists(), "a plain render went back to nix/"
    assert "./gen" in (demo / "flake.nix").read_text()
    dry = runner.invoke(main, ["build", str(demo), "--dry-run", "--json"])
    assert json.loads(dry.stdout)["result"]["render"] == []  # gen/ is what build uses


def test_a_new_out_removes_the_earlier_generated_tree(runner: CliRunner, demo: Path) -> None:
    assert runner.invoke(main, ["render", str(demo)]).exit_code == 0
    before = sorted(
        p.relative_to(demo).as_posix() for p in (demo / "nix").rglob("*") if p.is_file()
    )
    done = runner.invoke(main, ["render", str(demo), "--out", "gen"])
    assert done.exit_code == 0, done.output
    assert f"removed nix/, the earlier output directory ({len(before)} files, all generated" in (
        done.stderr
    )
    assert not (demo / "nix").exists() and (demo / "gen" / "project.nix").is_file()
    assert not list(demo.glob(".nixgen-*"))  # nothing left aside
    # Back again: gen/ goes the same way.
    back = runner.invoke(main, ["render", str(demo), "--out", "nix"])
    assert back.exit_code == 0 and "removed gen/" in back.stderr
    assert not (demo / "gen").exists()


def test_a_new_out_leaves_a_tree_that_holds_hand_written_files(
    runner: CliRunner, demo: Path
) -> None:
    assert runner.invoke(main, ["render", str(demo)]).exit_code == 0
    (demo / "nix" / "NOTES.md").write_text("my notes\n")
    (demo / "nix" / "empty").mkdir()
    done = runner.invoke(main, ["render", str(demo), "--out", "gen"])
    assert done.exit_code == 0, done.output
    assert (
        "nixgen: warning: nix/, the earlier output directory, is left in place: 2 entries in "
        "it are not nixgen's (nix/NOTES.md, nix/empty/)" in done.stderr
    )
    assert (demo / "nix" / "NOTES.md").read_text() == "my notes\n"
    assert (demo / "nix" / "project.nix").is_file()  # the whole tree, untouched


def test_a_new_out_keeps_the_tree_a_hand_written_flake_may_use(
    runner: CliRunner, demo: Path
) -> None:
    assert runner.invoke(main, ["render", str(demo)]).exit_code == 0
    (demo / "flake.nix").write_text("{ outputs = _: import ./nix; }\n")
    done = runner.invoke(main, ["render", str(demo), "--out", "gen"])
    assert done.exit_code == 0, done.output
    assert "flake.nix is hand-written and may still use it" in done.stderr
    assert (demo / "nix" / "project.nix").is_file()


def test_a_new_out_inside_the_old_removes_nothing(runner: CliRunner, demo: Path) -> None:
    assert runner.invoke(main, ["render", str(demo)]).exit_code == 0
    done = runner.invoke(main, ["render", str(demo), "--out", "nix/gen"])
    assert done.exit_code == 0, done.output
    assert "removed nix/" not in done.stderr and "earlier output" not in done.stderr
    assert (demo / "nix" / "gen" / "project.nix").is_file()


def test_retire_puts_back_a_tree_that_changed_while_set_aside(
    demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nixgen.writing import write

    assert CliRunner().invoke(main, ["render", str(demo)]).exit_code == 0
    real = write._not_generated
    calls = []

    def late_file(directory: Path) -> list[str]:
        calls.append(directory)
        if len(calls) == 2:  # the second look, at the tree set aside
            (directory / "late.txt").write_text("written meanwhile\n")
        return real(directory)

    monkeypatch.setattr(write, "_not_generated", late_file)
    retired = write.retire(demo, "nix")
    assert retired.kept == ["nix/late.txt"] and not retired.removed
    assert (demo / "nix" / "late.txt").is_file() and (demo / "nix" / "project.nix").is_file()
    assert not list(demo.glob(".nixgen-*"))


@pytest.mark.slow
def test_build_reads_the_override_inputs_of_nixgen_toml(runner: CliRunner, demo: Path) -> None:
    (demo / "nixgen.toml").write_text(
        '[override-input]\nnixpkgs = "path:/srv/nixpkgs"\nkernel-builder = "path:/srv/kb"\n'
    )
    dry = runner.invoke(main, ["build", str(demo), "--dry-run", "--json"])
    evaluate = json.loads(dry.stdout)["result"]["eval"]
    assert " ".join(evaluate).count("--override-input") == 2
    assert "path:/srv/nixpkgs" in evaluate and "path:/srv/kb" in evaluate
    # The command line wins over the file, input by input.
    args = ["build", str(demo), "--dry-run", "--json", "--override-input", "nixpkgs", "path:/x"]
    evaluate = json.loads(runner.invoke(main, args).stdout)["result"]["eval"]
    assert "path:/x" in evaluate and "path:/srv/nixpkgs" not in evaluate
    assert "path:/srv/kb" in evaluate
    shown = runner.invoke(main, ["show", str(demo)])
    assert 'override-input.nixpkgs = "path:/srv/nixpkgs"' in shown.stderr


def test_a_bad_nixgen_toml_is_located(runner: CliRunner, demo: Path) -> None:
    (demo / "nixgen.toml").write_text('# settings\nouts = "gen"\n')
    done = runner.invoke(main, ["render", str(demo)])
    assert done.exit_code == 2
    assert "nixgen.toml:2:1: error: outs: unknown key `outs`; did you mean `out`?" in done.stderr


@pytest.mark.slow
def test_the_out_error_is_in_the_one_error_format(demo: Path) -> None:
    for verb in ("render", "build", "watch"):
        done = nixgen(verb, "--out", "../escape", cwd=demo)
        assert done.returncode == 2, (verb, done.stderr)
        assert "nixgen: error: --out: invalid output directory `../escape`: " in done.stderr, verb
    twin = nixgen("render", cwd=demo, env={"NIXGEN_OUT": "../escape"})
    assert "nixgen: error: --out: invalid output directory `../escape`" in twin.stderr


# ----------------------------------------------------------------- 5. the rest of the list


@pytest.mark.slow
def test_watch_once_on_an_invalid_project_fails_on_stderr(demo: Path) -> None:
    toml = demo / "build.toml"
    toml.write_text(toml.read_text().replace("edition = 6", "edition = 6\nlicence = 'MIT'"))
    done = nixgen("watch", "--max-renders", "1", cwd=demo)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "build.toml is invalid (1 error)" in done.stderr
    assert "unknown key `licence`" in done.stderr
    bad_out = nixgen("watch", "--max-renders", "1", "--out", "/abs", cwd=demo)
    assert bad_out.returncode == 2 and bad_out.stdout == ""


@pytest.mark.slow
def test_shell_does_not_suggest_a_flag_it_lacks(tmp_path: Path) -> None:
    root = tmp_path / "relu-metal"
    scaffold.create(root, "relu-metal", ["cpp-metal"])
    done = nixgen("shell", "--dry-run", cwd=root)
    assert done.returncode == 2
    assert "it has some for aarch64-darwin" in done.stderr
    assert "--system" not in done.stderr


def test_a_variant_of_another_system_says_so(runner: CliRunner, demo: Path) -> None:
    darwin = runner.invoke(main, ["build", str(demo), "--variant", "torch213-cpu-aarch64-darwin"])
    assert darwin.exit_code == 2
    assert (
        "variant `torch213-cpu-aarch64-darwin` is for aarch64-darwin, not "
        f"{SYSTEM}: pass --system aarch64-darwin" in darwin.stderr
    )
    variant = f"torch213-cxx11-cpu-{SYSTEM}"
    typo = runner.invoke(main, ["build", str(demo), "--variant", variant[:-1]])
    assert f"did you mean `{variant}`?" in typo.stderr
    # The verbs without --system say which machine, and suggest no flag they lack.
    for verb in ("shell", "compdb"):
        other = runner.invoke(
            main, [verb, str(demo), "--variant", "torch213-cpu-aarch64-darwin", "--dry-run"]
        )
        assert other.exit_code == 2, (verb, other.output)
        assert (
            "variant `torch213-cpu-aarch64-darwin` is for aarch64-darwin, not "
            f"{SYSTEM}: run this on an aarch64-darwin machine" in other.stderr
        ), (verb, other.stderr)
        assert "--system" not in other.stderr, verb
        typo = runner.invoke(main, [verb, str(demo), "--variant", variant[:-1], "--dry-run"])
        assert f"did you mean `{variant}`?" in typo.stderr, verb


def test_no_link_and_out_link_exclude_each_other(runner: CliRunner, demo: Path) -> None:
    done = runner.invoke(main, ["build", str(demo), "--no-link", "--out-link", "x", "--dry-run"])
    assert done.exit_code == 2
    assert "--no-link and --out-link exclude each other" in done.stderr


def test_variants_names_and_quiet(runner: CliRunner, demo: Path) -> None:
    names = runner.invoke(main, ["variants", str(demo), "--names"])
    assert names.exit_code == 0
    lines = names.stdout.splitlines()
    assert f"torch213-cxx11-cpu-{SYSTEM}" in lines
    assert all(re.fullmatch(r"[a-z0-9_-]+", line) for line in lines)
    full = runner.invoke(main, ["variants", str(demo)]).stdout.splitlines()
    assert full[0].startswith("NAME")
    quiet = runner.invoke(main, ["variants", str(demo), "-q"]).stdout.splitlines()
    assert quiet == full[1:]


def test_very_verbose_says_more_than_verbose(
    runner: CliRunner, fake_nix: FakeNix, demo: Path
) -> None:
    variant = f"torch213-cxx11-cpu-{SYSTEM}"
    verbose = runner.invoke(main, ["build", str(demo), "--variant", variant, "--no-link", "-v"])
    assert "Running phase: buildPhase" not in verbose.stderr
    very = runner.invoke(main, ["build", str(demo), "--variant", variant, "--no-link", "-vv"])
    assert very.exit_code == 0, very.output
    assert "kernel relu_cpu> Running phase: buildPhase" in very.stderr
    assert "running: nix build" in very.stderr


def test_init_help_names_every_language_tvm_ffi_takes(runner: CliRunner) -> None:
    text = " ".join(runner.invoke(main, ["init", "--help"]).output.split())
    assert "--language rust-cpu alone" not in text
    for language in scaffold.TVM_FFI_LANGUAGES:
        assert language in text.split("tvm-ffi: ", 1)[1].split(".", 1)[0], language


@pytest.mark.slow
def test_build_quick_builds_the_default_variant_alone(runner: CliRunner, demo: Path) -> None:
    def chosen(*args: str) -> list[str]:
        done = runner.invoke(main, ["build", str(demo), "--dry-run", "--json", *args])
        assert done.exit_code == 0, done.output
        return list(json.loads(done.stdout)["result"]["variants"])

    every = chosen()
    assert len(every) > 1  # the bundle: every torch of the table
    shell = runner.invoke(main, ["shell", str(demo), "--test", "--dry-run"]).stdout
    [quick] = chosen("--quick")
    assert quick in every and f"test-{quick}" in shell  # the variant `nixgen shell` enters
    assert quick == f"torch213-cxx11-cpu-{SYSTEM}"  # the newest torch
    assert chosen("--quick", "--backend", "cpu") == [quick]
    both = runner.invoke(main, ["build", str(demo), "--quick", "--variant", quick])
    assert both.exit_code == 2 and "--quick and --variant exclude each other" in both.stderr


def test_variants_says_more_with_each_v(runner: CliRunner, tmp_path: Path) -> None:
    """-v names each system's default variant and counts what the table left out; -vv
    says which configurations, and why."""
    root = tmp_path / "relu"
    scaffold.create(root, "relu", ["cpp-cuda"])
    toml = root / "build.toml"
    toml.write_text(
        toml.read_text().replace("[torch]", '[general.cuda]\nminver = "13.0"\n\n[torch]')
    )
    plain, verbose, very = (
        runner.invoke(main, ["variants", str(root), "--system", "x86_64-linux", *flag])
        for flag in ([], ["-v"], ["-vv"])
    )
    assert plain.stdout == verbose.stdout == very.stdout  # the data is the same
    assert "default variant" not in plain.stderr
    assert "default variant for x86_64-linux: torch213-cxx11-cu130-x86_64-linux" in verbose.stderr
    assert re.search(r"\d+ build configuration\(s\) of the table left out \(-vv", verbose.stderr)
    assert "left out: " not in verbose.stderr
    assert (
        "left out: torch 2.13, cuda 12.6 (x86_64-linux): CUDA 12.6 is outside general.cuda "
        "(minver 13.0, maxver -)" in very.stderr
    )
    assert "left out: torch 2.13, cpu (x86_64-linux): backend `cpu` is not in general.backends" in (
        very.stderr
    )
    assert len(very.stderr.splitlines()) > len(verbose.stderr.splitlines())


def test_no_progress_and_the_environment_twins(runner: CliRunner, tmp_path: Path) -> None:
    for flag in ("--no-progress", "--offline", "--out"):
        assert flag in runner.invoke(main, ["build", "--help"]).output
    text = runner.invoke(main, ["build", "--help"]).output
    for twin in ("NIXGEN_NO_PROGRESS", "NIXGEN_OFFLINE", "NIXGEN_OUT"):
        assert twin in text
    missing = str(tmp_path / "missing")
    plain = runner.invoke(main, ["validate", missing], env={"NIXGEN_COLOR": "never"})
    colour = runner.invoke(main, ["validate", missing], env={"NIXGEN_COLOR": "always"})
    assert "\x1b[" not in plain.stderr and "\x1b[31m" in colour.stderr


@pytest.mark.slow
def test_init_of_a_variant_for_another_system_says_where_it_builds(tmp_path: Path) -> None:
    done = nixgen("init", "relu-metal", "-l", "cpp-metal", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    if SYSTEM == "aarch64-darwin":
        return
    assert "nixgen build " not in done.stderr.replace("`nixgen build` builds them", "")
    assert f"none is for {SYSTEM}: they are for aarch64-darwin" in done.stderr


def test_the_docs_a_newcomer_reads(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text()
    assert "pipx install ." in readme and "uv tool install ." in readme
    guide = (REPO / "docs" / "migrating-from-edition-5.md").read_text()
    assert "`packages.<system>.kernels` means something else." in guide
    # The README `init` writes links no PyPI page that does not exist.
    root = tmp_path / "relu-doc"
    scaffold.create(root, "relu-doc", ["cpp-cpu"])
    assert "pypi.org/project/nixgen" not in (root / "README.md").read_text()


@pytest.mark.slow
def test_init_makes_a_tvm_ffi_cpp_project(tmp_path: Path) -> None:
    done = nixgen("init", "relu-tf", "-l", "cpp-cpu", "--binding", "tvm-ffi", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    root = tmp_path / "relu-tf"
    toml = tomllib.loads((root / "build.toml").read_text())
    assert toml["tvm-ffi"] == {"src": ["tvm-ffi-ext/tvm_ffi_binding.cpp"]}
    assert toml["kernel"]["relu_cpu"]["language"] == "cpp-cpu"
    binding = (root / "tvm-ffi-ext" / "tvm_ffi_binding.cpp").read_text()
    assert "TVM_FFI_DLL_EXPORT_TYPED_FUNC(relu, relu_cpu);" in binding
    strict = nixgen("validate", "--strict", cwd=root)
    assert strict.returncode == 0, strict.stderr
    mixed = nixgen(
        "init", "x-y", "-l", "cpp-cpu", "-l", "cpp-cuda", "--binding", "tvm-ffi", cwd=tmp_path
    )
    assert mixed.returncode == 2
    assert "`--language rust-cpu` (a crate that is its own binding) or `--language cpp-cpu`" in (
        mixed.stderr
    )


@pytest.mark.slow
def test_init_makes_a_noarch_project(tmp_path: Path) -> None:
    done = nixgen("init", "relu-py", "-l", "noarch", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "created relu-py/ (noarch)" in done.stderr
    root = tmp_path / "relu-py"
    toml = tomllib.loads((root / "build.toml").read_text())
    assert toml["torch-noarch"] == {} and "kernel" not in toml
    assert (root / "torch-ext" / "relu_py" / "__init__.py").is_file()
    names = nixgen("variants", "--names", "--system", "x86_64-linux", cwd=root)
    assert names.stdout.split() == ["torch-cpu"]
    mixed = nixgen("init", "x-y", "-l", "noarch", "-l", "cpp-cpu", cwd=tmp_path)
    assert mixed.returncode == 2 and "use it alone" in mixed.stderr


@pytest.mark.build
@pytest.mark.parametrize(
    "languages, binding", [(["cpp-cpu"], "tvm-ffi"), (["noarch"], "torch")], ids=str
)
def test_the_new_init_shapes_build_and_their_tests_pass(
    tmp_path: Path, languages: list[str], binding: str
) -> None:
    if binding == "tvm-ffi":
        pytest.importorskip("tvm_ffi")
    root = tmp_path / "relu-new"
    scaffold.create(root, "relu-new", languages, binding=binding)
    laid = subprocess.run(
        [str(REPO / "scripts" / "offline-inputs.sh"), str(tmp_path / "inputs")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
        check=True,
        timeout=300,
    )
    (root / "nixgen.toml").write_text("offline = true\n" + laid.stdout)
    env = {"NIX_CONFIG": nixtools.NIX_CONFIG}
    done = nixgen("build", cwd=root, env=env, timeout=1800)
    assert done.returncode == 0, done.stderr
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert " passed" in tests.stdout and "skipped" not in tests.stdout


@pytest.mark.slow
def test_shell_reads_nixgen_toml_too(demo: Path) -> None:
    (demo / "nixgen.toml").write_text(
        'offline = true\n[override-input]\nnixpkgs = "path:/srv/np"\n'
    )
    done = nixgen("shell", "--dry-run", cwd=demo)
    assert done.returncode == 0, done.stderr
    assert "--override-input nixpkgs path:/srv/np" in done.stdout
    assert "--offline" in done.stdout and "--option substituters ''" in done.stdout


def test_an_evaluation_without_network_ends_with_the_offline_note(
    runner: CliRunner, fake_nix: FakeNix, demo: Path
) -> None:
    message = (
        "error: unable to download 'https://api.github.com/repos/huggingface/kernels/tarball/"
        "8ac69fc5': Couldn't resolve host name (6)"
    )
    fake_nix.scenario(**{"@eval": {"stderr": [message], "exit": 1}})
    done = runner.invoke(main, ["build", str(demo), "--no-link"])
    assert done.exit_code == 1
    assert "nixgen: note: Nix could not download (https://api.github.com/" in done.stderr
    assert "build with --offline and local inputs" in done.stderr


def test_validate_checks_nixgen_toml_with_build_toml(runner: CliRunner, demo: Path) -> None:
    (demo / "nixgen.toml").write_text("offline = 1\n")
    done = runner.invoke(main, ["validate", str(demo)])
    assert done.exit_code == 2
    assert "nixgen.toml:1:11: error: offline: expected `true` or `false`" in done.stderr
    toml = demo / "build.toml"
    toml.write_text(toml.read_text().replace("edition = 6", "edition = 6\nlicence = 'MIT'"))
    both = runner.invoke(main, ["validate", str(demo)]).stderr
    assert "unknown key `licence`" in both and "offline: expected `true` or `false`" in both
