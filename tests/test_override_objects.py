"""`overrideAttrs` of a kernel built one derivation per object reaches every object, for
real: a 40-source kernel (above the per-object threshold) whose every source `#error`s
unless `-DX=1` is given fails to build as rendered, and builds once
`overrideAttrs (o: { cxxFlags = o.cxxFlags ++ [ "-DX=1" ]; })` is applied to it
(`compile.withObjects` reads its plan from the final attributes).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from . import nixtools

pytestmark = [
    pytest.mark.build,
    pytest.mark.skipif(not nixtools.have_nix(), reason="needs Nix"),
]

SOURCES = 40
SOURCE = """\
#ifndef X
#error "compiled without -DX=1"
#endif
int override_{i}(void) {{ return X + {i}; }} // {salt}
"""


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """A rendered cpu project with one cpp-cpu kernel `big` of SOURCES trivial sources
    (new derivations: a salt unique to this run), and the test nixpkgs next to it."""
    stub = nixtools.make_stub(tmp_path)
    root = tmp_path / "p"
    salt = f"{time.time_ns()}.{os.getpid()}"
    rels = [f"big/s{i:02d}.cpp" for i in range(SOURCES)]
    (root / "big").mkdir(parents=True)
    (root / "torch-ext" / "over").mkdir(parents=True)
    (root / "torch-ext" / "over" / "__init__.py").write_text("")
    (root / "torch-ext" / "torch_binding.cpp").write_text("// binding\n")
    for i, rel in enumerate(rels):
        (root / rel).write_text(SOURCE.format(i=i, salt=salt))
    listed = ", ".join(f'"{s}"' for s in rels)
    (root / "build.toml").write_text(
        '[general]\nname = "over"\nversion = 1\nedition = 6\n'
        'license = "Apache-2.0"\nbackends = ["cpu"]\n\n'
        '[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n'
        f'[kernel.big]\nlanguage = "cpp-cpu"\nsrc = [{listed}]\n'
    )
    env = nixtools.nix_env({"PYTHONPATH": str(nixtools.TESTS.parent)})
    subprocess.run(
        [sys.executable, "-m", "nixgen", "render", str(root)], env=env, check=True, timeout=120
    )
    return root, stub


def _kernel(stub: Path, apply: str) -> str:
    """Kernel `big` of the project's first variant, with `apply` (a function) applied."""
    return f"""
let
  p = import ./nix;
  v = builtins.head (p.variants "x86_64-linux");
  d = p.variantPackage {{
    nixpkgs = {stub};
    kernel-builder = {nixtools.toolchain_input(stub)};
    inherit (v) system;
  }} v;
in ({apply}) d.nixgen.kernels.big
"""


def test_an_override_of_cxx_flags_reaches_every_object_of_a_split_kernel(
    tmp_path: Path,
) -> None:
    root, stub = _project(tmp_path)
    objects = nixtools.nix_eval_json(
        _kernel(stub, "k: map (o: o.drvPath) k.nixgen.objects"), cwd=root, read_write=True
    )
    assert len(objects) == SOURCES  # one derivation per object
    # As rendered, every source stops at its #error: the build fails, saying why.
    with pytest.raises(nixtools.NixError) as failed:
        nixtools.nix_build(_kernel(stub, "k: k"), cwd=root, timeout=600)
    assert "compiled without -DX=1" in failed.value.stderr
    # Overridden, every object is compiled with the flag and the kernel is archived.
    flagged = 'k: k.overrideAttrs (o: { cxxFlags = o.cxxFlags ++ [ "-DX=1" ]; })'
    overridden = nixtools.nix_eval_json(
        _kernel(stub, f"k: map (o: o.drvPath) (({flagged}) k).nixgen.objects"),
        cwd=root,
        read_write=True,
    )
    assert len(overridden) == SOURCES
    assert not set(overridden) & set(objects)  # every object derivation changed
    out = nixtools.nix_build(_kernel(stub, flagged), cwd=root, max_jobs=4, timeout=900)
    archive = out / "lib" / "libbig.a"
    members = subprocess.run(
        ["ar", "t", str(archive)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert members == [f"big%2Fs{i:02d}.cpp.o" for i in range(SOURCES)]
