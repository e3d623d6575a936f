"""Small projects and expressions that the tests of several files build on: an edition-4
build.toml, a Rust workspace of edition 5 (the support-rust-kernels branch's relu-rust), a
kernel of many sources for the per-object mode, rendering a project in place, and the Nix
expression of one kernel of a rendered project."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from nixgen.checking import project
from nixgen.planning import plan
from nixgen.reading import model
from nixgen.rendering import render
from nixgen.writing import write as writing

from .nixtools import toolchain_input

#: An edition-4 project (migrate's input).
V4 = """\
[general]
name = "relu"
version = 1
license = "Apache-2.0"
backends = ["cuda", "cpu"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.relu]
depends = ["torch"]
backend = "cuda"  # the GPU kernel
src = ["relu_cuda/relu.cu"]

[kernel.relu_cpu]
backend = "cpu"
depends = ["torch"]
src = ["relu_cpu/relu.cpp"]
"""

#: The branch's relu-rust, edition 5: a workspace whose member crate is the kernel.
RELU_RUST_V5 = """\
[general]
name = "relu-rust"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu"]

[general.hub]
repo-id = "example-org/relu-rust"

# No binding sources: the crate exports its functions through tvm-ffi.
[tvm-ffi]

[kernel.relu_rust]
backend = "cpu"
dsl = "rust"
depends = []
src = ["relu-rs/Cargo.toml", "relu-rs/src", "Cargo.toml", "Cargo.lock"]
"""

TVM_FFI_REV = "2af558e255ff2f398095835ae18e6457635b0262"
TVM_FFI_GIT = f"git+https://github.com/apache/tvm-ffi.git?rev={TVM_FFI_REV}#{TVM_FFI_REV}"


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def relu_rust_v5(root: Path) -> Path:
    """A project shaped like the branch's relu-rust: a workspace whose member crate
    `relu-rs` (library `relu_rs`, not the kernel's `relu_rust`) depends on tvm-ffi by git."""
    lock = textwrap.dedent(
        f"""\
        version = 4

        [[package]]
        name = "relu-rs"
        version = "0.1.0"
        dependencies = [
         "tvm-ffi",
        ]

        [[package]]
        name = "tvm-ffi"
        version = "0.1.0-alpha.0"
        source = "{TVM_FFI_GIT}"
        """
    )
    return write(
        root,
        {
            "build.toml": RELU_RUST_V5,
            "Cargo.toml": '[workspace]\nmembers = ["relu-rs"]\nresolver = "2"\n',
            "Cargo.lock": lock,
            "relu-rs/Cargo.toml": textwrap.dedent(
                f"""\
                [package]
                name = "relu-rs"
                version = "0.1.0"
                edition = "2021"

                [lib]
                crate-type = ["staticlib"]

                [dependencies]
                tvm-ffi = {{ git = "https://github.com/apache/tvm-ffi.git", rev = "{TVM_FFI_REV}" }}
                """
            ),
            "relu-rs/src/lib.rs": "// the kernel\n",
            "tvm-ffi-ext/relu_rust/__init__.py": "",
        },
    )


#: A light source: the replay builds dozens of them on a shared 2-core machine.
SOURCE = "int synth_{i}(int x) {{ return x + {i}; }}\n"


def write_project(
    root: Path, *, sources: int = 37, small: bool = True, salt: str = ""
) -> list[str]:
    """A cpu project with kernel `big` of `sources` C++ files (and a header), and with
    `small`, a one-source kernel `small`; returns big's compiled sources."""
    names = [f"big/s{i:03d}.cpp" for i in range(sources)]
    (root / "big").mkdir(parents=True)
    (root / "torch-ext" / "shard").mkdir(parents=True)
    (root / "torch-ext" / "shard" / "__init__.py").write_text("")
    (root / "torch-ext" / "torch_binding.cpp").write_text("// binding\n")
    (root / "big" / "common.h").write_text(f"#pragma once\n// salt {salt}\n")
    for i, name in enumerate(names):
        (root / name).write_text('#include "common.h"\n' + SOURCE.format(i=i))
    src = ", ".join(json.dumps(s) for s in ["big/common.h", *names])
    text = (
        '[general]\nname = "shard"\nversion = 1\nedition = 6\nlicense = "Apache-2.0"\n'
        'backends = ["cpu"]\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n'
        f'[kernel.big]\nlanguage = "cpp-cpu"\nsrc = [{src}]\n'
    )
    if small:
        (root / "small.cpp").write_text(SOURCE.format(i="small"))
        text += '\n[kernel.small]\nlanguage = "cpp-cpu"\nsrc = ["small.cpp"]\n'
    (root / "build.toml").write_text(text)
    return names


def render_into(root: Path) -> model.Build:
    loaded = project.read(root)
    errors = [p for p in plan.check(loaded.build) if p.severity == "error"]
    assert not errors, errors
    writing.write(root, render.render(plan.make(loaded.build)))
    return loaded.build


def kernel_expr(
    stub: Path, kernel: str, *, backend: str = "cpu", attr: str = "", system: str = "x86_64-linux"
) -> str:
    """The Nix expression of kernel `kernel` of the rendered project in the current directory,
    in its first `backend` variant for `system`, built with the stand-ins at `stub`."""
    return f"""
      let
        p = import ./nix;
        v = builtins.head (builtins.filter (v: v.backend == "{backend}") (p.variants "{system}"));
        d = p.variantPackage {{
          nixpkgs = {stub}; kernel-builder = {toolchain_input(stub)}; system = "{system}";
        }} v;
      in d.nixgen.kernels.{kernel}{attr}
    """
