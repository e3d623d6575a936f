# ruff: noqa: E501 - the table of cases keeps one row per line
"""Hostile and broken build.toml files, one table row each, through the real CLI.

Every row is an input (build.toml text or bytes, sometimes with a special setup of the
project tree), the exit code and what the message must say: where (``build.toml:LINE:COL``),
the key path, and the words that tell the user what was expected or the closest valid
choice. Each row runs through ``nixgen validate`` and ``nixgen render`` and must:

* exit with the expected code (2 for input the user must fix);
* print the located message, with no traceback and no "internal error";
* keep every error on one line (a value can neither forge output lines nor send escape
  sequences to the terminal);
* write nothing: the project tree (names, bytes, link targets) is identical afterwards.

A handful of rows also run through ``python -m nixgen`` in a subprocess. The table's
unreadable row is simulated (``os.open`` raises EACCES); `test_unreadable_build_toml_for_real`
makes the kernel refuse the read (as root, under ``setpriv`` without the capabilities that
bypass file modes).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner

from nixgen.cmdline.cli import main

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nixgen's cache (compiled templates) is a private one (subprocesses inherit it)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


BASE = """\
[general]
name = "relu"
version = 1
edition = 6
license = "Apache-2.0"
backends = ["cpu", "cuda", "rocm", "xpu", "metal"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.relu]
language = "cpp-cpu"
depends = ["torch"]
src = ["relu/relu.cpp"]
"""
# Line 15 onwards is whatever a row appends.

#: The project tree every row starts from (besides build.toml): every path BASE and the
#: appended kernels list exists, so a row fails only for the reason it is about.
TREE = (
    "torch-ext/torch_binding.cpp",
    "torch-ext/relu/__init__.py",
    "tvm-ffi-ext/relu/__init__.py",
    "relu/relu.cpp",
    "relu_cuda/relu.cu",
    "relu_rs/Cargo.toml",
    "relu_rs/Cargo.lock",
    "relu_rs/src/lib.rs",
    "relu_rs/rust-toolchain.toml",
    "relu_rs/device/Cargo.toml",
    "include/relu.h",
)

CUDA = '\n[kernel.relu_cuda]\nlanguage = "cpp-cuda"\nsrc = ["relu_cuda/relu.cu"]\n'  # lines 16-18
#: What a file of TREE holds: a comment naming it, or (a crate's files) what Cargo reads.
CONTENT = {
    "relu_rs/Cargo.toml": '[package]\nname = "relu_rs"\n',
    "relu_rs/device/Cargo.toml": '[package]\nname = "device"\n',
    "relu_rs/Cargo.lock": "version = 3\n",
}
#: The crate of a Rust kernel, as the format names it.
MANIFEST = 'cargo-manifest = "relu_rs/Cargo.toml"'
RUST = (  # lines 16-19 when appended to RBASE
    '\n[kernel.relu_rs]\nlanguage = "rust-cpu"\n'
    f"{MANIFEST}\n"
    'src = ["relu_rs/Cargo.toml", "relu_rs/Cargo.lock", "relu_rs/src/lib.rs"]\n'
)


def edit(old: str, new: str, text: str = BASE) -> str:
    """`text` with the one occurrence of `old` replaced by `new`."""
    assert text.count(old) == 1, old
    return text.replace(old, new)


def add(extra: str, text: str = BASE) -> str:
    return text + extra


def kernel(body: str, name: str = "k") -> str:
    """BASE plus a kernel table: its header on line 16, `body` from line 17."""
    return add(f"\n[kernel.{name}]\n{body}")


#: BASE as a `[tvm-ffi]` project, line for line: the format holds its Rust kernels.
RBASE = edit("[torch]", "[tvm-ffi]")


def rkernel(body: str, name: str = "k") -> str:
    """RBASE plus a kernel table: its header on line 16, `body` from line 17."""
    return add(f"\n[kernel.{name}]\n{body}", RBASE)


def nixgen_toml(text: str) -> Setup:
    """A setup that writes the project's nixgen.toml."""

    def setup(root: Path, _: pytest.MonkeyPatch) -> None:
        (root / "nixgen.toml").write_text(text)

    return setup


def edition5(text: str) -> str:
    return edit("edition = 6", "edition = 5", text).replace(
        'language = "cpp-cpu"', 'backend = "cpu"'
    )


Setup = Callable[[Path, pytest.MonkeyPatch], None]


class Case(NamedTuple):
    id: str
    input: str | bytes | None  # None: no build.toml is written (a setup makes one, or not)
    where: str  # "build.toml:LINE:COL", "build.toml:LINE" or "build.toml" (no line)
    key: str  # the key path the error names ("" when it names none)
    says: tuple[str, ...]  # fragments: what was wrong, and what was expected instead
    code: int = 2
    setup: Setup | None = None
    validate_code: int | None = None  # when `nixgen validate` accepts what render rejects


def row(
    id: str,
    input: str | bytes | None,
    where: str,
    key: str,
    *says: str,
    code: int = 2,
    setup: Setup | None = None,
    validate_code: int | None = None,
) -> Case:
    return Case(id, input, where, key, says, code, setup, validate_code)


# ------------------------------------------------------------------------ special setups


def build_toml_is_a_directory(root: Path, _: pytest.MonkeyPatch) -> None:
    (root / "build.toml").mkdir()
    (root / "build.toml" / "build.toml").write_text(BASE)


def build_toml_is_a_fifo(root: Path, _: pytest.MonkeyPatch) -> None:
    os.mkfifo(root / "build.toml")


def build_toml_is_a_broken_symlink(root: Path, _: pytest.MonkeyPatch) -> None:
    os.symlink("gone/build.toml", root / "build.toml")


def build_toml_is_a_symlink_loop(root: Path, _: pytest.MonkeyPatch) -> None:
    os.symlink("build.toml", root / "build.toml")


def build_toml_is_a_device(root: Path, _: pytest.MonkeyPatch) -> None:
    os.symlink("/dev/zero", root / "build.toml")


def build_toml_unreadable_simulated(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulated: root ignores file modes, so `os.open` of build.toml raises EACCES here.
    `test_unreadable_build_toml_for_real` checks the real thing as an unprivileged user."""
    (root / "build.toml").write_text(BASE)
    real_open = os.open

    def deny(path: Any, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith("build.toml") and not os.path.isdir(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("nixgen.reading.load.os.open", deny)


def huge_file(root: Path, _: pytest.MonkeyPatch) -> None:
    (root / "build.toml").write_bytes(BASE.encode() + b"# padding\n" * (900 * 1024))


def symlink_src_to(target: str, name: str = "relu/evil.cpp") -> Setup:
    def setup(root: Path, _: pytest.MonkeyPatch) -> None:
        os.symlink(target, root / name)

    return setup


def symlink_dir_out(root: Path, _: pytest.MonkeyPatch) -> None:
    outside = root.parent / "outside"  # next to the project, not in it
    outside.mkdir()
    (outside / "x.cpp").write_text("// outside\n")
    os.symlink(outside, root / "vendor")


def relative_symlink_escape(root: Path, _: pytest.MonkeyPatch) -> None:
    os.symlink("../../../../../../../../etc/hostname", root / "relu" / "evil.cpp")


def fifo_src(root: Path, _: pytest.MonkeyPatch) -> None:
    os.mkfifo(root / "relu" / "fifo.cpp")


def no_python_package(root: Path, _: pytest.MonkeyPatch) -> None:
    (root / "torch-ext" / "relu" / "__init__.py").unlink()


def dashed_python_package(root: Path, _: pytest.MonkeyPatch) -> None:
    """The package directory named like the project, dash and all (not a module name)."""
    (root / "torch-ext" / "relu").rename(root / "torch-ext" / "attention-int8")


def remove(rel: str) -> Setup:
    def setup(root: Path, _: pytest.MonkeyPatch) -> None:
        (root / rel).unlink()

    return setup


# ------------------------------------------------------------------------------ the table

N = "\n"
HEX_FF = b"\xff"
RUST_SRC = 'src = ["relu_rs/Cargo.toml", "relu_rs/Cargo.lock", "relu_rs/src/lib.rs"]'
LONG = "a" * 65

# One row per line, so the table reads as a table.
# fmt: off
CASES: list[Case] = [
    # --- the file itself ------------------------------------------------------------
    row("missing-build-toml", None, "build.toml", "", "no such file", "needs a build.toml"),
    row("build-toml-is-a-directory", None, "build.toml", "", "is a directory", "expected a build.toml file", setup=build_toml_is_a_directory),
    row("build-toml-is-a-fifo", None, "build.toml", "", "not a regular file", "FIFO", setup=build_toml_is_a_fifo),
    row("build-toml-is-a-device", None, "build.toml", "", "not a regular file", setup=build_toml_is_a_device),
    row("build-toml-broken-symlink", None, "build.toml", "", "symbolic link to `gone/build.toml`, which does not exist", setup=build_toml_is_a_broken_symlink),
    row("build-toml-symlink-loop", None, "build.toml", "", "cannot read the file", "symbolic links", setup=build_toml_is_a_symlink_loop),
    row("build-toml-unreadable-simulated-eacces", None, "build.toml", "", "permission denied", setup=build_toml_unreadable_simulated),
    row("huge-file-over-8-mib", None, "build.toml", "", "larger than 8 MiB", setup=huge_file),
    row("empty-file", "", "build.toml", "", "missing the required `[general]` table"),
    row("comments-only", "# nothing here\n\n", "build.toml", "", "missing the required `[general]` table"),
    row("non-utf8-in-string", edit('"Apache-2.0"', '"Apache\xff"').encode("latin-1"), "build.toml:5:18", "", "not valid UTF-8 (byte 0xff)", "must be UTF-8"),
    row("non-utf8-in-comment", b"# caf\xe9\n" + BASE.encode(), "build.toml:1:6", "", "not valid UTF-8 (byte 0xe9)"),
    row("non-utf8-latin1-name", edit('"relu"', '"r\xe9lu"').encode("latin-1"), "build.toml:2:10", "", "not valid UTF-8 (byte 0xe9)"),
    row("non-utf8-truncated-sequence", BASE.encode() + b"# \xe2\x82", "build.toml:15:3", "", "not valid UTF-8 (byte 0xe2)"),
    row("utf16-file", BASE.encode("utf-16"), "build.toml:1:1", "", "not valid UTF-8 (byte 0xff)"),
    row("bom-then-bad-toml", b"\xef\xbb\xbf" + edit("[torch]", "[torch").encode(), "build.toml:8:7", "", "invalid TOML", "Expected ']'"),
    # --- malformed TOML -----------------------------------------------------------------
    row("unterminated-string", edit('"Apache-2.0"', '"Apache-2.0'), "build.toml:5:22", "", "unterminated string", "triple quotes"),
    row("missing-equals", edit("license = ", "license "), "build.toml:5:9", "", "Expected '=' after a key"),
    row("unquoted-string", edit('"Apache-2.0"', "Apache-2.0"), "build.toml:5:11", "", "Invalid value", 'strings need quotes: write `"..."`'),
    row("toml-arrays-nested-past-the-parser-limit", add("x = " + "[" * 500 + "]" * 500), "build.toml:15:405", "", "nested more than 400 levels", "no build.toml needs this"),
    row("toml-inline-tables-nested-past-the-parser-limit", add("x = " + "{a=" * 500 + "1" + "}" * 500), "build.toml:15:1205", "", "nested more than 400 levels"),
    row("toml-key-with-thousands-of-parts", add(".".join(["a"] * 5000) + " = 1\n"), "build.toml:15:1", "", "a key has more than 1000 dotted parts"),
    row("toml-table-header-with-thousands-of-parts", add("[" + ".".join(["a"] * 5000) + "]\n"), "build.toml:15:1", "", "a key has more than 1000 dotted parts"),
    row("unclosed-array", edit('"metal"]', '"metal"'), "build.toml:8:1", "", "Unclosed array"),
    row("unclosed-table-header", edit("[torch]", "[torch"), "build.toml:8:7", "", "Expected ']' at the end of a table declaration"),
    row("unclosed-inline-table", add('[kernel.relu.x]\na = { b = 1\n'), "build.toml:17:1", "", "Unclosed inline table"),
    row("raw-control-character", edit('"Apache-2.0"', '"Apache\x01-2.0"'), "build.toml:5:18", "", "control character U+0001", "escape `\\u0001`"),
    row("raw-nul-character", edit('"Apache-2.0"', '"Apache\x00-2.0"'), "build.toml:5:18", "", "control character U+0000", "escape `\\u0000`"),
    row("raw-escape-character-in-comment", add("# \x1b[2J\n"), "build.toml:15:3", "", "control character U+001B", "remove it"),
    row("invalid-escape", edit('"Apache-2.0"', '"Apache\\q"'), "build.toml:5:20", "", "Unescaped '\\' in a string", "`\\\\` for a backslash"),
    row("surrogate-escape", edit('"Apache-2.0"', '"\\ud800"'), "build.toml:5:18", "", "not a Unicode scalar value"),
    row("duplicate-key", edit('src = ["relu/relu.cpp"]', 'src = ["relu/relu.cpp"]\nsrc = ["relu/relu.cpp"]'), "build.toml:15:1", "kernel.relu.src", "`kernel.relu.src` is defined twice (first at line 14)", "once per table"),
    row("duplicate-key-in-general", edit("version = 1", "version = 1\nversion = 2"), "build.toml:4:1", "general.version", "`general.version` is defined twice (first at line 3)"),
    row("duplicate-table", add('\n[kernel.relu]\nlanguage = "cpp-cpu"\n'), "build.toml:16:1", "kernel.relu", "table `[kernel.relu]` is declared twice (first at line 11)", "merge the two tables"),
    row("duplicate-general-table", add('\n[general]\nname = "other"\n'), "build.toml:16:1", "general", "table `[general]` is declared twice (first at line 1)"),
    row("duplicate-key-in-inline-table", add('\n[kernel.relu.x]\na = { b = 1, b = 2 }\n'), "build.toml:17:14", "kernel.relu.x.a.b", "`kernel.relu.x.a.b` is defined twice (first at line 17)"),
    row("quoted-and-bare-duplicate-key", edit("version = 1", 'version = 1\n"version" = 2'), "build.toml:4:1", "general.version", "defined twice (first at line 3)"),
    row("dotted-key-below-a-value", edit('src = ["relu/relu.cpp"]', 'src = ["relu/relu.cpp"]\nsrc.extra = 1'), "build.toml:15:1", "kernel.relu.src", "cannot add keys to `kernel.relu.src` here: it is already an array (first at line 14)"),
    row("dotted-key-below-a-string", edit('license = "Apache-2.0"', 'license = "Apache-2.0"\nlicense.id = "MIT"'), "build.toml:6:1", "general.license.id", "`general.license.id` cannot be defined: `general.license` is already a value (at line 5)"),
    row("extend-inline-table", add('\n[kernel.x]\nfoo = { a = 1 }\nfoo.b = 2\n'), "build.toml:18:1", "kernel.x.foo", "cannot add keys to `kernel.x.foo` here: it is already an inline table (first at line 17)", "define each table in one place"),
    row("old-mac-line-endings", BASE.replace("\n", "\r"), "build.toml:1:10", "", "invalid TOML"),
    row("invalid-date", edit('"Apache-2.0"', "2024-13-45"), "build.toml:5:15", "", "invalid TOML"),
    row("key-without-value-at-eof", add("license2 ="), "build.toml:15:11", "", "invalid TOML", "Invalid value"),
    row("jinja-template-not-toml", edit('name = "relu"', "name = {{ name }}"), "build.toml:2:9", "", "invalid TOML"),
    row("leading-zero-integer", edit("version = 1", "version = 01"), "build.toml:3:12", "", "invalid TOML"),
    row("general-as-array-of-tables", edit("[general]", "[[general]]"), "build.toml:1:3", "general", "expected a table, got an array"),
    # --- wrong types --------------------------------------------------------------------
    row("version-as-string", edit("version = 1", 'version = "1"'), "build.toml:3:11", "general.version", 'expected an integer, got a string `"1"`'),
    row("version-as-float", edit("version = 1", "version = 1.5"), "build.toml:3:11", "general.version", "expected an integer, got a float `1.5`"),
    row("version-as-bool", edit("version = 1", "version = true"), "build.toml:3:11", "general.version", "expected an integer, got a boolean `true`"),
    row("version-negative", edit("version = 1", "version = -1"), "build.toml:3:11", "general.version", "expected a non-negative integer"),
    row("version-beyond-64-bit", edit("version = 1", "version = 99999999999999999999"), "build.toml:3:11", "general.version", "too large", "signed 64-bit"),
    row("version-nan", edit("version = 1", "version = nan"), "build.toml:3:11", "general.version", "expected an integer, got a float `nan`"),
    row("license-as-number", edit('"Apache-2.0"', "2"), "build.toml:5:11", "general.license", "expected a string, got an integer `2`"),
    row("license-as-datetime", edit('"Apache-2.0"', "1979-05-27T07:32:00Z"), "build.toml:5:11", "general.license", "expected a string, got a date/time `1979-05-27T07:32:00+00:00`"),
    row("license-as-local-date", edit('"Apache-2.0"', "1979-05-27"), "build.toml:5:11", "general.license", "expected a string, got a date/time `1979-05-27`"),
    row("license-as-table", edit('"Apache-2.0"', '{ id = "MIT" }'), "build.toml:5:11", "general.license", "expected a string, got a table"),
    row("license-as-list", edit('"Apache-2.0"', '["MIT"]'), "build.toml:5:11", "general.license", "expected a string, got an array"),
    row("license-with-nul", edit('"Apache-2.0"', '"MIT\\u0000"'), "build.toml:5:11", "general.license", "NUL character at index 3", "Nix strings cannot carry"),
    row("cxx-flag-with-nul", edit('src = ["relu/relu.cpp"]', 'src = ["relu/relu.cpp"]\ncxx-flags = ["-DX=\\u0000"]'), "build.toml:15:14", "kernel.relu.cxx-flags[0]", "NUL character at index 4", "Nix strings cannot carry"),
    row("src-path-with-nul", edit('"relu/relu.cpp"', '"relu/relu.cpp\\u0000.sh"'), "build.toml:14:8", "kernel.relu.src[0]", "NUL character at index 13"),
    row("backends-as-string", edit('["cpu", "cuda", "rocm", "xpu", "metal"]', '"cpu"'), "build.toml:6:12", "general.backends", 'expected an array, got a string `"cpu"`'),
    row("backend-as-number", edit('"metal"]', '"metal", 1]'), "build.toml:6:52", "general.backends[5]", "expected one of `cann`, `cpu`", "got an integer `1`"),
    row("backends-nested-table", edit('["cpu", "cuda", "rocm", "xpu", "metal"]', "{ cpu = true }"), "build.toml:6:12", "general.backends", "expected an array, got a table"),
    row("src-as-string", edit('src = ["relu/relu.cpp"]', 'src = "relu/relu.cpp"'), "build.toml:14:7", "kernel.relu.src", 'expected an array, got a string `"relu/relu.cpp"`'),
    row("src-element-number", edit('["relu/relu.cpp"]', '["relu/relu.cpp", 3]'), "build.toml:14:25", "kernel.relu.src[1]", "expected a string, got an integer `3`"),
    row("src-element-table", edit('["relu/relu.cpp"]', '[{ path = "relu/relu.cpp" }]'), "build.toml:14:8", "kernel.relu.src[0]", "expected a string, got a table"),
    row("src-element-bool", edit('["relu/relu.cpp"]', "[true]"), "build.toml:14:8", "kernel.relu.src[0]", "expected a string, got a boolean `true`"),
    row("depends-as-string", edit('depends = ["torch"]', 'depends = "torch"'), "build.toml:13:11", "kernel.relu.depends", 'expected an array, got a string `"torch"`'),
    row("unknown-dependency", add(CUDA + 'depends = ["cutlass_3_7"]\n'), "build.toml:19:12", "kernel.relu_cuda.depends[0]", "unknown value `cutlass_3_7`", "did you mean `cutlass_3_9`?", "expected one of `cutlass_2_10`"),
    row("dependency-nixgen-does-not-build-the-language-with", add(CUDA.replace("cpp-cuda", "cpp-cpu") + 'depends = ["cutlass_3_8"]\n'), "build.toml:19:12", "kernel.relu_cuda.depends[0]", "unknown value `cutlass_3_8`", "expected one of `torch`", "nixgen builds `cpp-cpu` kernels against `torch` only"),
    row("kernel-is-a-number", add("\n[kernel]\nfoo = 1\n"), "build.toml:17:7", "kernel.foo", "expected a table, got an integer `1`"),
    row("kernel-table-is-a-string", 'kernel = "relu"\n' + BASE.split("[kernel.relu]")[0], "build.toml:1:10", "kernel", "expected a table, got a string"),
    row("kernel-as-array-of-tables", add('\n[[kernel.x]]\nlanguage = "cpp-cpu"\n'), "build.toml:16:10", "kernel.x", "expected a table, got an array"),
    row("torch-is-a-string", 'torch = "2.12"\n' + edit('[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n', ""), "build.toml:1:9", "torch", "expected a table, got a string"),
    row("stable-abi-as-bool", edit("[torch]", "[torch]\nstable-abi = true"), "build.toml:9:14", "torch.stable-abi", "expected a Torch version such as `\"2.11\"`", "got a boolean `true`"),
    row("stable-abi-with-a-leading-zero", edit("[torch]", '[torch]\nstable-abi = "02.11"'), "build.toml:9:14", "torch.stable-abi", "invalid version `02.11`", "leading zero", "write `2.11`"),
    row("torch-minver-component-past-2-63", edit("[torch]", '[torch]\nminver = "2.9223372036854775808"'), "build.toml:9:10", "torch.minver", "more than 9 digits"),
    row("cuda-maxver-huge-component", edit("\n[torch]", '\n[general.cuda]\nmaxver = "12.18446744073709551617"\n\n[torch]'), "build.toml:9:10", "general.cuda.maxver", "invalid version", "two dot-separated numbers"),
    row("cuda-maxver-three-components", edit("\n[torch]", '\n[general.cuda]\nmaxver = "13.0.1"\n\n[torch]'), "build.toml:9:10", "general.cuda.maxver", "expected `major.minor`", "it has 3 components"),
    row("stable-abi-unknown-backend", edit("[torch]", '[torch]\nstable-abi = { cdua = "2.11" }'), "build.toml:9:16", "torch.stable-abi.cdua", "did you mean `cuda`?"),
    row("capability-as-number", kernel('language = "cpp-cuda"\nsrc = ["relu_cuda/relu.cu"]\ncuda-capabilities = [8.0]'), "build.toml:19:22", "kernel.k.cuda-capabilities[0]", "expected a string, got a float `8.0`"),
    row("include-as-bool", edit('src = ["relu/relu.cpp"]', 'src = ["relu/relu.cpp"]\ninclude = false'), "build.toml:15:11", "kernel.relu.include", "expected an array, got a boolean `false`"),
    row("edition-as-string", edit("edition = 6", 'edition = "6"'), "build.toml:4:11", "general.edition", "`edition` must be an integer (6 is current)", 'got a string `"6"`'),
    row("edition-as-bool", edit("edition = 6", "edition = true"), "build.toml:4:11", "general.edition", "must be an integer", "got a boolean `true`"),
    row("edition-7", edit("edition = 6", "edition = 7"), "build.toml:4:11", "general.edition", "unsupported edition 7", "edition 6 is current"),
    row("edition-4-spelled-out", edit("edition = 6", "edition = 4"), "build.toml:4:11", "general.edition", "unsupported edition 4", "edition-less formats"),
    row("edition-huge", edit("edition = 6", "edition = 99999999999999999999"), "build.toml:4:11", "general.edition", "unsupported edition"),
    # --- unknown keys, tables and languages --------------------------------------------
    row("unknown-top-level-table", add('\n[kernels.x]\nlanguage = "cpp-cpu"\n'), "build.toml:16:2", "kernels", "unknown table `kernels`", "did you mean `kernel`?"),
    row("unknown-general-key", edit("license =", "licence ="), "build.toml:5:1", "general.licence", "unknown key `licence`", "did you mean `license`?"),
    row("unknown-kernel-key", edit('src = ["relu/relu.cpp"]', 'source = ["relu/relu.cpp"]'), "build.toml:14:1", "kernel.relu.source", "unknown key `source`", "did you mean `src`?"),
    row("unknown-torch-key", edit('src = ["torch-ext', 'includes = ["x"]\nsrc = ["torch-ext'), "build.toml:9:1", "torch.includes", "unknown key `includes`", "did you mean `include`?"),
    row("misspelled-kebab-key", edit('src = ["relu/relu.cpp"]', 'src = ["relu/relu.cpp"]\ncxx_flags = ["-O3"]'), "build.toml:15:1", "kernel.relu.cxx_flags", "did you mean `cxx-flags`?"),
    row("unknown-key-with-control-chars", edit("license =", '"lic\\u001b[2Jense" = 1\nlicense ='), "build.toml:5:1", 'general."lic\\u001b[2Jense"', "unknown key `lic\\x1b[2Jense`"),
    row("unknown-language", kernel('language = "cpp-cdua"\nsrc = ["relu_cuda/relu.cu"]'), "build.toml:17:12", "kernel.k.language", "unknown language `cpp-cdua`", "did you mean `cpp-cuda`?", "`rust-cpu`"),
    row("unknown-language-far-off", kernel('language = "fortran"\nsrc = ["relu/relu.cpp"]'), "build.toml:17:12", "kernel.k.language", "unknown language `fortran`", "expected one of `cpp-cpu`, `cpp-cuda`, `cpp-rocm`, `cpp-xpu`, `cpp-metal`, `rust-cpu`"),
    row("language-as-number", kernel('language = 6\nsrc = ["relu/relu.cpp"]'), "build.toml:17:12", "kernel.k.language", "unknown language an integer `6`", "expected one of `cpp-cpu`"),
    row("missing-language", kernel('src = ["relu/relu.cpp"]'), "build.toml:16:9", "kernel.k", "missing `language`", "one of `cpp-cpu`"),
    row("old-backend-key-in-edition-6", kernel('backend = "cuda"\nsrc = ["relu_cuda/relu.cu"]'), "build.toml:16:9", "kernel.k", "missing `language`", "edition 6 writes `language = \"cpp-cuda\"`"),
    row("edition-6-language-without-edition", edit("edition = 6\n", ""), "build.toml:1:2", "general", "`general.edition` is missing", "add `edition = 6`"),
    # --- impossible combinations ------------------------------------------------------
    row("cuda-flags-on-cpp-cpu", edit('src = ["relu/relu.cpp"]', 'src = ["relu/relu.cpp"]\ncuda-flags = ["-lineinfo"]'), "build.toml:15:1", "kernel.relu.cuda-flags", "`cuda-flags` is not possible for language `cpp-cpu`", "belongs to language `cpp-cuda`"),
    row("features-on-cpp-cuda", kernel('language = "cpp-cuda"\ndepends = []\nsrc = ["relu_cuda/relu.cu"]\nfeatures = ["fast"]'), "build.toml:20:1", "kernel.k.features", "not possible for language `cpp-cuda`", "nixgen's own option of language `rust-cpu`", "set in nixgen.toml"),
    row("features-of-rust-cpu-in-build-toml", rkernel(f'language = "rust-cpu"\n{MANIFEST}\n{RUST_SRC}\nfeatures = ["fast"]'), "build.toml:20:1", "kernel.k.features", "`features` is nixgen's own", "nixgen.toml"),
    row("depends-on-rust-cpu", rkernel(f'language = "rust-cpu"\n{MANIFEST}\ndepends = ["torch"]\n{RUST_SRC}'), "build.toml:19:1", "kernel.k.depends", "not possible for language `rust-cpu`", "belongs to language `cpp-cpu`"),
    row("rust-cpu-under-torch", kernel(f'language = "rust-cpu"\n{MANIFEST}\n{RUST_SRC}'), "build.toml:17:12", "kernel.k.language", "Rust kernels require a `[tvm-ffi]` framework", "define the kernel in nixgen.toml"),
    row("rust-cutile-below-13-2", rkernel(f'language = "rust-cutile"\n{MANIFEST}\n{RUST_SRC}\ntileiras-minver = "13.1"'), "build.toml:20:19", "kernel.k.tileiras-minver", "must be at least 13.2"),
    row("mlx-noarch-for-cuda", edit('[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n[kernel.relu]\nlanguage = "cpp-cpu"\ndepends = ["torch"]\nsrc = ["relu/relu.cpp"]\n', "[mlx-noarch]\n"), "build.toml:6:13", "general.backends[0]", "`[mlx-noarch]` only supports the `metal` backend, got `cpu`"),
    row("build-layout-unknown", edit("backends =", 'build-layout = "tar"\nbackends ='), "build.toml:6:16", "general.build-layout", "unknown value `tar`", "`files`, `zip`"),
    row("nixgen-toml-option-of-a-cpp-kernel", BASE, "nixgen.toml:2:1", "kernel.relu.features", "a `cpp-cpu` kernel has none", setup=nixgen_toml('[kernel.relu]\nfeatures = ["x"]\n')),
    row("nixgen-toml-kernel-not-in-build-toml", BASE, "nixgen.toml:1:9", "kernel.nope", "build.toml has no kernel `nope`", setup=nixgen_toml('[kernel.nope]\nfeatures = ["x"]\n')),
    row("nixgen-toml-cpp-kernel-definition", BASE, "nixgen.toml:2:12", "kernel.k.language", "a `cpp-cpu` kernel belongs in build.toml", setup=nixgen_toml('[kernel.k]\nlanguage = "cpp-cpu"\ndepends = []\nsrc = ["relu/relu.cpp"]\n')),
    row("nixgen-toml-rust-kernel-of-tvm-ffi", RBASE, "nixgen.toml:2:12", "kernel.k.language", "define it in build.toml", setup=nixgen_toml(f'[kernel.k]\nlanguage = "rust-cpu"\n{MANIFEST}\n{RUST_SRC}\n')),
    row("hip-flags-on-cpp-xpu", kernel('language = "cpp-xpu"\nsrc = ["relu/relu.cpp"]\nhip-flags = ["-O3"]'), "build.toml:19:1", "kernel.k.hip-flags", "belongs to language `cpp-rocm`", "allowed here"),
    row("rocm-archs-on-cpp-cuda", kernel('language = "cpp-cuda"\nsrc = ["relu_cuda/relu.cu"]\nrocm-archs = ["gfx942"]'), "build.toml:19:1", "kernel.k.rocm-archs", "belongs to language `cpp-rocm`"),
    row("include-on-rust-cpu", rkernel(f'language = "rust-cpu"\n{MANIFEST}\n{RUST_SRC}\ninclude = ["include"]'), "build.toml:20:1", "kernel.k.include", "not possible for language `rust-cpu`"),
    row("cxx-flags-on-rust-cpu", rkernel(f'language = "rust-cpu"\n{MANIFEST}\n{RUST_SRC}\ncxx-flags = ["-O3"]'), "build.toml:20:1", "kernel.k.cxx-flags", "not possible for language `rust-cpu`"),
    row("two-frameworks", add('\n[tvm-ffi]\nsrc = ["torch-ext/torch_binding.cpp"]\n'), "build.toml:16:2", "tvm-ffi", "only one framework table is allowed", "`[torch]` and `[tvm-ffi]`"),
    row("three-frameworks", add('\n[torch-noarch]\n\n[tvm-ffi]\nsrc = []\n'), "build.toml:16:2", "torch-noarch", "only one framework table is allowed"),
    row("compiled-kernel-with-torch-noarch", edit('[torch]\nsrc = ["torch-ext/torch_binding.cpp"]', "[torch-noarch]"), "build.toml:8:2", "torch-noarch", "compiled kernels need a framework", "add a [torch] or [tvm-ffi] table"),
    row("compiled-kernel-without-framework", edit('[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n', ""), "build.toml:9:2", "kernel", "compiled kernels need a framework", "[torch] or [tvm-ffi]"),
    row("kernel-backend-not-in-backends", edit('"cpu", "cuda", "rocm", "xpu", "metal"', '"cuda"'), "build.toml:12:12", "kernel.relu.language", "`cpp-cpu` kernels build for the `cpu` backend, which is not in general.backends", "add it or remove the kernel"),
    row("kernel-with-no-backends-at-all", edit('["cpu", "cuda", "rocm", "xpu", "metal"]', "[]"), "build.toml:12:12", "kernel.relu.language", "which is not in general.backends (none)"),
    row("unknown-backend", edit('"metal"]', '"metal", "cdua"]'), "build.toml:6:52", "general.backends[5]", "unknown value `cdua`", "did you mean `cuda`?"),
    row("torch-minver-above-maxver", edit("[torch]", '[torch]\nminver = "2.12"\nmaxver = "2.11"'), "build.toml:9:10", "torch.minver", "minver 2.12 is greater than maxver 2.11"),
    row("cuda-minver-above-maxver", edit("\n[torch]", '\n[general.cuda]\nminver = "13.0"\nmaxver = "12.6"\n\n[torch]'), "build.toml:9:10", "general.cuda.minver", "minver 13.0 is greater than maxver 12.6"),
    row("kernel-depends-without-version", edit("\n[torch]", '\n[[general.kernel-depends]]\nrepo-id = "org/dep"\n\n[torch]'), "build.toml:8:11", "general.kernel-depends[0]", "either `version` or `revision` must be given"),
    row("kernel-depends-with-both", edit("\n[torch]", '\n[[general.kernel-depends]]\nrepo-id = "org/dep"\nversion = 1\nrevision = "abc"\n\n[torch]'), "build.toml:8:11", "general.kernel-depends[0]", "`version` and `revision` are mutually exclusive"),
    row("tpu-kernel-depends", edit("\n[torch]", '\n[general.tpu]\nkernel-depends = []\n\n[torch]'), "build.toml:9:1", "general.tpu.kernel-depends", "unknown key `kernel-depends`"),
    row("python-depends-unknown", edit("backends =", 'python-depends = ["numpyy"]\nbackends ='), "build.toml:6:19", "general.python-depends[0]", "unknown value `numpyy`", "expected one of `einops`, `helion`, `tvm-ffi`"),
    # --- names ----------------------------------------------------------------------------
    row("project-name-uppercase", edit('"relu"', '"ReLU"'), "build.toml:2:8", "general.name", "invalid name `ReLU`", "lowercase letters, digits and dashes"),
    row("project-name-underscore", edit('"relu"', '"relu_op"'), "build.toml:2:8", "general.name", "invalid name `relu_op`", "for example `my-kernel`"),
    row("project-name-trailing-dash", edit('"relu"', '"relu-"'), "build.toml:2:8", "general.name", "end with a letter or digit"),
    row("project-name-one-character", edit('"relu"', '"r"'), "build.toml:2:8", "general.name", "at least 2"),
    row("project-name-too-long", edit('"relu"', f'"{LONG}"'), "build.toml:2:8", "general.name", "at most 64 characters"),
    row("project-name-non-ascii", edit('"relu"', '"rélu"'), "build.toml:2:8", "general.name", "invalid name `rélu`"),
    row("project-name-with-escape-sequence", edit('"relu"', '"\\u001b[31mred"'), "build.toml:2:8", "general.name", "invalid name `\\x1b[31mred`"),
    row("project-name-empty", edit('"relu"', '""'), "build.toml:2:8", "general.name", "invalid name ``"),
    row("project-name-missing", edit('name = "relu"\n', ""), "build.toml:1:2", "general.name", "required key is missing"),
    row("kernel-name-with-dot", add('\n[kernel."a.b"]\nlanguage = "cpp-cpu"\nsrc = ["relu/relu.cpp"]\n'), "build.toml:16:9", 'kernel."a.b"', "invalid kernel name `a.b`", "for example `relu_cuda`"),
    row("kernel-name-leading-digit", add('\n[kernel.9relu]\nlanguage = "cpp-cpu"\nsrc = ["relu/relu.cpp"]\n'), "build.toml:16:9", "kernel.9relu", "invalid kernel name `9relu`", "starting with a letter or `_`"),
    row("kernel-name-with-space", add('\n[kernel."my relu"]\nlanguage = "cpp-cpu"\nsrc = ["relu/relu.cpp"]\n'), "build.toml:16:9", 'kernel."my relu"', "invalid kernel name `my relu`"),
    row("kernel-name-too-long", add(f'\n[kernel.{LONG}]\nlanguage = "cpp-cpu"\nsrc = ["relu/relu.cpp"]\n'), "build.toml:16:9", f"kernel.{LONG}", "at most 64 characters"),
    row("kernel-name-with-newline", add('\n[kernel."a\\nb"]\nlanguage = "cpp-cpu"\nsrc = ["relu/relu.cpp"]\n'), "build.toml:16:9", 'kernel."a\\nb"', "invalid kernel name `a\\nb`"),
    row("kernel-name-with-nul", add('\n[kernel."a\\u0000b"]\nlanguage = "cpp-cpu"\nsrc = ["relu/relu.cpp"]\n'), "build.toml:16:9", 'kernel."a\\u0000b"', "NUL character"),
    row("kernel-name-nix-interpolation", add('\n[kernel."${builtins.abort 1}"]\nlanguage = "cpp-cpu"\nsrc = ["relu/relu.cpp"]\n'), "build.toml:16:9", 'kernel."${builtins.abort 1}"', "invalid kernel name"),
    row("kernel-names-collide", add('\n[kernel.relu-x]\nlanguage = "cpp-cpu"\nsrc = ["relu/relu.cpp"]\n\n[kernel.relu_x]\nlanguage = "cpp-cpu"\nsrc = ["relu/relu.cpp"]\n'), "build.toml:20:9", "kernel.relu_x", "kernel names `relu-x`, `relu_x` collide"),
    # --- capabilities, archs, versions -------------------------------------------------
    row("malformed-cuda-capability", add(CUDA + 'cuda-capabilities = ["8.7x"]\n'), "build.toml:19:22", "kernel.relu_cuda.cuda-capabilities[0]", "invalid CUDA capability `8.7x`", "did you mean `8.7`?", "expected `major.minor`"),
    row("cuda-capability-ptx-lowercase", add(CUDA + 'cuda-capabilities = ["8.0", "9.0+ptx"]\n'), "build.toml:19:29", "kernel.relu_cuda.cuda-capabilities[1]", "invalid CUDA capability `9.0+ptx`; did you mean `9.0+PTX`?", "`+PTX` to also embed its PTX"),
    row("cuda-capability-sm-prefix", add(CUDA + 'cuda-capabilities = ["sm_90a"]\n'), "build.toml:19:22", "kernel.relu_cuda.cuda-capabilities[0]", "invalid CUDA capability `sm_90a`; did you mean `9.0a`?"),
    row("cuda-capability-unknown-only", add(CUDA + 'cuda-capabilities = ["11.8"]\n'), "build.toml:19:21", "kernel.relu_cuda.cuda-capabilities", "warning: kernel.relu_cuda.cuda-capabilities[0]: unknown CUDA capability `11.8`", "none of its CUDA capabilities (`11.8`) can be built with CUDA 13"),
    row("empty-cuda-capabilities", add(CUDA + "cuda-capabilities = []\n"), "build.toml:19:21", "kernel.relu_cuda.cuda-capabilities", "`cuda-capabilities` is empty; omit it to build for all"),
    row("cuda-minver-not-a-version", add(CUDA + 'cuda-minver = "12.x"\n'), "build.toml:19:15", "kernel.relu_cuda.cuda-minver", "invalid version `12.x`", "such as `2.12` or `12.8`"),
    row("cuda-capability-no-toolkit-builds", add(CUDA + 'cuda-capabilities = ["5.0"]\n'), "build.toml:19:21", "kernel.relu_cuda.cuda-capabilities", "none of its CUDA capabilities (`5.0`) can be built with CUDA 13", "the closest capability CUDA 13.0 builds is `7.5`"),
    # The same rule for every CUDA language: planned in Python once (plan.unbuildable_capabilities),
    # not left to Nix.
    row("rust-cuda-capability-no-toolkit-builds", rkernel(f'language = "rust-cuda-oxide"\n{MANIFEST}\nsrc = ["relu_rs/Cargo.toml", "relu_rs/Cargo.lock", "relu_rs/rust-toolchain.toml", "relu_rs/src/lib.rs", "relu_rs/device/Cargo.toml"]\ncuda-capabilities = ["7.0"]'), "build.toml:20:21", "kernel.k.cuda-capabilities", "kernel `k`: none of its CUDA capabilities (`7.0`) can be built with CUDA 13.0", "the closest capability CUDA 13.0 builds is `7.5`", setup=nixgen_toml('[kernel.k]\ndevice-manifest = "relu_rs/device/Cargo.toml"\n')),
    row("rust-cuda-oxide-without-device-crate", rkernel(f'language = "rust-cuda-oxide"\n{MANIFEST}\nsrc = ["relu_rs/Cargo.toml", "relu_rs/Cargo.lock", "relu_rs/rust-toolchain.toml", "relu_rs/src/lib.rs"]'), "build.toml:16:9", "kernel.k", "`device-manifest` that nixgen.toml's `[kernel.k]` names"),
    row("rocm-arch-unknown-only", kernel('language = "cpp-rocm"\nsrc = ["relu/relu.cpp"]\nrocm-archs = ["gfx99999"]'), "build.toml:19:14", "kernel.k.rocm-archs", "none of the listed ROCm architectures is supported", "build.toml:19:15: warning: kernel.k.rocm-archs[0]: unknown ROCm architecture `gfx99999`"),
    row("malformed-rocm-arch", kernel('language = "cpp-rocm"\nsrc = ["relu/relu.cpp"]\nrocm-archs = ["gfx942", "mi300x"]'), "build.toml:19:25", "kernel.k.rocm-archs[1]", "invalid ROCm architecture `mi300x`", "such as `gfx90a`"),
    row("rocm-arch-typo", kernel('language = "cpp-rocm"\nsrc = ["relu/relu.cpp"]\nrocm-archs = ["gfx94"]'), "build.toml:19:15", "kernel.k.rocm-archs[0]", "did you mean `gfx942`?"),
    row("empty-rocm-archs", kernel('language = "cpp-rocm"\nsrc = ["relu/relu.cpp"]\nrocm-archs = []'), "build.toml:19:14", "kernel.k.rocm-archs", "`rocm-archs` is empty; omit it to build for all"),
    row("rocm-archs-none-supported", kernel('language = "cpp-rocm"\nsrc = ["relu/relu.cpp"]\nrocm-archs = ["gfx900"]'), "build.toml:19:14", "kernel.k.rocm-archs", "none of the listed ROCm architectures is supported", "`gfx942`"),
    row("torch-minver-not-a-version", edit("[torch]", '[torch]\nminver = "two"'), "build.toml:9:10", "torch.minver", "invalid version `two`"),
    row("general-minver-empty", edit("backends =", 'minver = ""\nbackends ='), "build.toml:6:1", "general.minver", "`minver` is no key of edition 6", "derived from what the build uses"),
    row("upstream-ftp-scheme", edit("backends =", 'upstream = "ftp://example.com/x.git"\nbackends ='), "build.toml:6:12", "general.upstream", "unsupported scheme `ftp`", "expected one of: https"),
    row("upstream-with-space", edit("backends =", 'upstream = "https://example.com/a b"\nbackends ='), "build.toml:6:12", "general.upstream", "invalid git URL", "`<scheme>://host/path`"),
    row("hub-repo-id-without-org", edit("\n[torch]", '\n[general.hub]\nrepo-id = "relu"\n\n[torch]'), "build.toml:9:11", "general.hub.repo-id", "invalid Hub repository id `relu`", "expected `org/name`"),
    row("pyext-with-dot", edit("[torch]", '[torch]\npyext = [".py"]'), "build.toml:9:10", "torch.pyext[0]", "invalid file extension `.py`", "without the dot"),
    # --- paths ------------------------------------------------------------------------------
    row("absolute-path", edit('"relu/relu.cpp"', '"/etc/passwd"'), "build.toml:14:8", "kernel.relu.src[0]", "absolute path `/etc/passwd`", "relative to the project root"),
    row("windows-absolute-path", edit('"relu/relu.cpp"', '"C:/relu.cpp"'), "build.toml:14:8", "kernel.relu.src[0]", "absolute path `C:/relu.cpp`"),
    row("backslash-path", edit('"relu/relu.cpp"', "'relu\\relu.cpp'"), "build.toml:14:8", "kernel.relu.src[0]", "uses `\\`; use `/` as the separator"),
    row("parent-directory", edit('"relu/relu.cpp"', '"../relu.cpp"'), "build.toml:14:8", "kernel.relu.src[0]", "leaves the project (`..`)"),
    row("parent-directory-in-the-middle", edit('"relu/relu.cpp"', '"relu/../../x.cpp"'), "build.toml:14:8", "kernel.relu.src[0]", "leaves the project"),
    row("glob-star", edit('"relu/relu.cpp"', '"relu/*.cpp"'), "build.toml:14:8", "kernel.relu.src[0]", "contains a glob character; list each file explicitly"),
    row("glob-brackets", edit('"relu/relu.cpp"', '"relu/relu[12].cpp"'), "build.toml:14:8", "kernel.relu.src[0]", "glob character"),
    row("glob-braces", edit('"relu/relu.cpp"', '"relu/{a,b}.cpp"'), "build.toml:14:8", "kernel.relu.src[0]", "glob character"),
    row("dot-segment", edit('"relu/relu.cpp"', '"./relu/relu.cpp"'), "build.toml:14:8", "kernel.relu.src[0]", "empty or `.` segment", "write it as `a/b/c`"),
    row("double-slash", edit('"relu/relu.cpp"', '"relu//relu.cpp"'), "build.toml:14:8", "kernel.relu.src[0]", "empty or `.` segment"),
    row("trailing-slash", edit('"relu/relu.cpp"', '"relu/"'), "build.toml:14:8", "kernel.relu.src[0]", "empty or `.` segment"),
    row("empty-path", edit('"relu/relu.cpp"', '""'), "build.toml:14:8", "kernel.relu.src[0]", "empty path"),
    row("path-with-tab", edit('"relu/relu.cpp"', '"relu/re\\tlu.cpp"'), "build.toml:14:8", "kernel.relu.src[0]", "contains a control character"),
    row("path-with-newline", edit('"relu/relu.cpp"', '"relu/x.cpp\\nrm -rf /"'), "build.toml:14:8", "kernel.relu.src[0]", "contains a control character", "\\nrm -rf"),
    row("include-absolute", edit('src = ["relu/relu.cpp"]', 'src = ["relu/relu.cpp"]\ninclude = ["/usr/include"]'), "build.toml:15:12", "kernel.relu.include[0]", "absolute path `/usr/include`"),
    row("torch-src-parent", edit('"torch-ext/torch_binding.cpp"', '"../torch_binding.cpp"'), "build.toml:9:8", "torch.src[0]", "leaves the project"),
    row("symlink-file-out-of-project", edit('"relu/relu.cpp"', '"relu/evil.cpp"'), "build.toml:14:8", "kernel.relu.src[0]", "`relu/evil.cpp` resolves outside the project", "symlinks must stay inside it", setup=symlink_src_to("/etc/hostname")),
    row("relative-symlink-out-of-project", edit('"relu/relu.cpp"', '"relu/evil.cpp"'), "build.toml:14:8", "kernel.relu.src[0]", "resolves outside the project", setup=relative_symlink_escape),
    row("symlinked-dir-out-of-project", edit('"relu/relu.cpp"', '"vendor/x.cpp"'), "build.toml:14:8", "kernel.relu.src[0]", "`vendor/x.cpp` resolves outside the project", setup=symlink_dir_out),
    row("dangling-symlink-src", edit('"relu/relu.cpp"', '"relu/evil.cpp"'), "build.toml:14:8", "kernel.relu.src[0]", "file `relu/evil.cpp` does not exist", setup=symlink_src_to("nowhere.cpp")),
    row("missing-source-file", edit('"relu/relu.cpp"', '"relu/relu2.cpp"'), "build.toml:14:8", "kernel.relu.src[0]", "file `relu/relu2.cpp` does not exist"),
    row("missing-binding-source", edit('"torch-ext/torch_binding.cpp"', '"torch-ext/binding.cpp"'), "build.toml:9:8", "torch.src[0]", "file `torch-ext/binding.cpp` does not exist"),
    row("source-is-a-directory", edit('"relu/relu.cpp"', '"relu"'), "build.toml:14:8", "kernel.relu.src[0]", "`relu` is not a regular file"),
    row("source-is-a-fifo", edit('"relu/relu.cpp"', '"relu/fifo.cpp"'), "build.toml:14:8", "kernel.relu.src[0]", "`relu/fifo.cpp` is not a regular file", setup=fifo_src),
    row("include-is-a-file", edit('src = ["relu/relu.cpp"]', 'src = ["relu/relu.cpp"]\ninclude = ["include/relu.h"]'), "build.toml:15:12", "kernel.relu.include[0]", "`include/relu.h` is not a directory"),
    row("include-missing", edit('src = ["relu/relu.cpp"]', 'src = ["relu/relu.cpp"]\ninclude = ["headers"]'), "build.toml:15:12", "kernel.relu.include[0]", "directory `headers` does not exist"),
    row("python-package-missing", BASE, "build.toml:8:2", "torch", "the Python package `torch-ext/relu/__init__.py` is missing", setup=no_python_package),
    row("python-package-dir-with-a-dash", edit('name = "relu"', 'name = "attention-int8"'), "build.toml:8:2", "torch", "the Python package `torch-ext/attention_int8/__init__.py` is missing", "found `torch-ext/attention-int8/`", "cannot hold `-`", "rename the directory to `torch-ext/attention_int8`", setup=dashed_python_package),
    # --- empty kernels and rust-cpu conventions ---------------------------------------
    row("kernel-without-sources", edit('src = ["relu/relu.cpp"]', "src = []"), "build.toml:14:7", "kernel.relu.src", "a kernel needs at least one source file in `src`"),
    row("kernel-without-src-key", edit('src = ["relu/relu.cpp"]\n', ""), "build.toml:11:9", "kernel.relu.src", "required key is missing"),
    row("rust-without-cargo-manifest", rkernel('language = "rust-cpu"\nsrc = ["relu_rs/Cargo.lock", "relu_rs/src/lib.rs"]'), "build.toml:16:9", "kernel.k.cargo-manifest", "required key is missing"),
    row("rust-cargo-manifest-not-a-manifest", rkernel('language = "rust-cpu"\ncargo-manifest = "relu_rs/src/lib.rs"\nsrc = ["relu_rs/Cargo.lock", "relu_rs/src/lib.rs"]'), "build.toml:18:18", "kernel.k.cargo-manifest", "`cargo-manifest` names the crate's `Cargo.toml`"),
    row("rust-without-cargo-lock", rkernel(f'language = "rust-cpu"\n{MANIFEST}\nsrc = ["relu_rs/Cargo.toml", "relu_rs/src/lib.rs"]'), "build.toml:19:7", "kernel.k.src", "there is none: not in `src`, not at `relu_rs/Cargo.lock`, `Cargo.lock`", "run `cargo generate-lockfile`", "add `relu_rs/Cargo.lock` to `src`", setup=remove("relu_rs/Cargo.lock")),
    row("rust-with-two-manifests", rkernel(f'language = "rust-cpu"\n{MANIFEST}\nsrc = ["relu_rs/Cargo.toml", "Cargo.toml", "relu_rs/Cargo.lock", "relu_rs/src/lib.rs"]'), "build.toml:19:7", "kernel.k.src", "the workspace's, next to `Cargo.lock`"),
    row("rust-without-rs-sources", rkernel(f'language = "rust-cpu"\n{MANIFEST}\nsrc = ["relu_rs/Cargo.toml", "relu_rs/Cargo.lock"]'), "build.toml:19:7", "kernel.k.src", "lists its `.rs` sources in `src`"),
    row("rust-lock-file-missing-on-disk", add(RUST, RBASE), "build.toml:19:30", "kernel.relu_rs.src[1]", "file `relu_rs/Cargo.lock` does not exist", setup=remove("relu_rs/Cargo.lock")),
    row("rust-features-invalid", rkernel(f'language = "rust-cpu"\n{MANIFEST}\n{RUST_SRC}'), "nixgen.toml:2:13", "kernel.k.features[0]", "invalid Cargo feature name `a b`", setup=nixgen_toml('[kernel.k]\nfeatures = ["a b"]\n')),
    # --- every edition's typical mistakes ---------------------------------------------------
    row("edition5-backend-typo", edition5(BASE).replace('backend = "cpu"', 'backend = "cdua"'), "build.toml:12:11", "kernel.relu.backend", "unknown backend `cdua`", "did you mean `cuda`?"),
    row("edition5-with-edition6-language", edit("edition = 6", "edition = 5"), "build.toml:11:9", "kernel.relu", "missing `backend`", "`language = \"cpp-cpu\"` is edition 6: set `edition = 6`"),
    row("edition5-unknown-kernel-key", edition5(edit('src = ["relu/relu.cpp"]', 'src = ["relu/relu.cpp"]\ncuda-flag = ["-O3"]')), "build.toml:15:1", "kernel.relu.cuda-flag", "unknown key `cuda-flag`"),
    row("edition5-missing-depends", edition5(edit('depends = ["torch"]\n', "")), "build.toml:11:9", "kernel.relu.depends", "required key is missing"),
    row("edition5-missing-license", edition5(edit('license = "Apache-2.0"\n', "")), "build.toml:1:2", "general.license", "required key is missing"),
    row("edition2-backend-typo", '[general]\nname = "relu"\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n[kernel.relu]\nbackend = "cdua"\ndepends = ["torch"]\nsrc = ["relu_cuda/relu.cu"]\n', "build.toml:8:11", "kernel.relu.backend", "unknown backend `cdua`", "did you mean `cuda`?"),
    row("edition2-universal-as-string", '[general]\nname = "relu"\nuniversal = "yes"\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n', "build.toml:3:13", "general.universal", "expected a boolean (`true` or `false`)", 'got a string `"yes"`'),
    row("edition2-with-edition6-language", '[general]\nname = "relu"\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n[kernel.relu]\nlanguage = "cpp-cuda"\nsrc = ["relu_cuda/relu.cu"]\n', "build.toml:1:2", "general", "`general.edition` is missing", "add `edition = 6`"),
    row("edition1-hipify-twin-collides-with-a-dashed-kernel", '[general]\nname = "relu"\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n[kernel.relu]\nlanguage = "cuda-hipify"\ndepends = ["torch"]\nsrc = ["relu_cuda/relu.cu"]\n\n[kernel.relu-rocm]\nlanguage = "cuda"\ndepends = ["torch"]\nsrc = ["relu_cuda/relu.cu"]\n', "build.toml:8:12", "kernel.relu.language", "ROCm kernel `relu_rocm`", "kernel `relu-rocm` already builds that library"),
    row("edition1-hipify-typo", '[general]\nname = "relu"\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n[kernel.relu]\nlanguage = "cuda-hipfy"\ndepends = ["torch"]\nsrc = ["relu_cuda/relu.cu"]\n', "build.toml:8:12", "kernel.relu.language", "unknown value `cuda-hipfy`", "did you mean `cuda-hipify`?"),
    row("edition3-unknown-backend", '[general]\nname = "relu"\nbackends = ["cuda", "tpuu"]\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n', "build.toml:3:21", "general.backends[1]", "unknown value `tpuu`", "did you mean `tpu`?"),
    row("edition4-bad-name", '[general]\nname = "Relu"\nversion = 1\nlicense = "MIT"\nbackends = ["cpu"]\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n', "build.toml:2:8", "general.name", "invalid name `Relu`"),
]
# fmt: on

#: Rows that also run as a real subprocess (`python -m nixgen`), to prove the installed
#: entry point behaves exactly like the in-process runner.
SUBPROCESS_ROWS = (
    "build-toml-is-a-fifo",
    "non-utf8-in-string",
    "duplicate-key",
    "version-beyond-64-bit",
    "kernel-name-with-newline",
    "project-name-with-escape-sequence",
    "symlink-file-out-of-project",
    "cuda-capability-no-toolkit-builds",
)


# ------------------------------------------------------------------------------- helpers


def snapshot(root: Path) -> dict[str, tuple[str, bytes | str | None]]:
    """Every entry under `root`: kind and content (bytes, link target); FIFOs unread."""
    entries: dict[str, tuple[str, bytes | str | None]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                entries[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(mode):
                entries[rel] = ("dir", None)
            elif stat.S_ISREG(mode):
                try:
                    entries[rel] = ("file", path.read_bytes())
                except PermissionError:  # a mode-000 file, when the tests do not run as root
                    entries[rel] = ("unreadable", str(os.lstat(path).st_mtime_ns))
            else:
                entries[rel] = ("special", None)
    return entries


def make_tree(root: Path, case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    for rel in TREE:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(CONTENT.get(rel, f"// {rel}\n"))
    if isinstance(case.input, bytes):
        (root / "build.toml").write_bytes(case.input)
    elif isinstance(case.input, str):
        (root / "build.toml").write_bytes(case.input.encode())
    if case.setup is not None:
        case.setup(root, monkeypatch)


def expected_line(case: Case) -> str:
    """The error line's start: ``build.toml:14:8: error: kernel.relu.src[0]: ``."""
    text = f"{case.where}: error: "
    return text + f"{case.key}: " if case.key else text


def check_output(case: Case, output: str, code: int, command: str) -> None:
    assert code == (
        case.validate_code
        if command == "validate" and case.validate_code is not None
        else case.code
    ), output
    assert "Traceback" not in output, output
    assert "internal error" not in output, output
    assert "\x1b" not in output, "raw escape sequence reached the terminal"
    if code == 0:
        return
    errors = [line for line in output.splitlines() if ": error: " in line]
    assert errors, output
    assert any(line.startswith(expected_line(case)) for line in errors), (
        expected_line(case),
        output,
    )
    for fragment in case.says:
        assert fragment in output, (fragment, output)


# --------------------------------------------------------------------------------- tests


def test_table_is_large_and_ids_are_unique() -> None:
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 100
    assert set(SUBPROCESS_ROWS) <= set(ids)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
@pytest.mark.parametrize("command", ["validate", "render"])
def test_bad_input(
    case: Case, command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    make_tree(root, case, monkeypatch)
    monkeypatch.chdir(root)
    before = snapshot(root)
    result = CliRunner().invoke(main, [command, "."])
    assert isinstance(result.exception, SystemExit | None), result.exception
    check_output(case, result.output, result.exit_code, command)
    if result.exit_code != 0:
        assert snapshot(root) == before, "a failed command changed the project tree"
    elif command == "validate":
        assert snapshot(root) == before


@pytest.mark.parametrize("name", SUBPROCESS_ROWS)
@pytest.mark.slow
def test_bad_input_as_a_real_process(name: str, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.id == name)
    root = tmp_path / "project"
    root.mkdir()
    with pytest.MonkeyPatch.context() as monkeypatch:
        make_tree(root, case, monkeypatch)
    for command in ("validate", "render"):
        before = snapshot(root)
        done = nixgen_process([command, "."], root)
        check_output(case, done.stdout + done.stderr, done.returncode, command)
        if done.returncode != 0:
            assert snapshot(root) == before


def test_json_output_carries_the_location_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    root = tmp_path / "project"
    case = next(c for c in CASES if c.id == "unknown-language")
    root.mkdir()
    make_tree(root, case, monkeypatch)
    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, ["validate", "--json", "."])
    assert result.exit_code == 2
    (problem,) = json.loads(result.stdout)["problems"]
    assert problem["file"] == "build.toml"
    assert (problem["line"], problem["column"], problem["key"]) == (17, 12, "kernel.k.language")
    assert "did you mean `cpp-cuda`?" in problem["message"]


UNKNOWN_CAPABILITY = add(CUDA + 'depends = []\ncuda-capabilities = ["8.0", "11.8"]\n')


def _validate(args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    root = tmp_path / "project"
    root.mkdir()
    make_tree(root, Case("x", UNKNOWN_CAPABILITY, "", "", ()), monkeypatch)
    monkeypatch.chdir(root)
    return CliRunner().invoke(main, ["validate", *args, "."])


def test_unknown_capability_warns_and_validate_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _validate([], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(
        "build.toml:20:29: warning: kernel.relu_cuda.cuda-capabilities[1]: unknown CUDA "
        "capability `11.8` (closest known: `11.0`); no CUDA toolkit of the build table ("
    )
    assert "build.toml: ok (edition 6" in result.output


def test_strict_turns_warnings_into_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _validate(["--strict"], tmp_path, monkeypatch)
    assert result.exit_code == 2
    first, summary = result.output.splitlines()
    assert first.startswith("build.toml:20:29: error: kernel.relu_cuda.cuda-capabilities[1]: ")
    assert first.endswith("(a warning; --strict makes it an error)")
    assert summary == "1 error"


def test_a_backend_listed_twice_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    make_tree(root, Case("x", edit('"metal"]', '"metal", "cpu"]'), "", "", ()), monkeypatch)
    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, ["validate", "."])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(
        "build.toml:6:12: warning: general.backends: backend `cpu` is listed 2 times; "
        "the repeats have no effect\n"
    )


def test_strict_passes_a_clean_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    root.mkdir()
    make_tree(root, Case("x", BASE, "", "", ()), monkeypatch)
    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, ["validate", "--strict", "."])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("args", "code", "ok", "severity"),
    [([], 0, True, "warning"), (["--strict"], 2, False, "error")],
)
def test_json_problems_carry_their_severity(
    args: list[str],
    code: int,
    ok: bool,
    severity: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    result = _validate(["--json", *args], tmp_path, monkeypatch)
    assert result.exit_code == code
    payload = json.loads(result.stdout)
    assert payload["ok"] is ok
    (problem,) = payload["problems"]
    assert problem["severity"] == severity
    assert (problem["line"], problem["column"]) == (20, 29)
    assert problem["key"] == "kernel.relu_cuda.cuda-capabilities[1]"


def test_every_problem_in_a_file_is_reported_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = edit(
        '"relu"', '"ReLU"', edit('"Apache-2.0"', "2", edit('"relu/relu.cpp"', '"/abs.cpp"'))
    )
    root = tmp_path / "project"
    root.mkdir()
    make_tree(root, Case("x", text, "", "", ()), monkeypatch)
    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, ["validate", "."])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if ": error: " in line]
    assert [line.split(": error: ")[1].split(":")[0] for line in lines] == [
        "general.name",
        "general.license",
        "kernel.relu.src[0]",
    ]
    assert result.output.splitlines()[-1] == "3 errors"


# ----------------------------------------------------------- accepted oddities (controls)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"\xef\xbb\xbf" + BASE.encode(), id="utf8-bom"),
        pytest.param(BASE.replace("\n", "\r\n").encode(), id="crlf-line-endings"),
        pytest.param(
            BASE.encode() + b"#" * (8 * 1024 * 1024 - len(BASE.encode())), id="exactly-8-mib"
        ),
        pytest.param(
            edit('"Apache-2.0"', '"Apache-2.0 \\u202e ${x} \'\' \\" \\\\"').encode(),
            id="hostile-but-legal-license",
        ),
        pytest.param(
            edit("version = 1", "version = 9223372036854775807").encode(), id="largest-nix-integer"
        ),
    ],
)
def test_accepted_oddities(raw: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    root.mkdir()
    make_tree(root, Case("x", raw, "", "", ()), monkeypatch)
    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, ["validate", "."])
    assert result.exit_code == 0, result.output
    assert "build.toml: ok (edition 6, 1 kernel" in result.output


def test_bom_does_not_shift_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    root.mkdir()
    text = b"\xef\xbb\xbf" + edit('name = "relu"', 'name = "Relu"').encode()
    make_tree(root, Case("x", text, "", "", ()), monkeypatch)
    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, ["validate", "."])
    assert "build.toml:2:8: error: general.name: invalid name `Relu`" in result.output


# ------------------------------------------------------------- really unreadable build.toml


def without_dac_override() -> list[str]:
    """A command prefix under which the kernel enforces file modes, or skip.

    Root ignores file modes through CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH; `setpriv`
    drops both from the bounding set, so the command runs as root without them.
    """
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot make file modes apply")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"]


def nixgen_process(
    args: list[str], cwd: Path, prefix: list[str] = ()
) -> subprocess.CompletedProcess[str]:
    """Run `python -m nixgen ARGS` the way a user would (this checkout first on the path)."""
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.run(
        [*prefix, sys.executable, "-m", "nixgen", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.mark.slow
def test_unreadable_build_toml_for_real(tmp_path: Path) -> None:
    """A build.toml with mode 000: the kernel refuses the read (as root, without the
    capabilities that bypass file modes), and nixgen says so in one located line."""
    prefix = without_dac_override()
    root = tmp_path / "project"
    root.mkdir()
    make_tree(root, Case("x", BASE, "", "", ()), pytest.MonkeyPatch())
    os.chmod(root / "build.toml", 0o000)
    try:
        before = snapshot(root)
        for command in ("validate", "render"):
            done = nixgen_process([command, "."], root, prefix)
            assert done.returncode == 2, done.stderr
            assert done.stderr.startswith(
                "build.toml: error: permission denied while reading the file"
            )
            assert "Traceback" not in done.stderr
            assert snapshot(root) == before
    finally:
        os.chmod(root / "build.toml", 0o644)
