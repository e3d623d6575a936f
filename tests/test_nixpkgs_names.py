"""The nixpkgs stand-in holds only names real nixpkgs has: tests/nixpkgs/NAMES.tsv cites the
NixOS/nixpkgs file of every attribute it defines in the sets nixgen touches, and these tests
enumerate the stand-in against it. Deprecated aliases warn as at the pin, and no generated
file names one; the minimum Nix version real nixpkgs needs is recorded and documented.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nixgen.checking import project
from nixgen.planning import plan
from nixgen.rendering import render
from nixgen.writing import write

from .conftest import copy_out
from .nixtools import NixWarning, have_nix, kernel_builder, make_stub, nix_eval_json

REPO = Path(__file__).resolve().parent.parent
TABLE = REPO / "tests" / "nixpkgs" / "NAMES.tsv"
STATUSES = {"package", "attribute", "alias(warn)", "removed", "internal"}

pytestmark = [
    pytest.mark.nix,
    pytest.mark.skipif(not have_nix(), reason="nix is not installed"),
]


def _table() -> dict[str, dict[str, str]]:
    lines = [line for line in TABLE.read_text().splitlines() if not line.startswith("#")]
    header = lines[0].split("\t")
    assert header == ["path", "nixpkgs file", "read", "status", "note"], header
    rows: dict[str, dict[str, str]] = {}
    for number, line in enumerate(lines[1:], 2):
        fields = line.split("\t")
        assert len(fields) == len(header), f"NAMES.tsv row {number}: {line!r}"
        row = dict(zip(header, fields, strict=True))
        assert row["status"] in STATUSES, f"NAMES.tsv: {row['path']}: status {row['status']!r}"
        assert row["path"] not in rows, f"NAMES.tsv: {row['path']} is listed twice"
        rows[row["path"]] = row
    return rows


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("names"))


#: The sets nixgen touches, by their prefix in NAMES.tsv (`cudaPackages_X_Y.` stands for each
#: versioned CUDA set), and how to reach them from the package set `p`.
SETS = {
    "": "p",
    "rocmPackages.": "p.rocmPackages",
    "rocmPackages.llvm.": "p.rocmPackages.llvm",
    "python3.pkgs.": "p.python3.pkgs",
    "rustPlatform.": "p.rustPlatform",
}


def _defined(stub: Path) -> set[str]:
    sets = " ".join(f'"{prefix}" = builtins.attrNames {value};' for prefix, value in SETS.items())
    got = nix_eval_json(
        f'let p = import {stub} {{ system = "x86_64-linux"; }};'
        ' cuda = builtins.filter (n: builtins.match "cudaPackages_[0-9]+_[0-9]+" n != null)'
        " (builtins.attrNames p); in"
        f" {{ {sets} cuda = map (s: builtins.attrNames p.${{s}}) cuda; }}"
    )
    defined = {prefix + name for prefix in SETS for name in got[prefix]}
    cuda_names = got["cuda"]
    assert cuda_names and all(names == cuda_names[0] for names in cuda_names), (
        "every versioned CUDA set of the stand-in has the same names"
    )
    defined |= {f"cudaPackages_X_Y.{name}" for name in cuda_names[0]}
    return defined


def test_every_name_the_stand_in_defines_is_in_the_cited_table(stub: Path) -> None:
    table = _table()
    defined = _defined(stub)
    missing = sorted(defined - set(table))
    assert not missing, (
        "tests/nixpkgs defines names NAMES.tsv does not cite: "
        f"{missing}; add each with the NixOS/nixpkgs file it mirrors, or remove it"
    )
    removed = sorted(p for p in defined if table[p]["status"] == "removed")
    assert not removed, (
        f"NAMES.tsv says real nixpkgs lacks these, yet the stand-in defines them: {removed}"
    )
    stale = sorted(p for p, row in table.items() if row["status"] != "removed" and p not in defined)
    assert not stale, f"NAMES.tsv lists names the stand-in no longer defines: {stale}"


def test_removed_names_stay_removed_at_every_depth(stub: Path) -> None:
    """A removed path deeper than the enumerated sets (rocmPackages.meta.release) is checked
    by path."""
    paths = [p for p, row in _table().items() if row["status"] == "removed"]
    checks = " ".join(f'"{p}" = lib.hasAttrByPath {_nix_path(p)} ({_set_of(p)});' for p in paths)
    got = nix_eval_json(
        f'let p = import {stub} {{ system = "x86_64-linux"; }}; inherit (p) lib; in {{ {checks} }}'
    )
    back = sorted(p for p, present in got.items() if present)
    assert not back, (
        f"NAMES.tsv says real nixpkgs lacks these, yet the stand-in defines them: {back}"
    )


def _nix_path(path: str) -> str:
    rest = path.split(".", 1)[1] if path.startswith("cudaPackages_X_Y.") else path
    return "[ " + " ".join(f'"{part}"' for part in _components(rest)) + " ]"


def _set_of(path: str) -> str:
    return "p.cudaPackages_13_0" if path.startswith("cudaPackages_X_Y.") else "p"


def _components(path: str) -> list[str]:
    if path.startswith("python3.pkgs."):
        return ["python3", "pkgs", *path[len("python3.pkgs.") :].split(".")]
    return path.split(".")


def test_the_scopes_nixgen_selects_are_real_cuda_sets(stub: Path) -> None:
    """Every CUDA version of the build table is a `cudaPackages_X_Y` the table cites."""
    import json

    configs = json.loads((REPO / "nixgen" / "data" / "build-configs.json").read_text())["configs"]
    table = _table()
    for version in sorted({c["cudaVersion"] for c in configs if "cudaVersion" in c}):
        name = "cudaPackages_" + version.replace(".", "_")
        assert table.get(name, {}).get("status") == "package", name


def test_defaults_are_the_real_ones(stub: Path) -> None:
    got = nix_eval_json(
        f'let p = import {stub} {{ system = "x86_64-linux"; }}; in'
        " map (s: p.${s}.cudaMajorMinorVersion)"
        ' [ "cudaPackages" "cudaPackages_12" "cudaPackages_13" ]'
    )
    # all-packages.nix at the pin: cudaPackages = recurseIntoAttrs cudaPackages_12;
    # cudaPackages_12 = cudaPackages_12_9; cudaPackages_13 = cudaPackages_13_2;
    assert got == ["12.9", "12.9", "13.2"]


def _aliases() -> list[str]:
    return [p for p, row in _table().items() if row["status"] == "alias(warn)"]


def _alias_expr(stub: Path, path: str) -> str:
    if path.startswith("cudaPackages_X_Y."):
        value = "p.cudaPackages_13_0." + path.split(".", 1)[1]
    else:
        value = "p." + path
    return (
        f'let p = import {stub} {{ system = "x86_64-linux"; config.allowUnfree = true; }}; in'
        f" builtins.seq {value} true"
    )


@pytest.mark.parametrize("path", _aliases())
def test_deprecated_aliases_warn_and_the_helpers_fail_on_it(stub: Path, path: str) -> None:
    with pytest.raises(NixWarning) as caught:
        nix_eval_json(_alias_expr(stub, path))
    assert "deprecated" in caught.value.stderr or "renamed" in caught.value.stderr
    assert nix_eval_json(_alias_expr(stub, path), allow_warnings=True) is True


def _generated_files() -> list[Path]:
    roots = [REPO / "nix", REPO / "nixgen" / "templates", REPO / "tests" / "golden"]
    roots += sorted((REPO / "examples").glob("*/nix"))
    return [f for root in roots for f in sorted(root.rglob("*")) if f.is_file()]


def test_no_generated_file_and_no_library_file_names_an_alias() -> None:
    patterns = {}
    for path in _aliases():
        name = path.rsplit(".", 1)[-1]
        patterns[path] = re.compile(
            rf"\b(?:pkgs|final|prev)\.{re.escape(name)}\b"
            if "." not in path
            else rf"(?<![\w-]){re.escape(name)}(?![\w-])"
        )
    hits = []
    for file in _generated_files():
        text = file.read_text(errors="replace")
        for path, pattern in patterns.items():
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                hits.append(f"{file.relative_to(REPO)}:{line}: {path}")
    assert not hits, "generated code names a deprecated alias (NAMES.tsv): " + "; ".join(hits)


def test_a_rendered_cuda_project_evaluates_without_a_warning(stub: Path, tmp_path: Path) -> None:
    root = tmp_path / "relu-cuda"
    copy_out(REPO / "examples" / "relu-cuda", root, "nix")
    write.write(root, render.render(plan.make(project.read(root).build)))
    # nix_eval_json fails on any evaluation warning (tests/nixtools.py).
    drvs = nix_eval_json(
        f"""
        let
          p = import ./nix;
          args = {{
            nixpkgs = {stub}; kernel-builder = {kernel_builder(stub)}; system = "x86_64-linux";
          }};
          cuda = builtins.filter (v: v.backend == "cuda") (p.variants "x86_64-linux");
        in map (v: (p.variantPackage args v).drvPath) cuda
        """,
        cwd=root,
        read_write=True,
        timeout=300,
    )
    assert drvs and all(d.endswith(".drv") for d in drvs)


def test_the_minimum_nix_version_is_recorded_and_documented() -> None:
    text = (REPO / "tests" / "nixpkgs" / "lib" / "minver.nix").read_text()
    [version] = re.findall(r'^"([0-9.]+)"$', text, re.MULTILINE)
    assert "lib/minver.nix" in text and "40cc908fabc2e23730f0572b411471a16bd75f1a" in text
    major_minor = ".".join(version.split(".")[:2])
    toolchain = (REPO / "docs" / "toolchain.md").read_text()
    assert f"You need Nix {major_minor} or newer" in toolchain
    assert f"Nix ≥ {major_minor}" in (REPO / "tests" / "nixpkgs" / "README.md").read_text()
