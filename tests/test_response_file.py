"""The archive's members come from a response file (`ar rcsD lib.a @nixgen-cmd/lib.a.rsp`,
`compile.edges`), each path shell-quoted as ar's `@file` reading takes it: sources whose
names hold a space, a quote, a `$` or a leading dash are archived under their names, and the
archive is byte-identical whether the kernel builds in one derivation (ninja) or one per
object as nixgen plans it for a kernel of `OBJECT_THRESHOLD` sources (the members then
store paths).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nixgen.planning.kernels import OBJECT_THRESHOLD

from . import nixtools

pytestmark = [
    pytest.mark.build,
    pytest.mark.skipif(not nixtools.have_nix(), reason="needs Nix"),
]

ODD = ["odd dir/it's $x.cpp", "k/-y.cpp", 'k/a"b.cpp']
#: The odd names and plain ones, as many as make nixgen plan one derivation per object.
SOURCES = ODD + [f"k/f{i:02d}.cpp" for i in range(OBJECT_THRESHOLD - len(ODD))]


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "odd"
    for i, rel in enumerate(SOURCES):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"int response_{i}(void) {{ return {i}; }}\n")
    (root / "torch-ext" / "odd").mkdir(parents=True)
    (root / "torch-ext" / "odd" / "__init__.py").write_text("")
    (root / "torch-ext" / "b.cpp").write_text("// binding\n")
    listed = ", ".join(json.dumps(s) for s in SOURCES)
    (root / "build.toml").write_text(
        '[general]\nname = "odd"\nversion = 1\nedition = 6\nlicense = "Apache-2.0"\n'
        'backends = ["cpu"]\n\n[torch]\nsrc = ["torch-ext/b.cpp"]\n\n'
        f'[kernel.k]\nlanguage = "cpp-cpu"\nsrc = [{listed}]\n'
    )
    env = nixtools.nix_env({"PYTHONPATH": str(nixtools.TESTS.parent)})
    subprocess.run(
        [sys.executable, "-m", "nixgen", "render", str(root)], env=env, check=True, timeout=120
    )
    return root


def test_archive_members_with_odd_names_come_through_the_response_file(
    tmp_path: Path,
) -> None:
    stub = nixtools.make_stub(tmp_path)
    root = _project(tmp_path)
    archives = {}
    for mode in ("ninja", "auto"):
        expr = f"""
let
  p = import ./nix;
  v = builtins.head (p.variants "x86_64-linux");
in (p.variantPackage {{
  nixpkgs = {stub};
  kernel-builder = {nixtools.toolchain_input(stub)};
  inherit (v) system;
  objects = "{mode}";
}} v).nixgen.kernels.k
"""
        split = nixtools.nix_eval_json(
            f"let k = {expr}; o = k.nixgen.objects or null;"
            " in if o == null then 0 else builtins.length o",
            cwd=root,
            read_write=True,
        )
        assert split == (0 if mode == "ninja" else len(SOURCES)), mode
        out = nixtools.nix_build(expr, cwd=root, timeout=600)
        archives[mode] = (out / "lib" / "libk.a").read_bytes()
        members = subprocess.run(
            ["ar", "t", str(out / "lib" / "libk.a")], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        assert members == [s.replace("/", "%2F") + ".o" for s in SOURCES], mode
    assert archives["ninja"] == archives["auto"]
