"""Real builds of the fixture projects of issue 12 (tests/fixtures/): each is copied out
of the work tree, rendered, built through the stub nixpkgs (`--override-input nixpkgs
path:<stub>`), and — for the CPU ones — loaded with the PyPI `kernels` client and checked
against torch. The bad-registration fixture must fail to build.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from nixgen.cli import main

from .nixtools import NixError, flake_build, flake_eval, have_nix, make_stub

pytestmark = [
    pytest.mark.build,
    pytest.mark.nix,
    pytest.mark.skipif(not have_nix(), reason="nix is not installed"),
]

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SYSTEM = "x86_64-linux"
CPU_VARIANT = f"torch213-cxx11-cpu-{SYSTEM}"


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fixtures")


def rendered(workdir: Path, name: str) -> Path:
    """A rendered copy of fixture `name` (outside any git work tree)."""
    target = workdir / name
    if not target.exists():
        shutil.copytree(FIXTURES / name, target)
        result = CliRunner().invoke(main, ["render", str(target)])
        assert result.exit_code == 0, result.output
    return target


def build(workdir: Path, stub: Path, name: str, variant: str = CPU_VARIANT) -> Path:
    """The built variant, laid out as `<workdir>/<name>-built/<variant>` for the client."""
    [out] = flake_build(rendered(workdir, name), variant, stub=stub, timeout=1800)
    layout = workdir / f"{name}-built"
    layout.mkdir(exist_ok=True)
    link = layout / variant
    if not link.exists():
        link.symlink_to(out)
    return layout


def load(layout: Path) -> ModuleType:
    client = pytest.importorskip("kernels")
    return client.get_local_kernel(layout, backend="cpu")


def undefined_symbols(library: Path) -> list[str]:
    done = subprocess.run(
        ["nm", "-D", "--undefined-only", str(library)], capture_output=True, text=True, check=True
    )
    return [line.split()[-1] for line in done.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def torch() -> Any:
    return pytest.importorskip("torch")


# ------------------------------------------------------------------ shared headers


@pytest.fixture(scope="module")
def simd_ops(workdir: Path, stub: Path) -> ModuleType:
    return load(build(workdir, stub, "simd-ops"))


def test_kernels_including_headers_listed_elsewhere_build_and_match_torch(
    simd_ops: ModuleType, torch: Any
) -> None:
    generator = torch.Generator().manual_seed(12)
    for shape in [(0,), (1,), (3,), (4,), (1003,), (17, 33)]:
        x = torch.randn(shape, generator=generator)
        torch.testing.assert_close(simd_ops.relu(x), torch.relu(x), rtol=0, atol=0)
        torch.testing.assert_close(simd_ops.scale(x, -2.5), x * -2.5, rtol=0, atol=0)
    x = torch.randn(40, 30, generator=generator).t()
    torch.testing.assert_close(simd_ops.scale(x, 3.0), x * 3.0, rtol=0, atol=0)


def _kernel_drvs(project: Path, stub: Path) -> dict[str, str]:
    drvs: dict[str, str] = flake_eval(
        project,
        f"packages.{SYSTEM}.{CPU_VARIANT}",
        stub=stub,
        apply="p: builtins.mapAttrs (n: k: k.drvPath) p.passthru.nixgen.kernels",
    )
    return drvs


def test_a_source_edit_rebuilds_one_kernel_a_shared_header_edit_rebuilds_all(
    workdir: Path, stub: Path
) -> None:
    project = workdir / "simd-ops-edits"
    shutil.copytree(rendered(workdir, "simd-ops"), project)
    before = _kernel_drvs(project, stub)
    with (project / "scale_simd" / "scale.cpp").open("a") as handle:
        handle.write("// edited\n")
    after_source = _kernel_drvs(project, stub)
    assert after_source["relu_simd"] == before["relu_simd"]
    assert after_source["scale_simd"] != before["scale_simd"]
    with (project / "common" / "simd.hpp").open("a") as handle:
        handle.write("// edited\n")
    after_header = _kernel_drvs(project, stub)
    assert after_header["relu_simd"] != after_source["relu_simd"]
    assert after_header["scale_simd"] != after_source["scale_simd"]


# ------------------------------------------------------------------- registration


def test_ops_registered_without_namespace_prefix_fail_the_build(workdir: Path, stub: Path) -> None:
    with pytest.raises(NixError) as caught:
        build(workdir, stub, "bad-registration", "torch-cpu")
    log = caught.value.stderr
    assert "torch ops registered without `add_op_namespace_prefix`" in log
    assert 'op.py:6: @custom_op("badns::gelu_and_mul", ...) on `_gelu_and_mul`' in log
