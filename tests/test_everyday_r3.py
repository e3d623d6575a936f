"""A newcomer's first use, round 3 (issue 38): every problem of every stage in one run,
sorted by line; "did you mean" for a misspelt discriminator key; the offline path; the
per-project settings; the smaller conventions users know from cargo, uv and Nix. Each
test fails on the nixgen before these changes (d95967f)."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.app import scaffold
from nixgen.building.nixlog import NixLog
from nixgen.cmdline.cli import main

from . import nixtools
from .conftest import REPO
from .test_build_cli import FAKE_NIX, SUCCESS, SYSTEM, FakeNix, calls_of, event


@pytest.fixture
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
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`nixgen ARGS` as a process (its real stdout, stderr and exit status)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("NIXGEN_")}
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), base.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "nixgen", *args],
        cwd=cwd,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _lines(text: str) -> list[int]:
    """The line numbers of the located problems in `text`, in the order printed."""
    return [int(m) for m in re.findall(r"build\.toml:(\d+):\d+: ", text)]


@pytest.fixture
def cuda(tmp_path: Path) -> Path:
    """The review's project: a cpp-cuda kernel with a misspelt capability beside an
    unknown one, an unlisted header and a license that is no SPDX identifier."""
    root = tmp_path / "relu"
    scaffold.create(root, "relu", ["cpp-cuda"])
    toml = root / "build.toml"
    text = toml.read_text().replace('license = "Apache-2.0"', 'license = "Apache2"')
    text = re.sub(
        r"^# cuda-capabilities = .*$",
        'cuda-capabilities = ["8.0", "9.O", "11.8"]',
        text,
        flags=re.MULTILINE,
    )
    toml.write_text(text)
    source = root / "relu_cuda" / "relu_cuda.cu"
    source.write_text(source.read_text().replace("#include <algorithm>", '#include "util.cuh"'))
    (root / "relu_cuda" / "util.cuh").write_text("#pragma once\n")
    return root


# ------------------------------------------------ 1. every stage's problems in one run


def test_a_schema_error_hides_no_warning(runner: CliRunner, cuda: Path) -> None:
    done = runner.invoke(main, ["validate", str(cuda)])
    assert done.exit_code == 2
    err = done.stderr
    assert "cuda-capabilities[1]: invalid CUDA capability `9.O`; did you mean `9.0`?" in err
    # The item beside it keeps its own index and column.
    assert re.search(r":\d+:36: warning: kernel\.relu_cuda\.cuda-capabilities\[2\]: unknown", err)
    assert "names `relu_cuda/util.cuh`, which no `src` list names" in err
    assert "general.license: unknown SPDX license identifier `Apache2`" in err
    assert err.rstrip().endswith("1 error, 3 warnings")
    lines = _lines(err)
    assert len(lines) == 4 and lines == sorted(lines)


def test_the_same_problems_once_the_error_is_fixed(runner: CliRunner, cuda: Path) -> None:
    """What `_beyond` keeps is what the fixed file reports (nothing the drop made up)."""
    broken = runner.invoke(main, ["validate", str(cuda)]).stderr
    toml = cuda / "build.toml"
    toml.write_text(toml.read_text().replace('"9.O"', '"9.0"'))
    fixed = runner.invoke(main, ["validate", str(cuda)]).stderr
    warnings = [line for line in broken.splitlines() if ": warning: " in line]
    assert warnings == [line for line in fixed.splitlines() if ": warning: " in line]


def test_warnings_print_in_line_order(runner: CliRunner, cuda: Path) -> None:
    toml = cuda / "build.toml"
    toml.write_text(toml.read_text().replace('"9.O"', '"9.0"'))
    for args in (["validate"], ["validate", "--strict"], ["validate", "--json"]):
        done = runner.invoke(main, [*args, str(cuda)])
        if "--json" in args:
            lines = [p["line"] for p in json.loads(done.stdout)["problems"]]
        else:
            lines = _lines(done.stderr)
        assert len(lines) == 3 and lines == sorted(lines), (args, done.output)


# ---------------------------------------------- 3. a misspelt discriminator key


def test_a_misspelt_language_key_gets_did_you_mean(runner: CliRunner, tmp_path: Path) -> None:
    root = tmp_path / "tt"
    scaffold.create(root, "tt", ["cpp-cpu"])
    toml = root / "build.toml"
    toml.write_text(toml.read_text().replace('language = "cpp-cpu"', 'languag = "cpp-cpu"'))
    done = runner.invoke(main, ["validate", str(root)])
    assert done.exit_code == 2
    line = next(x for x in toml.read_text().splitlines() if x.startswith("languag"))
    number = toml.read_text().splitlines().index(line) + 1
    assert (
        f"build.toml:{number}:1: error: kernel.relu_cpu.languag: unknown key `languag`; "
        "did you mean `language`?" in done.stderr
    )
    assert "missing `language`" not in done.stderr


def test_a_misspelt_backend_key_of_edition_5(runner: CliRunner, tmp_path: Path) -> None:
    toml = tmp_path / "build.toml"
    toml.write_text(
        '[general]\nname = "relu"\nuniversal = false\n\n[torch]\nsrc = ["t.cpp"]\n\n'
        '[kernel.relu]\nbacken = "cpu"\nsrc = ["relu/relu.cpp"]\n'
    )
    done = runner.invoke(main, ["validate", "--no-file-checks", str(toml)])
    assert done.exit_code == 2
    assert "kernel.relu.backen: unknown key `backen`; did you mean `backend`?" in done.stderr


# ------------------------------------------------------------------ 2. the offline path


def test_offline_on_a_fresh_project_names_the_missing_inputs_at_once(demo: Path) -> None:
    started = time.monotonic()
    done = nixgen("build", "--offline", cwd=demo)
    took = time.monotonic() - started
    assert done.returncode == 1, done.stderr
    assert took < 10, took
    err = done.stderr
    assert "nixgen: error: --offline: the flake inputs `kernel-builder` (github:huggingface/" in err
    assert "`nixpkgs` (github:NixOS/nixpkgs/" in err
    assert "--override-input kernel-builder path:DIR --override-input nixpkgs path:DIR" in err
    assert "scripts/offline-inputs.sh DIR" in err
    # NIXGEN_OFFLINE is its environment twin; an override leaves only the other input.
    twin = nixgen("build", "--override-input", "nixpkgs", "path:/x", cwd=demo, env=OFFLINE)
    assert "the flake input `kernel-builder` (github:" in twin.stderr
    assert "`nixpkgs`" not in twin.stderr


OFFLINE = {"NIXGEN_OFFLINE": "1"}


def test_offline_passes_nix_its_offline_settings(
    runner: CliRunner, fake_nix: FakeNix, demo: Path
) -> None:
    args = ["build", str(demo), "--no-link", "--offline"]
    args += [
        "--override-input",
        "nixpkgs",
        "path:/a",
        "--override-input",
        "kernel-builder",
        "path:/b",
    ]
    done = runner.invoke(main, args)
    assert done.exit_code == 0, done.output
    [evaluate] = calls_of(fake_nix, "eval")
    [build] = calls_of(fake_nix, "build")
    for command in (evaluate, build):
        assert "--offline" in command
        i = command.index("substituters")
        assert command[i - 1 : i + 2] == ["--option", "substituters", ""]
        assert "connect-timeout" in command


def test_a_locked_input_in_the_store_is_not_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nixgen.building import offline

    store = tmp_path / "store"
    store.mkdir()
    monkeypatch.setenv("NIX_STORE_DIR", str(store))
    nar = "sha256-h4gyzSK14DjhF7cBN4VY+Km2ytc4Gg5tV6noZdNPhaY="
    lock = {
        "nodes": {
            "root": {"inputs": {"nixpkgs": "nixpkgs"}},
            "nixpkgs": {"locked": {"narHash": nar, "type": "github"}},
        },
        "root": "root",
        "version": 7,
    }
    (tmp_path / "flake.lock").write_text(json.dumps(lock))
    assert [n for n, _ in offline.missing_inputs(tmp_path, [])] == ["kernel-builder", "nixpkgs"]
    path = offline.source_path(nar)
    assert path is not None
    Path(path).mkdir()
    assert [n for n, _ in offline.missing_inputs(tmp_path, [])] == ["kernel-builder"]


def test_the_store_path_of_a_locked_input_is_nixs(tmp_path: Path) -> None:
    from nixgen.building import offline

    # What `nix hash path` and `nix store add-path --name source` give for one file `a`
    # holding "hi\n" (Nix 2.8); the same with Nix at hand.
    nar = "sha256-h4gyzSK14DjhF7cBN4VY+Km2ytc4Gg5tV6noZdNPhaY="
    expected = "/nix/store/ms37m6i4z2hfa1lm7a6lch7lw9vcr26l-source"
    assert offline.source_path(nar, store="/nix/store") == expected
    if shutil.which("nix") is None:
        return
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "b").write_text("other\n")
    env = nixtools.nix_env()
    run = functools.partial(subprocess.run, capture_output=True, text=True, env=env, check=True)
    hashed = run(["nix", "hash", "path", str(tmp_path / "src")]).stdout.strip()
    added = run(["nix", "store", "add-path", "--name", "source", str(tmp_path / "src")])
    assert offline.source_path(hashed) == added.stdout.strip()


#: A build log line as Nix 2.8 writes it when a builder cannot be started: its
#: serialised error, NUL-padded (the review's `Error  Error  p  executing …`).
GARBLED = (
    "\x05\x00\x00\x00\x00\x00\x00\x00Error\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    "\x05\x00\x00\x00\x00\x00\x00\x00Error\x00\x00\x00p\x00\x00\x00\x00\x00\x00\x00"
    "executing 'host.nix-is-missing--run-tests/nixpkgs/make_host.py': No such file or "
    "directory\x00\x00\x00\x00\x00\x00\x00\x00"
)


def test_a_stand_in_without_host_nix_gets_a_clear_message() -> None:
    from nixgen.building import offline

    state = NixLog()
    drv = "/nix/store/zcgn88sbs053if0fj31ivcmshc5kfpdy-stub-host-tools.drv"
    for line in (
        event(action="start", id=1, level=3, type=105, fields=[drv, "", 1, 1]),
        event(action="result", id=1, type=101, fields=[GARBLED]),
        event(action="msg", level=0, msg=f"error: builder for '{drv}' failed with exit code 1"),
    ):
        state.feed(line)
    report = state.failure_report(10)
    assert (
        "executing 'host.nix-is-missing--run-tests/nixpkgs/make_host.py': No such file or "
        "directory" in report
    )
    assert not any("\x00" in line or "Error" in line for line in report)
    [note] = offline.notes(report, offline=True)
    assert "has no host.nix" in note and "scripts/offline-inputs.sh DIR" in note


def test_a_failed_download_points_at_offline() -> None:
    from nixgen.building import offline

    message = (
        "unable to download 'https://api.github.com/repos/huggingface/kernels/tarball/8ac69f': "
        "Couldn't resolve host name (6)"
    )
    [note] = offline.notes([f"error: {message}"], offline=False)
    assert "Nix could not download (https://api.github.com/" in note
    assert "--offline" in note and "scripts/offline-inputs.sh" in note


def test_the_script_lays_out_the_stand_ins(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(REPO / "scripts" / "offline-inputs.sh"), str(tmp_path / "inputs")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    table = tomllib.loads(done.stdout)["override-input"]
    assert table == {
        "nixpkgs": f"path:{tmp_path / 'inputs' / 'nixpkgs'}",
        "kernel-builder": f"path:{tmp_path / 'inputs' / 'kernel-builder'}",
    }
    assert (tmp_path / "inputs" / "nixpkgs" / "host.nix").is_file()
    assert (tmp_path / "inputs" / "kernel-builder" / "flake.nix").is_file()
    assert "nixgen build --offline --override-input nixpkgs path:" in done.stderr


@pytest.mark.build
def test_offline_builds_with_the_laid_out_stand_ins(tmp_path: Path) -> None:
    root = tmp_path / "relu-off"
    scaffold.create(root, "relu-off", ["cpp-cpu"])
    script = REPO / "scripts" / "offline-inputs.sh"
    laid = subprocess.run(
        [str(script), str(tmp_path / "inputs")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
        check=True,
        timeout=300,
    )
    (root / "nixgen.toml").write_text("offline = true\n" + laid.stdout)
    variant = f"torch213-cxx11-cpu-{SYSTEM}"
    env = {"NIX_CONFIG": nixtools.NIX_CONFIG}
    done = nixgen("build", "--variant", variant, cwd=root, env=env, timeout=1800)
    assert done.returncode == 0, done.stderr
    assert (root / "build" / variant).is_dir()


# ------------------------------------------------------- 4. nixgen.toml, the --out error


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


def test_the_out_error_is_in_the_one_error_format(demo: Path) -> None:
    for verb in ("render", "build", "watch"):
        done = nixgen(verb, "--out", "../escape", cwd=demo)
        assert done.returncode == 2, (verb, done.stderr)
        assert "nixgen: error: --out: invalid output directory `../escape`: " in done.stderr, verb
    twin = nixgen("render", cwd=demo, env={"NIXGEN_OUT": "../escape"})
    assert "nixgen: error: --out: invalid output directory `../escape`" in twin.stderr


# ----------------------------------------------------------------- 5. the rest of the list


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
