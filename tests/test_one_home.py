"""Each rule has one home: a test per rule that fails when a second home comes back.

* the pins (nixpkgs and toolchain revisions, the binary cache) live in `data/pins.json`,
  read by `nixgen.rendering.render` and by `nix/project.nix`; the repository's `flake.nix`, which
  must spell its inputs literally, is held to the table;
* the source kinds (extensions) live in `data/source-kinds.json`, read by `nixgen.core.tables`
  and by `nix/compile.nix`, whose rules compile exactly the kinds the table lists;
* the library's file list is the `nix/` directory itself;
* `nix/data` and `nixgen/data` are one directory (a link), not two copies.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

import pytest

from nixgen.checking import project
from nixgen.core import tables
from nixgen.planning import plan
from nixgen.rendering import render

from .conftest import materialize
from .goldens import SYNTHETIC
from .nixtools import have_nix, nix_eval_json

REPO = Path(__file__).resolve().parent.parent
PINS = json.loads((REPO / "nix" / "data" / "pins.json").read_text())
#: A synthetic golden case (a project outside the repository: its library is vendored).
GOLDEN_CASE = SYNTHETIC["cpp-cpu"]


def _tracked(*folders: str) -> list[Path]:
    """The files under `folders` of the repository (no process: the fast tier)."""
    return sorted(
        path
        for folder in folders
        for path in (REPO / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and not path.is_symlink()
    )


def test_data_tables_are_one_directory() -> None:
    """`nix/data` is a link to `nixgen/data` (or the other way round): one copy of each
    table, which the library reads with `builtins.readFile ./data/…` and nixgen with open()."""
    nix_data, py_data = REPO / "nix" / "data", REPO / "nixgen" / "data"
    assert nix_data.resolve() == py_data.resolve()
    assert nix_data.is_symlink() != py_data.is_symlink()


# ------------------------------------------------------------------------------- pins


def test_pins_are_read_from_the_table_by_python() -> None:
    assert PINS["nixpkgs"] == render.NIXPKGS_URL
    assert PINS["kernel-builder"] == render.KERNEL_BUILDER_URL
    assert PINS["substituter"] == render.SUBSTITUTER
    assert PINS["substituter-key"] == render.SUBSTITUTER_KEY


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="needs nix-instantiate")
def test_pins_are_read_from_the_table_by_the_library() -> None:
    got = nix_eval_json(
        "let p = import ./nix/project.nix { nixgen = { versions = { }; }; }; in "
        "{ inherit (p) nixpkgsUrl kernelBuilderUrl; }",
        cwd=REPO,
    )
    assert got == {"nixpkgsUrl": PINS["nixpkgs"], "kernelBuilderUrl": PINS["kernel-builder"]}


def test_no_pin_is_written_outside_the_table_but_in_the_root_flake() -> None:
    """A revision or the cache key spelt in nixgen's code, templates or the Nix library is a
    second home. The root flake.nix must spell its inputs literally (flake inputs cannot be
    computed): it is held to the table here.

    Kept as a text search on purpose: the thing held is a data value (a revision), not a
    name, and it could be copied into Python, Nix or a template alike; no linter reads all
    three."""
    values = [PINS["nixpkgs"], PINS["kernel-builder"], PINS["substituter-key"]]
    revisions = [v.rpartition("/")[2] for v in values[:2]] + [values[2]]
    offenders = [
        str(path.relative_to(REPO))
        for path in _tracked("nixgen", "nix")
        if path.name != "pins.json"
        and not path.is_relative_to(REPO / "nixgen" / "templates" / "init")
        and any(r in path.read_text(errors="replace") for r in revisions)
    ]
    assert not offenders, offenders
    flake = (REPO / "flake.nix").read_text()
    assert f'nixpkgs.url = "{PINS["nixpkgs"]}";' in flake
    assert f'kernel-builder.url = "{PINS["kernel-builder"]}";' in flake
    assert f'extra-substituters = [ "{PINS["substituter"]}" ];' in flake
    assert f'"{PINS["substituter-key"]}"' in flake
    for revision in revisions[:2]:
        assert flake.count(revision) == 1, revision


# ------------------------------------------------------------------------ source kinds


def test_python_reads_the_source_kinds_table() -> None:
    data = json.loads((REPO / "nix" / "data" / "source-kinds.json").read_text())
    languages = json.loads((REPO / "nix" / "data" / "languages.json").read_text())["languages"]
    compiled = {language: row["compiled"] for language, row in languages.items() if row["compiled"]}
    assert tuple(data["kinds"]["header"]) == tables.HEADER_EXTENSIONS
    assert set(tables.COMPILED_EXTENSIONS) == set(compiled)
    for language, kinds in compiled.items():
        expected = [e for kind in kinds for e in data["kinds"][kind]]
        assert list(tables.COMPILED_EXTENSIONS[language]) == list(dict.fromkeys(expected))


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="needs nix-instantiate")
def test_each_language_compiles_exactly_the_kinds_the_table_lists() -> None:
    """The Nix library's rules, evaluated: a kernel given one source of every extension
    compiles (as an object, or a Metal shader) exactly `tables.COMPILED_EXTENSIONS`. (This
    replaced a search of compile.nix for literal extension lists: a list spelt any other way
    passed it; a second home of the kinds fails this.)"""
    every = sorted({e for extensions in tables.SOURCE_KINDS.values() for e in extensions})
    sources = " ".join(json.dumps(f"k/s{i}.{e}") for i, e in enumerate(every))
    extra = {
        "cpp-cpu": ("cppCpu", ""),
        "cpp-cuda": ("cppCuda", 'cudaFlags = [ ]; capabilities = [ "8.0" ];'),
        "cpp-rocm": ("cppRocm", 'hipFlags = [ ]; archs = [ "gfx942" ];'),
        "cpp-xpu": ("cppXpu", "syclFlags = [ ];"),
        "cpp-metal": ("cppMetal", ""),
    }
    assert set(extra) == set(tables.COMPILED_EXTENSIONS)
    calls = " ".join(
        f'"{language}" = compiled (compile.{fn} {{ name = "k"; sources = [ {sources} ]; '
        f"includes = [ ]; cxxFlags = [ ]; {args} }});"
        for language, (fn, args) in extra.items()
    )
    got = nix_eval_json(
        "let compile = ((import ./nix/default.nix).withLib (import ./tests/nixpkgs/lib)).compile; "
        "compiled = p: map (o: o.source) p.objects "
        "++ builtins.concatMap (e: if builtins.length e.inputs == 1 "
        '&& builtins.match "k/.*" (builtins.head e.inputs) != null then e.inputs else [ ]) '
        f"(p.extraEdges or [ ]); in {{ {calls} }}",
        cwd=REPO,
    )
    for language, compiled in got.items():
        extensions = {path.rpartition(".")[2] for path in compiled}
        assert extensions == set(tables.COMPILED_EXTENSIONS[language]), language


# ------------------------------------------------------------------- the library's files


def test_a_vendored_library_is_complete_and_holds_nothing_unread(tmp_path: Path) -> None:
    """A project rendered outside the repository gets the library copied (`lib/`): every file
    the copy names by a relative path (`./compile.nix`, `./data/pins.json`,
    `./support/…`) is in the copy, every copied module is imported by another or by the
    generated entry, and every copied data table is read. (This replaced a test that rebuilt
    the file list with the same exclusions as the code and grepped render.py.)"""
    root = materialize(GOLDEN_CASE, tmp_path / "p")
    rendered = render.render(plan.make(project.read(root).build))
    copy = {k[len("lib/") :]: v.decode() for k, v in rendered.tree.items() if k.startswith("lib/")}
    assert copy, "no vendored library"
    named = {
        posixpath.normpath(posixpath.join(posixpath.dirname(rel), m))
        for rel, text in copy.items()
        if rel.endswith(".nix")
        for m in _path_literals(text)
    }
    missing = [n for n in named if n not in copy and not any(k.startswith(f"{n}/") for k in copy)]
    assert not missing, f"the vendored library names files it lacks: {missing}"
    entry = rendered.tree["default.nix"].decode()
    assert "(import ./lib)" in entry, entry
    unread = [
        rel
        for rel in copy
        if (rel.endswith(".nix") or rel.startswith("data/"))
        and rel != "default.nix"
        and rel not in named
    ]
    assert not unread, f"copied but never imported or read: {unread}"


_PATH = re.compile(r"\./[\w./+-]*[\w+-]")
#: What ends a `''` string's text, or escapes within it (`'''`, `''$`, `''\`).
_INDENTED_ESCAPES = ("'''", "''$", "''\\")


def _path_literals(nix: str) -> list[str]:
    """The relative path literals (`./x.nix`) of Nix text, found where Nix reads code: outside
    comments and strings, and inside `${ }` interpolations. A small lexer rather than a
    search, so a path named in a message or a doc example is not taken for a reference."""
    found: list[str] = []
    i, n = 0, len(nix)
    stack = ["code"]  # "code", '"', "''", or "${" (code inside a string or nested braces)
    while i < n:
        state, c = stack[-1], nix[i]
        if state in ("code", "${"):
            if c == "#":
                end = nix.find("\n", i)
                i = n if end < 0 else end
            elif nix.startswith("/*", i):
                i = nix.index("*/", i + 2) + 2
            elif c == '"':
                stack.append('"')
                i += 1
            elif nix.startswith("''", i):
                stack.append("''")
                i += 2
            elif c == "{" or nix.startswith("${", i):
                stack.append("${")
                i += 2 if c == "$" else 1
            elif c == "}" and state == "${":
                stack.pop()
                i += 1
            elif (m := _PATH.match(nix, i)) and not (i and re.match(r"[\w.]", nix[i - 1])):
                found.append(m[0][2:])
                i = m.end()
            else:
                i += 1
        elif state == '"':
            if c == "\\":
                i += 2
            elif nix.startswith("${", i):
                stack.append("${")
                i += 2
            else:
                i += 1
                if c == '"':
                    stack.pop()
        elif nix.startswith(_INDENTED_ESCAPES, i):
            i += 3
        elif nix.startswith("''", i):
            stack.pop()
            i += 2
        elif nix.startswith("${", i):
            stack.append("${")
            i += 2
        else:
            i += 1
    return found


def test_the_path_reader_reads_code_only() -> None:
    text = (
        'let a = ./a.nix; b = import ./b; # ./comment.nix\n /* ./doc.nix */ m = "see ./lib";\n'
        " s = \"x ${./s.py} y\"; t = ''run ${./t.sh} ''${./not} ./text''; u = { v = ./v; };"
    )
    assert _path_literals(text) == ["a.nix", "b", "s.py", "t.sh", "v"]


# ------------------------------------------------------------------------------ Jinja
# Only nixgen.core.jinja makes a Jinja environment: ruff's banned-api (pyproject.toml),
# proved to fire by tests/test_lint_rules.py.


# ------------------------------------------------------------------- NewType rules


def test_every_newtype_rule_is_read_from_the_values_table() -> None:
    """`nixgen.reading.values.NEWTYPES` is the one table of value rules: the converter, the JSON
    Schema and the unknown-value warnings read it, and nothing outside `values.py` reaches
    into its patterns."""
    import typing

    from nixgen.reading import model, values
    from nixgen.reading.convert import problems_from
    from nixgen.reading.schema import common, unknown
    from nixgen.rendering import jsonschema

    declared = {v for v in vars(model).values() if isinstance(v, typing.NewType)}
    assert declared == set(values.NEWTYPES)
    assert dict(jsonschema.NEWTYPES) == {t: r.schema for t, r in values.NEWTYPES.items()}
    assert {t: rule for t, (rule, _) in unknown._UNKNOWN.items()} == {
        t: r.unknown for t, r in values.NEWTYPES.items() if r.unknown is not None
    }
    samples = ["", "\x01", "a b", "../x", "/abs", "Bad_Name", "x" * 70, "1.2.x", "gfx", "-", "."]
    for newtype, rule in values.NEWTYPES.items():

        def says(value: str, rule: values.ValueRule = rule) -> str | None:
            """The format's rule first, then nixgen's, as the converter applies them."""
            return (rule.format(value) if rule.format else None) or rule.check(value)

        rejected = [s for s in samples if says(s)]
        assert rejected or newtype is model.Flag, newtype
        for value in rejected:
            try:
                common.STRICT.structure(value, newtype)
            except Exception as exc:  # cattrs' errors, read as problems
                messages = [p.message for p in problems_from(exc)]
            else:
                messages = []
            assert any(str(says(value)) in m for m in messages), (newtype, value, messages)
    # Nothing outside values.py reaches into its private names: ruff's SLF001
    # (pyproject.toml; tests/test_lint_rules.py proves it fires).


# ---------------------------------------------------------------- path-walking rules
# `nixgen.core.paths` is the one rule for walking project paths: ruff's banned-api refuses
# `os.walk`, `os.path.islink` and `glob` elsewhere (tests/test_lint_rules.py), and the
# hostile-tree tests hold each reader's behaviour (tests/test_path_rule_readers.py,
# tests/test_hostile_paths.py).


# ------------------------------------------------- no Nix helper kept alive by tests


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="needs nix-instantiate")
def test_every_exported_helper_of_the_plain_library_modules_is_used() -> None:
    """Each binding the plain library modules (no package set) export is used by the library, the
    templates or the generated files, not only by tests (a dead helper kept equal to
    Python by a test is a second home of a rule nothing applies).

    Kept as a text count on purpose: it is a dead-code lint of the Nix library, and no Nix
    linter here finds an exported binding nothing imports (deadnix sees one file's
    unused `let` bindings only)."""
    modules = ("versions", "cuda", "variants")
    names = nix_eval_json(
        "{ "
        + " ".join(f"{m} = builtins.attrNames (import ./nix/{m}.nix);" for m in modules)
        + " }",
        cwd=REPO,
    )
    comment = re.compile(r"/\*\*.*?\*/|#[^\n]*", re.DOTALL)
    code = [
        comment.sub("", p.read_text())
        for p in [
            *(REPO / "nix").glob("*.nix"),
            *(REPO / "nixgen" / "templates").glob("*.j2"),
            *(REPO / "tests" / "golden").rglob("*.nix"),
        ]
        if "lib" not in p.relative_to(REPO).parts  # the goldens' library copies
    ]
    unused = [
        f"{module}.{name}"
        for module, exported in names.items()
        for name in exported
        # its definition is one occurrence; a use is another
        if sum(len(re.findall(rf"(?<![\w-]){re.escape(name)}(?![\w-])", c)) for c in code) < 2
    ]
    assert not unused, unused


def test_rendered_text_is_made_canonical_in_one_place(tmp_path: Path) -> None:
    """`jinja.canonical` is the whitespace rule of rendered text (split on "\\n" only, so
    a U+2028 or form feed inside a Nix string survives): every file render writes is
    canonical, and flags holding what `str.splitlines` or `rstrip` would break reach the
    kernel file as nixlit writes them. (This replaced a search of render.py for
    `splitlines(`.)"""
    from nixgen.core import jinja
    from nixgen.rendering import nixlit

    assert jinja.canonical("a  \n\u2028 x \t\n\x0c\n\n\n") == "a\n\u2028 x\n\x0c\n"
    flags = ["vt\x0bff\x0cnel\x85ls\u2028ps\u2029", "trailing blank ", "tab\t"]
    text = (
        '[general]\nname = "canon"\nversion = 1\nedition = 6\nlicense = "MIT"\n'
        'backends = ["cpu"]\n\n[torch]\nsrc = ["torch-ext/b.cpp"]\n\n'
        '[kernel.k]\nlanguage = "cpp-cpu"\nsrc = ["k/k.cpp"]\n'
        f"cxx-flags = {json.dumps(flags, ensure_ascii=False)}\n"
    )
    root = materialize(text, tmp_path / "canon")
    rendered = render.render(plan.make(project.read(root).build))
    for rel, data in [*rendered.tree.items(), *rendered.root.items()]:
        decoded = data.decode()
        assert jinja.canonical(decoded) == decoded, rel
    kernel = next(v.decode() for k, v in rendered.tree.items() if k.endswith("k.nix"))
    for flag in flags:
        assert nixlit.string(flag) in kernel, flag
