"""What kernels-community projects say in their flakes, given a home in nixgen.toml, and
their test suites run as kernel-builder's test shell runs them (issue 46, items 1 and 2).

16 of the 52 kernels-community flakes pass `genKernelFlakeOutputs` more than `self` and
`path`: `torchVersions` (systems per backend, an XPU torch bound, a CUDA 12.6 ptxas pin),
`pythonCheckInputs`, `doGetKernelCheck`. The flakes below have their shapes (written
here, not copied: other names, other layout). `nixgen migrate` carries what they say to
nixgen.toml (`[backend.<name>]`, `[test]`) or keeps the flake naming what it would lose;
the plan then leaves filtered systems out of the variants, the CI and the flake; a ptxas
pin reaches the CUDA compile; and `nixgen shell --test` and the flake's checks set
`LOCAL_KERNELS` and `PYTHONPATH`, so that a suite that loads the kernel by repo id or
imports its package passes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.app import anchorflake, config, flakesettings
from nixgen.building import offline
from nixgen.checking import project
from nixgen.cmdline.cli import main
from nixgen.core import nixexpr
from nixgen.core.marker import MARKER
from nixgen.planning import plan, settings, variants

from . import nixtools
from .conftest import EXAMPLES, copy_out
from .fakenix import FakeNix
from .fakenix import fake_nix as fake_nix  # a fixture

SYSTEM = "x86_64-linux"


def flake(arguments: str, inputs: str = 'builder.url = "github:huggingface/kernels";') -> str:
    """A kernel-builder flake of the community's shape, passing `arguments` to the call."""
    return (
        "{\n"
        '  description = "a community kernel";\n'
        f"  inputs = {{ {inputs} }};\n"
        "  outputs = { self, builder }:\n"
        "    builder.lib.genKernelFlakeOutputs {\n"
        "      inherit self;\n"
        "      path = ./.;\n"
        f"{arguments}\n"
        "    };\n"
        "}\n"
    )


#: Every backend to x86_64-linux (rmsnorm, quantization-bitsandbytes, -gptq, sonic-moe).
X86_ONLY = """
      # AVX kernels: x86 only.
      torchVersions = configs:
        map (c: c // { systems = builtins.filter (s: s == "x86_64-linux") c.systems; }) configs;"""
#: The CPU builds to x86_64-linux (activation, megablocks, rotary).
CPU_X86 = """
      torchVersions =
        let keep = c: s: !(c ? "cpu") || s == "x86_64-linux";
        in configs:
          builtins.map (c: c // { systems = builtins.filter (keep c) c.systems; }) configs;"""
#: The CPU filter, XPU only from torch 2.9, and a test input (flash-attn2).
CPU_X86_XPU_29 = """
      pythonCheckInputs = ps: with ps; [ einops ];
      torchVersions = configs:
        let
          keep = c: s: !(c ? "cpu") || s == "x86_64-linux";
          kept = builtins.map (c: c // { systems = builtins.filter (keep c) c.systems; }) configs;
        in
        builtins.filter
          (c: !(c ? xpuVersion) || builtins.compareVersions c.torchVersion "2.9" >= 0)
          kept;"""
#: CUDA 12.6 assembles with 12.8's ptxas, and a test input (flash-attn3, vllm-flash-attn3).
PTXAS = """
      pythonCheckInputs = ps: [ ps.einops ];
      torchVersions = configs: map (c:
        if (c.cudaVersion or null) == "12.6"
        then c // { ptxasVersion = "12.8"; }
        else c) configs;"""
#: No get-kernel check and three test inputs (mamba-ssm).
NO_GET_KERNEL = """
      doGetKernelCheck = false;
      pythonCheckInputs = pkgs: with pkgs; [ einops huggingface-hub transformers ];"""


@pytest.mark.parametrize(
    ("arguments", "backends", "expected"),
    [
        (
            X86_ONLY,
            ["cpu", "xpu"],
            {
                "backend": {
                    "cpu": {"systems": ["x86_64-linux"]},
                    "xpu": {"systems": ["x86_64-linux"]},
                }
            },
        ),
        (
            CPU_X86,
            ["cuda", "metal", "cpu", "rocm"],
            {"backend": {"cpu": {"systems": ["x86_64-linux"]}}},
        ),
        (
            CPU_X86_XPU_29,
            ["cuda", "rocm", "xpu", "cpu"],
            {
                "test": {"python-depends": ["einops"]},
                "backend": {
                    "cpu": {"systems": ["x86_64-linux"]},
                    "xpu": {"torch-minver": "2.9"},
                },
            },
        ),
        (
            PTXAS,
            ["cuda"],
            {
                "test": {"python-depends": ["einops"]},
                "backend": {"cuda": {"ptxas": {"12.6": "12.8"}}},
            },
        ),
        (
            NO_GET_KERNEL,
            ["cuda"],
            {"test": {"python-depends": ["einops", "huggingface-hub", "transformers"]}},
        ),
    ],
    ids=["x86-only", "cpu-x86", "cpu-x86-xpu-torch29", "ptxas", "no-get-kernel"],
)
def test_what_community_flakes_say_is_carried(
    arguments: str, backends: list[str], expected: dict[str, object]
) -> None:
    verdict = anchorflake.standard(flake(arguments))
    assert verdict.recognised and not verdict.standard
    carried = flakesettings.carry(verdict.args, backends)
    assert carried.lost == []
    assert carried.settings == expected
    # What is carried is valid nixgen.toml, and the plan applies it.
    parsed, problems = settings.parse(carried.settings)
    assert problems == [] and parsed.to_json() == settings.parse(expected)[0].to_json()


@pytest.mark.parametrize(
    ("arguments", "lost"),
    [
        # A filter on the CUDA version is build.toml's [general.cuda] minver, not nixgen.toml's.
        (
            "      torchVersions = cs: builtins.filter "
            '(c: (c.cudaVersion or "13.0") != "12.6") cs;',
            "is not one list of systems and one torch range",
        ),
        (
            "      torchVersions = cs: map (c: c // { bundleBuild = false; }) cs;",
            "changes or adds build configurations",
        ),
        (
            '      torchVersions = cs: map (c: if (c.cudaVersion or null) == "12.6" && '
            'c.torchVersion == "2.13" then c // { ptxasVersion = "12.8"; } else c) cs;',
            "`ptxasVersion` of CUDA 12.6 varies",
        ),
        ("      torchVersions = cs: [ ];", "builds nothing for backend `cuda`"),
        ('      rev = "abc";', "`rev`: not an argument nixgen knows how to carry over"),
        (
            "      pythonNativeCheckInputs = ps: [ ps.cmake ];",
            "`pythonNativeCheckInputs` (cmake)",
        ),
        (
            '      torchVersions = cs: map (c: c // { tag = "${c.torchVersion}"; }) cs;',
            "nixgen cannot read it (line",
        ),
        ("      pythonCheckInputs = ps: [ 1 ];", "does not give a list of packages"),
    ],
)
def test_what_nixgen_cannot_say_is_named(arguments: str, lost: str) -> None:
    verdict = anchorflake.standard(flake(arguments))
    if not verdict.args:  # an argument the flake reader itself cannot read
        assert lost.split(" (")[0] in verdict.why or "cannot read" in verdict.why
        return
    carried = flakesettings.carry(verdict.args, ["cuda"])
    assert any(lost in line for line in carried.lost), carried.lost


# ------------------------------------------------------------------- nixgen.toml


def rmsnorm_like(tmp_path: Path, arguments: str = X86_ONLY) -> Path:
    """An rmsnorm-shaped project: x86-only CPU kernels (AVX flags) and its flake's filter,
    with the community's test pattern (load by repo id at import; import the package)."""
    root = tmp_path / "relu"
    copy_out(EXAMPLES / "relu-cpu", root, "nix", "flake.nix", "flake.lock", "tests")
    text = (root / "build.toml").read_text()
    text = text.replace('cxx-flags = ["-Wall", ', 'cxx-flags = ["-Wall", "-mavx2", "-mfma", ')
    text = text.replace(
        'backends = ["cpu"]\n',
        'backends = ["cpu"]\n\n[general.hub]\nrepo-id = "kernels-community/relu-avx"\n',
    )
    (root / "build.toml").write_text(text)
    (root / "flake.nix").write_text(flake(arguments))
    (root / "tests").mkdir()
    (root / "tests" / "test_by_repo_id.py").write_text(
        "import torch\n"
        "from kernels import get_kernel\n\n"
        'relu = get_kernel("kernels-community/relu-avx", version=1)\n\n\n'
        "def test_relu_loaded_by_repo_id():\n"
        "    x = torch.randn(64, 33)\n"
        "    assert torch.equal(relu.relu(x), torch.relu(x))\n"
    )
    (root / "tests" / "test_by_name.py").write_text(
        "import torch\n"
        "from relu_cpu import relu\n\n\n"
        "def test_relu_imported_by_name():\n"
        "    x = torch.randn(8, 5)\n"
        "    assert torch.equal(relu(x), torch.relu(x))\n"
    )
    return root


def test_settings_are_checked_and_located(tmp_path: Path) -> None:
    root = rmsnorm_like(tmp_path)
    (root / "flake.nix").unlink()
    (root / "nixgen.toml").write_text(
        "[backend.cpuu]\n"
        'systems = ["x86_64-linux"]\n'
        "[backend.cpu]\n"
        'systems = ["x86_64-linnux"]\n'
        'ptxas = { "12.6" = "12.8" }\n'
        "[backend.cuda.ptxas]\n"
        '"12.7" = "12.8"\n'
        '"13.0" = "12.9"\n'
        "[test]\n"
        'python-depends = ["einops", "a b"]\n'
        "python-depend = []\n"
    )
    result = CliRunner().invoke(main, ["validate", str(root)])
    assert result.exit_code == 2
    err = result.stderr
    assert "nixgen.toml:1:" in err and "unknown backend `cpuu`; did you mean `cpu`?" in err
    assert "nixgen.toml:4:" in err and "did you mean `x86_64-linux`?" in err
    assert "nixgen.toml:5:" in err and "it belongs in [backend.cuda]" in err
    assert "nixgen.toml:7:" in err and "CUDA 12.7 is not a toolkit of the build table" in err
    assert "nixgen.toml:8:" in err and "newer than 13.0" in err
    assert "nixgen.toml:10:" in err and "python3.pkgs attribute name" in err
    assert "nixgen.toml:11:" in err and "did you mean `python-depends`?" in err
    assert "Traceback" not in result.output


def test_the_plan_applies_the_settings(tmp_path: Path) -> None:
    build = project.read(EXAMPLES / "relu-cuda").build
    chosen, problems = settings.parse(
        {
            "backend": {
                "cuda": {
                    "systems": ["x86_64-linux"],
                    "torch-minver": "2.13",
                    "ptxas": {"12.6": "12.8", "13.0": "13.2"},
                }
            }
        }
    )
    assert problems == []
    planned = plan.make(build, settings=chosen)
    names = {v.name: v.ptxas for v in planned.variants}
    assert names == {
        "torch213-cxx11-cu126-x86_64-linux": "12.8",
        "torch213-cxx11-cu130-x86_64-linux": "13.2",
        "torch213-cxx11-cu132-x86_64-linux": None,
    }
    # No CI row, no default shell, no pull-request row for a left-out system.
    actions = planned.project.github_actions
    rows = actions.matrix["include"] + actions.pull_request_matrix["include"]
    assert {row["system"] for row in rows} == {SYSTEM}
    assert {v.system for v in planned.defaults} == {SYSTEM}
    # Without the settings every system is planned, as before.
    assert {v.system for v in plan.make(build).variants} == {"x86_64-linux", "aarch64-linux"}


def test_a_system_filter_keeps_every_allowed_system_of_a_configuration() -> None:
    """rmsnorm's filter on relu-cpu: the table lists a CPU configuration's systems as
    aarch64-darwin, x86_64-linux, aarch64-linux; leaving out the first must not leave out
    the second (a reason kept from one system to the next once did)."""
    build = project.read(EXAMPLES / "relu-cpu").build
    chosen, problems = settings.parse({"backend": {"cpu": {"systems": ["x86_64-linux"]}}})
    assert problems == []
    found, left = variants.planned_variants(build, settings=chosen)
    unfiltered = [v.name for v in variants.variants(build) if v.system == "x86_64-linux"]
    assert [v.name for v in found] == unfiltered
    assert {item.system for item in left if "systems leave out" in item.reason} == {
        "aarch64-darwin",
        "aarch64-linux",
    }


def test_a_kernel_the_settings_leave_unbuilt_is_named(tmp_path: Path) -> None:
    build = project.read(EXAMPLES / "relu-mixed").build
    chosen, _ = settings.parse({"backend": {"cuda": {"torch-minver": "2.20"}}})
    [problem] = [p for p in plan.check(build, settings=chosen) if "built by no" in p.message]
    assert "nixgen.toml's [backend.cuda] leaves out every" in problem.message
    cuda_only = project.read(EXAMPLES / "relu-cuda").build
    [warned] = plan.check(cuda_only, settings=chosen)
    assert "nixgen.toml's [backend.<name>] tables" in warned.message


# ------------------------------------------------------------------- migrate


def test_migrate_carries_the_filter_and_builds_only_its_systems(tmp_path: Path) -> None:
    root = rmsnorm_like(tmp_path)
    old = (root / "flake.nix").read_text()
    runner = CliRunner()
    render = runner.invoke(main, ["render", str(root)])
    assert render.exit_code == 0
    note = 'nixgen.toml can say what its call adds ([backend.cpu] systems = ["x86_64-linux"])'
    assert note in render.stderr and f"`nixgen migrate {root}` moves that there" in render.stderr
    # --force would drop the filter: refused, nothing written, migrate named.
    forced = runner.invoke(main, ["render", str(root), "--force"])
    assert forced.exit_code == 2 and "--force would replace kernel-builder's flake" in forced.stderr
    assert f"run `nixgen migrate {root}`" in forced.stderr
    assert (root / "flake.nix").read_text() == old
    check = runner.invoke(main, ["migrate", str(root), "--diff"])
    assert check.exit_code == 0
    assert '+[backend.cpu]\n+systems = ["x86_64-linux"]\n' in check.stdout
    assert not (root / "nixgen.toml").exists()
    result = runner.invoke(main, ["migrate", str(root)])
    assert result.exit_code == 0, result.output
    assert "moving what its call adds to nixgen.toml ([backend.cpu] systems" in result.stderr
    assert (root / "flake.nix.orig").read_text() == old
    assert MARKER in (root / "flake.nix").read_text()
    assert config.read(root).project.backend("cpu").systems == ("x86_64-linux",)
    listed = runner.invoke(main, ["variants", str(root), "--json"])
    found = json.loads(listed.stdout)["result"]
    assert found and {v["system"] for v in found} == {SYSTEM}
    # The generated flake's plan says the same (project.nix), and `render` has nothing to do.
    data = (root / "nix" / "project.nix").read_text()
    assert 'system = "x86_64-linux"' in data and 'system = "aarch64' not in data
    again = runner.invoke(main, ["render", str(root)])
    assert again.exit_code == 0 and "warning" not in again.stderr


def test_migrate_refuses_a_conflicting_nixgen_toml(tmp_path: Path) -> None:
    root = rmsnorm_like(tmp_path)
    (root / "nixgen.toml").write_text('[backend.cpu]\nsystems = ["aarch64-linux"]\n')
    before = {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}
    result = CliRunner().invoke(main, ["migrate", str(root)])
    assert result.exit_code == 2
    assert "sets `backend.cpu.systems` to another value than flake.nix says" in result.stderr
    assert {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()} == before


def test_migrate_keeps_a_flake_with_what_it_cannot_carry(tmp_path: Path) -> None:
    root = rmsnorm_like(tmp_path, X86_ONLY + '\n      rev = "abc";')
    runner = CliRunner()
    result = runner.invoke(main, ["migrate", str(root)])
    assert result.exit_code == 0
    assert not (root / "nixgen.toml").exists() and MARKER not in (root / "flake.nix").read_text()
    [note] = [line for line in result.stderr.splitlines() if "warning:" in line]
    assert "`rev`: not an argument nixgen knows how to carry over" in note
    assert (
        'it would carry the rest to nixgen.toml ([backend.cpu] systems = ["x86_64-linux"])' in note
    )
    render = runner.invoke(main, ["render", str(root)])
    assert note in render.stderr.splitlines()
    forced = runner.invoke(main, ["render", str(root), "--force"])
    assert forced.exit_code == 2 and "lose what nixgen cannot carry over: `rev`" in forced.stderr


def test_migrate_carries_a_ptxas_pin(tmp_path: Path) -> None:
    root = tmp_path / "relu"
    copy_out(EXAMPLES / "relu-cuda", root, "nix", "flake.nix")
    (root / "flake.nix").write_text(flake(PTXAS))
    result = CliRunner().invoke(main, ["migrate", str(root)])
    assert result.exit_code == 0, result.output
    text = (root / "nixgen.toml").read_text()
    assert '[backend.cuda.ptxas]\n"12.6" = "12.8"' in text or '"12.6" = "12.8"' in text
    chosen = config.read(root).project
    assert chosen.ptxas_for("cuda", "12.6") == "12.8" and chosen.test_python == ("einops",)
    found = variants.variants(project.read(root).build, settings=chosen)
    assert {v.ptxas for v in found if v.backend_version == "12.6"} == {"12.8"}
    assert {v.ptxas for v in found if v.backend_version != "12.6"} == {None}


# ------------------------------------------------------------------- --offline (F10)


def test_offline_names_a_kept_flakes_inputs(tmp_path: Path, fake_nix: FakeNix) -> None:
    root = rmsnorm_like(tmp_path, X86_ONLY + '\n      rev = "abc";')
    result = CliRunner().invoke(main, ["build", str(root), "--offline"])
    assert result.exit_code != 0
    assert "--offline: the flake input `builder` (github:huggingface/kernels)" in result.stderr
    assert "--override-input builder path:DIR" in result.stderr
    assert "the inputs of the hand-written" in result.stderr
    assert fake_nix.calls() == []  # said before Nix ran
    assert offline.missing_inputs(root, ["builder"], inputs={"builder": "github:x/y"}) == []


def test_offline_reads_any_flakes_inputs_or_says_it_cannot(tmp_path: Path) -> None:
    (tmp_path / "flake.nix").write_text(
        "{\n"
        '  description = "x ${"y"}";\n'
        '  inputs = { a.url = "github:o/a"; b = { url = "path:/b"; flake = false; }; };\n'
        '  inputs.c.follows = "a";\n'
        '  outputs = { self, ... }: let inputs = "not these"; in rec { x = "${self}"; };\n'
        "}\n"
    )
    assert offline.kept_flake_inputs(tmp_path) == {"a": "github:o/a", "b": "path:/b"}
    (tmp_path / "flake.nix").write_text('{ inputs.a.url = "github:o/${x}"; outputs = _: { }; }')
    found = offline.kept_flake_inputs(tmp_path)
    assert isinstance(found, str) and "interpolation" in found


# ------------------------------------------------------------------- through Nix


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stand-ins, made before the per-test cache directory is set (so that their
    host.nix finds the CUDA wheels in the user's cache)."""
    return nixtools.make_stub(tmp_path_factory.mktemp("stub"))


@pytest.fixture
def migrated(tmp_path: Path) -> Path:
    root = rmsnorm_like(tmp_path / "project")
    assert CliRunner().invoke(main, ["migrate", str(root)]).exit_code == 0
    (root / "nixgen.toml").write_text(
        (root / "nixgen.toml").read_text() + '\n[test]\npython-depends = ["einops"]\n'
    )
    return root


@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
@pytest.mark.nix
def test_the_flake_has_outputs_only_for_the_systems_allowed(migrated: Path, stub: Path) -> None:
    assert CliRunner().invoke(main, ["render", str(migrated)]).exit_code == 0
    names = "builtins.mapAttrs (_: builtins.attrNames)"
    packages = nixtools.flake_eval(migrated, "packages", stub=stub, apply=names)
    variants_of = nixtools.flake_eval(migrated, "variants", stub=stub)
    for system in ("aarch64-linux", "aarch64-darwin"):
        assert variants_of[system] == []
        assert sorted(packages[system]) == ["default", "kernels"]  # empty bundles only
    assert variants_of[SYSTEM] and set(variants_of[SYSTEM]) <= set(packages[SYSTEM])
    for output in ("devShells", "checks"):
        found = nixtools.flake_eval(migrated, output, stub=stub, apply=names)
        assert found["aarch64-linux"] == [] and found["aarch64-darwin"] == []
        assert found[SYSTEM]
    matrix = nixtools.flake_eval(migrated, "githubActions", stub=stub)
    rows = matrix["matrix"]["include"] + matrix["pullRequestMatrix"]["include"]
    assert {row["system"] for row in rows} == {SYSTEM}
    # The test inputs reach the test environment (the stand-in's empty einops package;
    # the stand-in's Python environment lists its packages as `pythonPath`).
    variant = variants_of[SYSTEM][-1]
    python_path = nixtools.flake_eval(
        migrated,
        f"checks.{SYSTEM}.{variant}.nativeBuildInputs",
        stub=stub,
        apply="inputs: (builtins.head inputs).pythonPath",
    )
    env = nixtools.flake_eval(
        migrated,
        f"devShells.{SYSTEM}.test-{variant}.shellHook",
        stub=stub,
    )
    assert any("-einops-" in path for path in python_path), python_path
    assert "export LOCAL_KERNELS='kernels-community/relu-avx=/nix/store/" in env
    assert "export PYTHONPATH=/nix/store/" in env and "unset LD_LIBRARY_PATH" in env


@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
@pytest.mark.nix
def test_a_ptxas_pin_reaches_the_cuda_compile(tmp_path: Path, stub: Path) -> None:
    """The pinned toolkit's nvcc is the kernel's: its `cuda_nvcc` copies ptxas and nvlink
    from the other set's redistributable (and NVVM from one older than 13.0)."""
    root = tmp_path / "relu"
    copy_out(EXAMPLES / "relu-cuda", root, "nix")
    (root / "nixgen.toml").write_text('[backend.cuda.ptxas]\n"12.6" = "12.8"\n"13.0" = "13.2"\n')
    assert CliRunner().invoke(main, ["render", str(root)]).exit_code == 0
    nvcc = (
        "p: let k = p.nixgen.kernels.relu_cuda; "
        'n = builtins.head (builtins.filter (d: (d.pname or "") == "cuda_nvcc") '
        'k.nativeBuildInputs); in { inherit (n) name; post = n.postInstall or ""; }'
    )
    found = {
        v: nixtools.flake_eval(root, f"packages.{SYSTEM}.{v}", stub=stub, apply=nvcc)
        for v in (
            "torch213-cxx11-cu126-x86_64-linux",
            "torch213-cxx11-cu130-x86_64-linux",
            "torch213-cxx11-cu132-x86_64-linux",
        )
    }
    cu126, cu130, cu132 = found.values()
    assert "cuda12.6-cuda_nvcc" in cu126["name"]
    assert "cuda12.8-cuda_nvcc-source/bin/ptxas" in cu126["post"]
    assert "/nvvm/bin/* " in cu126["post"]  # 12.8's redistributable holds NVVM
    assert "cuda13.0-cuda_nvcc" in cu130["name"] and "/bin/nvlink" in cu130["post"]
    assert "13.2" in cu130["post"].split("/bin/ptxas")[0] and "nvvm" not in cu130["post"]
    assert cu132["post"] == ""


@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
@pytest.mark.build
def test_the_pinned_nvcc_carries_the_newer_ptxas(tmp_path: Path, stub: Path) -> None:
    """Built through the stand-ins (CUDA 13.0 and 13.2 from NVIDIA's wheels): the CUDA
    13.0 variant's nvcc holds 13.2's ptxas."""
    nixtools.require_host("cudaWheels", reason="the CUDA wheels are not unpacked")
    root = tmp_path / "relu"
    copy_out(EXAMPLES / "relu-cuda", root, "nix")
    (root / "nixgen.toml").write_text('[backend.cuda.ptxas]\n"13.0" = "13.2"\n')
    assert CliRunner().invoke(main, ["render", str(root)]).exit_code == 0
    variant = "torch213-cxx11-cu130-x86_64-linux"
    drv = nixtools.flake_eval(
        root,
        f"packages.{SYSTEM}.{variant}",
        stub=stub,
        apply='p: (builtins.head (builtins.filter (d: (d.pname or "") == "cuda_nvcc") '
        "p.nixgen.kernels.relu_cuda.nativeBuildInputs)).drvPath",
    )
    built = subprocess.run(
        ["nix-build", "--no-out-link", drv],
        capture_output=True,
        text=True,
        env=nixtools.nix_env(),
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    out = Path(built.stdout.strip().splitlines()[-1])
    version = subprocess.run(
        [str(out / "bin" / "ptxas"), "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert "release 13.2" in version, version


@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
@pytest.mark.build
def test_a_community_test_suite_passes_in_the_test_shell_and_the_checks(
    migrated: Path, stub: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The community's pattern: `get_kernel("<repo-id>")` at import time in one test
    module, `import <package>` in another; both pass in `nixgen shell --test` (the variant
    built first) and in the flake's check of the variant."""
    monkeypatch.setenv("NIX_CONFIG", nixtools.NIX_CONFIG)
    variant = "torch213-cxx11-cpu-x86_64-linux"
    shell = subprocess.run(
        [
            *(sys.executable, "-m", "nixgen", "shell"),
            *(str(migrated), "--test", "--variant", variant, *nixtools.overrides(stub)),
            *("-c", "python -m pytest -q -p no:cacheprovider tests"),
        ],
        capture_output=True,
        text=True,
        env={**nixtools.nix_env(), "NIX_CONFIG": nixtools.NIX_CONFIG},
        timeout=1500,
        check=False,
    )
    assert shell.returncode == 0, shell.stdout[-3000:] + shell.stderr[-3000:]
    assert "2 passed" in shell.stdout
    checked = nixtools.flake_build(migrated, f"checks.{SYSTEM}.{variant}", stub=stub)
    assert checked is not None


def test_nixexpr_is_what_the_flake_reader_parses_with() -> None:
    """The flake reader and the argument reader share one tokenizer and parser: an
    argument the reader accepts is an expression `nixexpr` evaluates."""
    verdict = anchorflake.standard(flake(CPU_X86))
    assert isinstance(verdict.args["torchVersions"], nixexpr.Expr)


def test_every_verb_plans_with_the_projects_settings() -> None:
    """One rule: outside nixgen/planning, every call of the planner (`variants.variants`,
    `plan.make`, `plan.check`, `plan.problems`) passes nixgen.toml's settings, so that no
    verb lists, builds, completes or checks a variant they leave out."""
    import ast

    package = EXAMPLES.parent / "nixgen"
    calls = 0
    for path in sorted(package.rglob("*.py")):
        if "planning" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and (node.func.value.id, node.func.attr)
                in {
                    ("variants", "variants"),
                    ("plan", "make"),
                    ("plan", "check"),
                    ("plan", "problems"),
                }
            ):
                continue
            calls += 1
            positional = 3 if node.func.attr == "problems" else 99
            given = {k.arg for k in node.keywords} | (
                {"settings"} if len(node.args) >= positional else set()
            )
            assert "settings" in given, f"{path.relative_to(package.parent)}:{node.lineno}"
    assert calls >= 5
