"""The extension's ABI check (nix/support/abi_check.py and its setup hook).

The checker reads `readelf` output of real shared objects compiled here with the host g++:
it must reject a symbol version newer than the policy (naming the symbol), a library the
policy does not allow, and pass what keeps to it. The build test shows the hook failing a
real nixgen extension build when the toolchain's policy is lowered below what the host
compiler produces.
"""

from __future__ import annotations

import importlib.util
import json
import platform
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from .conftest import EXAMPLES
from .nixtools import NixError, have_nix, kernel_builder, make_stub, nix_build, nix_env

ROOT = Path(__file__).resolve().parent.parent
CHECKER = ROOT / "nix" / "support" / "abi_check.py"
POLICIES = json.loads((ROOT / "nixgen" / "data" / "abi-policies.json").read_text())

needs_gxx = pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("readelf") is None,
    reason="needs g++ and readelf",
)


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("abi_check", CHECKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


abi_check = _checker()


def manylinux(**changes: object) -> dict:
    policy = {"name": "manylinux_2_28", **POLICIES["manylinux_2_28"]}
    policy["libraries"] = [*policy["libraries"], "libtorch*.so*", "libc10*.so*"]
    policy.update(changes)
    return policy


def compile_so(tmp_path: Path, name: str, source: str, *extra: str) -> Path:
    src = tmp_path / f"{name}.cpp"
    src.write_text(textwrap.dedent(source))
    out = tmp_path / f"{name}.so"
    subprocess.run(
        ["g++", "-O2", "-shared", "-fPIC", str(src), "-o", str(out), *extra],
        check=True,
        capture_output=True,
    )
    return out


#: Plain C: memcpy/strlen from glibc's oldest versions only.
PLAIN_C = """
    #include <string.h>
    extern "C" size_t plain(const char *s, char *d) { memcpy(d, s, 4); return strlen(s); }
"""
#: `__libc_single_threaded` (GLIBC_2.32, libstdc++'s shared_ptr since GCC 11) and
#: std::string (GLIBCXX_3.4.21).
TOO_NEW = """
    #include <memory>
    #include <string>
    std::shared_ptr<int> keep;
    extern "C" int f(const char *s) {
        std::string x(s);
        keep = std::make_shared<int>(3);
        return x.size() + *keep;
    }
"""


@needs_gxx
def test_the_too_new_glibc_symbol_is_rejected_and_named(tmp_path: Path) -> None:
    so = compile_so(tmp_path, "bad", TOO_NEW)
    problems = abi_check.check_file(manylinux(), so)
    assert any(
        "`__libc_single_threaded`" in p and "GLIBC_2.32" in p and "GLIBC 2.28" in p
        for p in problems
    ), problems
    # std::string is GLIBCXX_3.4.21 <= 3.4.24: not a problem.
    assert not any("GLIBCXX" in p for p in problems), problems


@needs_gxx
def test_a_lowered_policy_bites_on_libstdcxx_and_cxxabi(tmp_path: Path) -> None:
    so = compile_so(tmp_path, "cxx", TOO_NEW)
    lowered = manylinux(
        maxVersions={"GLIBC": "2.40", "GLIBCXX": "3.4.20", "CXXABI": "1.3.8", "GCC": "3.0"}
    )
    problems = abi_check.check_file(lowered, so)
    assert any("GLIBCXX_3.4.21" in p and "GLIBCXX 3.4.20" in p for p in problems), problems
    assert any("CXXABI_1.3.9" in p and "`_ZdlPvm`" in p for p in problems), problems


@needs_gxx
def test_plain_code_keeps_to_manylinux_2_28(tmp_path: Path) -> None:
    so = compile_so(tmp_path, "plain", PLAIN_C)
    assert abi_check.check_file(manylinux(), so) == []


@needs_gxx
def test_a_library_outside_the_policy_is_rejected_torch_is_allowed(tmp_path: Path) -> None:
    dep = compile_so(tmp_path, "libextra", 'extern "C" int extra() { return 1; }')
    torch = tmp_path / "libtorch_cpu.so"
    shutil.copy(dep, torch)
    user = compile_so(
        tmp_path,
        "user",
        'extern "C" int extra(); extern "C" int use() { return extra(); }',
        f"-L{tmp_path}",
        "-l:libextra.so",
        "-l:libtorch_cpu.so",
        "-Wl,--no-as-needed",
    )
    problems = abi_check.check_file(manylinux(), user)
    assert any("needs library libextra.so" in p for p in problems), problems
    assert not any("libtorch_cpu" in p for p in problems), problems


@needs_gxx
def test_command_line_exit_status_and_messages(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.mkdir()
    compile_so(good, "_ops.abi3", PLAIN_C)
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(manylinux()))
    ok = subprocess.run(
        [sys.executable, str(CHECKER), "--policy", str(policy), str(good)],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert "_ops.abi3.so: keeps to manylinux_2_28" in ok.stdout
    compile_so(good, "_bad.abi3", TOO_NEW)
    bad = subprocess.run(
        [sys.executable, str(CHECKER), "--policy", str(policy), str(good)],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1
    assert "_bad.abi3.so: symbol `__libc_single_threaded` needs GLIBC_2.32" in bad.stderr
    assert "nixgen ABI check failed" in bad.stderr


def test_readelf_version_needs_are_parsed() -> None:
    text = textwrap.dedent(
        """\
        Version needs section '.gnu.version_r' contains 2 entries:
         Addr: 0x0000000000000d98  Offset: 0x00000d98  Link: 4 (.dynstr)
          000000: Version: 1  File: libstdc++.so.6  Cnt: 1
          0x0010:   Name: GLIBCXX_3.4.21  Flags: none  Version: 3
          0x0020: Version: 1  File: libc.so.6  Cnt: 1
          0x0030:   Name: GLIBC_2.34  Flags: none  Version: 2
        """
    )
    assert abi_check.version_needs(text) == {
        "GLIBCXX_3.4.21": "libstdc++.so.6",
        "GLIBC_2.34": "libc.so.6",
    }


# ------------------------------------------------------------------- in a real build


@pytest.mark.build
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
def test_the_extension_build_fails_when_the_toolchain_policy_is_lowered(tmp_path: Path) -> None:
    """The hook is part of the extension derivation: lower the toolchain's policy below
    what the host compiler emits and `nix build` fails, naming the symbol version."""
    stub = make_stub(tmp_path)
    root = tmp_path / "relu-cpu"
    shutil.copytree(EXAMPLES / "relu-cpu", root)
    system = f"{platform.machine()}-linux"
    expr = f"""
      let
        p = import ./nix;
        lowered = final: prev: {{
          manylinux_2_28 = prev.manylinux_2_28 // {{
            abiPolicy = prev.manylinux_2_28.abiPolicy // {{
              name = "a lowered policy";
              maxVersions = {{ GLIBC = "2.2.5"; GLIBCXX = "3.4"; CXXABI = "1.3"; GCC = "3.0"; }};
            }};
          }};
        }};
        v = builtins.head (builtins.filter (v: v.backend == "cpu") (p.variants "{system}"));
      in
      p.variantPackage {{
        nixpkgs = {stub};
        kernel-builder = {kernel_builder(stub)};
        system = "{system}";
        overlays = [ lowered ];
      }} v
    """
    with pytest.raises(NixError) as info:
        nix_build(expr, cwd=root)
    log = info.value.stderr
    if "nixgen ABI check" not in log:  # Nix 2.8 prints only the log's tail
        drv = log.split("builder for '")[1].split("'")[0]
        log = subprocess.run(
            ["nix", "log", drv], capture_output=True, text=True, env=nix_env()
        ).stdout
    assert "against a lowered policy" in log
    assert "allowed by a lowered policy" in log
    assert "nixgen ABI check failed" in log
