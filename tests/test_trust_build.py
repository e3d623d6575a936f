"""Builds the `kernels` client trusts (issue 45), built for real through the stand-ins in the
sandbox: the relu-cpu example, copied out with the edge cases of the digest rule a build
can hold added to its Python package (files in a subfolder named like the top-level
metadata, bytecode files and folders, an empty file, a hidden file; links cannot be there:
`nixgen validate` refuses them in a package, and tests/test_trust.py covers them against the
client) and a `layers` module.

- the digest in `metadata.json` is the client's `Digest.hash_variant`, file for file, in the
  variant and in the flake's stamped copy (which rewrites `metadata.json`);
- the 0.19.1 client loads the build without a warning (logging captured), also where Python
  writes bytecode next to it, and refuses it once a file is changed or added;
- `symbols.json` is written and covered by the digest, and `kernels describe-api` lists the
  functions and layers;
- a variant the client refuses fails its build with the client's reason, loaded or checked
  without loading; a rebuild is bit for bit (`nix-build --check`);
- `nixgen verify` passes on the build and fails on a tampered copy.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nixgen.cmdline.cli import main
from tests import client as oracle

from .conftest import EXAMPLES, copy_out
from .nixtools import (
    NixError,
    flake_build,
    flake_eval,
    have_nix,
    kernel_builder,
    make_stub,
    nix_build,
    nix_env,
)

pytestmark = [
    pytest.mark.build,
    pytest.mark.nix,
    pytest.mark.skipif(not have_nix(), reason="nix is not installed"),
]

SYSTEM = "x86_64-linux"
VARIANT = f"torch213-cxx11-cpu-{SYSTEM}"
PACKAGE = "torch-ext/relu_cpu"

LAYERS = '''"""Layers of the edge-case build."""

import torch

from ._ops import ops


class ReLU(torch.nn.Module):
    has_backward = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        ops.relu(out, x)
        return out


class CompiledReLU(ReLU):
    can_torch_compile = True


class _Hidden(torch.nn.Module):
    pass
'''

#: Files added to the package (`pyext` ships them), each an edge case of the digest rule.
EDGE_FILES = {
    "layers.py": LAYERS,
    "sub/metadata.json": '{"deeper": "hashed"}\n',
    "sub/metadata.json.sigstore": "deeper: hashed\n",
    "sub/__init__.py": "",
    "empty.txt": "",
    ".hidden.txt": "hidden: hashed\n",
    "stray.pyc": "bytecode: left out\n",
    "__pycache__/x.cpython-311.pyc": "bytecode folder: removed before the digest\n",
}


def _render(root: Path) -> None:
    result = CliRunner().invoke(main, ["render", str(root)])
    assert result.exit_code == 0, result.output


def _copy_example(target: Path) -> Path:
    copy_out(EXAMPLES / "relu-cpu", target)
    for generated in ("nix", "flake.nix", "flake.lock"):
        path = target / generated
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    return target


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = _copy_example(tmp_path_factory.mktemp("trust") / "relu-cpu")
    package = root / PACKAGE
    for rel, text in EDGE_FILES.items():
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(text)
    init = package / "__init__.py"
    init.write_text(
        init.read_text()
        .replace("from ._ops import", "from . import layers\nfrom ._ops import")
        .replace(
            '__all__ = ["add_op_namespace_prefix", "ops", "relu"]',
            '__all__ = ["add_op_namespace_prefix", "layers", "ops", "relu"]',
        )
    )
    build = root / "build.toml"
    # Another version: another ops id than the example's (the id does not cover the Python
    # package), so both load in one process (the client refuses a second build of one id).
    build.write_text(
        build.read_text()
        .replace("\nversion = 1\n", "\nversion = 45\n")
        .replace("[torch]\n", '[torch]\npyext = ["py", "json", "sigstore", "pyc", "txt"]\n')
    )
    _render(root)
    return root


@pytest.fixture(scope="module")
def built(project: Path, stub: Path) -> dict[str, Any]:
    """The variant as the flake gives it (stamped) and its extension's own output, with
    the seconds the build took."""
    started = time.monotonic()
    [out] = flake_build(project, f"packages.{SYSTEM}.{VARIANT}", stub=stub, timeout=3600)
    seconds = time.monotonic() - started
    unstamped = Path(
        flake_eval(
            project,
            f"packages.{SYSTEM}.{VARIANT}",
            stub=stub,
            apply="p: p.passthru.nixgen.unstamped.outPath",
        )
    )
    return {"out": out, "unstamped": unstamped, "seconds": seconds}


@pytest.fixture(scope="module")
def layout(built: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("layout")
    (root / "build").mkdir()
    (root / "build" / VARIANT).symlink_to(built["out"])
    return root


def _client_digest(variant: Path) -> dict[str, str]:
    rust = oracle.rust()
    return dict(rust.Digest.hash_variant(rust.DigestAlgorithm.SHA256, variant).files)


def _metadata(variant: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((variant / "metadata.json").read_text())
    return data


# ----------------------------------------------------------------------- the digest


@pytest.mark.parametrize("which", ["out", "unstamped"])
def test_the_digest_is_the_clients_in_the_variant_and_its_stamped_copy(
    built: dict[str, Any], which: str
) -> None:
    variant = built[which]
    recorded = _metadata(variant)["digest"]
    assert recorded["algorithm"] == "sha256"
    assert recorded["files"] == _client_digest(variant)
    rust = oracle.rust()
    metadata = rust.Metadata.read_from_file(variant / "metadata.json")
    assert (
        metadata.digest.validate(rust.Digest.hash_variant(metadata.digest.algorithm, variant))
        is None
    )


def test_the_edge_cases_are_hashed_or_left_out_as_the_client_rules(built: dict[str, Any]) -> None:
    out = built["out"]
    files = _metadata(out)["digest"]["files"]
    for hashed in (
        "sub/metadata.json",
        "sub/metadata.json.sigstore",
        "empty.txt",
        ".hidden.txt",
        "layers.py",
        "symbols.json",
    ):
        assert hashed in files, hashed
    assert (out / "stray.pyc").is_file() and "stray.pyc" not in files
    assert not list(out.rglob("__pycache__")), "bytecode is removed from the output"
    assert "metadata.json" not in files


def test_the_stamped_copy_differs_only_in_its_metadata(built: dict[str, Any]) -> None:
    out, unstamped = built["out"], built["unstamped"]
    assert out != unstamped
    assert _metadata(out)["digest"] == _metadata(unstamped)["digest"]
    assert _metadata(out)["provenance"]["kernel-builder"]["version"].startswith("nixgen ")


# -------------------------------------------------------------------------- loading


def _load(layout: Path, caplog: Any) -> Any:
    client = pytest.importorskip("kernels")
    with caplog.at_level(logging.DEBUG):
        module = client.get_local_kernel(layout, backend="cpu")
    return module


def test_the_client_loads_the_build_without_a_warning(layout: Path, caplog: Any) -> None:
    torch = pytest.importorskip("torch")
    module = _load(layout, caplog)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not warnings, [r.getMessage() for r in warnings]
    assert any("the files match the digest" in r.getMessage() for r in caplog.records)
    x = torch.randn(64)
    assert torch.equal(module.relu(x), torch.relu(x))
    assert module.layers.ReLU.has_backward is False


def _writable_copy(built: dict[str, Any], tmp_path: Path) -> Path:
    root = tmp_path / "copy"
    variant = root / "build" / VARIANT
    shutil.copytree(built["out"], variant, symlinks=True)
    subprocess.run(["chmod", "-R", "u+w", str(root)], check=True)
    return root


def test_bytecode_python_writes_next_to_the_build_does_not_disturb_it(
    built: dict[str, Any], tmp_path: Path
) -> None:
    """In a subprocess that writes bytecode, as a user's Python does by default."""
    root = _writable_copy(built, tmp_path)
    code = (
        "import logging, sys, kernels\n"
        "from pathlib import Path\n"
        "logging.basicConfig(level=logging.WARNING, stream=sys.stdout)\n"
        "kernels.get_local_kernel(Path(sys.argv[1]), backend='cpu')\n"
        "kernels.get_local_kernel(Path(sys.argv[1]), backend='cpu')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(root)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert list((root / "build" / VARIANT).rglob("*.pyc")), "Python wrote bytecode"
    assert "WARNING" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("tamper", "says"),
    [
        (lambda v: (v / "_ops.py").write_text("# changed\n"), "File hash mismatch for _ops.py"),
        (lambda v: (v / "added.py").write_text(""), "Unknown file: added.py"),
        (lambda v: (v / "symbols.json").unlink(), "Missing file: symbols.json"),
    ],
    ids=["changed", "added", "removed"],
)
def test_a_file_changed_or_added_after_the_build_makes_the_load_fail(
    built: dict[str, Any], tmp_path: Path, tamper: Any, says: str
) -> None:
    client = pytest.importorskip("kernels")
    root = _writable_copy(built, tmp_path)
    tamper(root / "build" / VARIANT)
    with pytest.raises(RuntimeError, match="do not match the digest") as refused:
        client.get_local_kernel(root, backend="cpu")
    assert says in str(refused.value)


# -------------------------------------------------------------------------- symbols


def test_symbols_list_the_public_functions_and_layers(built: dict[str, Any]) -> None:
    symbols = json.loads((built["out"] / "symbols.json").read_text())
    assert symbols == {
        "schema_version": 1,
        "functions": [{"name": "add_op_namespace_prefix"}, {"name": "relu"}],
        "layers": [
            {
                "name": "CompiledReLU",
                "attributes": {"has_backward": False, "can_torch_compile": True},
            },
            {"name": "ReLU", "attributes": {"has_backward": False, "can_torch_compile": False}},
        ],
    }


def test_kernels_describe_api_lists_them(layout: Path) -> None:
    kernels_cli = Path(sys.executable).parent / "kernels"
    if not kernels_cli.exists():
        pytest.skip("the kernels client's CLI is not installed")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [str(kernels_cli), "describe-api", str(layout)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"Variant: {VARIANT}" in done.stdout
    assert "\n  relu\n" in done.stdout and "add_op_namespace_prefix" in done.stdout
    assert "ReLU  has_backward=False  can_torch_compile=False" in done.stdout
    assert "CompiledReLU  has_backward=False  can_torch_compile=True" in done.stdout


# ------------------------------------------------------------------ refusals, rebuilds


def _packages_expr(project: Path, stub: Path, override: str = "") -> str:
    """The variant from the project's `nix/` without a flake (no `self`: not stamped), with
    `override` applied to its derivation."""
    return (
        f"((import {project}/nix).packages {{ nixpkgs = {stub}; "
        f'kernel-builder = {kernel_builder(stub)}; system = "{SYSTEM}"; }})'
        f".{VARIANT}{override}"
    )


def test_a_rebuild_is_bit_for_bit(built: dict[str, Any], project: Path, stub: Path) -> None:
    """The extension (digest, load check, symbols.json) and the stamped copy, rebuilt in the
    sandbox: `--check` fails on any byte that differs."""
    drvs = flake_eval(
        project,
        f"packages.{SYSTEM}.{VARIANT}",
        stub=stub,
        apply="p: [ p.drvPath p.passthru.nixgen.unstamped.drvPath ]",
    )
    done = subprocess.run(
        ["nix-build", "--check", "--no-out-link", *drvs],
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
        env=nix_env(),
    )
    assert done.returncode == 0, done.stderr[-4000:]


def test_a_variant_the_client_cannot_load_fails_its_build_with_the_reason(
    tmp_path: Path, stub: Path
) -> None:
    root = _copy_example(tmp_path / "relu-cpu")
    init = root / PACKAGE / "__init__.py"
    init.write_text("from . import not_shipped  # noqa: F401\n" + init.read_text())
    _render(root)
    with pytest.raises(NixError) as failed:
        nix_build(_packages_expr(root, stub), cwd=root, timeout=3600)
    log = failed.value.stderr
    assert "the kernels client cannot load the variant" in log, log[-4000:]
    assert "ImportError" in log and "not_shipped" in log
    assert "nixgen: the kernels client refuses torch213-cxx11-cpu-x86_64-linux" in log


def test_a_variant_checked_without_loading_still_meets_the_clients_parser(
    project: Path, stub: Path
) -> None:
    """Without the load (as for a GPU variant), the client still reads the metadata: one it
    refuses fails the build, with the client's words. (The recorded `kernels-minver` is
    replaced: a second key would be dropped when the check rewrites the file.)"""
    bad = (
        '.overrideAttrs (old: { env = old.env // { doLoadCheck = ""; }; '
        "postInstall = ''sed -i -E "
        '\'s/"kernels-minver": *"[^"]*"/"kernels-minver": "0.19"/\' '
        "$out/metadata.json''; })"
    )
    with pytest.raises(NixError) as failed:
        nix_build(_packages_expr(project, stub, bad), cwd=project, timeout=3600)
    log = failed.value.stderr
    assert "is not loaded in its build" in log, log[-4000:]
    assert "the kernels client cannot read metadata.json" in log
    assert "Version has 2 components, expected 3" in log


def test_a_variant_checked_without_loading_has_a_digest_and_no_symbols(
    project: Path, stub: Path
) -> None:
    out = nix_build(
        _packages_expr(
            project, stub, '.overrideAttrs (old: { env = old.env // { doLoadCheck = ""; }; })'
        ),
        cwd=project,
        timeout=3600,
    )
    assert not (out / "symbols.json").exists()
    assert _metadata(out)["digest"]["files"] == _client_digest(out)


# --------------------------------------------------------------------- nixgen verify


def test_verify_passes_on_the_build_and_fails_on_a_tampered_copy(
    layout: Path, built: dict[str, Any], tmp_path: Path
) -> None:
    pytest.importorskip("kernels")
    done = CliRunner().invoke(main, ["verify", str(layout)])
    assert done.exit_code == 0, done.output
    assert f"ok    {VARIANT}" in done.stdout
    root = _writable_copy(built, tmp_path)
    (root / "build" / VARIANT / "layers.py").write_text("# changed\n")
    done = CliRunner().invoke(main, ["verify", str(root)])
    assert done.exit_code == 1
    assert f"FAIL  {VARIANT}" in done.stdout
    assert "File hash mismatch for layers.py" in done.stdout
