"""A kernel author's everyday loop (issue 25): building in a git work tree, the binary
cache, build logs, the command-line conventions users know from cargo, uv and Nix, every
problem of a file in one run, `init` output that passes `validate --strict`, and the
packaging. Each test fails on the nixgen before these changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.app import scaffold
from nixgen.cmdline.cli import main
from nixgen.rendering import jsonschema

from . import nixtools
from .conftest import REPO, copy_out
from .fakenix import FAKE_NIX, SUCCESS, SYSTEM, FakeNix, bundled, calls_of, event
from .tiers import starts_processes


@pytest.fixture
@starts_processes
def fake_nix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeNix:
    """test_build_cli's stand-in `nix` on PATH (it replays internal-json logs)."""
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


def nixgen(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`nixgen ARGS` as a process (its real stdout, stderr and exit status)."""
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), base.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "nixgen", *args],
        cwd=cwd,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo_project(tmp_path: Path) -> Path:
    """A new project inside a git work tree, none of its files added yet."""
    git(tmp_path, "init", "-q", ".")
    root = tmp_path / "kk"
    scaffold.create(root, "kk", ["cpp-cpu"])
    return root


# ----------------------------------------------------------- 1. a git work tree


def test_untracked_files_stop_the_build_with_the_git_add_that_fixes_it(
    runner: CliRunner, fake_nix: FakeNix, repo_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_project)
    result = runner.invoke(main, ["build"])
    assert result.exit_code == 2, result.output
    assert fake_nix.calls() == [], "Nix never runs"
    out = result.stderr
    assert "not tracked by git" in out
    assert "`git add -- .`" in out and "`git add --intent-to-add -- .`" in out
    # Located: a listed source at its key in build.toml, the others by file.
    assert "error: kernel.relu_cpu.src[0]: `relu_cpu/relu_cpu.cpp` is not tracked by git" in out
    assert "build.toml:" in out and "flake.nix: error: is not tracked by git" in out
    assert "nix/: error: " in out and "generated file(s) are not tracked by git" in out


def test_intent_to_add_is_enough_and_the_build_runs(
    runner: CliRunner, fake_nix: FakeNix, repo_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_project)
    assert runner.invoke(main, ["render"]).exit_code == 0
    git(repo_project, "add", "--intent-to-add", ".")
    # Ignored files under a listed directory are meant to stay out of the flake.
    cache = repo_project / "torch-ext" / "kk" / "__pycache__"
    cache.mkdir()
    (cache / "__init__.cpython-311.pyc").write_bytes(b"")
    result = runner.invoke(main, ["build", "--no-link"])
    assert result.exit_code == 0, result.output
    assert calls_of(fake_nix, "eval")


def test_an_ignored_listed_file_needs_git_add_force(
    runner: CliRunner, fake_nix: FakeNix, repo_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_project)
    assert runner.invoke(main, ["render"]).exit_code == 0
    (repo_project / ".gitignore").write_text("*.cpp\n")
    git(repo_project, "add", ".")
    result = runner.invoke(main, ["build"])
    assert result.exit_code == 2, result.output
    assert "`relu_cpu/relu_cpu.cpp` is ignored by git (.gitignore)" in result.stderr
    assert "run `git add --force -- torch-ext/torch_binding.cpp relu_cpu/relu_cpu.cpp`" in (
        result.stderr
    )
    # The dry run says the same, as warnings.
    dry = runner.invoke(main, ["build", "--dry-run"])
    assert dry.exit_code == 0
    assert "warning: kernel.relu_cpu.src[0]: `relu_cpu/relu_cpu.cpp` is ignored" in dry.stderr


def test_outside_a_git_work_tree_nothing_is_checked(
    runner: CliRunner,
    fake_nix: FakeNix,
    demo: Path,
) -> None:
    result = runner.invoke(main, ["build", str(demo), "--no-link"])
    assert result.exit_code == 0, result.output


@pytest.mark.slow
def test_init_in_a_git_work_tree_says_git_add(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", ".")
    done = nixgen("init", "kk", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "git add" in done.stderr
    elsewhere = tmp_path.parent / f"{tmp_path.name}-nogit"
    elsewhere.mkdir()
    done = nixgen("init", "kk", cwd=elsewhere)
    assert "git add" not in done.stderr and "nixgen build" in done.stderr


# ------------------------------------------------------------ 2. the binary cache

IGNORED = [
    event(
        action="msg",
        level=1,
        msg=f"\x1b[35;1mwarning:\x1b[0m ignoring untrusted flake configuration setting '{name}'",
    )
    for name in ("extra-substituters", "extra-trusted-public-keys")
]


def test_ignored_cache_settings_get_one_hint(
    runner: CliRunner,
    fake_nix: FakeNix,
    demo: Path,
) -> None:
    fake_nix.scenario(
        **{"@eval": {"stderr": IGNORED, "exit": 0}, "*": {"stderr": SUCCESS, "exit": 0}}
    )
    result = runner.invoke(main, ["build", str(demo), "--no-link"])
    assert result.exit_code == 0, result.output
    assert result.stderr.count("Nix ignored the flake's binary cache settings") == 1
    assert "pass --accept-flake-config" in result.stderr
    assert "extra-substituters = https://huggingface.cachix.org" in result.stderr
    assert "trusted-users" in result.stderr


def test_accept_flake_config_and_options_reach_nix(
    runner: CliRunner,
    fake_nix: FakeNix,
    demo: Path,
) -> None:
    result = runner.invoke(
        main,
        ["build", str(demo), "--no-link", "--accept-flake-config", "--option", "sandbox", "false"],
    )
    assert result.exit_code == 0, result.output
    [evaluate] = calls_of(fake_nix, "eval")
    [build] = calls_of(fake_nix, "build")
    assert "--accept-flake-config" in evaluate
    for command in (evaluate, build):
        i = command.index("--option")
        assert command[i : i + 3] == ["--option", "sandbox", "false"]
    # `nix build` of derivations reads no flake: the cache comes as options.
    i = build.index("extra-substituters")
    assert build[i - 1 : i + 2] == [
        "--option",
        "extra-substituters",
        "https://huggingface.cachix.org",
    ]
    dry = runner.invoke(main, ["build", str(demo), "--dry-run", "--accept-flake-config"])
    assert "--accept-flake-config" in dry.stdout


# ------------------------------------------------------------ build logs, -q, -v


def test_print_build_logs_shows_every_line_as_it_comes(
    runner: CliRunner,
    fake_nix: FakeNix,
    demo: Path,
) -> None:
    variant = bundled(demo)[0]
    quiet = runner.invoke(main, ["build", str(demo), "--variant", variant])
    assert "Running phase: buildPhase" not in quiet.output
    result = runner.invoke(main, ["build", str(demo), "--variant", variant, "-L"])
    assert result.exit_code == 0, result.output
    assert "kernel relu_cpu> Running phase: buildPhase" in result.stderr
    assert "extension> Running phase: installPhase" in result.stderr
    # Before the verb too, as with cargo and uv.
    again = runner.invoke(main, ["-L", "build", str(demo), "--variant", variant])
    assert "kernel relu_cpu> Running phase: buildPhase" in again.stderr


def test_quiet_and_verbose(runner: CliRunner, fake_nix: FakeNix, demo: Path) -> None:
    variant = bundled(demo)[0]
    quiet = runner.invoke(main, ["build", str(demo), "--variant", variant, "-q"])
    assert quiet.exit_code == 0, quiet.output
    assert "built 1 of 1" not in quiet.output and "->" not in quiet.output
    verbose = runner.invoke(main, ["build", str(demo), "--variant", variant, "-v"])
    assert "running: nix eval" in verbose.stderr and "running: nix build" in verbose.stderr
    assert "built 1 of 1" in verbose.stderr
    for verb in ("validate", "variants", "render", "show", "matrix", "watch", "migrate"):
        assert "--quiet" in runner.invoke(main, [verb, "--help"]).output, verb
    (demo / "nix" / "project.nix").unlink()
    render = runner.invoke(main, ["render", str(demo), "-v"])
    assert "  added nix/project.nix" in render.stderr


# ---------------------------------------------------------------- 4. conventions


def test_version_short_flag(runner: CliRunner) -> None:
    result = runner.invoke(main, ["-V"])
    assert result.exit_code == 0 and result.stdout.startswith("nixgen, version ")


@pytest.mark.slow
def test_an_unknown_verb_gets_did_you_mean(tmp_path: Path) -> None:
    done = nixgen("valdate", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "nixgen: error: no such command `valdate`; did you mean `validate`?"
    )


@pytest.mark.slow
def test_completions_is_accepted(runner: CliRunner) -> None:
    result = runner.invoke(main, ["completions", "bash"])
    assert result.exit_code == 0 and "_NIXGEN_COMPLETE" in result.stdout


@pytest.mark.slow
def test_one_error_format(tmp_path: Path, demo: Path) -> None:
    """Usage errors, nixgen's own failures and file-less problems all read
    `nixgen: error: …`; located problems `FILE:LINE:COL: error: …`."""
    usage = nixgen("validate", "--jsn", cwd=tmp_path)
    assert usage.returncode == 2
    assert usage.stderr.startswith("nixgen: error: No such option '--jsn'. Did you mean '--json'?")
    unknown = nixgen("build", str(demo), "--variant", "nope", cwd=tmp_path)
    assert unknown.stderr.startswith("nixgen: error: unknown variant `nope`")
    taken = nixgen("init", "demo", "--dir", str(demo), cwd=tmp_path)
    assert taken.stderr.startswith("nixgen: error: "), taken.stderr
    for text in (usage.stderr, unknown.stderr, taken.stderr):
        assert "Error:" not in text and "<input>" not in text and "Usage:" not in text


@pytest.mark.slow
def test_status_on_stderr_data_on_stdout(demo: Path) -> None:
    validate = nixgen("validate", cwd=demo)
    assert validate.stdout == "" and "ok (edition 6" in validate.stderr
    variants = nixgen("variants", cwd=demo)
    assert "NAME" in variants.stdout and "variant(s)" not in variants.stdout
    assert "variant(s)" in variants.stderr
    render = nixgen("render", cwd=demo)
    assert render.stdout == "" and "rendered nix/" in render.stderr


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"TERM": "xterm"}, False),
        ({"FORCE_COLOR": "1", "TERM": "xterm"}, True),
        ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
    ],
)
@pytest.mark.slow
def test_colour_from_the_environment(tmp_path: Path, env: dict[str, str], expected: bool) -> None:
    done = nixgen("validate", str(tmp_path), cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert ("\x1b[" in done.stderr) is expected, done.stderr


@pytest.mark.slow
def test_color_option(tmp_path: Path) -> None:
    always = nixgen(
        "validate", str(tmp_path), "--color=always", cwd=tmp_path, env={"NO_COLOR": "1"}
    )
    assert "\x1b[31m" in always.stderr
    never = nixgen(
        "--color", "never", "validate", str(tmp_path), cwd=tmp_path, env={"FORCE_COLOR": "1"}
    )
    assert "\x1b[" not in never.stderr
    bad = nixgen("validate", "--color=sometimes", cwd=tmp_path)
    assert (
        bad.returncode == 2 and "'sometimes' is not one of 'auto', 'always', 'never'" in bad.stderr
    )


ENVELOPE = {"version", "command", "ok", "problems", "result"}


@pytest.mark.parametrize(
    "args",
    [
        ["validate"],
        ["variants"],
        ["show"],
        ["matrix"],
        ["schema"],
        pytest.param(["build", "--dry-run"], marks=pytest.mark.slow),  # asks git and nix
    ],
)
def test_one_json_envelope(
    runner: CliRunner, demo: Path, args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(demo)
    result = runner.invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert set(answer) == ENVELOPE
    assert answer["version"] == 1 and answer["command"] == args[0] and answer["ok"] is True
    assert answer["result"] is not None


def test_failures_use_the_same_envelope(runner: CliRunner, tmp_path: Path) -> None:
    for args in (["validate", str(tmp_path), "--json"], ["variants", "--jsn", "--json"]):
        result = runner.invoke(main, args)
        assert result.exit_code == 2
        answer = json.loads(result.stdout)
        assert set(answer) == ENVELOPE and answer["ok"] is False and answer["result"] is None
        assert answer["problems"][0]["severity"] == "error"


@pytest.mark.slow
def test_build_toml_is_found_from_a_subdirectory(demo: Path) -> None:
    done = nixgen("validate", cwd=demo / "relu_cpu")
    assert done.returncode == 0, done.stderr
    assert "ok (edition 6, 1 kernel" in done.stderr
    assert "build.toml: ok" in done.stderr


# --------------------------------------------------- 5. every problem in one run


def _two_kernels(tmp_path: Path) -> Path:
    root = tmp_path / "pp"
    scaffold.create(root, "pp", ["cpp-cpu", "cpp-cuda"])
    text = (root / "build.toml").read_text()
    cpu = '[kernel.relu_cpu]\nlanguage = "cpp-cpu"\ndepends'
    assert cpu in text
    (root / "build.toml").write_text(text.replace(cpu, cpu.replace("depends", "depnds")))
    (root / "relu_cpu" / "relu_cpu.cpp").unlink()
    return root


@pytest.mark.slow
def test_a_key_typo_no_longer_hides_file_and_cross_field_problems(tmp_path: Path) -> None:
    root = _two_kernels(tmp_path)
    toml = root / "build.toml"
    toml.write_text(toml.read_text().replace('backends = ["cpu", "cuda"]', 'backends = ["cpu"]'))
    done = nixgen("validate", cwd=root)
    assert done.returncode == 2
    err = done.stderr
    assert "kernel.relu_cpu.depnds: unknown key `depnds`; did you mean `depends`?" in err
    # The same run: the file the kernel with the typo lists, and another table's rule.
    assert "kernel.relu_cpu.src[0]: file `relu_cpu/relu_cpu.cpp` does not exist" in err
    assert "kernel.relu_cuda.language: `cpp-cuda` kernels build for the `cuda` backend" in err
    # the typo leaves `depends`, which the format requires, missing: an error of its own
    assert "kernel.relu_cpu.depends: required key is missing" in err
    assert err.rstrip().endswith("4 errors")


@pytest.mark.slow
def test_an_error_in_general_still_shows_the_file_problems(tmp_path: Path) -> None:
    root = _two_kernels(tmp_path)
    toml = root / "build.toml"
    toml.write_text(
        toml.read_text().replace('backends = ["cpu", "cuda"]', 'backends = ["cpu", "cuad"]')
    )
    (root / "relu_cuda" / "relu_cuda.cu").unlink()
    done = nixgen("validate", cwd=root)
    err = done.stderr
    assert "general.backends[1]: unknown value `cuad`; did you mean `cuda`?" in err
    assert "kernel.relu_cpu.src[0]: file `relu_cpu/relu_cpu.cpp` does not exist" in err
    assert "kernel.relu_cuda.src[0]: file `relu_cuda/relu_cuda.cu` does not exist" in err
    # No guess about the kernels' backends while [general] is wrong.
    assert "not in general.backends" not in err
    # (and the typo's `depends`, which the format requires, is missing)
    assert err.rstrip().endswith("5 errors")


def _inits() -> list[tuple[list[str], str]]:
    tvm_ffi = [([lang], "tvm-ffi") for lang in scaffold.TVM_FFI_LANGUAGES]
    return [([lang], "torch") for lang in scaffold.INIT_LANGUAGES] + tvm_ffi


@pytest.mark.parametrize("languages, binding", _inits(), ids=lambda v: str(v))
@pytest.mark.slow
def test_every_init_passes_validate_strict(
    runner: CliRunner, tmp_path: Path, languages: list[str], binding: str
) -> None:
    root = tmp_path / "k"
    args = ["init", "kx", "--dir", str(root), "--binding", binding]
    for language in languages:
        args += ["-l", language]
    made = runner.invoke(main, args)
    assert made.exit_code == 0, made.output
    assert "warning" not in made.output
    result = runner.invoke(main, ["validate", str(root), "--strict"])
    assert result.exit_code == 0, result.output


def test_init_writes_the_schema_line_and_file(tmp_path: Path) -> None:
    root = tmp_path / "kx"
    scaffold.create(root, "kx", ["cpp-cpu"])
    assert (root / "build.toml").read_text().splitlines()[0] == "#:schema ./build-toml.schema.json"
    assert json.loads((root / "build-toml.schema.json").read_text()) == jsonschema.schema()


# ---------------------------------------------------------- 8. docs, packaging


@pytest.mark.slow
def test_license_is_an_spdx_expression(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(
        main, ["init", "kx", "--dir", str(tmp_path / "k"), "--license", "MIT OR Apache"]
    )
    assert result.exit_code == 2
    assert "unknown SPDX license identifier `Apache`; did you mean `Apache-2.0`?" in result.stderr
    ok = runner.invoke(
        main, ["init", "kx", "--dir", str(tmp_path / "k"), "--license", "MIT OR Apache-2.0"]
    )
    assert ok.exit_code == 0, ok.output
    toml = tmp_path / "k" / "build.toml"
    toml.write_text(toml.read_text().replace('"MIT OR Apache-2.0"', '"Apache-2.1"'))
    checked = runner.invoke(main, ["validate", str(tmp_path / "k")])
    assert (
        "warning: general.license: unknown SPDX license identifier `Apache-2.1`" in checked.stderr
    )
    assert runner.invoke(main, ["validate", str(tmp_path / "k"), "--strict"]).exit_code == 2


def test_package_metadata() -> None:
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "Apache-2.0", "an SPDX string (PEP 639), not the table form"
    assert any(c.startswith("Programming Language :: Python :: 3.1") for c in meta["classifiers"])
    assert any(d.startswith("license-expression") for d in meta["dependencies"])


@pytest.mark.slow
def test_the_wheel_holds_no_tests(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    [wheel] = tmp_path.glob("nixgen-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "nixgen/nixlib/project.nix" in names
    assert not [n for n in names if "/tests/" in n]
    # Every module, template and data file of the source tree, wherever it sits in nixgen/.
    package = REPO / "nixgen"
    shipped = [
        p
        for pattern in ("*.py", "templates/**/*.j2", "data/*.json")
        for p in package.glob(pattern if pattern != "*.py" else "**/*.py")
        if "nixlib" not in p.relative_to(package).parts and "__pycache__" not in p.parts
    ]
    missing = [str(p.relative_to(REPO)) for p in shipped if str(p.relative_to(REPO)) not in names]
    assert not missing, f"not in the wheel: {missing}"
    # The unpacked wheel alone renders a project: templates, data and library found in it.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    project = tmp_path / "relu-cpu"
    copy_out(REPO / "examples" / "relu-cpu", project)
    # Out of the repository (without its nixgen.toml's `path:../../nix`), the example gets
    # its own copy of the library: the wheel's copy must equal it.
    from click.testing import CliRunner

    from nixgen.cmdline.cli import main

    assert CliRunner().invoke(main, ["render", str(project)]).exit_code == 0
    assert (project / "nix" / "lib" / "project.nix").is_file()
    env = {**os.environ, "PYTHONPATH": str(site), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    checked = subprocess.run(
        [sys.executable, "-m", "nixgen", "render", "--check", str(project)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    where = subprocess.run(
        [sys.executable, "-c", "import nixgen; print(nixgen.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=True,
    )
    assert where.stdout.startswith(str(site)), where.stdout


def test_docs_name_the_real_flags() -> None:
    readme = (REPO / "README.md").read_text()
    build = next(line for line in readme.splitlines() if line.startswith("### `nixgen build"))
    # The link directory is --out-link (--out is where the generated Nix lives).
    assert "[--out-link DIR | --no-link]" in build and "[--log-lines N]" in build
    assert "--accept-flake-config" in build and "-L" in build
    toolchain = (REPO / "docs" / "toolchain.md").read_text()
    assert "as build/<variant>/" not in toolchain


def test_render_names_root_files_apart_from_the_output_directory(
    runner: CliRunner,
    demo: Path,
) -> None:
    assert runner.invoke(main, ["render", str(demo)]).exit_code == 0
    (demo / "flake.nix").write_text((demo / "flake.nix").read_text() + "\n")
    again = runner.invoke(main, ["render", str(demo)])
    assert "rendered nix/: 0 added, 0 changed, 0 removed" in again.stderr
    assert "; flake.nix changed" in again.stderr


def test_show_takes_json(runner: CliRunner, demo: Path) -> None:
    result = runner.invoke(main, ["show", str(demo), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["result"]["general"]["name"] == "relu-demo"


# ------------------------------------------------------ 3. dev and test shells


def test_shell_runs_nix_develop_on_the_variant_shell(
    runner: CliRunner, fake_nix: FakeNix, demo: Path
) -> None:
    variant = bundled(demo)[0]
    result = runner.invoke(
        main,
        [
            *("shell", str(demo), "--variant", variant, "--test", "-c", "pytest", "-L"),
            *("--override-input", "nixpkgs", "path:/stub", "--accept-flake-config"),
        ],
    )
    assert result.exit_code == 0, result.output
    *_, call = [c["args"] for c in fake_nix.calls()]
    assert call[0] == "develop"
    assert f"{demo.resolve()}#devShells.{SYSTEM}.test-{variant}" in call
    assert call[-4:] == ["--command", "bash", "-c", "pytest"]
    assert "-L" in call and "--accept-flake-config" in call
    assert call[call.index("--override-input") + 1 : call.index("--override-input") + 3] == [
        "nixpkgs",
        "path:/stub",
    ]
    plain = runner.invoke(main, ["shell", str(demo), "--dry-run"])
    assert f"#devShells.{SYSTEM}.default" in plain.stdout
    typo = runner.invoke(main, ["shell", str(demo), "--variant", variant + "x"])
    assert typo.exit_code == 2 and f"did you mean `{variant}`?" in typo.stderr


def test_shell_takes_a_system_as_build_does(runner: CliRunner, demo: Path) -> None:
    other = next(s for s in ("aarch64-linux", "x86_64-linux") if s != SYSTEM)
    names = runner.invoke(main, ["variants", str(demo), "--system", other, "--names"])
    variant = names.stdout.split()[0]
    plain = runner.invoke(main, ["shell", str(demo), "--system", other, "--dry-run"])
    assert plain.exit_code == 0, plain.output
    assert f"#devShells.{other}.default" in plain.stdout
    test = runner.invoke(
        main, ["shell", str(demo), "--system", other, "--variant", variant, "--test", "--dry-run"]
    )
    assert test.exit_code == 0, test.output
    assert f"#devShells.{other}.test-{variant}" in test.stdout
    assert f"packages.{other}" in test.stdout  # the variant built first is that system's
    # Without --system, another system's variant names the system it is for.
    here = runner.invoke(main, ["shell", str(demo), "--variant", variant])
    assert here.exit_code == 2 and f"is for {other}, not {SYSTEM}" in here.stderr
    bad = runner.invoke(main, ["shell", str(demo), "--system", "x86_64-windows"])
    assert bad.exit_code == 2 and "--system" in bad.stderr


@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
@pytest.mark.nix
def test_nix_develop_enters_a_shell_without_building_variants(
    tmp_path: Path, copy_example: Callable[[str], Path]
) -> None:
    """`nix develop` on a rendered example, through the stand-ins: torch, the `kernels`
    client and pytest are there, and no kernel or extension is built to get there."""
    root = copy_example("relu-cpu")
    assert CliRunner().invoke(main, ["render", str(root)]).exit_code == 0  # as committed
    stub = nixtools.make_stub(tmp_path / "stub")
    env = nixtools.nix_env()
    ref = f"path:{root}"
    shells = nixtools.flake_eval(root, f"devShells.{SYSTEM}", stub=stub, apply="builtins.attrNames")
    variants = nixtools.flake_eval(root, f"variants.{SYSTEM}", stub=stub)
    assert {"default", "test", *variants, *(f"test-{v}" for v in variants)} == set(shells)
    drv = nixtools.flake_eval(root, f"devShells.{SYSTEM}.default.drvPath", stub=stub)
    closure = subprocess.run(
        ["nix-store", "--query", "--requisites", drv], capture_output=True, text=True, env=env
    )
    assert closure.returncode == 0, closure.stderr
    assert not [p for p in closure.stdout.split() if "torch-ext" in p or "relu_cpu" in p]
    done = subprocess.run(
        [
            "nix",
            "develop",
            ref,
            *nixtools.overrides(stub),
            "--command",
            "python",
            "-c",
            "import kernels, pytest, torch, os; print('in shell', os.environ['KERNEL_BUILD'])",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert f"in shell {root}/build" in done.stdout
    # `nix develop` takes its shell from the flake's nixpkgs (`bashInteractive`, which real
    # nixpkgs has): the stand-in has it too, so no `error (ignored)` about it.
    assert "error (ignored)" not in done.stderr and "bashInteractive" not in done.stderr
    # `nixgen shell` is the same shell.
    via = nixgen(
        "shell",
        str(root),
        *nixtools.overrides(stub),
        "-c",
        "echo $KERNEL_BUILD",
        cwd=root,
        env=env,
    )
    assert via.returncode == 0, via.stderr
    assert via.stdout.strip().endswith(f"{root}/build")


@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
@pytest.mark.build
def test_checks_run_the_project_tests_against_the_built_variant(tmp_path: Path, demo: Path) -> None:
    stub = nixtools.make_stub(tmp_path / "stub")
    assert CliRunner().invoke(main, ["render", str(demo)]).exit_code == 0
    variant = bundled(demo)[-1]
    [out] = nixtools.flake_build(demo, f"checks.{SYSTEM}.{variant}", stub=stub, timeout=3600)
    assert out.exists()
    log = subprocess.run(
        ["nix", "log", str(out)], capture_output=True, text=True, env=nixtools.nix_env()
    )
    assert " passed" in log.stdout, log.stdout + log.stderr


def test_matrix_rows_have_one_shape_whatever_the_grouping(runner: CliRunner, demo: Path) -> None:
    single = json.loads(runner.invoke(main, ["matrix", str(demo)]).stdout)["include"]
    grouped = json.loads(runner.invoke(main, ["matrix", str(demo), "--max-jobs", "3"]).stdout)
    grouped = grouped["include"]
    assert len(grouped) < len(single)
    keys = {"name", "system", "runner", "backend", "attrs", "variants", "attr", "variant"}
    assert all(set(row) == keys for row in [*single, *grouped])
    assert all(row["attrs"] == row["attr"].split(" ") for row in grouped)


def test_system_is_checked_the_same_way_by_every_verb(runner: CliRunner, demo: Path) -> None:
    for verb in ("build", "variants", "matrix"):
        result = runner.invoke(main, [verb, str(demo), "--system", "x86_64-linx"])
        assert result.exit_code == 2, verb
        assert "Invalid value for '--system': 'x86_64-linx' is not one of" in result.stderr, verb


def test_no_variants_here_names_the_systems_that_have_some(
    runner: CliRunner, tmp_path: Path
) -> None:
    root = tmp_path / "mm"
    scaffold.create(root, "mm", ["cpp-metal"])
    result = runner.invoke(main, ["build", str(root), "--system", "x86_64-linux"])
    assert result.exit_code == 2
    assert (
        "mm has no variants for x86_64-linux (it has some for aarch64-darwin: "
        "pass --system aarch64-darwin)" in result.stderr
    )


def test_bare_nixgen_prints_its_help_on_stdout(runner: CliRunner) -> None:
    result = runner.invoke(main, [])
    assert result.exit_code == 0
    assert "Commands:" in result.stdout and "shell" in result.stdout
