"""The render stage's design rules, checked on the source: rendering lays out the finished
plan (`nixgen.planning.plan.Plan`) and plans nothing itself, reads no kernel field by name with a
default, and every generated Nix file is data for one entry of the static library.

Each test would fail if a second home of planning, or Nix logic, came back: an import of a
planning function into `nixgen/rendering/render.py`, a `getattr(kernel, "x", default)`, a `let`,
`if`, operator or function call in a template.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from nixgen.core import tables
from nixgen.planning import ci, kernels, plan, project, variants
from nixgen.reading import model

REPO = Path(__file__).resolve().parent.parent
RENDER = REPO / "nixgen" / "rendering" / "render.py"
TEMPLATES = REPO / "nixgen" / "templates"

#: The modules that plan (or hold planning rules); render may read their types and
#: constants, never call their functions.
PLANNING = {
    "nixgen.planning.plan": plan,
    "nixgen.planning.variants": variants,
    "nixgen.planning.kernels": kernels,
    "nixgen.core.tables": tables,
    "nixgen.planning.ci": ci,
    "nixgen.planning.project": project,
    "nixgen.reading.model": model,
}
#: Functions of those modules render may call, and why: reading the library's shipped data
#: files (a data table such as the pins, the library's file list, a file to copy into the
#: generated tree) computes nothing.
ALLOWED_CALLS = {
    ("nixgen.core.tables", "read_text"),
    ("nixgen.core.tables", "table"),
    ("nixgen.core.tables", "library_files"),
}


def _is_type_or_constant(value: object) -> bool:
    return inspect.isclass(value) or not callable(value)


def _planning_uses(source: str) -> list[str]:
    """What `source` (a module's text) takes from the planning modules that is a function:
    imported by name, reached as an attribute of an imported module, or a module import
    of `plan`, `variants`, `kernels`, `tables` or `ci` as a whole (whose functions would
    then be in reach)."""
    tree = ast.parse(source)
    found: list[str] = []
    aliases: dict[str, str] = {}  # local name -> planning module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in PLANNING:
            module = PLANNING[node.module]
            for alias in node.names:
                value = getattr(module, alias.name)
                if (
                    not _is_type_or_constant(value)
                    and (node.module, alias.name) not in ALLOWED_CALLS
                ):
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("nixgen"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in PLANNING:
                    aliases[alias.asname or alias.name] = full
                    if full != "nixgen.reading.model":
                        found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in PLANNING:
                    found.append(f"line {node.lineno}: import {alias.name}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            full = aliases[node.value.id]
            value = getattr(PLANNING[full], node.attr, None)
            if value is not None and not _is_type_or_constant(value):
                found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_render_imports_no_planning_function() -> None:
    """Kept as an AST check on purpose: import-linter's contracts are per module, and render
    may import the planning modules' types and constants but not their functions."""
    assert _planning_uses(RENDER.read_text()) == []


@pytest.mark.parametrize(
    "source",
    [
        "from nixgen.planning import plan\n",
        "from nixgen.planning.plan import cuda_capabilities\n",
        "from nixgen.core.tables import cuda_versions\n",
        "import nixgen.planning.ci\n",
        "from nixgen.reading import model\nmodel.shared_headers(build)\n",
        "def f():\n    from nixgen.planning.plan import variants\n",
    ],
)
def test_the_import_check_catches_a_planning_call(source: str) -> None:
    assert _planning_uses(source), source


def test_the_import_check_allows_plan_types() -> None:
    source = (
        "from nixgen.planning.plan import KernelPlan, Plan\n"
        "from nixgen.reading import model\nmodel.Torch\n"
    )
    assert _planning_uses(source) == []


def _getattr_with_default(source: str) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) == 3
    ]


@pytest.mark.parametrize(
    "module",
    [
        "rendering/render.py",
        "planning/plan.py",
        "planning/variants.py",
        "planning/kernels.py",
        "planning/ci.py",
        "checking/validate.py",
    ],
)
def test_no_getattr_with_a_default(module: str) -> None:
    """Kernel fields are read through the typed plan (mypy checks them), never by name
    with a default that hides a misspelt or missing field. (An AST check: ruff's banned-api
    cannot ban a builtin, and the two-argument getattr stays allowed.)"""
    assert _getattr_with_default((REPO / "nixgen" / module).read_text()) == []
    assert _getattr_with_default('getattr(kernel, "cxx_flags", [])') == [1]


# --------------------------------------------------------------------- templates are data

#: The one call a generated Nix file may make: a library entry (`nixgen.kernel.build`),
#: the library's own entry from `default.nix`, or the tree's flake outputs from `flake.nix`.
_ENTRY = re.compile(r"nixgen(\.[A-Za-z_][\w-]*)+|\(import (\./[\w./-]*|@V@)\)(\.[A-Za-z_][\w-]*)+")
#: A function header of plain argument names (what callPackage fills in; `@V@`: checked
#: identifiers nixgen writes), optionally `name@`.
_ARG = r"\s*([A-Za-z_][\w-]*|@V@)\s*"
_HEADER = re.compile(rf"([A-Za-z_][\w-]*@)?\{{({_ARG},)*{_ARG},?\s*\}}\s*:|\{{\s*\}}\s*:")
_TOKEN = re.compile(
    r"""\s+|(?P<string>"(?:[^"\\$]|\\.)*")|(?P<path>\.{1,2}/[\w./+-]*)|(?P<value>@V@|\d+(\.\d+)?)"""
    r"""|(?P<punct>[{}\[\]=;])|(?P<name>[A-Za-z_][\w'-]*(\.[A-Za-z_"][\w"'-]*)*)|(?P<other>.)"""
)
_KEYWORDS = {"let", "in", "if", "then", "else", "with", "assert", "rec", "or", "import", "throw"}


def _nix_text(template: str) -> str:
    """A template's Nix text: Jinja comments and includes dropped, every `{{ … }}` (a
    literal nixgen writes) one placeholder `@V@`, Nix comments dropped."""
    text = re.sub(r"\{#.*?#\}", "", template, flags=re.S)
    text = re.sub(r"\{%-?\s*include [^%]*%\}", "", text)
    text = re.sub(r"\{\{.*?\}\}", "@V@", text, flags=re.S)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(
        line.split("#", 1)[0] if '"' not in line else line for line in text.split("\n")
    )


def nix_logic(template: str) -> list[str]:
    """What in `template` is not data: Jinja control flow (only `include`), Nix keywords, operators,
    references and calls other than the one library entry; [] for a data-only template."""
    problems = [
        f"Jinja `{m[1]}`" for m in re.finditer(r"\{%-?\s*(\w+)", template) if m[1] != "include"
    ]
    text = re.sub(r"\{%.*?%\}", "", _nix_text(template), flags=re.S)
    # The flake input `nixgen` (`render --library input:URL`): its settings are attribute
    # keys, and the entry point takes the input's library as its one argument.
    text = re.sub(r"\bnixgen(\.[\w-]+)+(?=\s*=)", "nixgen_input_setting", text)
    text = text.replace("(import @V@ { nixgen = nixgen.lib; })", "(import @V@)")
    headers = _HEADER.findall(text)
    if len(headers) > 1:
        problems.append(f"{len(headers)} functions (a file is at most one)")
    text = _HEADER.sub(" ", text)
    entries = [m[0] for m in _ENTRY.finditer(text)]
    if len(entries) > 1:
        problems.append(f"{len(entries)} calls ({', '.join(entries)}): one library entry at most")
    text = _ENTRY.sub(" ENTRY_ ", text, count=1)
    tokens = [(m.lastgroup, m[0]) for m in _TOKEN.finditer(text) if m.lastgroup]
    inherit = False
    for i, (kind, token) in enumerate(tokens):
        after = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        before = tokens[i - 1][1] if i else ""
        if kind == "other":
            problems.append(f"operator or syntax `{token}`")
        elif kind == "name":
            if token in ("ENTRY_", "true", "false", "null"):
                continue
            if token == "inherit":
                inherit = True
            elif token in _KEYWORDS:
                problems.append(f"keyword `{token}`")
            elif inherit or after == "=":
                pass  # an inherited name, or an attribute being defined
            elif before == "ENTRY_":
                pass  # the entry's first argument (the file's own arguments, `deps`)
            else:
                problems.append(f"reference or call `{token}`")
        elif kind == "punct" and token == ";":
            inherit = False
        elif kind == "string" and "${" in token:
            problems.append(f"interpolation in {token}")
    return problems


def _templates() -> list[Path]:
    return sorted(p for p in TEMPLATES.glob("*.j2") if p.name.endswith(".nix.j2"))


@pytest.mark.parametrize("path", _templates(), ids=lambda p: p.name)
def test_templates_hold_data_only(path: Path) -> None:
    """A template is its file's arguments, one library call and data (attribute sets,
    lists, strings, paths, the literals nixgen writes): no Nix logic."""
    assert nix_logic(path.read_text()) == []


def test_every_kernel_language_has_one_template() -> None:
    """Every kernel, whatever its language, is data for `nixgen.kernel.build`."""
    names = {p.name for p in _templates()}
    assert "kernel.nix.j2" in names
    assert not [n for n in names if n.startswith("kernel-")], names


@pytest.mark.parametrize(
    "logic",
    [
        "let x = 1; in nixgen.kernel.build { } { a = x; }",
        "{ pkgs }: nixgen.kernel.build { } { a = if true then 1 else 2; }",
        "{ pkgs }: nixgen.kernel.build { } { a = [ 1 ] ++ [ 2 ]; }",
        "{ pkgs }: nixgen.kernel.build { } { a = { } // { }; }",
        '{ pkgs }: nixgen.kernel.build { } { a = "${pkgs.x}"; }',
        "{ pkgs }: nixgen.kernel.build { } { a = pkgs.lib.concatStringsSep; }",
        "{ pkgs }: nixgen.kernel.build { } { src = nixgen.sources.select pkgs.lib; }",
        "{ pkgs }: rustPlatform.buildRustPackage { pname = {{ pname }}; }",
        "{% if x %}\n{ a = 1; }\n{% endif %}",
        "{ {% for a in args %}{{ a }}, {% endfor %} }: nixgen.kernel.build { } { }",
        "{ a }: { b }: nixgen.kernel.build { } { }",
    ],
)
def test_the_template_check_catches_nix_logic(logic: str) -> None:
    assert nix_logic(logic), logic


# ------------------------------------------------------------------ typed template contexts


def test_every_template_has_a_typed_context_naming_exactly_what_it_reads() -> None:
    """Each Nix template is rendered from one attrs class of `nixgen.rendering.render` (mypy checks
    what render passes), and reads exactly that class's fields: none missing, none unused."""
    import typing

    import attrs
    import jinja2.meta

    from nixgen.rendering import render

    contexts = typing.get_args(render.Context)
    assert {c.template for c in contexts} == {p.name for p in _templates()}
    env = render.environment()
    for context in contexts:
        source = env.loader.get_source(env, context.template)[0]
        read = jinja2.meta.find_undeclared_variables(env.parse(source))
        fields = {f.name for f in attrs.fields(context)}
        assert read == fields - {"what"}, context.template
