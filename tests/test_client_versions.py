"""A nixgen build loads in every `kernels` client nixgen supports (issue 42, item 4).

The versions have one source, read by tests/client.py: requirements/dev.in's
``# kernels-clients = …`` line (the older clients, each locked on its own in
requirements/kernels-<version>.txt and installed by scripts/setup.sh into
``.venv/clients/kernels-<version>``, sharing the main venv's torch) and the lock's own client
(requirements/dev.txt). The oldest of them is the floor `pyproject.toml` claims.

One CPU variant of examples/relu-cpu is built as a user builds it offline (`nixgen build
--offline`, the stand-ins named in nixgen.toml's ``[override-input]``, in the sandbox), then
each client loads it with `get_local_kernel` in a process of its own and compares its `relu`
with `torch.relu`. A `kernels-minver` in the build's metadata, if nixgen writes one, must be
one every one of these clients can parse and meets.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from . import client, nixtools
from .conftest import EXAMPLES, copy_out

pytestmark = pytest.mark.slow  # starts processes (tests/tiers.py)

REPO = Path(__file__).resolve().parent.parent
VARIANT = f"torch213-cxx11-cpu-{platform.machine()}-linux"

#: Run by each client's interpreter: load the build, compare with torch.relu, report.
LOAD = textwrap.dedent(
    """\
    import importlib.metadata, json, sys
    from pathlib import Path

    import kernels, torch

    relu = kernels.get_local_kernel(Path(sys.argv[1]), backend="cpu")
    x = torch.randn(1024, 33, generator=torch.Generator().manual_seed(42))
    x[0, :5] = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), -1e-38])
    got, want = relu.relu(x), torch.relu(x)
    print(json.dumps({
        "version": importlib.metadata.version("kernels"),
        "module": kernels.__file__,
        "torch": torch.__version__,
        "equal": torch.equal(got, want),
        "differ": int((got != want).sum()),
    }))
    """
)


def _run_client(version: str, *args: str) -> dict[str, Any]:
    python = client.client_python(version)
    if not python.is_file():
        pytest.fail(f"no venv for kernels {version} ({python}): run scripts/setup.sh")
    done = subprocess.run(
        [str(python), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, f"kernels {version}:\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.splitlines()[-1])


# ------------------------------------------------------------------------ the versions


def test_the_clients_are_the_lock_and_the_floor() -> None:
    versions = client.tier_versions()
    older = list(client.older_clients())
    assert len(versions) >= 2 and older
    # The lock's client is the newest; each older one has its own lock file, pinning it.
    assert versions[-1] == client.locked_version()
    locks = sorted(p.name for p in (REPO / "requirements").glob("kernels-*.txt"))
    assert locks == sorted(f"kernels-{v}.txt" for v in older)
    for version in older:
        text = (REPO / "requirements" / f"kernels-{version}.txt").read_text()
        assert re.findall(r"^kernels==([0-9.]+)", text, flags=re.M) == [version]
    # What nixgen claims (`kernels>=` in pyproject.toml) is the oldest client tried.
    pyproject = (REPO / "pyproject.toml").read_text()
    assert re.findall(r'"kernels>=([0-9.]+)"', pyproject) == [versions[0]]


@pytest.mark.parametrize("version", client.tier_versions())
def test_each_client_has_its_own_venv(version: str) -> None:
    report = _run_client(
        version,
        "-c",
        "import importlib.metadata as m, json, kernels, torch;"
        " print(json.dumps([m.version('kernels'), kernels.__file__, torch.__version__]))",
    )
    installed, module, torch_version = report
    assert installed == version
    assert Path(module).is_relative_to(client.client_python(version).parent.parent), module
    assert torch_version.startswith("2.13.0")


# ------------------------------------------------------------------------ the build


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/relu-cpu built by `nixgen build --offline` through the stand-ins: the
    project, with ``build/<VARIANT>`` linked to the output."""
    if not nixtools.have_nix():
        pytest.skip("nix is not installed")
    base = tmp_path_factory.mktemp("clients")
    stub = nixtools.make_stub(base / "offline")
    root = base / "relu-cpu"
    copy_out(EXAMPLES / "relu-cpu", root, "build", "result*")
    (root / "nixgen.toml").write_text(
        "[override-input]\n"
        f'nixpkgs = "path:{stub.resolve()}"\n'
        f'kernel-builder = "path:{nixtools.kernel_builder(stub)}"\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "nixgen", "build", "--offline", "--variant", VARIANT, str(root)],
        env=nixtools.nix_env(),
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert (root / "build" / VARIANT / "metadata.json").is_file(), done.stderr
    return root


@pytest.mark.nix
@pytest.mark.build
@pytest.mark.parametrize("version", client.tier_versions())
def test_a_built_kernel_loads_and_computes_relu_in_each_client(built: Path, version: str) -> None:
    report = _run_client(version, "-c", LOAD, str(built))
    assert report["version"] == version
    assert Path(report["module"]).is_relative_to(client.client_python(version).parent.parent)
    assert report["torch"].startswith("2.13.0")
    assert report["equal"] and report["differ"] == 0, report


@pytest.mark.nix
@pytest.mark.build
def test_the_kernels_minver_written_is_one_every_client_meets(built: Path) -> None:
    metadata = json.loads((built / "build" / VARIANT / "metadata.json").read_text())
    minver = metadata.get("kernels-minver")
    if minver is None:
        return  # nothing required: every client loads it (the test above)
    # The client reads exactly three components ("0.19" is a parse error in every version).
    assert re.fullmatch(r"\d+\.\d+\.\d+", minver), minver
    oldest = client.tier_versions()[0]
    assert client.version_key(minver) <= client.version_key(oldest), (minver, oldest)
