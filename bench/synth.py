"""Synthetic kernel projects for benchmarks and scale tests.

`make_project(root, kernels)` writes an edition-6 project with `kernels` kernels (a mix of
cpp-cpu, cpp-cuda and rust-cpu) and every file they list, so validation with file checks,
rendering and Nix evaluation all see a complete project.
"""

from __future__ import annotations

from pathlib import Path

LANGUAGES = ("cpp-cpu", "cpp-cuda", "rust-cpu")


def build_toml(kernels: int, *, backends: tuple[str, ...] = ("cpu", "cuda")) -> str:
    lines = [
        "[general]",
        f'name = "synth{kernels}"',
        "version = 1",
        "edition = 6",
        'license = "Apache-2.0"',
        "backends = [" + ", ".join(f'"{b}"' for b in backends) + "]",
        "",
        "[torch]",
        'src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]',
        "",
    ]
    for i in range(kernels):
        language = LANGUAGES[i % len(LANGUAGES)]
        if "cuda" not in backends and language == "cpp-cuda":
            language = "cpp-cpu"
        name = f"k{i:05d}"
        lines.append(f"[kernel.{name}]")
        lines.append(f'language = "{language}"')
        if language == "rust-cpu":
            lines.append(f'src = ["{name}/Cargo.toml", "{name}/Cargo.lock", "{name}/src/lib.rs"]')
        elif language == "cpp-cuda":
            lines.append('depends = ["torch"]')
            lines.append(f'src = ["{name}/{name}.cu", "{name}/{name}.h"]')
            lines.append('cuda-capabilities = ["8.0", "9.0"]')
        else:
            lines.append('depends = ["torch"]')
            lines.append(f'src = ["{name}/{name}.cpp", "{name}/{name}.h"]')
            lines.append(f'cxx-flags = ["-DKERNEL_{i}"]')
        lines.append("")
    return "\n".join(lines)


def make_project(root: Path, kernels: int, *, backends: tuple[str, ...] = ("cpu", "cuda")) -> Path:
    """Write a synthetic project with `kernels` kernels under `root` (created)."""
    root.mkdir(parents=True, exist_ok=True)
    text = build_toml(kernels, backends=backends)
    (root / "build.toml").write_text(text)
    binding = root / "torch-ext"
    (binding / f"synth{kernels}").mkdir(parents=True, exist_ok=True)
    (binding / f"synth{kernels}" / "__init__.py").write_text("")
    (binding / "torch_binding.cpp").write_text("// binding\n")
    (binding / "torch_binding.h").write_text("// binding\n")
    for i in range(kernels):
        name = f"k{i:05d}"
        directory = root / name
        (directory / "src").mkdir(parents=True, exist_ok=True)
        for suffix in (".cpp", ".cu", ".h"):
            (directory / f"{name}{suffix}").write_text(f"// {name}\n")
        (directory / "Cargo.toml").write_text(
            f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n\n'
            f'[lib]\ncrate-type = ["staticlib"]\n'
        )
        (directory / "Cargo.lock").write_text(
            f'version = 4\n\n[[package]]\nname = "{name}"\nversion = "0.1.0"\n'
        )
        (directory / "src" / "lib.rs").write_text("// lib\n")
    return root


#: The shared header of `big_kernel`'s sources: `depth` sets how heavy each compile is
#: (template instantiations); `salt` makes new derivations (the store keeps old ones).
BIG_HEADER = """\
#pragma once
#include <algorithm>
#include <numeric>
#include <vector>
// salt: {salt}
template <int N> struct Unroll {{
  static double run(const double *x) {{ return x[N % 64] * N + Unroll<N - 1>::run(x); }}
}};
template <> struct Unroll<0> {{
  static double run(const double *x) {{ return x[0]; }}
}};
"""
BIG_SOURCE = """\
#include "common.h"
double synth_kernel_{i}(std::vector<double> v) {{
  std::sort(v.begin(), v.end());
  return std::accumulate(v.begin(), v.end(), 0.0) + Unroll<{depth}>::run(v.data());
}}
"""


def big_kernel(
    root: Path, sources: int, *, depth: int = 0, salt: str = "", torch: bool = False
) -> Path:
    """Write a cpu-only project `big<sources>` under `root` with ONE cpp-cpu kernel `big`
    of `sources` sources (from 32 on, the Nix library builds one derivation per object),
    each instantiating `Unroll<depth>` (0: a light compile); `torch`: the kernel depends
    on torch (each object compiles with torch's include directories)."""
    name = f"big{sources}"
    rels = [f"big/s{i:03d}.cpp" for i in range(sources)]
    (root / "big").mkdir(parents=True, exist_ok=True)
    (root / "torch-ext" / name).mkdir(parents=True, exist_ok=True)
    (root / "torch-ext" / name / "__init__.py").write_text("")
    (root / "torch-ext" / "torch_binding.cpp").write_text("// binding\n")
    listed = ", ".join(f'"{s}"' for s in ["big/common.h", *rels])
    (root / "build.toml").write_text(
        f'[general]\nname = "{name}"\nversion = 1\nedition = 6\n'
        f'license = "Apache-2.0"\nbackends = ["cpu"]\n\n'
        f'[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n'
        f'[kernel.big]\nlanguage = "cpp-cpu"\nsrc = [{listed}]\n'
        + ('depends = ["torch"]\n' if torch else "")
    )
    for i, rel in enumerate(rels):
        (root / rel).write_text(BIG_SOURCE.format(i=i, depth=depth))
    (root / "big" / "common.h").write_text(BIG_HEADER.format(salt=salt))
    return root


#: The languages `wide_kernel` writes, with the backend each builds for and the
#: extension of its compiled sources.
WIDE = {
    "cpp-cpu": ("cpu", "cpp"),
    "cpp-cuda": ("cuda", "cu"),
    "cpp-rocm": ("rocm", "hip"),
}


def wide_kernel(
    root: Path, sources: int, *, language: str = "cpp-cpu", headers: int = 5, per_dir: int = 100
) -> Path:
    """Write a project `wide<sources>` under `root` with ONE `language` kernel listing
    `sources` files, shaped like the largest kernels of the field (the Composable Kernel
    flash attention: thousands of sources in nested directories, one header in
    `headers`): `per_dir` files a directory, every `headers`-th listed file a header, the
    others compiled. The files are trivial (one line): what this measures is evaluation."""
    backend, ext = WIDE[language]
    name = f"wide{sources}"
    listed = []
    for i in range(sources):
        directory = f"csrc/ck/d{i // per_dir:03d}"
        suffix = "h" if headers and i % headers == headers - 1 else ext
        listed.append(f"{directory}/s{i:05d}.{suffix}")
    package = root / "torch-ext" / name
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (root / "torch-ext" / "torch_binding.cpp").write_text("// binding\n")
    extra = {
        "cpp-cuda": 'cuda-capabilities = ["8.0", "9.0"]\n',
        "cpp-rocm": 'rocm-archs = ["gfx942"]\n',
    }.get(language, "")
    (root / "build.toml").write_text(
        f'[general]\nname = "{name}"\nversion = 1\nedition = 6\n'
        f'license = "Apache-2.0"\nbackends = ["{backend}"]\n\n'
        f'[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n'
        f'[kernel.ck]\nlanguage = "{language}"\ninclude = ["csrc/ck"]\n'
        f'cxx-flags = ["-DCK_WIDE"]\n{extra}src = [\n'
        + "".join(f'  "{s}",\n' for s in listed)
        + "]\n"
    )
    for rel in listed:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"// {rel}\n")
    return root
