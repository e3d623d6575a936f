"""The extension's ABI check: the toolchain's `kernel-builder check-abi`, then nixgen's addition.

The toolchain's check is the stand-in's `kernel-builder` (tests/kernel-builder/nix-builder/
pkgs/kernel-builder, over the PyPI `kernel-abi-check` package the real program's library is
published as); nixgen's addition is nix/support/abi_check.py (the libraries an extension may
need, and undefined unversioned symbols of a newer glibc). Each check is shown failing a
real object built here for the reason it names (a too-new glibc symbol version, a symbol
outside Python's limited API or newer than 3.9, a torch symbol outside the stable ABI or
newer than the targeted version, a Mach-O object needing a newer macOS, an unversioned
glibc 2.32/2.38 symbol, a library outside the allow-list) and passing what keeps to it. The
build tests show the hook in a real nixgen extension build through the stand-ins: it passes
with the stand-in's policy and fails, naming `__libc_single_threaded`, with the real one.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

from nixgen.cmdline.cli import main

from .conftest import EXAMPLES, copy_out
from .nixtools import NixError, have_nix, kernel_builder, make_stub, nix_build, nix_env

pytestmark = pytest.mark.slow  # starts processes (tests/tiers.py)

ROOT = Path(__file__).resolve().parent.parent
CHECKER = ROOT / "nix" / "support" / "abi_check.py"
FIXTURES = ROOT / "tests" / "fixtures"
TOOLCHAIN = ROOT / "tests" / "kernel-builder" / "nix-builder" / "pkgs" / "kernel-builder"
POLICIES = json.loads((ROOT / "nixgen" / "data" / "abi-policies.json").read_text())

needs_gxx = pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("readelf") is None,
    reason="needs g++ and readelf",
)
needs_abi_check = pytest.mark.skipif(
    importlib.util.find_spec("kernel_abi_check") is None,
    reason="needs the PyPI kernel-abi-check package (scripts/setup.sh installs it)",
)


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


abi_check = _load("abi_check", CHECKER)


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


def variant_dir(tmp_path: Path, name: str = "torch213-cxx11-cpu-x86_64-linux") -> Path:
    """A build variant as the toolchain's check finds one: a directory with metadata.json."""
    variant = tmp_path / "build" / name
    variant.mkdir(parents=True)
    (variant / "metadata.json").write_text("{}\n")
    return variant


def check_abi(kernel_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`kernel-builder check-abi ARGS KERNEL_DIR`, the toolchain stand-in's program."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("KERNEL_BUILDER_")}
    return subprocess.run(
        [sys.executable, str(TOOLCHAIN / "kernel_builder.py"), "check-abi", *args, str(kernel_dir)],
        capture_output=True,
        text=True,
        env={**environ, **env},
    )


#: Plain C: memcpy/strlen from glibc's oldest versions only, nothing of Python or torch.
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
#: A reference to glibc's `__libc_single_threaded` with no C library at the link, so it
#: stays undefined and UNVERSIONED (what compiling against glibc >= 2.32 headers and
#: linking against glibc 2.28 leaves; nvcc's host compiler did it, issue 22).
UNVERSIONED = """
    extern "C" char __libc_single_threaded;
    extern "C" int single() { return __libc_single_threaded; }
"""

# ------------------------------------------------- the toolchain's check, by name


@needs_gxx
@needs_abi_check
def test_manylinux_rejects_the_too_new_glibc_symbol_by_name(tmp_path: Path) -> None:
    compile_so(variant_dir(tmp_path), "_ops.abi3", TOO_NEW)
    done = check_abi(tmp_path)  # the real program's default policy, manylinux_2_28
    assert done.returncode == 1, done.stderr
    assert "Symbols incompatible with `manylinux_2_28` found" in done.stderr
    assert "__libc_single_threaded_GLIBC: 2.32" in done.stderr
    assert "ABI compatibility issues found" in done.stderr
    # std::string is GLIBCXX_3.4.21 <= 3.4.24: not named.
    assert "GLIBCXX" not in done.stderr
    # The host's own glibc policy accepts it (the stand-in package's default, default.nix).
    host = platform.libc_ver()[1]
    if host and tuple(map(int, host.split("."))) >= (2, 32):
        ok = check_abi(tmp_path, "--manylinux", f"manylinux_{host.replace('.', '_')}")
        assert ok.returncode == 0, ok.stderr
        assert "No compatibility issues found" in ok.stderr


@needs_gxx
@needs_abi_check
def test_python_abi_rejects_non_abi3_and_too_new_symbols_by_name(tmp_path: Path) -> None:
    compile_so(
        variant_dir(tmp_path),
        "_ops.abi3",
        """
        extern "C" const char *PyUnicode_AsUTF8(void *);  // not in 3.9's limited API
        extern "C" int PyModule_AddType(void *, void *);  // limited API since 3.10
        extern "C" int use(void *m, void *t) {
            return PyUnicode_AsUTF8(t) != 0 ? PyModule_AddType(m, t) : 0;
        }
        """,
    )
    done = check_abi(tmp_path, "--manylinux", "manylinux_2_28")
    assert done.returncode == 1, done.stderr
    assert "Non-ABI3 symbols found" in done.stderr and "PyUnicode_AsUTF8" in done.stderr
    assert "Symbols >= Python ABI 3.9 found" in done.stderr
    assert "PyModule_AddType: 3.10" in done.stderr
    # With --python-abi 3.10 only the non-abi3 symbol is left.
    newer = check_abi(tmp_path, "--python-abi", "3.10")
    assert "PyModule_AddType" not in newer.stderr and "PyUnicode_AsUTF8" in newer.stderr


def _torch_include() -> Path | None:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    include = Path(next(iter(spec.submodule_search_locations))) / "include"
    return include if (include / "torch" / "csrc" / "stable" / "c" / "shim.h").is_file() else None


@needs_gxx
@needs_abi_check
def test_torch_stable_abi_rejects_unstable_and_too_new_symbols_by_name(tmp_path: Path) -> None:
    include = _torch_include()
    if include is None:
        pytest.skip("needs torch's stable ABI headers")
    compile_so(
        variant_dir(tmp_path),
        "_ops.abi3",
        """
        namespace c10 { void *unstable_call(int); }          // c10:: is not stable ABI
        namespace torch { namespace stable { void *ok(int); } }
        extern "C" int aoti_torch_aten_full(const long *, long, double, int *, int *, int *,
                                            int, int *, void **);  // torch 2.10's shim
        extern "C" void *use(int x) {
            void *out = nullptr;
            aoti_torch_aten_full(nullptr, 0, 1.0, nullptr, nullptr, nullptr, 0, nullptr, &out);
            return x ? c10::unstable_call(x) : torch::stable::ok(x);
        }
        """,
    )
    env = {"KERNEL_BUILDER_TORCH_INCLUDE": str(include)}
    done = check_abi(tmp_path, "--torch-stable-abi", "2.9", **env)
    assert done.returncode == 1, done.stderr
    assert "Non-stable Torch ABI symbols found (incompatible with Torch stable ABI 2.9)" in (
        done.stderr
    )
    assert "aoti_torch_aten_full: 2.10" in done.stderr
    assert "c10::unstable_call(int)" in done.stderr
    assert "torch::stable::ok" not in done.stderr
    # 2.10 has the shim function: only the c10 symbol is left.
    newer = check_abi(tmp_path, "--torch-stable-abi", "2.10", **env)
    assert newer.returncode == 1
    assert "aoti_torch_aten_full" not in newer.stderr and "c10::unstable_call" in newer.stderr
    # Without --torch-stable-abi nothing of torch is checked.
    assert check_abi(tmp_path, **env).returncode == 0


def _clang_with_ld64_lld() -> str | None:
    """A clang whose LLVM has ld64.lld (Debian: clang-N, lld-N), for Mach-O objects."""
    for name in ("clang", "clang-19", "clang-16", "clang-15", "clang-14"):
        clang = shutil.which(name)
        if clang and (Path(os.path.realpath(clang)).parent / "ld64.lld").exists():
            return clang
    return None


@needs_abi_check
def test_macos_rejects_a_too_new_minimum_version(tmp_path: Path) -> None:
    clang = _clang_with_ld64_lld()
    if clang is None:
        pytest.skip("needs clang and its ld64.lld (Debian clang, lld)")
    src = tmp_path / "ops.c"
    src.write_text("int ops_add(int x) { return x + 1; }\n")
    variant = variant_dir(tmp_path, "torch213-metal-aarch64-darwin")
    for target, name in (("15.0", "_ops_old.abi3.so"), ("26.0", "_ops_new.abi3.so")):
        subprocess.run(
            [
                clang,
                f"--target=arm64-apple-macos{target}",
                "-fuse-ld=lld",
                "-shared",
                "-nostdlib",
                "-Wl,-undefined,dynamic_lookup",
                str(src),
                "-o",
                str(variant / name),
            ],
            check=True,
            capture_output=True,
        )
    done = check_abi(tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Checking for compatibility with macOS 15.0" in done.stderr
    assert "shared library requires macOS version 26, which is newer than 15.0" in done.stderr
    assert done.stderr.count("requires macOS version") == 1  # the 15.0 object passes
    assert check_abi(tmp_path, "--macos", "26.0").returncode == 0


@needs_gxx
@needs_abi_check
def test_variants_are_found_as_the_real_program_finds_them(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    compile_so(tmp_path / "lib", "_ops.abi3", TOO_NEW)
    done = check_abi(tmp_path)
    assert done.returncode == 1
    assert "No build variants found in" in done.stderr and "/result`" in done.stderr
    # A directory holding a link to the variant (what nixgen's hook passes) is followed.
    real = tmp_path / "store-path"
    real.mkdir()
    (real / "metadata.json").write_text("{}\n")
    compile_so(real, "_ops.abi3", PLAIN_C)
    holder = tmp_path / "holder"
    holder.mkdir()
    (holder / "relu-torch-ext").symlink_to(real)
    ok = check_abi(holder)
    assert ok.returncode == 0, ok.stderr
    assert f"{holder.resolve()}/relu-torch-ext/_ops.abi3.so" in ok.stderr


# ----------------------------------------------------------------- nixgen's addition


@needs_gxx
def test_an_unversioned_glibc_symbol_newer_than_the_policy_is_rejected(tmp_path: Path) -> None:
    so = compile_so(tmp_path, "unversioned", UNVERSIONED, "-nostdlib")
    assert (
        "__libc_single_threaded@"
        not in subprocess.run(
            ["readelf", "-W", "--dyn-syms", str(so)], capture_output=True, text=True
        ).stdout
    )
    glibc = abi_check.running_glibc()
    assert any(p.name == "libc.so.6" for p in glibc), glibc
    introduced = abi_check.glibc_introduced(glibc)
    if introduced.get("__libc_single_threaded") is None:
        pytest.skip("the host glibc is older than 2.32")
    problems = abi_check.check_file(manylinux(), so, introduced)
    assert problems == [
        "symbol `__libc_single_threaded` is undefined and unversioned, and glibc defines it "
        "only from GLIBC_2.32, newer than glibc 2.28 of manylinux_2_28 (compiled against "
        "newer glibc headers than it was linked with)"
    ]
    # A policy whose glibc has it accepts it.
    assert abi_check.check_file(manylinux(glibc="2.32"), so, introduced) == []


@needs_gxx
def test_isoc23_strtol_from_a_newer_glibc_is_rejected(tmp_path: Path) -> None:
    """glibc 2.38's C23 `strtol` (what <stdlib.h> of glibc >= 2.38 calls in C++ and C2x),
    checked against a glibc that defines it: a library with glibc's version nodes."""
    script = tmp_path / "glibc.map"
    script.write_text(
        "GLIBC_2.2.5 { global: strtol; local: *; };\n"
        "GLIBC_2.38 { global: __isoc23_strtol; } GLIBC_2.2.5;\n"
    )
    libc = compile_so(
        tmp_path,
        "libc",
        'extern "C" long strtol(const char *, char **, int) { return 0; }\n'
        'extern "C" long __isoc23_strtol(const char *, char **, int) { return 0; }\n',
        f"-Wl,--version-script={script}",
        "-nostdlib",
        "-Wl,-soname,libc.so.6",
    )
    user = compile_so(
        tmp_path,
        "user",
        'extern "C" long __isoc23_strtol(const char *, char **, int);\n'
        'extern "C" long strtol(const char *, char **, int);\n'
        'extern "C" long parse(const char *s) {\n'
        "    return __isoc23_strtol(s, 0, 10) + strtol(s, 0, 10);\n"
        "}\n",
        "-nostdlib",
    )
    introduced = abi_check.glibc_introduced([libc])
    assert introduced == {"strtol": (2, 2, 5), "__isoc23_strtol": (2, 38)}
    problems = abi_check.check_file(manylinux(), user, introduced)
    assert len(problems) == 1 and "`__isoc23_strtol`" in problems[0], problems
    assert "GLIBC_2.38, newer than glibc 2.28" in problems[0]


@needs_gxx
def test_versioned_and_foreign_symbols_are_not_the_additions_business(tmp_path: Path) -> None:
    """A versioned too-new symbol is the toolchain's check's; Python's and torch's symbols
    are unversioned and no glibc symbol."""
    so = compile_so(
        tmp_path,
        "mixed",
        TOO_NEW
        + 'extern "C" int PyLong_AsLong(void *);\n'
        + 'extern "C" int g(void *o) { return PyLong_AsLong(o); }\n',
    )
    introduced = abi_check.glibc_introduced(abi_check.running_glibc())
    assert abi_check.check_file(manylinux(), so, introduced) == []


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
    problems = abi_check.check_file(manylinux(), user, {})
    assert any("needs library libextra.so" in p for p in problems), problems
    assert not any("libtorch_cpu" in p for p in problems), problems


@needs_gxx
def test_the_additions_command_line_exit_status_and_messages(tmp_path: Path) -> None:
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
    assert "_ops.abi3.so: libraries and unversioned symbols keep to manylinux_2_28" in ok.stdout
    compile_so(good, "_bad.abi3", UNVERSIONED, "-nostdlib")
    bad = subprocess.run(
        [sys.executable, str(CHECKER), "--policy", str(policy), str(good)],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1
    assert "_bad.abi3.so: symbol `__libc_single_threaded` is undefined and unversioned" in (
        bad.stderr
    )
    assert "nixgen ABI check failed" in bad.stderr
    missing = subprocess.run(
        [
            sys.executable,
            str(CHECKER),
            "--policy",
            str(policy),
            "--glibc",
            str(good / "none.so"),
            str(good),
        ],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 1 and "cannot read glibc" in missing.stderr


def test_readelf_dynamic_symbols_are_parsed() -> None:
    text = textwrap.dedent(
        """\
        Symbol table '.dynsym' contains 4 entries:
           Num:    Value          Size Type    Bind   Vis      Ndx Name
             0: 0000000000000000     0 NOTYPE  LOCAL  DEFAULT  UND
             1: 0000000000000000     0 OBJECT  GLOBAL DEFAULT  UND __libc_single_threaded
             2: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND strlen@GLIBC_2.2.5 (2)
             3: 00000000000a0b10    42 FUNC    GLOBAL DEFAULT   15 memcpy@@GLIBC_2.14
        """
    )
    assert abi_check.dynamic_symbols(text) == [
        ("__libc_single_threaded", "", True),
        ("strlen", "GLIBC_2.2.5", True),
        ("memcpy", "GLIBC_2.14", False),
    ]
    assert abi_check.unversioned_undefined(text) == ["__libc_single_threaded"]


# ------------------------------------------------------------------- in a real build

SYSTEM = f"{platform.machine()}-linux"


def _variant_expr(stub: Path, overlay: str) -> str:
    return f"""
      let
        p = import ./nix;
        v = builtins.head (builtins.filter (v: v.backend == "cpu") (p.variants "{SYSTEM}"));
      in
      p.variantPackage {{
        nixpkgs = {stub};
        kernel-builder = {kernel_builder(stub)};
        system = "{SYSTEM}";
        overlays = [ ({overlay}) ];
      }} v
    """


def _rendered(source: Path, target: Path) -> Path:
    """A copy of a project rendered with this checkout's nixgen (and its Nix library)."""
    copy_out(source, target)
    result = CliRunner().invoke(main, ["render", str(target)])
    assert result.exit_code == 0, result.output
    return target


def _log(out: Path | None, error: NixError | None) -> str:
    """The build log of a built output or of the failed derivation."""
    if error is not None:
        log = error.stderr
        if "nixgen: checking the ABI" in log:
            return log
        target = log.split("builder for '")[1].split("'")[0]  # Nix 2.8 prints only the tail
    else:
        assert out is not None
        target = str(out)
    return subprocess.run(
        ["nix", "log", target], capture_output=True, text=True, env=nix_env()
    ).stdout


@pytest.mark.build
@needs_abi_check
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
def test_the_extension_build_runs_the_toolchains_check_and_nixgens_addition(
    tmp_path: Path,
) -> None:
    """relu-cpu through the stand-ins: the toolchain's check (with the stand-in's policy)
    and nixgen's addition both run at installCheck and pass; with the real toolchain's
    policy, manylinux_2_28, the build fails naming `__libc_single_threaded`, which the
    host compiler puts in every extension."""
    stub = make_stub(tmp_path)
    root = _rendered(EXAMPLES / "relu-cpu", tmp_path / "relu-cpu")
    out = nix_build(_variant_expr(stub, "final: prev: { }"), cwd=root)
    log = _log(out, None)
    host = platform.libc_ver()[1].replace(".", "_")
    assert f"Checking for compatibility with manylinux_{host} and Python ABI version 3.9" in log
    assert "No compatibility issues found" in log
    assert "libraries and unversioned symbols keep to manylinux_2_28" in log

    real_policy = """final: prev: {
      kernel-builder = prev.kernel-builder.overrideAttrs (old: {
        env = old.env // { manylinux = "manylinux_2_28"; };
      });
    }"""
    with pytest.raises(NixError) as info:
        nix_build(_variant_expr(stub, real_policy), cwd=root)
    log = _log(None, info.value)
    assert "Symbols incompatible with `manylinux_2_28` found" in log
    assert "__libc_single_threaded_GLIBC: 2.32" in log
    assert "nixgen: the ABI check failed" in log


@pytest.mark.build
@needs_abi_check
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
def test_a_stable_abi_variant_is_checked_against_the_torch_stable_abi(tmp_path: Path) -> None:
    """The stable-ABI fixture (`[torch.stable-abi] cpu = "2.11"`): its extension derivation
    carries `torchStableAbiVersion`, so the toolchain's check runs with
    `--torch-stable-abi=2.11`, as the anchor's hook does, and the kernel, written against
    torch/csrc/stable only, passes it."""
    stub = make_stub(tmp_path)
    root = _rendered(FIXTURES / "stable-abi", tmp_path / "stable-abi")
    out = nix_build(_variant_expr(stub, "final: prev: { }"), cwd=root)
    log = _log(out, None)
    assert "kernel-builder check-abi --torch-stable-abi=2.11" in log
    assert "Checking for compatibility with Torch stable ABI version 2.11" in log
    assert "Non-stable Torch ABI symbols found" not in log


# ------------------------------------------------------------------------- the hook

HOOK = ROOT / "nix" / "support" / "abi-check-hook.sh"


def _run_hook(tmp_path: Path, env: dict[str, str], *, addition: bool) -> tuple[int, str, str]:
    """Source the hook (substituted as makeSetupHook would) in bash and run its function,
    with a `kernel-builder` that records its arguments and what its directory holds."""
    record = tmp_path / "record"
    fake = tmp_path / "kernel-builder"
    fake.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$@" > {record}\n'
        'for d in "$@"; do :; done\n'
        f'for e in "$d"/*; do echo "${{e##*/}} -> $(readlink "$e")"; done >> {record}\n'
        'exit "${FAKE_STATUS:-0}"\n'
    )
    fake.chmod(0o755)
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(manylinux()))
    text = HOOK.read_text()
    for key, value in {
        "kernelBuilder": str(fake),
        "python": sys.executable if addition else "",
        "checker": str(CHECKER) if addition else "",
        "policy": str(policy) if addition else "",
    }.items():
        text = text.replace(f"@{key}@", value)
    script = tmp_path / "hook.sh"
    script.write_text(text)
    done = subprocess.run(
        ["bash", "-euc", f'postInstallCheckHooks=(); . {script}; "${{postInstallCheckHooks[0]}}"'],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], "NIX_BUILD_TOP": str(tmp_path), **env},
    )
    recorded = record.read_text() if record.exists() else ""
    return done.returncode, done.stdout + done.stderr, recorded


@needs_gxx
def test_the_hook_runs_check_abi_as_the_toolchains_hook_does(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    compile_so(out, "_ops.abi3", PLAIN_C)
    env = {"out": str(out), "name": "relu-torch-ext-1", "doAbiCheck": "1"}
    status, log, recorded = _run_hook(
        tmp_path, {**env, "torchStableAbiVersion": "2.11"}, addition=True
    )
    assert status == 0, log
    # `check-abi --torch-stable-abi=V DIR`, DIR holding `<name>` -> $out.
    lines = recorded.splitlines()
    assert lines[:2] == ["check-abi", "--torch-stable-abi=2.11"], recorded
    assert lines[2].endswith("/.nixgen-abi-check"), recorded
    assert lines[3] == f"relu-torch-ext-1 -> {out}", recorded
    assert "libraries and unversioned symbols keep to manylinux_2_28" in log
    assert not (tmp_path / ".nixgen-abi-check").exists()
    # No stable ABI: plain `check-abi DIR`.
    _, _, recorded = _run_hook(tmp_path, env, addition=False)
    assert recorded.splitlines()[0] == "check-abi" and "--torch" not in recorded
    # The toolchain's check failing, or nixgen's addition, fails the hook; both report.
    status, log, _ = _run_hook(tmp_path, {**env, "FAKE_STATUS": "1"}, addition=True)
    assert status == 1 and "the ABI check failed" in log and "keep to manylinux_2_28" in log
    compile_so(out, "_bad.abi3", UNVERSIONED, "-nostdlib")
    status, log, _ = _run_hook(tmp_path, env, addition=True)
    assert status == 1 and "`__libc_single_threaded` is undefined and unversioned" in log
    # An empty doAbiCheck (as a derivation without it) skips both.
    status, log, recorded = _run_hook(tmp_path, {**env, "doAbiCheck": ""}, addition=True)
    assert status == 0 and "skipping the ABI check" in log


# ----------------------------------------------------------- `nixgen check-abi DIR`


def _verb_variant(tmp_path: Path, name: str, backend: str) -> Path:
    variant = tmp_path / "build" / name
    variant.mkdir(parents=True)
    (variant / "metadata.json").write_text(json.dumps({"backend": {"type": backend}}))
    return variant


@needs_gxx
@needs_abi_check
def test_check_abi_runs_both_checks_on_built_variants(tmp_path: Path) -> None:
    """kernel-builder's check (its library) and nixgen's addition (the build's own
    program), on a directory of variants: a clean object passes, a too-new glibc symbol and
    a library outside the policy are named; the backend's runtime library is allowed for
    that backend only."""
    runtime = compile_so(
        tmp_path,
        "libcudart",
        'extern "C" int cudart() { return 1; }',
        "-Wl,-soname,libcudart.so.13",
    )
    uses_runtime = 'extern "C" int cudart(); extern "C" int use() { return cudart(); }'
    link = (f"-L{tmp_path}", f"-l:{runtime.name}", "-Wl,--no-as-needed")
    compile_so(
        _verb_variant(tmp_path, "torch213-cxx11-cpu-x86_64-linux", "cpu"), "_a.abi3", PLAIN_C
    )
    compile_so(
        _verb_variant(tmp_path, "torch213-cxx11-cu130-x86_64-linux", "cuda"),
        "_b.abi3",
        uses_runtime,
        *link,
    )
    runner = CliRunner()
    done = runner.invoke(main, ["check-abi", str(tmp_path)])
    assert done.exit_code == 0, done.output
    assert "torch213-cxx11-cpu-x86_64-linux (cpu): ok" in done.stdout
    assert "torch213-cxx11-cu130-x86_64-linux (cuda): ok" in done.stdout
    assert "checked 2 shared object(s) of 2 variant(s) against manylinux_2_28: 0 problem(s)" in (
        done.stderr
    )
    # The CUDA runtime in a CPU variant, and a too-new glibc symbol: both named.
    bad = _verb_variant(tmp_path / "other", "torch213-cxx11-cpu-x86_64-linux", "cpu")
    compile_so(bad, "_c.abi3", uses_runtime, *link)
    compile_so(bad, "_d.abi3", TOO_NEW)
    failed = runner.invoke(main, ["check-abi", str(bad)])  # a variant directory itself
    assert failed.exit_code == 1, failed.output
    assert "(cpu): FAILED" in failed.stdout
    assert "_c.abi3.so: needs library libcudart.so.13, which manylinux_2_28 does not allow" in (
        failed.stdout
    )
    assert "_d.abi3.so: symbol `__libc_single_threaded` needs GLIBC 2.32, newer than " in (
        failed.stdout
    )
    as_json = json.loads(runner.invoke(main, ["check-abi", str(bad), "--json"]).stdout)
    assert as_json["ok"] is False and as_json["result"][0]["backend"] == "cpu"


@needs_gxx
@needs_abi_check
def test_check_abi_holds_a_stable_abi_variant_to_torch_stable(tmp_path: Path) -> None:
    source = """
        namespace c10 { void *unstable_call(int); }
        namespace at { struct T { int size() const; }; }
        namespace torch { namespace stable { void *ok(int); } }
        extern "C" void *use(int x, const at::T &t) {
            return x ? c10::unstable_call(x + t.size()) : torch::stable::ok(x);
        }
    """
    compile_so(
        _verb_variant(tmp_path, "torch-stable-abi210-cpu-x86_64-linux", "cpu"), "_s.abi3", source
    )
    done = CliRunner().invoke(main, ["check-abi", str(tmp_path)])
    assert done.exit_code == 1, done.output
    assert "(cpu, torch stable ABI 2.10): FAILED" in done.stdout
    assert "symbol `_ZN3c1013unstable_callEi` is torch's C++ API" in done.stdout
    assert "symbol `_ZNK2at1T4sizeEv` is torch's C++ API" in done.stdout
    assert "stable2ok" not in done.stdout
    # The same object in an ordinary variant is held to no stable ABI.
    plain = tmp_path / "plain"
    compile_so(_verb_variant(plain, "torch213-cxx11-cpu-x86_64-linux", "cpu"), "_s.abi3", source)
    assert CliRunner().invoke(main, ["check-abi", str(plain)]).exit_code == 0


def test_check_abi_says_where_it_looked(tmp_path: Path) -> None:
    done = CliRunner().invoke(main, ["check-abi", str(tmp_path)])
    assert done.exit_code == 2
    assert f"no build variants in {tmp_path}/result, {tmp_path}/build or {tmp_path}" in done.stderr


@needs_gxx
def test_undefined_symbols_are_read_from_the_elf_dynamic_table(tmp_path: Path) -> None:
    from nixgen.app import abicheck

    lib = compile_so(tmp_path, "u", 'extern "C" int ext(); extern "C" int f() { return ext(); }')
    names = abicheck.undefined_symbols(lib.read_bytes())
    assert "ext" in names and "f" not in names
    assert abicheck.undefined_symbols(b"not an elf") == []
    assert abicheck.undefined_symbols(lib.read_bytes()[:200]) == []  # cut short: nothing


def test_check_abi_reads_the_policy_the_build_uses() -> None:
    """The verb's policy for a backend is the one nix/toolchains.nix gives the build
    (both read data/abi-policies.json; nix/tests/project.nix holds the Nix side)."""
    from nixgen.app import abicheck

    cuda = abicheck.policy("manylinux_2_28", "cuda")
    assert cuda is not None
    assert cuda["libraries"][-5:] == [
        "libtorch*.so*",
        "libc10*.so*",
        "libtvm_ffi.so*",
        "libgomp.so.1",
        "libcudart.so*",
    ]
    assert abicheck.policy("manylinux_2_99", "cpu") is None
    assert abicheck.policy("extension", "cpu") is None
