"""`nixgen migrate`: old build.toml files rewritten as edition 6, keeping what does not change."""

from __future__ import annotations

import collections
import os
import shutil
import stat
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tomli
from click.testing import CliRunner, Result

from nixgen.app import migrate
from nixgen.checking import project
from nixgen.cmdline.cli import main
from nixgen.core import tomledit
from nixgen.core.errors import OutputError, ProblemError
from nixgen.reading import load
from nixgen.reading.schema import v6

from .conftest import EXAMPLES, corpus_id, materialize, without_library
from .corpus_table import LOADING
from .nixtools import kernel_builder, make_stub, needs_nix, nix_eval_json
from .projects import V4, render_into

V6 = """\
[general]
name    = "relu"   # odd spacing stays
version = 1
edition = 6
license = "Apache-2.0"
backends = ["cpu"]

[torch]
src = [ "torch-ext/torch_binding.cpp" ]

[kernel.relu]
language = "cpp-cpu"
src = ["relu/relu.cpp"]
depends = []
"""


@pytest.fixture
def build_toml(make_project: Callable[..., Path]) -> Callable[[str], Path]:
    """A project directory holding only `text` as its build.toml; returns the file."""

    def make(text: str) -> Path:
        return make_project(textwrap.dedent(text), files=False) / "build.toml"

    return make


def run(runner: CliRunner, *args: str | Path) -> Result:
    return runner.invoke(main, ["migrate", *map(str, args)])


def upgraded(path: Path) -> Any:
    """The model the file at `path` is read as, in memory."""
    return project.structure(load.load(path))[1]


def comment_lines(text: str) -> collections.Counter[str]:
    return collections.Counter(
        line.strip() for line in text.splitlines() if line.strip().startswith("#")
    )


def assert_order_kept(old: dict[str, Any], new: dict[str, Any], where: str = "") -> None:
    """Keys present before and after keep their relative order, in every table."""
    kept = [k for k in old if k in new]
    assert [k for k in new if k in old] == kept, where
    for key in kept:
        if isinstance(old[key], dict) and isinstance(new[key], dict):
            assert_order_kept(old[key], new[key], f"{where}.{key}")


# ------------------------------------------------------------------------------- corpus


@pytest.mark.parametrize("path", LOADING, ids=corpus_id)
def test_corpus_file_migrates(
    path: Path, build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    original = path.read_text()
    file = build_toml(original)
    expected = upgraded(file)

    result = run(runner, file.parent)

    assert result.exit_code == 0, result.output
    migrated = file.read_text()
    edition, build, _ = project.structure(load.load(file))
    assert edition == 6
    assert v6.to_document(build) == v6.to_document(expected)
    assert build == expected
    assert not comment_lines(original) - comment_lines(migrated)
    assert_order_kept(tomli.loads(original), tomli.loads(migrated))

    again = run(runner, file.parent)
    assert again.exit_code == 0, again.output
    assert "already edition 6" in again.output
    assert file.read_text() == migrated


# --------------------------------------------------------------------------- rewriting


def test_backend_becomes_language_in_place_with_its_comment(
    build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    file = build_toml(V4)
    before = V4.splitlines()

    assert run(runner, file).exit_code == 0

    after = file.read_text().splitlines()
    line = before.index('backend = "cuda"  # the GPU kernel') + 1  # `edition` came in above
    assert after[line] == 'language = "cpp-cuda"  # the GPU kernel'
    assert after[line - 1] == 'depends = ["torch"]'
    assert after[line + 1] == 'src = ["relu_cuda/relu.cu"]'
    assert 'language = "cpp-cpu"' in after


def test_edition_goes_right_after_version(
    build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    file = build_toml(
        """\
        [general]
        name = "relu"
        backends = ["cpu"]
        license = "MIT"
        version = 2
        upstream = "https://github.com/example/relu"

        [general.hub]
        repo-id = "example/relu"

        [torch]
        src = ["torch-ext/torch_binding.cpp"]
        """
    )

    assert run(runner, file).exit_code == 0

    assert file.read_text().startswith(
        textwrap.dedent(
            """\
            [general]
            name = "relu"
            backends = ["cpu"]
            license = "MIT"
            version = 2
            edition = 6
            upstream = "https://github.com/example/relu"

            [general.hub]
            """
        )
    )


def test_edition_5_becomes_6_in_place(build_toml: Callable[[str], Path]) -> None:
    text = V4.replace('license = "Apache-2.0"', 'edition = 5\nlicense = "Apache-2.0"')
    file = build_toml(text)

    after = migrate.plan(file).after

    assert after.splitlines()[3] == "edition = 6"
    assert after.count("edition") == 1


def test_v1_cuda_hipify_kernel_gets_a_rocm_twin_after_it(
    build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    file = build_toml(
        """\
        [general]
        name = "relu"

        [torch]
        src = ["torch-ext/torch_binding.cpp"]

        [kernel.relu]
        language = "cuda-hipify"  # CUDA and AMD
        depends = ["torch"]
        src = [
          "relu/relu.cu",
          "relu/relu.h",
        ]
        # RDNA/CDNA targets
        rocm-archs = ["gfx942"]
        cuda-capabilities = ["8.0"]

        [kernel.relu_metal]
        language = "metal"
        depends = ["torch"]
        src = ["relu/relu.mm"]
        """
    )

    assert run(runner, file).exit_code == 0

    assert file.read_text() == textwrap.dedent(
        """\
        [general]
        name = "relu"
        version = 1
        edition = 6
        license = "NOASSERTION"
        backends = ["cuda", "metal", "rocm"]

        [torch]
        src = ["torch-ext/torch_binding.cpp"]

        [kernel.relu]
        language = "cpp-cuda"  # CUDA and AMD
        depends = ["torch"]
        src = [
          "relu/relu.cu",
          "relu/relu.h",
        ]
        cuda-capabilities = ["8.0"]

        [kernel.relu_rocm]
        language = "cpp-rocm"
        depends = ["torch"]
        src = [
          "relu/relu.cu",
          "relu/relu.h",
        ]
        # RDNA/CDNA targets
        rocm-archs = ["gfx942"]

        [kernel.relu_metal]
        language = "cpp-metal"
        depends = ["torch"]
        src = ["relu/relu.mm"]
        """
    )


def test_v2_cuda_minver_moves_into_general_cuda(
    build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    file = build_toml(
        """\
        [general]
        name = "relu"
        cuda-minver = "12.4"  # needs TMA
        universal = false

        [torch]
        src = ["torch-ext/torch_binding.cpp"]

        [kernel.relu]
        backend = "cuda"
        depends = ["torch"]
        src = ["relu/relu.cu"]
        """
    )

    assert run(runner, file).exit_code == 0

    assert file.read_text() == textwrap.dedent(
        """\
        [general]
        name = "relu"
        version = 1
        edition = 6
        license = "NOASSERTION"
        backends = ["cuda"]

        [general.cuda]
        minver = "12.4"  # needs TMA

        [torch]
        src = ["torch-ext/torch_binding.cpp"]

        [kernel.relu]
        language = "cpp-cuda"
        depends = ["torch"]
        src = ["relu/relu.cu"]
        """
    )


def test_torch_noarch_is_added_when_there_is_no_framework_and_no_kernel(
    build_toml: Callable[[str], Path],
) -> None:
    file = build_toml(
        """\
        [general]
        name = "relu"
        version = 1
        license = "MIT"
        backends = ["cuda"]
        # Upload target.
        [general.hub]
        repo-id = "org/relu"
        """
    )

    after = migrate.plan(file).after
    assert after.endswith(
        '# Upload target.\n[general.hub]\nrepo-id = "org/relu"\n\n[torch-noarch]\n'
    )


def test_compiled_kernels_without_framework_get_no_invented_table(
    build_toml: Callable[[str], Path],
) -> None:
    file = build_toml(
        """\
        [general]
        name = "relu"
        version = 1
        license = "MIT"
        backends = ["cuda"]
        [kernel.relu]
        backend = "cuda"
        depends = ["torch"]
        src = ["relu/relu.cu"]
        """
    )
    with pytest.raises(ProblemError) as info:
        migrate.plan(file)
    assert "compiled kernels need a framework" in info.value.errors[0].message


def test_torch_noarch_keys_keep_the_format_spelling(build_toml: Callable[[str], Path]) -> None:
    file = build_toml(
        """\
        [general]
        name = "triton-relu"
        version = 1
        license = "MIT"
        backends = ["cuda", "rocm"]

        [torch-noarch]
        cuda_capabilities = ["8.0"]  # Ampere and later
        rocm_archs = ["gfx942"]
        """
    )

    after = migrate.plan(file).after

    assert after.endswith(
        '[torch-noarch]\ncuda_capabilities = ["8.0"]  # Ampere and later\nrocm_archs = ["gfx942"]\n'
    )


def test_earlier_edition_6_torch_noarch_keys_take_the_format_spelling_in_place(
    build_toml: Callable[[str], Path],
) -> None:
    """nixgen's earlier edition 6 spelt them with `-`; the format has `_`."""
    file = build_toml(
        """\
        [general]
        name = "triton-relu"
        version = 1
        edition = 6
        license = "MIT"
        backends = ["cuda", "rocm"]

        [torch-noarch]
        cuda-capabilities = ["8.0"]  # Ampere and later
        rocm-archs = ["gfx942"]
        """
    )

    migration = migrate.plan(file)

    assert migration.dialect
    assert migration.after.endswith(
        '[torch-noarch]\ncuda_capabilities = ["8.0"]  # Ampere and later\nrocm_archs = ["gfx942"]\n'
    )


def test_removed_key_keeps_its_comment(build_toml: Callable[[str], Path]) -> None:
    file = build_toml(
        """\
        [general]
        name = "relu"
        universal = false  # not a pure-Python kernel

        [torch]
        src = ["torch-ext/torch_binding.cpp"]

        [kernel.relu]
        backend = "cpu"
        depends = ["torch"]
        src = ["relu/relu.cpp"]
        """
    )

    after = migrate.plan(file).after

    assert "universal" not in after
    assert "# not a pure-Python kernel\n" in after


def test_renamed_dependency_keeps_the_array_layout(build_toml: Callable[[str], Path]) -> None:
    file = build_toml(
        """\
        [general]
        name = "attn"
        version = 1
        backends = ["xpu"]

        [torch]
        src = ["torch-ext/torch_binding.cpp"]

        [kernel.attn_xpu]
        backend = "xpu"
        depends = [
            "torch",  # the binding
            "cutlass_sycl",
        ]
        src = ["attn_xpu/attn.cpp"]
        """
    )

    after = migrate.plan(file).after

    assert 'depends = [\n    "torch",  # the binding\n    "sycl_tla",\n]\n' in after


def test_edition_6_file_is_left_byte_identical(
    build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    file = build_toml(V6)
    mtime = file.stat().st_mtime_ns

    result = run(runner, file)

    assert result.exit_code == 0
    assert "already edition 6" in result.output
    assert file.read_text() == V6
    assert file.stat().st_mtime_ns == mtime


def test_crlf_line_endings_are_kept(build_toml: Callable[[str], Path]) -> None:
    file = build_toml("")
    file.write_bytes(V4.replace("\n", "\r\n").encode())

    after = migrate.plan(file).after

    assert "edition = 6\r\n" in after
    assert "\n" not in after.replace("\r\n", "")


# --------------------------------------------------------------------------------- CLI


def test_check_exits_1_when_stale_and_writes_nothing(
    build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    file = build_toml(V4)

    result = run(runner, "--check", file)

    assert result.exit_code == 1
    assert "would migrate" in result.output
    assert "from edition 4 to 6" in result.output
    assert file.read_text() == V4


def test_check_exits_0_when_current(build_toml: Callable[[str], Path], runner: CliRunner) -> None:
    file = build_toml(V6)

    result = run(runner, "--check", file.parent)

    assert result.exit_code == 0
    assert "already edition 6" in result.output


def test_diff_prints_a_unified_diff_and_writes_nothing(
    build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    file = build_toml(V4)

    result = run(runner, "--diff", file)

    assert result.exit_code == 0
    assert result.stdout.startswith("--- a/build.toml\n+++ b/build.toml\n@@ ")
    assert '\n-backend = "cuda"  # the GPU kernel\n+language = "cpp-cuda"  # the GPU kernel\n' in (
        result.stdout
    )
    assert "\n+edition = 6\n" in result.stdout
    assert file.read_text() == V4


def test_license_replaces_the_placeholder(
    build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    file = build_toml(V4.replace('license = "Apache-2.0"\n', ""))

    warned = run(runner, "--check", file)
    result = run(runner, "--license", "BSD-3-Clause", file)

    assert "NOASSERTION" in warned.output
    assert result.exit_code == 0, result.output
    assert 'license = "BSD-3-Clause"\n' in file.read_text()
    assert "NOASSERTION" not in file.read_text() + result.output
    assert upgraded(file).general.license == "BSD-3-Clause"


def test_license_sets_the_placeholder_of_an_edition_6_file(
    build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    file = build_toml(V6.replace("Apache-2.0", "NOASSERTION"))

    result = run(runner, "--license", "MIT", file)

    assert result.exit_code == 0, result.output
    assert file.read_text() == V6.replace("Apache-2.0", "MIT")


def test_license_does_not_replace_a_real_license(
    build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    file = build_toml(V4)

    result = run(runner, "--license", "MIT", file)

    assert result.exit_code == 0
    assert "--license ignored" in result.output
    assert 'license = "Apache-2.0"' in file.read_text()


@pytest.mark.parametrize("value", ["", "   "])
def test_license_must_not_be_empty(
    value: str, build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    file = build_toml(V4)

    result = run(runner, "--license", value, file)

    assert result.exit_code == 2
    assert "--license" in result.output
    assert file.read_text() == V4


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("[general]\nname = \n", "build.toml:2:", "invalid TOML"),
        (
            V4.replace('backend = "cpu"', 'backend = "cpx"'),
            "build.toml:16:11:",
            "kernel.relu_cpu.backend",
        ),
    ],
    ids=["toml-syntax", "schema"],
)
def test_invalid_file_exits_2_and_stays_untouched(
    text: str,
    where: str,
    message: str,
    build_toml: Callable[[str], Path],
    runner: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    file = build_toml(text)
    monkeypatch.chdir(file.parent)

    result = run(runner)

    assert result.exit_code == 2
    assert where in result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert file.read_text() == text


def test_warnings_of_the_upgrade_are_printed(
    build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    file = build_toml('[general]\nname = "my_relu"\nuniversal = true\n')

    result = run(runner, file)

    assert result.exit_code == 0
    assert "warning: general.name: name `my_relu` becomes `my-relu`" in result.output
    assert "`license` is missing" in result.output


def test_edition4_name_with_underscores_is_written_with_dashes(
    build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    file = build_toml(V4.replace('name = "relu"', 'name = "layer_norm"  # the module name'))

    result = run(runner, file)

    assert result.exit_code == 0, result.output
    assert "warning: general.name: name `layer_norm` becomes `layer-norm`" in result.output
    assert "the Python module name `layer_norm` is unchanged" in result.output
    migrated = file.read_text()
    assert 'name = "layer-norm"  # the module name\n' in migrated
    assert "edition = 6" in migrated
    build = upgraded(file)
    assert (build.general.name, build.general.module_name) == ("layer-norm", "layer_norm")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_directory_is_a_clean_error(
    build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    file = build_toml(V4)
    file.parent.chmod(0o555)
    try:
        result = run(runner, file)
    finally:
        file.parent.chmod(0o755)

    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "permission denied" in result.output
    assert file.read_text() == V4


def test_unwritable_directory_is_a_clean_error(
    build_toml: Callable[[str], Path], runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = build_toml(V4)

    real_open = os.open

    def refuse(path: Any, *args: Any, **kwargs: Any) -> Any:
        if os.fspath(path).startswith(".nixgen-tmp-"):  # the writer's temporary file
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    result = run(runner, file)

    assert result.exit_code == 2
    assert result.stderr.startswith("nixgen: error: ") and result.stderr.count("\n") == 1
    assert "permission denied" in result.stderr
    assert "Traceback" not in result.output
    assert file.read_text() == V4


def test_write_is_atomic_and_leaves_no_temporary_file(
    build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    file = build_toml(V4)
    file.chmod(0o640)

    assert run(runner, file).exit_code == 0

    assert sorted(p.name for p in file.parent.iterdir()) == ["build.toml"]
    assert stat.S_IMODE(file.stat().st_mode) == 0o640


def test_failed_write_keeps_the_old_file(
    build_toml: Callable[[str], Path], runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = build_toml(V4)

    def full_disk(*args: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("nixgen.core.writer._fsync_file", full_disk)
    result = run(runner, file)

    assert result.exit_code == 2
    assert "No space left on device" in result.output
    assert file.read_text() == V4
    assert sorted(p.name for p in file.parent.iterdir()) == ["build.toml"]


def test_symlinked_build_toml_stays_a_symlink(
    build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    """A link to a file inside the project: the file is migrated, the link stays."""
    real = build_toml(V4)
    (real.parent / "configs").mkdir()
    real.rename(real.parent / "configs" / "build.toml")
    real.symlink_to("configs/build.toml")

    assert run(runner, real.parent).exit_code == 0

    assert real.is_symlink()
    assert "edition = 6" in (real.parent / "configs" / "build.toml").read_text()


def test_a_build_toml_linked_from_outside_the_project_is_not_rewritten(
    build_toml: Callable[[str], Path], runner: CliRunner
) -> None:
    real = build_toml(V4)
    link = real.parent.parent / "linked" / "build.toml"
    link.parent.mkdir()
    link.symlink_to(real)

    result = run(runner, link.parent)

    assert result.exit_code == 2
    assert "outside the project" in result.output
    assert link.is_symlink() and real.read_text() == V4


def test_a_rewrite_that_does_not_read_back_is_never_written(
    build_toml: Callable[[str], Path], runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = build_toml(V4)
    monkeypatch.setattr(tomledit._Reconciler, "table", lambda self, views, old, new: None)

    result = run(runner, file)

    assert result.exit_code == 1
    assert "nothing was written" in result.output
    assert file.read_text() == V4


def test_file_changed_after_reading_is_not_overwritten(build_toml: Callable[[str], Path]) -> None:
    file = build_toml(V4)
    migration = migrate.plan(file)
    file.write_text(V4 + "# edited meanwhile\n")

    with pytest.raises(OutputError, match="changed while it was migrated"):
        migrate.write(migration)

    assert file.read_text() == V4 + "# edited meanwhile\n"


def test_byte_order_mark_is_kept(build_toml: Callable[[str], Path]) -> None:
    file = build_toml("")
    file.write_bytes(b"\xef\xbb\xbf" + V4.encode())

    migrate.write(migrate.plan(file))

    assert file.read_bytes().startswith(b"\xef\xbb\xbf[general]\n")
    assert "edition = 6" in file.read_text(encoding="utf-8-sig")


@pytest.mark.slow
def test_diff_applies_with_patch(
    build_toml: Callable[[str], Path], runner: CliRunner, tmp_path: Path
) -> None:
    patch = shutil.which("patch")
    if patch is None:
        pytest.skip("no `patch` here")
    file = build_toml(V4.rstrip("\n"))  # no newline at the end, too
    expected = migrate.plan(file).after

    result = run(runner, "--diff", file)
    (tmp_path / "migrate.diff").write_text(result.stdout)
    subprocess.run(
        [patch, "-p1", "-i", str(tmp_path / "migrate.diff")], cwd=file.parent, check=True
    )

    assert file.read_text() == expected


# ------------------------------------------------------ nixgen's earlier edition 6 (dialect)

#: nixgen's earlier edition-6 files: the shipped examples' before `nixgen migrate` converted
#: them, and the Rust golden cases' (`golden-<case>.toml`).
DIALECT = Path(__file__).resolve().parent / "dialect"
DIALECT_EXAMPLES = ["relu-mixed", "relu-rust"]
DIALECT_CASES = ["golden-rust-cpu", "golden-rust-cuda"]


def _dialect_project(name: str, root: Path) -> Path:
    """The project `name` as nixgen's earlier edition 6 wrote it, at `root`."""
    if name in DIALECT_EXAMPLES:
        shutil.copytree(
            EXAMPLES / name,
            root,
            ignore=shutil.ignore_patterns("nix", "flake.nix", "result*", "target", "nixgen.toml"),
        )
        shutil.copy(DIALECT / f"{name}.toml", root / "build.toml")
        return root
    return materialize(DIALECT / f"{name}.toml", root)


@pytest.mark.parametrize("name", DIALECT_EXAMPLES)
def test_examples_are_what_migrate_makes_of_their_earlier_files(
    name: str, tmp_path: Path, runner: CliRunner
) -> None:
    root = _dialect_project(name, tmp_path / name)
    warned = project.read(root)
    (notice,) = [w for w in warned.warnings if w.beyond_format]
    assert warned.dialect and "`nixgen migrate`" in notice.message and notice.line is not None

    result = run(runner, root)

    assert result.exit_code == 0, result.output
    # The example's nixgen.toml also names the repository's library (`without_library`).
    assert (root / "build.toml").read_text() == (EXAMPLES / name / "build.toml").read_text()
    expected = without_library((EXAMPLES / name / "nixgen.toml").read_text())
    assert (root / "nixgen.toml").read_text() == expected
    again = project.read(root)
    assert not again.dialect and not [w for w in again.warnings if w.beyond_format]


@needs_nix
@pytest.mark.parametrize("name", [*DIALECT_EXAMPLES, *DIALECT_CASES])
def test_migrated_project_builds_the_same_derivations(
    name: str, tmp_path: Path, runner: CliRunner
) -> None:
    """Read from the earlier file and from what `nixgen migrate` makes of it (build.toml and
    nixgen.toml), a project renders the same Nix files, byte for byte, and evaluates to the
    same drvPath for every variant of every system, through the stand-ins (a variant the
    stand-ins cannot evaluate is left out: a cuda-oxide kernel's, as they have no
    rust-overlay; its rendered file is compared)."""
    stub = make_stub(tmp_path / "stub")
    skip = '[ "cuda" ]' if name == "golden-rust-cuda" else "[ ]"
    expr = (
        DRV_PATHS.replace("STUB", str(stub))
        .replace("KB", str(kernel_builder(stub)))
        .replace("SKIP", skip)
    )

    def rendered(root: Path) -> tuple[dict[str, bytes], dict[str, Any]]:
        render_into(root)
        files = {
            str(p.relative_to(root)): p.read_bytes()
            for p in sorted((root / "nix").rglob("*"))
            if p.is_file()
        }
        return files, nix_eval_json(expr, cwd=root, read_write=True)

    before_files, before = rendered(_dialect_project(name, tmp_path / "before"))
    after_root = _dialect_project(name, tmp_path / "after")
    result = run(runner, after_root)
    assert result.exit_code == 0, result.output
    assert (after_root / "nixgen.toml").is_file()
    after_files, after = rendered(after_root)
    assert before_files == after_files
    assert before == after
    assert any(isinstance(path, str) for path in before.values())


DRV_PATHS = """
let
  p = import ./nix;
  args = system: { nixpkgs = STUB; kernel-builder = KB; inherit system; };
  one = v: {
    name = "${v.system}/${v.name}";
    value =
      let tried = builtins.tryEval (p.variantPackage (args v.system) v).drvPath;
      in if tried.success then tried.value else false;
  };
in builtins.listToAttrs (
  map one (builtins.filter (v: !(builtins.elem v.backend SKIP)) (p.variants null))
)
"""
