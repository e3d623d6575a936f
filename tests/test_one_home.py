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
import re
import subprocess
from pathlib import Path

import pytest

from nixgen.core import tables
from nixgen.rendering import render

from .nixtools import have_nix, nix_eval_json

REPO = Path(__file__).resolve().parent.parent
PINS = json.loads((REPO / "nix" / "data" / "pins.json").read_text())


def _tracked(*folders: str) -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", *folders],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [REPO / rel for rel in listed.split("\0") if rel and (REPO / rel).is_file()]


def test_data_tables_are_one_directory() -> None:
    """`nix/data` is a link to `nixgen/data` (or the other way round): one copy of each
    table, which the library reads with `builtins.readFile ./data/…` and nixgen with open()."""
    nix_data, py_data = REPO / "nix" / "data", REPO / "nixgen" / "data"
    assert nix_data.resolve() == py_data.resolve()
    assert nix_data.is_symlink() != py_data.is_symlink()


# ------------------------------------------------------------------------------- pins


def test_pins_are_read_from_the_table_by_both_languages() -> None:
    assert PINS["nixpkgs"] == render.NIXPKGS_URL
    assert PINS["kernel-builder"] == render.KERNEL_BUILDER_URL
    assert PINS["substituter"] == render.SUBSTITUTER
    assert PINS["substituter-key"] == render.SUBSTITUTER_KEY
    if have_nix():
        got = nix_eval_json(
            "let p = import ./nix/project.nix { nixgen = { versions = { }; }; }; in "
            "{ inherit (p) nixpkgsUrl kernelBuilderUrl; }",
            cwd=REPO,
        )
        assert got == {
            "nixpkgsUrl": PINS["nixpkgs"],
            "kernelBuilderUrl": PINS["kernel-builder"],
        }


def test_no_pin_is_written_outside_the_table_but_in_the_root_flake() -> None:
    """A revision or the cache key spelt in nixgen's code, templates or the Nix library is a
    second home. The root flake.nix must spell its inputs literally (flake inputs cannot be
    computed): it is held to the table here."""
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


def test_no_extension_list_is_written_in_the_nix_library() -> None:
    """`compile.nix` names kinds (`kinds.cuda`), never extensions: a literal list such as
    `[ "cu" ]` or a suffix test such as `hasSuffix ".metal"` would be a second home."""
    text = (REPO / "nix" / "compile.nix").read_text()
    code = "\n".join(
        line
        for line in text.splitlines()
        if not line.lstrip().startswith(("#", "=>", "(plan", "map "))
    )
    every = {e for extensions in tables.SOURCE_KINDS.values() for e in extensions}
    literal = re.findall(r'extensions = \[([^]]*)\]|hasSuffix "\.([\w+]+)"', code)
    assert not [m for m in literal if any(e in str(m) for e in every)], literal


@pytest.mark.skipif(not have_nix(), reason="needs nix-instantiate")
def test_each_language_compiles_exactly_the_kinds_the_table_lists() -> None:
    """The Nix library's rules, evaluated: a kernel given one source of every extension
    compiles (as an object, or a Metal shader) exactly `tables.COMPILED_EXTENSIONS`."""
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


def test_the_library_directory_is_the_list_of_library_files() -> None:
    on_disk = {
        str(p.relative_to(REPO / "nix"))
        for p in (REPO / "nix").rglob("*")
        if p.is_file()
        and not {"tests", "data", "__pycache__"} & set(p.relative_to(REPO / "nix").parts)
    }
    assert set(render.LIB_FILES) == on_disk
    assert "LIB_FILES = (" not in (REPO / "nixgen" / "rendering" / "render.py").read_text()
    used = {
        m
        for p in (REPO / "nix").rglob("*.nix")
        if "tests" not in p.relative_to(REPO / "nix").parts
        for m in re.findall(r"\./data/([\w.-]+\.json)", p.read_text())
    }
    assert used == set(render.LIB_DATA)


# ------------------------------------------------------------------------------ Jinja


def test_jinja_is_configured_in_one_place() -> None:
    """Only `nixgen.core.jinja` makes a Jinja2 environment or states its settings; every other
    module asks it (`jinja.environment(loader, **options)`)."""
    settings = (
        "jinja2.Environment(",
        "undefined=",
        "trim_blocks=",
        "lstrip_blocks=",
        "autoescape=",
    )
    offenders = [
        (str(path.relative_to(REPO)), word)
        for path in _tracked("nixgen")
        if path.suffix == ".py" and path.name != "jinja.py"
        for word in settings
        if word in path.read_text()
    ]
    assert not offenders, offenders


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
    private = re.compile(r"\bvalues\._[A-Za-z]")
    offenders = [
        str(p.relative_to(REPO))
        for p in _tracked("nixgen")
        if p.suffix == ".py" and private.search(p.read_text())
    ]
    assert not offenders, offenders


# ---------------------------------------------------------------- path-walking rules


def test_one_path_walking_rule() -> None:
    """`nixgen.core.paths.check_dirs` is the one rule for walking a project path component by
    component (`paths.walk` the one tree walk): `write` and `validate` call it, and
    neither walks with `is_symlink` or `os.walk` of its own."""
    walkers = re.compile(r"\.is_symlink\(\)|\bos\.walk\(|\.rglob\(")
    for module in ("writing/write.py", "checking/validate.py"):
        found = walkers.findall((REPO / "nixgen" / module).read_text())
        assert not found, (module, found)
    for module in ("writing/write.py", "checking/validate.py"):
        assert "paths.check_dirs(" in (REPO / "nixgen" / module).read_text(), module


# ------------------------------------------------- no Nix helper kept alive by tests


@pytest.mark.skipif(not have_nix(), reason="needs nix-instantiate")
def test_every_exported_helper_of_the_plain_library_modules_is_used() -> None:
    """Each binding the plain library modules (no package set) export is used by the library, the
    templates or the generated files, not only by tests (a dead helper kept equal to
    Python by a test is a second home of a rule nothing applies)."""
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


def test_rendered_text_is_made_canonical_in_one_place() -> None:
    """`jinja.canonical` is the whitespace rule of rendered text (split on "\\n" only, so
    a U+2028 or form feed inside a Nix string survives); render uses it, not a copy."""
    from nixgen.core import jinja

    assert jinja.canonical("a  \n\u2028 x \t\n\x0c\n\n\n") == "a\n\u2028 x\n\x0c\n"
    text = (REPO / "nixgen" / "rendering" / "render.py").read_text()
    assert "jinja.canonical(" in text
    assert "splitlines(" not in text and 'rstrip(" \\t")' not in text
