"""The `kernels` client as the tests' oracle: the one module that reaches into its private parts.

The suite runs in a locked environment (requirements/dev.txt, installed by scripts/setup.sh);
its `kernels` client is `locked_version()`. Tests use the client's public API directly
(`kernels.get_local_kernel`, `kernels.Metadata`). What that API does not offer, the tests get
here, written for one version of the client, `ORACLE_VERSION`:

* the variant-name parser and its backend classes (0.19.1: `kernels._internals.variants`
  and `kernels._internals.backends`), turned into plain values (`Parsed`);
* kernels-data's compiled module (`kernels._rust`): the build.toml reader (`Build`) and
  the digest rule (`Digest.hash_variant`, `Metadata`);
* `kernels describe-api`'s reader of symbols.json.

A check runs before each: when the installed client is not the locked one (a stale venv:
rerun scripts/setup.sh), when the lock moved to another version than this module was written
for, or when the locked client no longer has the shape read here, the test fails and says
which. Never a skip: an oracle that silently went away would prove nothing.

The versions of the client-compatibility tier (tests/test_client_versions.py) are read here
too, from their one source: requirements/dev.in's ``# kernels-clients = …`` line (the older
clients, each in ``.venv/clients/kernels-<version>``) and the lock's own `kernels`.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parent.parent
REQUIREMENTS = REPO / "requirements"

#: The client version whose private modules and types this file reads.
ORACLE_VERSION = "0.19.1"


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@functools.cache
def locked_version() -> str:
    """The `kernels` that requirements/dev.txt pins (``kernels==X.Y.Z``)."""
    text = (REQUIREMENTS / "dev.txt").read_text()
    found = re.findall(r"^kernels==([0-9.]+)", text, flags=re.M)
    assert len(found) == 1, f"requirements/dev.txt pins kernels {len(found)} times"
    return found[0]


@functools.cache
def older_clients() -> tuple[str, ...]:
    """The older clients of the compatibility tier: requirements/dev.in's
    ``# kernels-clients = …`` line."""
    lines = [
        line.split("=", 1)[1].split()
        for line in (REQUIREMENTS / "dev.in").read_text().splitlines()
        if re.match(r"#\s*kernels-clients\s*=", line)
    ]
    assert len(lines) == 1, "requirements/dev.in needs exactly one `# kernels-clients = …` line"
    return tuple(lines[0])


def tier_versions() -> list[str]:
    """Every client nixgen's builds must load in, oldest first: the older clients and the
    locked one."""
    return sorted({*older_clients(), locked_version()}, key=version_key)


def client_python(version: str) -> Path:
    """The interpreter that has `kernels` `version`: the suite's own for the locked one,
    ``.venv/clients/kernels-<version>/bin/python`` (made by scripts/setup.sh) for the others."""
    if version == locked_version():
        return Path(sys.executable)
    return Path(sys.prefix) / "clients" / f"kernels-{version}" / "bin" / "python"


def _fail(message: str) -> NoReturn:
    pytest.fail(f"tests/client.py: {message}", pytrace=False)


def _check_version() -> None:
    installed = importlib.metadata.version("kernels")
    if installed != locked_version():
        _fail(
            f"the installed kernels client is {installed}, the lock says {locked_version()}: "
            "rerun scripts/setup.sh"
        )
    if locked_version() != ORACLE_VERSION:
        _fail(
            f"the lock moved the kernels client to {locked_version()}; this module reads "
            f"{ORACLE_VERSION}'s private modules: check where the new client keeps its variant "
            "parser and backends, update this module and ORACLE_VERSION"
        )


def _private(module: str) -> ModuleType:
    _check_version()
    try:
        return importlib.import_module(module)
    except ImportError as error:
        _fail(f"kernels {ORACLE_VERSION} should have {module}: {error}")


def rust() -> ModuleType:
    """kernels-data's compiled module (`kernels._rust`: `Build`, `Metadata`, `Digest`)."""
    return _private("kernels._rust")


def describe_api() -> ModuleType:
    """The reader of `kernels describe-api` (`kernels._internals.cli.describe_api`: its
    `_read_symbols` reads a variant's symbols.json as the command does)."""
    return _private("kernels._internals.cli.describe_api")


def build_backends(root: Path) -> list[str]:
    """The backends kernels-data's reader finds in `root`'s build.toml (its errors, such as
    a refused edition, raise ``ValueError``)."""
    build = rust().Build.open(str(root))
    return sorted(str(b).rpartition(".")[2].lower() for b in build.general.backends)


@dataclass(frozen=True)
class Parsed:
    """A variant name as the client reads it, in plain values."""

    #: The name the parse prints back (`variant_str`).
    name: str
    #: ``torch``, ``torch-stable-abi``, ``tvm-ffi``, ``torch-noarch`` or ``mlx-noarch``.
    framework: str
    #: The framework's version (``2.13``; the stable ABI's for ``torch-stable-abi``).
    framework_version: str | None
    #: The C++ ABI tag: True for ``cxx11``, False for ``cxx98``, None without one.
    cxx11_abi: bool | None
    #: ``cpu``, ``cuda``, ``rocm``, ``xpu``, ``metal``, …
    backend: str
    #: The backend's (major, minor), for a versioned backend.
    backend_version: tuple[int, int] | None
    #: ``<platform>-<os>``, None for a noarch variant.
    system: str | None


def parse_variant(name: str) -> Parsed:
    """The client's parse of a variant name (its `parse_variant`), as `Parsed`. A name the
    client refuses raises its ``ValueError``."""
    variants = _private("kernels._internals.variants")
    backends = _private("kernels._internals.backends")
    parsed = variants.parse_variant(name)
    try:
        if isinstance(parsed, variants.NoarchVariant):
            noarch = {variants.TorchNoarch: "torch-noarch", variants.MlxNoarch: "mlx-noarch"}
            return Parsed(
                name=parsed.variant_str,
                framework=noarch[type(parsed.framework)],
                framework_version=None,
                cxx11_abi=None,
                backend=parsed.backend.backend_name,
                backend_version=None,
                system=None,
            )
        assert isinstance(parsed, variants.ArchVariant), parsed
        classes = {
            "cpu": backends.CPU,
            "cuda": backends.CUDA,
            "rocm": backends.ROCm,
            "xpu": backends.XPU,
            "metal": backends.Metal,
        }
        backend = parsed.backend
        kind = next((k for k, cls in classes.items() if isinstance(backend, cls)), backend.name)
        assert backend.name == kind, (backend.name, kind)
        version = getattr(backend, "version", None)
        framework = parsed.framework
        frameworks = {
            variants.Torch: "torch",
            variants.TorchStableAbi: "torch-stable-abi",
            variants.TvmFfi: "tvm-ffi",
        }
        return Parsed(
            name=parsed.variant_str,
            framework=frameworks[type(framework)],
            framework_version=str(framework.version),
            cxx11_abi=getattr(framework, "cxx11_abi", None),
            backend=kind,
            backend_version=None if version is None else (version.major, version.minor),
            system=f"{parsed.system.platform}-{parsed.system.os}",
        )
    except (AttributeError, KeyError, AssertionError) as error:
        _fail(
            f"kernels {ORACLE_VERSION}'s parse of {name!r} no longer has the shape read here "
            f"({type(error).__name__}: {error}); update parse_variant"
        )
