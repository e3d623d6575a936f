"""Scale: a project with 10,000 kernels (every language) validates and renders, and the
memory nixgen needs stays bounded (peak RSS of the real process, from ``wait4``).

`tests/scale_probe.py` is the same measurement as a script, for the numbers in reports.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from nixgen.checking import project
from nixgen.core.errors import ProblemError
from tests.scale_probe import build_toml, generate, measure

pytestmark = pytest.mark.slow  # starts processes (tests/tiers.py)

BIG = 10_000
SMALL = 1_000
MiB = 1024  # ru_maxrss is in KiB on Linux


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nixgen's cache (compiled templates) is a private one (subprocesses inherit it)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(tmp_path_factory.mktemp("scale") / "big", BIG)


def test_ten_thousand_kernels_validate_and_render_in_bounded_memory(
    big: Path, tmp_path: Path
) -> None:
    code, validate_s, validate_kib, output = measure(["validate", "."], big)
    assert code == 0, output
    assert f"ok (edition 6, {BIG} kernels, backends: cpu, cuda, rocm, xpu, metal)" in output

    code, render_s, render_kib, output = measure(["render", "."], big)
    assert code == 0, output
    kernel_files = sorted(p.name for p in (big / "nix" / "kernels").iterdir())
    assert len(kernel_files) == BIG
    assert output.startswith("rendered nix/: "), output
    project_nix = (big / "nix" / "project.nix").read_text()
    assert project_nix.count("file = ./kernels/") == BIG

    small = generate(tmp_path / "small", SMALL)
    code, _, small_kib, output = measure(["render", "."], small)
    assert code == 0, output
    print(
        f"\nscale: validate {BIG} kernels {validate_s:.1f}s {validate_kib / MiB:.0f} MiB; "
        f"render {render_s:.1f}s {render_kib / MiB:.0f} MiB (render {SMALL}: "
        f"{small_kib / MiB:.0f} MiB)"
    )
    # Bounded: well under what a CI runner has, and growing by a few KiB per kernel
    # (measured: about 60 MiB to validate and 110 MiB to render 10,000 kernels).
    assert validate_kib < 250 * MiB
    assert render_kib < 400 * MiB
    per_kernel_kib = (render_kib - small_kib) / (BIG - SMALL)
    assert per_kernel_kib < 30, f"render needs {per_kernel_kib:.1f} KiB more per kernel"


@pytest.mark.skipif(shutil.which("nix-instantiate") is None, reason="needs nix-instantiate")
def test_ten_thousand_kernel_project_data_is_valid_nix(big: Path) -> None:
    if not (big / "nix" / "project.nix").exists():
        code, _, _, output = measure(["render", "."], big)
        assert code == 0, output
    done = subprocess.run(
        ["nix-instantiate", "--eval", "--strict", "--json", "--expr",
         f"builtins.length (builtins.attrNames (import {big}/nix/project.nix).kernels)"],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(BIG)


def test_an_error_in_the_last_of_ten_thousand_kernels_is_located(tmp_path: Path) -> None:
    text = build_toml(BIG).replace(
        '[kernel.k9997]\nlanguage = "cpp-cuda"', '[kernel.k9997]\nlanguage = "cpp-cdua"'
    )
    root = tmp_path / "p"
    root.mkdir()
    (root / "build.toml").write_text(text)
    with pytest.raises(ProblemError) as info:
        project.read(root, check_files=False)
    (problem,) = info.value.errors
    line = text.split("\n").index('language = "cpp-cdua"') + 1
    assert (problem.line, problem.column, problem.key) == (line, 12, "kernel.k9997.language")
    assert "did you mean `cpp-cuda`?" in problem.message
