"""Remote builders, for real: a kernel's object derivations are built on a second Nix
machine over ssh-ng (`tests/remote_builder.py`: a loopback sshd with its own store in its
own mount namespace) and copied back, and `nixgen build --builders` passes the spec on.

The proof is Nix's own internal-json log (what `nix` wrote to stderr, captured by a `nix`
wrapper on PATH): each object derivation's build activity names the builder's store URI,
no object has a build activity of this machine, and each object's output is copied from
the builder. Skipped without Nix, OpenSSH's server or root.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.synth import big_kernel
from nixgen.checking import project
from nixgen.core import outside
from nixgen.planning import variants

from . import nixtools
from .remote_builder import RemoteBuilder, missing_tools, placement

pytestmark = [
    pytest.mark.nix,
    pytest.mark.skipif(not nixtools.have_nix(), reason="needs Nix"),
    pytest.mark.skipif(bool(missing_tools()), reason=f"needs {', '.join(missing_tools())}"),
]

SOURCES = 32  # the Nix library's threshold for one derivation per object
SYSTEM = "x86_64-linux"


def _nix_wrapper(directory: Path, log: Path) -> Path:
    """A `nix` that runs the real one and appends its stderr (Nix's own log) to `log`."""
    real = shutil.which("nix")
    assert real is not None
    directory.mkdir(parents=True, exist_ok=True)
    wrapper = directory / "nix"
    wrapper.write_text(f'#!/bin/bash\nexec {real} "$@" 2> >(tee -a {log} >&2)\n')
    wrapper.chmod(0o755)
    return directory


def _project(tmp_path: Path, *, torch: bool = False) -> tuple[Path, Path]:
    """A rendered 32-source project (new derivations: a salt unique to this run) and the
    test nixpkgs next to it."""
    stub = nixtools.make_stub(tmp_path)
    root = big_kernel(tmp_path / "p", SOURCES, salt=f"{time.time_ns()}.{os.getpid()}", torch=torch)
    env = nixtools.nix_env({"PYTHONPATH": str(nixtools.TESTS.parent)})
    subprocess.run(
        [sys.executable, "-m", "nixgen", "render", str(root)], env=env, check=True, timeout=120
    )
    return root, stub


def _objects(root: Path, stub: Path, variant: str) -> list[str]:
    """The drvPaths of the object derivations of kernel `big` in `variant`."""
    return nixtools.flake_eval(
        root,
        f"packages.{SYSTEM}.{variant}.nixgen.kernels.big",
        stub=stub,
        apply="k: map (o: o.drvPath) k.nixgen.objects",
    )


def test_nixgen_build_builds_every_object_on_the_remote_builder(tmp_path: Path) -> None:
    root, stub = _project(tmp_path)
    log = tmp_path / "nix.log"
    with RemoteBuilder(build_users=False, lifetime=900) as builder:
        env = builder.env(nixtools.nix_env({"PYTHONPATH": str(nixtools.TESTS.parent)}))
        env["PATH"] = f"{_nix_wrapper(tmp_path / 'bin', log)}:{env['PATH']}"
        command = [
            sys.executable, "-m", "nixgen", "build", str(root),
            "--max-jobs", "0", "--builders", builder.spec(),
            *nixtools.overrides(stub),
        ]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-4000:]
        on_builder = set(builder.store_paths())
    nix_log = log.read_text()
    where = placement(nix_log)
    variants = sorted(p.name for p in (root / "build").iterdir())
    assert variants, done.stderr
    for variant in variants:
        objects = _objects(root, stub, variant)
        assert len(objects) == SOURCES
        remote = [drv for drv in objects if where.remote.get(drv) == builder.uri]
        local = [drv for drv in objects if drv in where.local]
        print(f"\n{variant}: {len(remote)} objects built on {builder.uri}, {len(local)} here")
        assert len(remote) == SOURCES, sorted(set(objects) - set(where.remote))
        assert local == []
        outputs = nixtools.flake_eval(
            root,
            f"packages.{SYSTEM}.{variant}.nixgen.kernels.big",
            stub=stub,
            apply="k: map (o: o.outPath) k.nixgen.objects",
        )
        # Built there (its store holds them), copied back here (valid in this store).
        assert set(outputs) <= where.copied_back
        assert set(outputs) <= on_builder
        valid = subprocess.run(
            ["nix-store", "--check-validity", *outputs], capture_output=True, text=True
        )
        assert valid.returncode == 0, valid.stderr
        # The variant itself is linked here, and loads as a kernel directory.
        assert (root / "build" / variant / "metadata.json").exists()
    # Nothing at all was built here: --max-jobs 0 leaves every build to the builder.
    assert where.local == frozenset(), sorted(where.local)
    # And nixgen's progress says where each object went.
    # The machine as the progress line shows it: a URL's user part is never printed (it
    # may be a token; nixgen.core.outside.redact), `ssh-ng://***@127.0.0.1`.
    shown = outside.redact(builder.uri)
    assert "***@" in shown
    assert f"building kernel big: object big/s000.cpp on {shown}" in done.stderr
    # Each variant is done once (Nix logs a remote build twice: its own, the builder's).
    assert f"[{len(variants) + 1}/" not in done.stderr


def test_objects_compile_on_a_builder_with_build_users_against_torch_headers(
    tmp_path: Path,
) -> None:
    """On a multi-user builder, builds run as the `nixbld` users: the stand-in torch's
    headers must be readable there (they are copied into the store, as the real package's
    are). The toolchain (torch, Python) is built here first, as a binary cache would serve
    it; the kernel's objects, which compile against torch's include directories, are built
    on the builder."""
    root, stub = _project(tmp_path, torch=True)
    env = nixtools.nix_env()
    name = next(
        v.name for v in variants.variants(project.read(root).build, system=SYSTEM) if v.bundle
    )
    kernel = f"path:{root}#packages.{SYSTEM}.{name}.nixgen.kernels.big"
    overrides = nixtools.overrides(stub)
    drv = json.loads(
        subprocess.run(
            ["nix", "eval", "--json", kernel, "--apply", "k: k.drvPath", *overrides],
            env=env, capture_output=True, text=True, check=True, timeout=300,
        ).stdout
    )  # fmt: skip
    requisites = subprocess.run(
        ["nix-store", "-q", "--requisites", drv], env=env, capture_output=True, text=True,
        check=True,
    ).stdout.split()  # fmt: skip
    toolchain = [p for p in requisites if p.endswith(".drv") and "-big32-" not in p]
    subprocess.run(
        ["nix-store", "--realise", "--max-jobs", "2", *toolchain],
        env=env, capture_output=True, check=True, timeout=600,
    )  # fmt: skip
    torch = [p for p in toolchain if "-torch-" in p]
    assert torch, "the kernel depends on torch"
    with RemoteBuilder(build_users=True, lifetime=900) as builder:
        build_env = builder.env(env)
        done = subprocess.run(
            ["nix", "build", "--no-link", "--log-format", "internal-json", "--max-jobs", "0",
             "--builders", builder.spec(), kernel, *overrides],
            env=build_env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
    assert "Permission denied" not in done.stderr
    assert done.returncode == 0, done.stderr[-4000:]
    where = placement(done.stderr)
    objects = [d for d in where.remote if "-big32-big-s" in d]
    assert len(objects) == SOURCES
    assert where.local == frozenset(), sorted(where.local)
