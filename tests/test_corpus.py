"""Every real-world build.toml in tests/corpus/ is either loaded or rejected, as pinned in
tests/corpus_table.py.

The corpus comes from public kernel repositories (see tests/corpus/README.md). A file that
loads must load with the edition given; a rejected file must fail with the reason given,
located at the line and key given — and nowhere else first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.checking import project
from nixgen.cmdline.cli import main
from nixgen.core.errors import ProblemError
from nixgen.planning import plan
from nixgen.reading import load

from .conftest import CORPUS, CORPUS_FILES
from .corpus_table import EXPECTED, Loads


def test_table_covers_the_corpus() -> None:
    assert sorted(EXPECTED) == sorted(p.stem for p in CORPUS_FILES)


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.stem)
def test_corpus_file(path: Path) -> None:
    expected = EXPECTED[path.stem]
    if isinstance(expected, Loads):
        loaded = project.read(path, check_files=False)
        assert loaded.edition == expected.edition
        assert loaded.build.general.edition == 6
        assert not [w for w in loaded.warnings if w.severity == "error"]
        return
    with pytest.raises(ProblemError) as info:
        project.read(path, check_files=False)
    first = info.value.errors[0]
    assert first.file is not None and first.file.endswith(path.name)
    assert first.line == expected.line
    assert first.key == expected.key
    assert expected.message in first.message


def test_invalid_capability_warns_then_finds_nothing_to_build(runner: CliRunner) -> None:
    """Unknown values warn; a kernel left with nothing to build is the error, as in the
    anchor (`empty set of architectures`, `empty set of capabilities`)."""
    path = CORPUS / "kernels-examples__relu-invalid-capability.toml"
    result = runner.invoke(main, ["validate", "--no-file-checks", str(path)])
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert [line.split(": ")[1:3] for line in lines[:-1]] == [
        ["error", "kernel.relu_rocm.rocm-archs"],
        ["warning", "kernel.relu_rocm.rocm-archs[0]"],
        ["warning", "kernel.relu.cuda-capabilities[0]"],
    ]
    assert "unknown ROCm architecture `gfx99999`" in lines[1]
    assert "unknown CUDA capability `99999.0` (closest known: `12.0`)" in lines[2]
    assert "every CUDA variant skips it" in lines[2]
    # Planning (`nixgen render`) then finds the CUDA kernel has nothing to build.
    loaded = project.structure(load.load(path))[1]
    planned = [p.render() for p in plan.check(loaded) if p.severity == "error"]
    assert planned and all("none of its CUDA capabilities (`99999.0`)" in p for p in planned)


def test_corpus_counts() -> None:
    loads = sum(isinstance(e, Loads) for e in EXPECTED.values())
    assert (loads, len(EXPECTED) - loads) == (59, 5)
