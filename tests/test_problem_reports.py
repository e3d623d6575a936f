"""Every problem in one run: a schema error hides no warning of the other stages, the same
problems come back once the error is fixed, warnings print in line order, and a misspelt
discriminator key (`langauge`, edition 5's `backend`) gets "did you mean"."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.app import scaffold
from nixgen.cmdline.cli import main

from .fakenix import demo as demo  # a fixture
from .fakenix import fake_nix as fake_nix  # a fixture


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
