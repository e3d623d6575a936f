"""`nixgen build`'s plain progress lines name the variant of each derivation they report,
and come in the order the builds ran: the variants of the project's derivations are read
from the store's `.drv` files (`building.drvgraph`), from each variant's derivation down,
through the project's own derivations only."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.building import drvgraph
from nixgen.cmdline.cli import main

from .fakenix import FakeNix, bundled, drv, start, stop
from .fakenix import demo as demo  # a fixture
from .fakenix import fake_nix as fake_nix  # a fixture


def _path(store: Path, digit: str, name: str) -> str:
    return f"{store}/{digit * 32}-{name}.drv"


def _aterm(inputs: list[str]) -> str:
    """A `.drv` file as Nix writes one (outputs, input derivations, sources, …)."""
    drvs = ",".join(f'("{d}",["out"])' for d in inputs)
    return (
        'Derive([("out","/nix/store/x-out","","")],'
        f'[{drvs}],["/nix/store/y-src"],"x86_64-linux","/bin/sh",["-c","echo \\"[(,)]\\""],'
        '[("name","x")])'
    )


def test_the_project_derivations_of_each_variant(tmp_path, monkeypatch):
    store = tmp_path / "store"
    store.mkdir()
    monkeypatch.setenv("NIX_STORE_DIR", str(store))
    torch = _path(store, "a", "torch-2.13.0")
    shared = _path(store, "b", "relu-relu_shared-1")
    kernel = {v: _path(store, d, "relu-relu_cpu-1") for v, d in (("A", "c"), ("B", "d"))}
    ext = {v: _path(store, d, "relu-torch-ext-1") for v, d in (("A", "f"), ("B", "g"))}
    stamp = {"A": _path(store, "h", "relu-torch-ext-1")}  # the provenance stamp
    files = {
        torch: [],
        shared: [torch],
        kernel["A"]: [torch, shared],
        kernel["B"]: [torch, shared],
        ext["A"]: [kernel["A"], torch],
        ext["B"]: [kernel["B"], torch],
        stamp["A"]: [ext["A"]],
    }
    for path, inputs in files.items():
        Path(path).write_text(_aterm(inputs))
    followed = {"relu-relu_shared-1", "relu-relu_cpu-1", "relu-torch-ext-1"}
    owners = drvgraph.owners({stamp["A"]: ["A"], ext["B"]: ["B"]}, lambda n: n in followed)
    assert owners.variants[kernel["A"]] == ("A",) and owners.variants[kernel["B"]] == ("B",)
    assert owners.variants[ext["A"]] == ("A",)
    assert owners.variants[shared] == ("A", "B")  # built once, for both
    assert torch not in owners.variants  # nixpkgs and the toolchain are not followed
    assert owners.wrappers == {stamp["A"]}
    # What cannot be read is no failure: only the variant names are missing.
    assert drvgraph.read_inputs(_path(store, "i", "missing")) == []
    Path(_path(store, "j", "odd")).write_text("DrvWithVersion(...)")
    assert drvgraph.read_inputs(_path(store, "j", "odd")) == []
    assert drvgraph.read_inputs("/etc/passwd") == []  # not a derivation: never read


def test_plain_lines_name_the_variant_in_order(
    fake_nix: FakeNix, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = bundled(demo)[:2]
    kernel = {
        v: f"/nix/store/{d * 32}-relu-demo-relu_cpu-1.drv" for v, d in ((first, "3"), (second, "4"))
    }
    ext = {
        v: f"/nix/store/{d * 32}-relu-demo-torch-ext-1.drv"
        for v, d in ((first, "5"), (second, "6"))
    }
    graph = {drv(v): [ext[v]] for v in (first, second)}
    graph.update({ext[v]: [kernel[v]] for v in (first, second)})
    monkeypatch.setattr(drvgraph, "read_inputs", lambda path: graph.get(path, []))
    fake_nix.scenario(
        **{
            v: {"stderr": [start(1, kernel[v]), stop(1), start(2, ext[v]), stop(2)], "exit": 0}
            for v in (first, second)
        }
    )
    done = CliRunner().invoke(
        main, ["build", str(demo), "--variant", first, "--variant", second, "--no-link"]
    )
    assert done.exit_code == 0, done.output
    lines = [line for line in done.stderr.splitlines() if line.startswith(("building ", "built "))]
    expected = []
    for v in (first, second):
        expected += [
            f"building kernel relu_cpu ({v})",
            f"built kernel relu_cpu ({v}) (",
            f"building extension ({v})",
            f"built extension ({v}) (",
        ]
    # (The fake's variant derivations are named after their variant: left out here.)
    skip = ("building 2 variants", "built 2 of", f"building {first}", f"building {second}")
    body = [line for line in lines if not line.startswith(skip)]
    assert len(body) == len(expected) and all(
        line.startswith(want) for line, want in zip(body, expected, strict=True)
    ), body
