"""Every backend's compiler: each rule's flags through the real driver of its family, the
darwin link through an ld64-compatible linker, ROCm compiled and linked for real, XPU's
SYCL link, and every system's packages evaluated.

The drivers are the machine's: ``g++``/``gcc`` for the GCC family (Linux, and nvcc's host
compiler), Debian's ``clang`` for the clang family with ``-target`` as each rule targets
(Apple clang for darwin, ROCm's clang behind hipcc and Intel's icpx share its driver),
``ld64.lld`` (Debian's ``lld``) for Apple's ld64, and Debian's ``hipcc`` (ROCm 5.2) for
HIP. ``scripts/setup.sh`` installs them; a test whose driver is missing is skipped, saying
which.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .nixtools import have_nix, nix_env

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "compilers"

pytestmark = [
    pytest.mark.nix,
    pytest.mark.skipif(not have_nix(), reason="nix-instantiate is not installed"),
]

# The target each clang-family rule compiles for, by the system of its variant (nixpkgs'
# aarch64-darwin minimum is macOS 11).
CLANG_TARGETS = {
    "aarch64-darwin": "arm64-apple-macos11",
    "x86_64-linux": "x86_64-unknown-linux-gnu",
}


def _tool(name: str) -> str | None:
    """`name` on PATH, else Debian's newest versioned one (`clang++-15`)."""
    found = shutil.which(name)
    if found:
        return found
    versioned = sorted(
        Path("/usr/bin").glob(f"{name}-[0-9]*"),
        key=lambda p: int(re.sub(r"\D", "", p.name.rsplit("-", 1)[1]) or 0),
    )
    return str(versioned[-1]) if versioned else None


CLANGXX = _tool("clang++")
CLANG = _tool("clang")
GXX = shutil.which("g++")
GCC = shutil.which("gcc")
HIPCC = shutil.which("hipcc")

needs_clang = pytest.mark.skipif(
    CLANGXX is None or CLANG is None,
    reason="clang is not installed (scripts/setup.sh installs Debian's clang)",
)
needs_gcc = pytest.mark.skipif(GXX is None or GCC is None, reason="g++/gcc are not installed")


def _llvm_tool(name: str) -> str | None:
    """An LLVM tool of clang's own installation (`ld64.lld`, `llvm-ar`), else on PATH."""
    if CLANG is not None:
        beside = Path(os.path.realpath(CLANG)).parent / name
        if beside.exists():
            return str(beside)
    return _tool(name)


def _nix_eval(expr_or_file: str, *args: str) -> Any:
    done = subprocess.run(
        ["nix-instantiate", "--eval", "--strict", "--json", *args, expr_or_file],
        env=nix_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"nix-instantiate {expr_or_file} failed:\n{done.stderr}")
    return json.loads(done.stdout)


@functools.cache
def _rules() -> list[dict[str, str]]:
    rules: list[dict[str, str]] = _nix_eval(str(FIXTURES / "rules.nix"))
    return rules


# -- 1. Flags per compiler family, checked with the real drivers ------------------------------


def _script(path: Path, text: str) -> None:
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)


def _source_text(source: str) -> str:
    return "int f(void) { return 0; }\n" if source.endswith(".c") else "int f() { return 0; }\n"


def _check(
    rule: dict[str, str], work: Path, *, real_hipcc: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run one rule's compile command, syntax only, with its family's real driver.

    The command is the plan's own shell text; only the driver it names is supplied here:
    `$CXX`/`$CC` (the stdenv's compiler), or a `hipcc`/`icpx`/`icx` on PATH that runs clang
    as that driver's clang does (`-x hip` for hipcc, which the real one adds). nvcc is not
    run: its host compiler's flags (`-Xcompiler=`) go through g++.
    """
    work.mkdir(parents=True, exist_ok=True)
    bin_dir = work / "bin"
    bin_dir.mkdir(exist_ok=True)
    source = work / rule["source"]
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(_source_text(rule["source"]))
    env = {**os.environ, "NIX_BUILD_TOP": str(work)}
    family = rule["compiler"]
    target = CLANG_TARGETS[rule["system"]]
    clang_checks = " -Werror=unused-command-line-argument"
    command = rule["command"]
    if family == "gcc":
        assert GXX and GCC
        env |= {"CXX": GXX, "CC": GCC}
        extra = ""
    elif family == "clang":
        assert CLANGXX and CLANG
        # Apple clang's standard library is libc++ (Debian's clang would pick libstdc++).
        env |= {
            "CXX": f"{CLANGXX} -target {target} -stdlib=libc++",
            "CC": f"{CLANG} -target {target}",
        }
        extra = clang_checks
    elif family == "hipcc":
        if real_hipcc:
            assert HIPCC
            _script(bin_dir / "hipcc", f'HIP_PLATFORM=amd exec {shlex.quote(HIPCC)} "$@"\n')
        else:
            assert CLANGXX
            _script(
                bin_dir / "hipcc",
                f'exec {shlex.quote(CLANGXX)} -target {target} -x hip -nogpuinc -nogpulib "$@"\n',
            )
        extra = clang_checks
    elif family == "icpx":
        assert CLANGXX and CLANG
        _script(bin_dir / "icpx", f'exec {shlex.quote(CLANGXX)} -target {target} "$@"\n')
        _script(bin_dir / "icx", f'exec {shlex.quote(CLANG)} -target {target} "$@"\n')
        extra = clang_checks
    elif family == "nvcc":
        assert GXX
        host = [
            w
            for w in shlex.split(command.replace("$NIX_BUILD_TOP", str(work)))
            if w.startswith("-Xcompiler=")
        ]
        assert host, f"the nvcc rule passes its host compiler no flags: {command}"
        flags = [f for w in host for f in w.removeprefix("-Xcompiler=").split(",")]
        return subprocess.run(
            [GXX, *flags, "-fsyntax-only", "-x", "c++", str(source)],
            cwd=work,
            capture_output=True,
            text=True,
            check=False,
        )
    else:
        raise AssertionError(f"no driver is known for the compiler family {family!r}")
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return subprocess.run(
        ["sh", "-c", f"{command} -fsyntax-only{extra}"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def _describe(rule: dict[str, str]) -> str:
    return (
        f"{rule['backend']} ({rule['system']}) {rule['plan']} {rule['source']} [{rule['compiler']}]"
    )


@needs_clang
@needs_gcc
def test_every_rule_of_every_backend_passes_its_compilers_driver(tmp_path: Path) -> None:
    rules = _rules()
    # Every backend's plans are here, and every family a rule can name.
    assert {(r["backend"], r["system"]) for r in rules} == {
        ("cpu", "x86_64-linux"),
        ("cpu", "aarch64-darwin"),
        ("cuda", "x86_64-linux"),
        ("rocm", "x86_64-linux"),
        ("xpu", "x86_64-linux"),
        ("metal", "aarch64-darwin"),
    }
    assert {r["compiler"] for r in rules} == {"gcc", "clang", "hipcc", "icpx", "nvcc"}
    # The toolchains say which family each backend's `$CXX` is: clang on darwin.
    assert {r["compiler"] for r in rules if r["system"] == "aarch64-darwin"} == {"clang"}
    failures = []
    for i, rule in enumerate(rules):
        done = _check(rule, tmp_path / str(i))
        if done.returncode != 0:
            failures.append(f"{_describe(rule)}:\n  {rule['command']}\n  {done.stderr.strip()}")
    assert not failures, "\n".join(failures)


@pytest.mark.skipif(
    HIPCC is None, reason="hipcc is not installed (scripts/setup.sh installs Debian's hipcc)"
)
def test_the_hip_rules_pass_the_real_hipcc(tmp_path: Path) -> None:
    hip = [r for r in _rules() if r["compiler"] == "hipcc"]
    assert {Path(r["source"]).suffix for r in hip} == {".hip", ".cu"}
    for i, rule in enumerate(hip):
        done = _check(rule, tmp_path / str(i), real_hipcc=True)
        assert done.returncode == 0, f"{_describe(rule)}:\n{rule['command']}\n{done.stderr}"


@needs_clang
def test_a_gcc_only_flag_in_a_clang_rule_fails_the_check(tmp_path: Path) -> None:
    # The check is not blind: the flag nixgen once gave every rule fails each clang-driven one.
    clang_rules = [r for r in _rules() if r["compiler"] in ("clang", "hipcc", "icpx")]
    assert clang_rules
    for i, rule in enumerate(clang_rules):
        driver, rest = rule["command"].split(" ", 1)
        tainted = rule | {"command": f"{driver} -fno-gnu-unique {rest}"}
        done = _check(tainted, tmp_path / str(i))
        assert done.returncode != 0, f"{_describe(rule)} accepted -fno-gnu-unique"
        assert "-fno-gnu-unique" in done.stderr, done.stderr


def test_only_the_gcc_family_gets_gcc_only_flags() -> None:
    data = _nix_eval(f"(import {REPO}/nix/default.nix).compile.families", "--expr")
    gcc_only = {"-fno-gnu-unique"}
    for name, family in data.items():
        flags = {f for flags in family.values() for f in flags}
        if name == "gcc":
            assert gcc_only <= flags
        else:
            assert not flags & gcc_only, f"{name} gets {flags & gcc_only}"


# -- 2. The darwin link, as ld64 expects it --------------------------------------------------

LD64 = _llvm_tool("ld64.lld")
LLVM_AR = _llvm_tool("llvm-ar")
LLVM_OBJDUMP = _llvm_tool("llvm-objdump")
GNU_LD_ONLY = (
    "--whole-archive",
    "--no-whole-archive",
    "--exclude-libs",
    "-z,",
    "--build-id",
    "-soname",
)


def _darwin_dylib(clang: str, target: str, out: Path, install_name: str, code: str) -> None:
    """A stand-in dylib (no SDK here): the macOS SDK's libSystem/libc++ or torch's libraries."""
    src = out.with_suffix(".c")
    src.write_text(code)
    subprocess.run(
        [
            clang,
            "-target",
            target,
            "-fuse-ld=lld",
            "-dynamiclib",
            "-nostdlib",
            "-o",
            str(out),
            str(src),
            f"-Wl,-install_name,{install_name}",
        ],
        check=True,
        capture_output=True,
        text=True,
    )


def _ninja(directory: Path, text: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    (directory / "build.ninja").write_text(text)
    (directory / "nixgen-obj").mkdir(exist_ok=True)
    return subprocess.run(
        ["ninja"], cwd=directory, env=env, capture_output=True, text=True, check=False
    )


@needs_clang
@pytest.mark.skipif(
    LD64 is None or LLVM_AR is None,
    reason="ld64.lld/llvm-ar are not installed (Debian's lld and llvm)",
)
@pytest.mark.skipif(shutil.which("ninja") is None, reason="ninja is not installed")
@pytest.mark.parametrize("backend", ["cpu", "metal"])
def test_a_darwin_extension_links_with_ld64_into_a_mach_o_bundle(
    tmp_path: Path, backend: str
) -> None:
    assert CLANG and CLANGXX and LLVM_AR
    target = CLANG_TARGETS["aarch64-darwin"]
    # The SDK's libraries and torch's, as stand-in dylibs (they define what the fixture uses).
    sdk = tmp_path / "sdk"
    sdk.mkdir()
    _darwin_dylib(
        CLANG,
        target,
        sdk / "libSystem.dylib",
        "/usr/lib/libSystem.B.dylib",
        "int libsystem_stub;\n",
    )
    _darwin_dylib(
        CLANG, target, sdk / "libc++.dylib", "/usr/lib/libc++.1.dylib", "int libcxx_stub;\n"
    )
    # Metal's frameworks (the toolchain links `-framework Metal -framework Foundation`).
    for framework in ("Metal", "Foundation"):
        directory = sdk / f"{framework}.framework"
        directory.mkdir()
        _darwin_dylib(
            CLANG,
            target,
            directory / framework,
            f"/System/Library/Frameworks/{framework}.framework/Versions/A/{framework}",
            f"int {framework.lower()}_stub;\n",
        )
    torch = tmp_path / "torch"
    torch_lib = torch / "lib/python3.11/site-packages/torch/lib"
    torch_lib.mkdir(parents=True)
    _darwin_dylib(
        CLANG,
        target,
        torch_lib / "libc10.dylib",
        "@rpath/libc10.dylib",
        "int c10_registered_ops(void) { return 1; }\n",
    )
    _darwin_dylib(
        CLANG,
        target,
        torch_lib / "libtorch_cpu.dylib",
        "@rpath/libtorch_cpu.dylib",
        "int torch_stub;\n",
    )

    kernel_dir, ext_dir = tmp_path / "kernel", tmp_path / "extension"
    shutil.copytree(FIXTURES / "darwin", kernel_dir)
    shutil.copytree(FIXTURES / "darwin", ext_dir)
    archive = kernel_dir / "librelu.a"
    plans = _nix_eval(
        f"import {FIXTURES / 'darwin.nix'} "
        f"{{ torch = {json.dumps(str(torch))}; archive = {json.dumps(str(archive))};"
        f" backend = {json.dumps(backend)}; }}",
        "--expr",
    )
    assert (plans["cxxFamily"], plans["linker"], plans["linkDriver"]) == ("clang", "ld64", "$CXX")
    link = plans["link"]
    assert not [flag for flag in GNU_LD_ONLY if flag in link], link
    assert "-Wl,-undefined,dynamic_lookup" in link and f"-Wl,-force_load,{archive}" in link

    # nixpkgs' darwin stdenv: clang with libc++ linking through ld64 against the SDK, and
    # LLVM's ar as `ar` (pkgs/os-specific/darwin/cctools/llvm.nix links llvm-ar there).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ar").symlink_to(LLVM_AR)
    cc = f"-target {target} -fuse-ld=lld -L{sdk} -F{sdk}"
    env = {
        **os.environ,
        "CXX": f"{CLANGXX} {cc} -stdlib=libc++",
        "CC": f"{CLANG} {cc}",
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    # What configurePhase writes before ninja runs: the archive's response file.
    assert [r["file"] for r in plans["responses"]] == ["nixgen-cmd/librelu.a.rsp"]
    for response in plans["responses"]:
        (kernel_dir / response["file"]).parent.mkdir(parents=True, exist_ok=True)
        (kernel_dir / response["file"]).write_text(response["text"] + "\n")
    for directory, ninja in ((kernel_dir, plans["kernel"]), (ext_dir, plans["extension"])):
        done = _ninja(directory, ninja, env | {"NIX_BUILD_TOP": str(directory)})
        assert done.returncode == 0, done.stdout + done.stderr

    module = ext_dir / "_relu_cpu_0.abi3.so"
    headers = subprocess.run(
        [str(LLVM_OBJDUMP or "llvm-objdump"), "--macho", "--private-headers", str(module)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert re.search(r"MH_MAGIC_64\s+ARM64\s+ALL\s+\S+\s+BUNDLE", headers), headers
    symbols = subprocess.run(
        [str(_llvm_tool("llvm-nm") or "llvm-nm"), "-m", str(module)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # The Python C API is looked up when the module is loaded; the kernel's registration
    # survived the link (its archive was linked whole) and calls into torch's libc10.
    assert re.search(
        r"\(undefined\) external _PyModule_Create2 \(dynamically looked up\)", symbols
    ), symbols
    assert "_relu_scalar" in symbols and "__GLOBAL__sub_I_relu.cpp" in symbols, symbols
    assert "_c10_registered_ops (from libc10)" in symbols, symbols
    assert "@rpath/libc10.dylib" in headers
    if backend == "metal":
        assert plans["linkFlags"] == ["-framework", "Metal", "-framework", "Foundation"]
        assert "_relu_metal_devices" in symbols, symbols
        assert "/System/Library/Frameworks/Metal.framework/Versions/A/Metal" in headers, headers

    # The GNU link line nixgen had before fails through ld64.
    gnu = link.replace(
        f"-Wl,-force_load,{archive}", f"-Wl,--whole-archive {archive} -Wl,--no-whole-archive"
    )
    done = subprocess.run(
        ["sh", "-c", gnu], cwd=ext_dir, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode != 0 and "--whole-archive" in done.stderr, done.stderr


# -- 3. ROCm compiled and linked for real -----------------------------------------------------

BUNDLER = _tool("clang-offload-bundler")
OBJCOPY = _tool("llvm-objcopy")
ROCM_VARIANTS = ["torch213-cxx11-rocm71-x86_64-linux", "torch213-cxx11-rocm72-x86_64-linux"]


def _offload_targets(library: Path, work: Path) -> list[str]:
    """The code objects bundled in a host ELF file's `.hip_fatbin` section."""
    assert OBJCOPY and BUNDLER
    bundle = work / f"{library.name}.hip_fatbin"
    subprocess.run(
        [OBJCOPY, f"--dump-section=.hip_fatbin={bundle}", str(library), str(work / "discard")],
        check=True,
        capture_output=True,
    )
    listed = subprocess.run(
        [BUNDLER, "--list", "--type=o", f"--input={bundle}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return sorted(line for line in listed.split() if line)


@pytest.mark.build
@pytest.mark.skipif(
    HIPCC is None, reason="hipcc is not installed (scripts/setup.sh installs Debian's hipcc)"
)
@pytest.mark.skipif(
    BUNDLER is None or OBJCOPY is None, reason="clang-offload-bundler/llvm-objcopy are missing"
)
def test_a_hip_kernel_builds_for_two_gpu_targets_through_the_stand_ins(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from nixgen.cmdline.cli import main

    from .nixtools import flake_build, make_stub

    project = tmp_path / "hip-relu"
    shutil.copytree(REPO / "tests" / "fixtures" / "hip-relu", project)
    result = CliRunner().invoke(main, ["render", str(project)])
    assert result.exit_code == 0, result.output
    stub = make_stub(tmp_path / "stub")
    for variant in ROCM_VARIANTS:
        [out] = flake_build(project, variant, stub=stub, timeout=1800)
        [library] = sorted(Path(out).glob("*.abi3.so"))
        # One code object per --offload-arch, next to the host code, in the linked module
        # (ROCm 5.2 names them `hipv4-amdgcn-amd-amdhsa--<arch>`).
        targets = _offload_targets(library, tmp_path)
        assert "host-x86_64-unknown-linux" in targets, targets
        devices = sorted(t.rsplit("--", 1)[1] for t in targets if t.startswith("hip"))
        assert devices == ["gfx1030", "gfx90a"], targets
        dynamic = subprocess.run(
            ["readelf", "-d", str(library)], capture_output=True, text=True, check=True
        ).stdout
        assert re.search(r"NEEDED.*\[libamdhip64\.so\.\d+\]", dynamic), dynamic
        metadata = json.loads((Path(out) / "metadata.json").read_text())
        # metadata.json: archs sorted as strings, as the anchor's add_build_metadata.py writes.
        assert metadata["backend"] == {"type": "rocm", "archs": ["gfx1030", "gfx90a"]}


# -- 4. XPU links with icpx -fsycl ------------------------------------------------------------


def _stub_and_project(tmp_path: Path, source: Path) -> tuple[Path, Path]:
    from click.testing import CliRunner

    from nixgen.cmdline.cli import main

    from .conftest import copy_out
    from .nixtools import make_stub

    project = tmp_path / source.name
    copy_out(source, project, "result*")
    result = CliRunner().invoke(main, ["render", str(project)])
    assert result.exit_code == 0, result.output
    return make_stub(tmp_path / "stub"), project


def test_xpu_extensions_link_with_icpx_fsycl_and_the_kernels_sycl_flags(tmp_path: Path) -> None:
    from .nixtools import flake_eval

    stub, project = _stub_and_project(tmp_path, REPO / "examples" / "relu-xpu")
    shape = flake_eval(
        project,
        "packages.x86_64-linux.torch213-cxx11-xpu20260-x86_64-linux",
        stub=stub,
        # The extension behind the variant's provenance stamp (`passthru.nixgen.unstamped`).
        apply="v: let p = v.passthru.nixgen.unstamped or v;"
        " names = map (d: d.pname or d.name); in { configure = p.configurePhase;"
        " native = names p.nativeBuildInputs;"
        " kernel = names p.passthru.nixgen.kernels.relu_xpu.nativeBuildInputs; }",
    )
    [link] = [
        line for line in shape["configure"].splitlines() if ".abi3.so" in line and "cmd =" in line
    ]
    # The SYCL driver links (device images kept), with the kernel's sycl-flags; no GNU-only
    # flag is lost on the way (icpx drives GNU ld on Linux).
    assert re.search(r"cmd = icpx -fsycl -shared -o \S+\.abi3\.so ", link), link
    assert "-fno-sycl-instrument-device-code" in link and "--whole-archive" in link, link
    # oneAPI and ocloc (ahead-of-time device code) are inputs of the kernel and the link.
    for inputs in (shape["native"], shape["kernel"]):
        assert "oneapi-torch-dev" in inputs and "ocloc" in inputs, inputs


# -- 5. Every system evaluated, as `nix flake check --all-systems` does ------------------------

# A variant's package is the extension with the flake's provenance stamped into its
# metadata.json (`nixgen.provenance.stamp`); the link is the extension's own
# (`passthru.nixgen.unstamped`).
ALL_SYSTEMS_APPLY = """ps: builtins.mapAttrs (system: packages: builtins.mapAttrs (name: p:
  let e = p.passthru.nixgen.unstamped or p; in {
  drv = p.drvPath;
  configure =
    if system == "aarch64-darwin" && e ? passthru.nixgen.opsName then e.configurePhase else "";
}) packages) ps"""


@pytest.mark.parametrize("example", ["relu-mixed", "relu-rust"])
def test_every_systems_packages_evaluate_and_darwin_links_without_gnu_ld_flags(
    tmp_path: Path, example: str
) -> None:
    from .nixtools import flake_eval

    stub, project = _stub_and_project(tmp_path, REPO / "examples" / example)
    packages = flake_eval(project, "packages", stub=stub, apply=ALL_SYSTEMS_APPLY, timeout=600)
    assert {"x86_64-linux", "aarch64-linux", "aarch64-darwin"} <= set(packages)
    darwin = packages["aarch64-darwin"]
    links = [v["configure"] for v in darwin.values() if v["configure"]]
    assert links, f"no aarch64-darwin extension in {sorted(darwin)}"
    for configure in links:
        [link] = [line for line in configure.splitlines() if ".abi3.so" in line and "cmd =" in line]
        assert not [flag for flag in GNU_LD_ONLY if flag in link], link
        assert "-bundle" in link and "-Wl,-undefined,dynamic_lookup" in link, link
        assert "-fno-gnu-unique" not in configure
    for system, named in packages.items():
        for name, value in named.items():
            assert value["drv"].endswith(".drv"), (system, name)
