"""A real build of a `+PTX` capability (issue 26): the ptx-capabilities fixture lists
`8.0` and `9.0+PTX`; it is rendered, built through the stand-ins with the host's nvcc, and
the extension must hold machine code for 8.0 and 9.0 and PTX for 9.0 only, as the
anchor's `-gencode=arch=compute_90,code=[sm_90,compute_90]` embeds it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.cmdline.cli import main

from .nixtools import flake_build, flake_eval, have_nix, make_stub, require_host

pytestmark = [
    pytest.mark.build,
    pytest.mark.nix,
    pytest.mark.skipif(not have_nix(), reason="nix is not installed"),
]


@pytest.fixture(autouse=True)
def _nvcc() -> None:
    require_host("cuda", "prefix", reason="no CUDA toolkit (nvcc) on this machine")


FIXTURE = Path(__file__).resolve().parent / "fixtures" / "ptx-capabilities"
SYSTEM = "x86_64-linux"
#: The host nvcc is CUDA 13.0.
VARIANT = f"torch212-cxx11-cu130-{SYSTEM}"


def _cuobjdump() -> str | None:
    """cuobjdump from $CUOBJDUMP, PATH, or the `nvidia-cuda-cuobjdump` wheel (setup.sh)."""
    wheel = Path(sysconfig.get_paths()["purelib"]) / "nvidia" / "cu13" / "bin" / "cuobjdump"
    for candidate in (os.environ.get("CUOBJDUMP"), shutil.which("cuobjdump"), str(wheel)):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A rendered copy of the fixture, outside any git work tree."""
    target = tmp_path_factory.mktemp("ptx") / "ptx-capabilities"
    shutil.copytree(FIXTURE, target)
    result = CliRunner().invoke(main, ["render", str(target)])
    assert result.exit_code == 0, result.output
    return target


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


@pytest.fixture(scope="module")
def built(project: Path, stub: Path) -> Path:
    [out] = flake_build(project, VARIANT, stub=stub, timeout=1800)
    return out


def _listing(tool: str, flag: str, library: Path) -> list[str]:
    """The targets `cuobjdump --list-elf/--list-ptx` names: `sm_80`, `sm_90`, …"""
    done = subprocess.run([tool, flag, str(library)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return sorted(line.rsplit(".", 2)[-2] for line in done.stdout.splitlines() if line.strip())


def test_the_nvcc_command_asks_for_sass_and_ptx_of_the_ptx_capability(
    project: Path, stub: Path
) -> None:
    kernel = f"packages.{SYSTEM}.{VARIANT}.passthru.nixgen.kernels.negate_cuda"
    planned = flake_eval(project, f"{kernel}.passthru.nixgen.capabilities", stub=stub)
    assert planned == ["8.0", "9.0+PTX"]
    plan = flake_eval(
        project,
        f"{kernel}.passthru.nixgen.plan",
        stub=stub,
        apply="p: builtins.toJSON p",
    )
    assert "-gencode=arch=compute_80,code=sm_80" in plan
    assert "-gencode=arch=compute_90,code=[sm_90,compute_90]" in plan
    assert "code=compute_80" not in plan and "compute_80]" not in plan


def test_the_built_extension_holds_ptx_for_9_0_and_machine_code_for_both(built: Path) -> None:
    meta = json.loads((built / "metadata.json").read_text())
    # As the anchor's add_build_metadata.py writes it: the planned capabilities, `+PTX` kept.
    assert meta["backend"] == {"type": "cuda", "archs": ["8.0", "9.0+PTX"]}
    library = built / f"{meta['id']}.abi3.so"
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("no cuobjdump (pip install nvidia-cuda-cuobjdump==13.4.92, or $CUOBJDUMP)")
    assert _listing(tool, "--list-ptx", library) == ["sm_90"]
    assert _listing(tool, "--list-elf", library) == ["sm_80", "sm_90"]
