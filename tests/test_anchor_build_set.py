"""The package-set builder, the provenance and the dependency table of the Nix library
beside the REAL kernels toolchain's (huggingface/kernels at 8ac69fc5, ``../shared/anchor/``;
``NIXGEN_ANCHOR``). Each test evaluates the anchor's own file,
so a flag the anchor adds for a backend, a change of its provenance rule, an overlay it
starts to export or a dependency it adds or resolves elsewhere fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from nixgen.core import tables

from .nixtools import nix_eval_json
from .test_real_toolchain import ANCHOR, REPO, pytestmark  # noqa: F401  (the same skips)

LIB = f"(import {REPO}/nix/default.nix).withLib (import {REPO}/tests/nixpkgs/lib)"

#: Every backend of the table (data/languages.json), with and without a build set.
BACKENDS = sorted(tables.BACKENDS)


def _nix_list(names: list[str]) -> str:
    return "[ " + " ".join(json.dumps(n) for n in names) + " ]"


def test_each_backends_nixpkgs_config_is_the_anchors_mk_build_set(tmp_path: Path) -> None:
    """`project.backendConfig` of every backend is the `config` the anchor's
    nix-builder/lib/mk-build-set.nix imports nixpkgs with (`tpuSupport` for tpu, …), and a
    backend the anchor has no build set for (neuron, cann) fails on both sides."""
    nixpkgs = tmp_path / "nixpkgs.nix"
    nixpkgs.write_text("args: args\n")
    got = nix_eval_json(
        f"""
        let
          l = {LIB};
          # The anchor's builder with a nixpkgs whose `import` returns its arguments:
          # `pkgs.config` is then the config it passes, and nothing else is evaluated.
          mk = import {ANCHOR}/nix-builder/lib/mk-build-set.nix {{
            nixpkgs = {{ outPath = {nixpkgs}; lib = {{ }}; }};
            rust-overlay = {{ overlays.default = null; }};
          }};
          real = backend: (mk {{
            inherit backend; torchVersion = "2.13"; system = "x86_64-linux";
          }}).pkgs.config;
          try = f: backend: let r = builtins.tryEval (builtins.deepSeq (f backend) (f backend));
            in if r.success then r.value else "fails";
        in builtins.listToAttrs (map (b: {{
          name = b;
          value = {{ anchor = try real b; nixgen = try l.project.backendConfig b; }};
        }}) {_nix_list(BACKENDS)})
        """
    )
    for backend in BACKENDS:
        assert got[backend]["nixgen"] == got[backend]["anchor"], backend
    assert got["tpu"]["anchor"] == {"allowUnfree": True, "tpuSupport": True}
    with_set = {b for b in BACKENDS if got[b]["anchor"] != "fails"}
    assert with_set == set(tables.BUILD_SET_BACKENDS)
    assert {"neuron", "cann"} <= set(BACKENDS) - with_set


def test_the_toolchains_provenance_is_the_anchors_flake_provenance() -> None:
    """`project.builderProvenance` (nixgen's one rule, `provenance.fromSelf`) gives what the
    anchor's nix-builder/lib/flake-provenance.nix gives for the same flake `self`."""
    cases = [
        '{ rev = "8ac69fc5"; }',
        '{ dirtyRev = "8ac69fc5-dirty"; }',
        '{ dirtyRev = "8ac69fc5"; }',
        '{ rev = "a"; dirtyRev = "b-dirty"; }',
        '{ narHash = "sha256-x"; }',
    ]
    got = nix_eval_json(
        f"""
        let
          l = {LIB};
          real = import {ANCHOR}/nix-builder/lib/flake-provenance.nix {{
            lib = import {REPO}/tests/nixpkgs/lib;
          }};
        in map (self: {{ anchor = real self; nixgen = l.project.builderProvenance self; }})
          [ {" ".join(f"({c})" for c in cases)} ]
        """
    )
    for case, row in zip(cases, got, strict=True):
        assert row["nixgen"] == row["anchor"], case
    assert got[1]["anchor"] == {"sha": "8ac69fc5", "dirty": True}


def test_the_toolchain_flake_exports_no_overlay() -> None:
    """nix/project.nix imports the toolchain's `nix-builder/overlay.nix` by its path
    because the flake's public outputs hold no overlay: the real flake.nix's outputs, with
    its inputs stood in, are `checks devShells formatter lib packages`. When it exports
    `overlays`, this fails: take that output instead (`project.toolchainOverlays`). The
    stand-in flake has none of its own either."""
    names = nix_eval_json(
        f"""
        let
          flake = import {ANCHOR}/flake.nix;
          systems = [ "aarch64-darwin" "aarch64-linux" "x86_64-linux" ];
          # numtide/flake-utils' eachSystem: `<output>.<system>` of each system's outputs.
          eachSystem = ss: f: builtins.foldl' (acc: s: let r = f s; in acc
            // builtins.mapAttrs (n: v: (acc.${{n}} or {{ }}) // {{ ${{s}} = v; }}) r) {{ }} ss;
          inputs = {{
            self = {{ }};
            nixpkgs = {{ lib = import {REPO}/tests/nixpkgs/lib; legacyPackages = {{ }}; }};
            flake-compat = {{ }};
            flake-utils.lib = {{
              inherit eachSystem;
              system = builtins.listToAttrs (map (s: {{ name = s; value = s; }}) systems);
            }};
            rust-overlay = {{ }};
          }};
          outputs = flake.outputs inputs;
        in {{
          outputs = builtins.attrNames outputs;
          lib = builtins.attrNames outputs.lib;
          standIn = builtins.attrNames
            ((import {REPO}/tests/kernel-builder/flake.nix).outputs inputs);
        }}
        """
    )
    assert "overlays" not in names["outputs"]
    assert "overlay" not in names["outputs"]
    assert names["outputs"] == ["checks", "devShells", "formatter", "lib", "packages"]
    # The stand-in (tests/kernel-builder/) holds no output the real flake lacks.
    assert set(names["standIn"]) <= set(names["outputs"]), names["standIn"]
    # Nor a function that builds one package set (mk-build-set.nix is internal).
    assert "mkBuildSet" not in names["lib"] and "mkBuildSets" not in names["lib"]
    assert (ANCHOR / "nix-builder" / "overlay.nix").is_file()


#: Where nixgen takes a dependency as it is and the anchor's nix-builder/lib/deps.nix
#: overrides it (`.override { inherit stdenv; }`: the extension's stdenv), each with why.
OVERRIDDEN_BY_THE_ANCHOR: dict[str, str] = {
    "sycl_tla": "header-only (CUTLASS for SYCL): nothing of it is compiled with a stdenv",
    "metal-cpp": "header-only (Apple's C++ Metal headers); darwin has one stdenv",
}


def test_each_cpp_dependency_is_the_package_the_anchors_deps_nix_resolves() -> None:
    """Dependency name → Nix attribute (homes: `data/cpp-dependencies.json`, its allowlist
    and its `attrs`, `kernel.dependencies` in Nix;
    the anchor's one table is `cppDeps` in nix-builder/lib/deps.nix). For every name a
    kernel may list, the REAL deps.nix and nixgen (the name as Python plans it, resolved
    by the library) take the same attribute of the package set; `tvm-ffi` is nixgen's own
    (a `[tvm-ffi]` project's headers), not one of the anchor's `depends`."""
    from nixgen.core import tables

    names = [n for n in tables.all_cpp_dependencies() if n != "tvm-ffi"]
    planned = {n: tables.dependency_attrs().get(n, n) for n in names}
    got = nix_eval_json(
        f"""
        let
          lib = import {REPO}/tests/nixpkgs/lib;
          l = (import {REPO}/nix/default.nix).withLib lib;
          # A package set whose every package names its attribute path; `override` marks it.
          package = path: {{
            inherit path;
            override = _: let o = {{ inherit path; overridden = true; }}; in o // {{ dev = o; }};
          }};
          pkgs = builtins.listToAttrs (map (n: {{ name = n; value = package n; }})
            [ {" ".join(json.dumps(n) for n in names if n.startswith("cutlass_"))} "metal-cpp" ])
            // {{ xpuPackages.sycl-tla = package "xpuPackages.sycl-tla"; }};
          # As in a build set, torch's passthru `xpuPackages` is the set's own.
          torch = package "torch" // {{ inherit (pkgs) xpuPackages; }};
          anchor = import {ANCHOR}/nix-builder/lib/deps.nix {{
            inherit lib pkgs torch; stdenv = "stdenv";
          }};
          norm = p: {{ inherit (p) path; overridden = p.overridden or false; }};
          nixgen = name: (l.kernel.dependencies {{
            inherit pkgs torch; variant = {{ stableAbi = null; }};
          }} [ name ]).inputs;
        in builtins.mapAttrs (name: attr: {{
          anchor = map norm (anchor.resolveCppDeps [ name ]);
          nixgen = map norm (nixgen attr);
        }}) (builtins.fromJSON {json.dumps(json.dumps(planned))})
        """
    )
    assert sorted(got) == sorted(names)
    # And the anchor's table has no name nixgen lacks (its keys, read from the file).
    text = (ANCHOR / "nix-builder" / "lib" / "deps.nix").read_text()
    block = text[text.index("cppDeps = {") : text.index("\n  };", text.index("cppDeps = {"))]
    assert sorted(re.findall(r'^    "([^"]+)" = \[', block, re.M)) == sorted(names)
    for name, row in got.items():
        [anchor], [ours] = row["anchor"], row["nixgen"]
        assert ours["path"] == anchor["path"], name
        assert not ours["overridden"], name
        assert anchor["overridden"] == (name in OVERRIDDEN_BY_THE_ANCHOR), name


def _flatten(version: str) -> str:
    """The anchor's `flattenVersion` (mk-build-set.nix): padded to two parts, `_`-joined."""
    parts = version.split(".")
    return "_".join(parts + ["0"] * (2 - len(parts)))


def test_each_build_sets_package_set_is_the_anchors(tmp_path: Path) -> None:
    """For every build set the REAL anchor makes (its build-sets.nix `mkBuildSets` over its
    versions.nix), the nixpkgs `config` and the version-selecting overlays it imports
    nixpkgs with (mk-build-set.nix: `overlayFor{Cuda,Rocm,Xpu}Version`,
    `overlayForTorchVersion`) select what nixgen's `pkgsFor` selects for that variant
    (`backendConfig`, `buildSetOverlay`, `torchOverlay`), applied to one package set."""
    configs = json.loads((REPO / "nix" / "data" / "build-configs.json").read_text())["configs"]
    sets = {f"cudaPackages_{_flatten(c['cudaVersion'])}" for c in configs if "cudaVersion" in c} | {
        f"rocmPackages_{_flatten(c['rocmVersion'])}" for c in configs if "rocmVersion" in c
    }
    sets |= {
        "xpuPackages_" + c["xpuVersion"].replace(".", "_") for c in configs if "xpuVersion" in c
    }
    torches = {f"torch-bin_{_flatten(c['torchVersion'])}" for c in configs}
    nixpkgs = tmp_path / "nixpkgs.nix"
    nixpkgs.write_text("args: args\n")
    got = nix_eval_json(
        f"""
        let
          lib = import {REPO}/tests/nixpkgs/lib;
          l = (import {REPO}/nix/default.nix).withLib lib;
          names = ns: builtins.listToAttrs (map (n: {{ name = n; value = n; }}) ns);
          # One package set before the selection: each versioned set is its own name.
          prev = names {_nix_list(sorted(sets))} // {{
            cudaPackages = "default"; rocmPackages = "default"; xpuPackages = "default";
            pythonPackagesExtensions = [ ];
          }};
          python = names {_nix_list(sorted(torches))};
          apply = overlays: let r = builtins.foldl' (acc: o: acc // o acc acc) prev overlays; in {{
            inherit (r) cudaPackages rocmPackages xpuPackages;
            torch = ((lib.last r.pythonPackagesExtensions) python python).torch;
          }};
          buildSets = (import {ANCHOR}/nix-builder/lib/build-sets.nix {{
            nixpkgs = {{ outPath = {nixpkgs}; inherit lib; }};
            rust-overlay = {{ overlays.default = null; }};
          }}).mkBuildSets (import {ANCHOR}/nix-builder/versions.nix)
            [ "x86_64-linux" "aarch64-linux" "aarch64-darwin" ];
          one = set: let
            c = set.buildConfig;
            variant = {{
              name = "variant"; inherit (c) backend;
              backendVersion = c.cudaVersion or c.rocmVersion or c.xpuVersion or null;
              torch = c.torchVersion;
              ptxasVersion = null;  # no nixgen.toml [backend.cuda] ptxas pin
            }};
          in {{
            config = c.backend + "/" + c.torchVersion + "/" + toString variant.backendVersion;
            anchor = {{
              config = set.pkgs.config;
              # Its first two overlays are the toolchain's and rust-overlay's.
              selected = apply (lib.drop 2 set.pkgs.overlays);
            }};
            nixgen = {{
              config = l.project.backendConfig c.backend;
              selected = apply [
                (l.project.buildSetOverlay variant)
                (l.project.torchOverlay variant)
              ];
            }};
          }};
        in map one buildSets
        """
    )
    assert len(got) >= len(configs)
    for row in got:
        assert row["nixgen"] == row["anchor"], row["config"]
    assert any(row["anchor"]["selected"]["cudaPackages"] != "default" for row in got)
