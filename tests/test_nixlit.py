"""Tests for nixgen.rendering.nixlit, the module that turns Python data into Nix literals.

The tests that need Nix evaluate real ``nix-instantiate`` output and are skipped when it
is not installed. Hypothesis examples for those tests are collected first and then
evaluated in a single Nix call. That keeps the file fast, but Hypothesis cannot shrink a
failure, so the assertions report the shortest failing examples instead.
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import jinja2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nixgen.rendering.nixlit import (
    NixLiteralError,
    Raw,
    attr_name,
    finalize,
    raw,
    string,
    unrepresentable,
    value,
)

NIX_INSTANTIATE = shutil.which("nix-instantiate")
needs_nix = [
    pytest.mark.nix,
    pytest.mark.skipif(NIX_INSTANTIATE is None, reason="nix-instantiate is not installed"),
]

KEYWORDS = ["assert", "else", "if", "in", "inherit", "let", "or", "rec", "then", "with"]
# Builtins that Nix accepts as bare attribute names in every position we tried (2.8, 2.26).
BARE_BUILTINS = ["throw", "import", "true", "false", "null", "abort", "builtins"]

FIXED = settings(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def budget(max_examples: int) -> settings:
    """A fixed, reproducible Hypothesis budget of `max_examples`."""
    return settings(FIXED, max_examples=max_examples)


# Characters that a lexer-level bug would involve, mixed generously into random text.
TRICKY = [*"$${}\"\\'\n\r\t .", "''", "${", "$${", "\\$", "''${", "\r\n", "\x7f", "\u2028"]
representable_char = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")
representable_text = st.lists(
    st.one_of(st.sampled_from(TRICKY), representable_char), max_size=12
).map("".join)
any_text = st.lists(
    st.one_of(st.sampled_from(["\x00", "\ud800", "\udfff", "$", "a"]), st.characters()),
    max_size=8,
).map("".join)
names = st.one_of(
    st.sampled_from(
        [*KEYWORDS, *BARE_BUILTINS, "__curPos", "", "0", "a.b", "-a", "'a", "a b", "${x}"]
    ),
    st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_'-]*", fullmatch=True),
    representable_text,
)
# `outPath` and `__toString` change how Nix prints an attrset as JSON, so data keys avoid them.
data_keys = names.filter(lambda key: key not in ("outPath", "__toString"))
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=False),
    representable_text,
)
json_data = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(data_keys, children, max_size=6)
    ),
    max_leaves=25,
)


def collect(strategy: st.SearchStrategy, max_examples: int) -> list:
    """Draw a fixed, reproducible set of examples from `strategy`."""
    examples: list = []

    @budget(max_examples)
    @given(strategy)
    def draw(example: object) -> None:
        examples.append(example)

    draw()
    return examples


def shortest(pairs: list[tuple[object, object]], count: int = 5) -> list[tuple[object, object]]:
    """Pick the `count` shortest failing pairs, ordered by size, for a readable assertion."""
    return sorted(pairs, key=lambda pair: len(repr(pair)))[:count]


@pytest.fixture(scope="module")
def nix_eval(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str | bytes], object]:
    """Evaluate Nix source (from a file, as generated files are read) and return its JSON."""
    directory = tmp_path_factory.mktemp("nix")
    counter = itertools.count()

    def evaluate(source: str | bytes) -> object:
        path = directory / f"expr{next(counter)}.nix"
        path.write_bytes(source.encode() if isinstance(source, str) else source)
        result = subprocess.run(
            [NIX_INSTANTIATE, "--eval", "--strict", "--json", str(path)],
            capture_output=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr.decode(errors="replace")
        return json.loads(result.stdout.decode())

    return evaluate


def same_data(expected: object, got: object) -> bool:
    """Compare data with Nix's JSON output, which prints floats with 6 significant digits."""
    if isinstance(expected, float):
        return isinstance(got, int | float) and math.isclose(expected, got, rel_tol=1e-5)
    if isinstance(expected, list):
        return (
            isinstance(got, list)
            and len(got) == len(expected)
            and all(map(same_data, expected, got))
        )
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and got.keys() == expected.keys()
            and all(same_data(expected[key], got[key]) for key in expected)
        )
    return type(got) is type(expected) and got == expected


# --- string -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "literal"),
    [
        ("", '""'),
        ("plain", '"plain"'),
        ('say "hi"', r'"say \"hi\""'),
        ("C:\\dir\\", r'"C:\\dir\\"'),
        ("${pkgs.evil}", r'"\${pkgs.evil}"'),
        ("$${x}", r'"$\${x}"'),
        ("$$", '"$$"'),
        ("cost: 5$", '"cost: 5$"'),
        ("$", '"$"'),
        ("{$}", '"{$}"'),
        ("\\${x}", r'"\\\${x}"'),
        ("it''s ''${x}", "\"it''s ''\\${x}\""),
        ("a\nb\r\nc\td", r'"a\nb\r\nc\td"'),
        ("\x0b\x1b\x7f\x85", '"\x0b\x1b\x7f\x85"'),
        ("é\u2028😀", '"é\u2028😀"'),
    ],
)
def test_string_escapes(text: str, literal: str) -> None:
    assert string(text) == literal


def test_string_rejects_nul_with_its_index() -> None:
    with pytest.raises(NixLiteralError, match=r"NUL character \(U\+0000\).*index 3"):
        string("abc\x00def")


def test_string_rejects_lone_surrogate() -> None:
    with pytest.raises(NixLiteralError, match=r"surrogate \(U\+D83D.*index 1"):
        string("a\ud83d")


def test_string_needs_str() -> None:
    with pytest.raises(TypeError):
        string(b"bytes")  # type: ignore[arg-type]


def _read_nix_string(literal: str) -> str:
    """Model how Nix reads a double-quoted literal, rejecting anything `string` must not emit."""
    assert literal[0] == literal[-1] == '"'
    out, body, i = [], literal[1:-1], 0
    while i < len(body):
        char = body[i]
        assert char not in '"\n\r', f"unescaped {char!r} in {literal!r}"
        if char == "\\":
            escaped = body[i + 1]
            assert escaped in '\\"$nrt', f"escape \\{escaped} in {literal!r}"
            out.append({"n": "\n", "r": "\r", "t": "\t"}.get(escaped, escaped))
            i += 2
            continue
        assert body[i : i + 2] != "${", f"interpolation in {literal!r}"
        out.append(char)
        i += 1
    return "".join(out)


@budget(500)
@given(representable_text)
def test_string_uses_only_nix_escapes(text: str) -> None:
    assert _read_nix_string(string(text)) == text


# --- unrepresentable ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "index"),
    [
        ("", None),
        ("ordinary \t\n\r\x01\x1f\x7f\x9f\u2028\ufeff\uffff\U0010ffff", None),
        ("\x00", 0),
        ("ab\x00\x00", 2),
        ("x\udc00", 1),
        ("\ud800\x00", 0),
    ],
)
def test_unrepresentable(text: str, index: int | None) -> None:
    assert unrepresentable(text) == index


@budget(300)
@given(any_text)
def test_unrepresentable_is_first_nul_or_surrogate_and_string_agrees(text: str) -> None:
    bad = [i for i, char in enumerate(text) if char == "\x00" or 0xD800 <= ord(char) <= 0xDFFF]
    assert unrepresentable(text) == (bad[0] if bad else None)
    if bad:
        with pytest.raises(NixLiteralError, match=rf"index {bad[0]}\)"):
            string(text)
    else:
        string(text)


# --- attribute names ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "_", "A_b", "cuda-12", "x'", "a''", "_0", *BARE_BUILTINS])
def test_attr_name_bare(name: str) -> None:
    assert attr_name(name) == name


@pytest.mark.parametrize(
    ("name", "literal"),
    [
        *((keyword, f'"{keyword}"') for keyword in KEYWORDS),
        ("__curPos", '"__curPos"'),
        ("", '""'),
        ("a.b", '"a.b"'),
        ("0a", '"0a"'),
        ("12", '"12"'),
        ("-a", '"-a"'),
        ("'a", '"\'a"'),
        ("a b", '"a b"'),
        ("é", '"é"'),
        ("${x}", r'"\${x}"'),
        ('a"b', r'"a\"b"'),
    ],
)
def test_attr_name_quoted(name: str, literal: str) -> None:
    assert attr_name(name) == literal


def test_attr_name_rejects_nul_and_non_str() -> None:
    with pytest.raises(NixLiteralError, match="NUL"):
        attr_name("a\x00")
    with pytest.raises(TypeError):
        attr_name(1)  # type: ignore[arg-type]


# --- Raw ----------------------------------------------------------------------------


def test_raw_marks_text_and_loses_the_mark_when_changed() -> None:
    marked = raw("pkgs.hello")
    assert isinstance(marked, Raw)
    assert marked == "pkgs.hello"
    assert repr(marked) == "Raw('pkgs.hello')"
    assert not isinstance(marked + " x", Raw)
    with pytest.raises(TypeError):
        raw(3)  # type: ignore[arg-type]


# --- value --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "text"),
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (0, "0"),
        (42, "42"),
        (-1, "(-1)"),
        (2**63 - 1, "9223372036854775807"),
        (-(2**63), "(-9223372036854775807 - 1)"),
        (1.0, "1.0"),
        (0.1, "0.1"),
        (-2.5, "(-2.5)"),
        (-0.0, "0.0"),
        (1e-05, "1.0e-05"),
        (1.5e16, "1.5e+16"),
        (sys.float_info.min, "2.2250738585072014e-308"),
        ("x${y}", r'"x\${y}"'),
        (raw("pkgs.lib.id"), "pkgs.lib.id"),
        ([], "[ ]"),
        ((), "[ ]"),
        ({}, "{ }"),
    ],
)
def test_value_scalars_and_empty_containers(obj: object, text: str) -> None:
    assert value(obj) == text


@pytest.mark.parametrize(
    "obj", [math.nan, math.inf, -math.inf, 5e-324, 2**63, -(2**63) - 1, "a\x00", [{"k": "\x00"}]]
)
def test_value_rejects_what_nix_cannot_express(obj: object) -> None:
    with pytest.raises(NixLiteralError):
        value(obj)


@pytest.mark.parametrize("obj", [{1: "a"}, {"a": {None: 1}}, {1, 2}, b"x", object(), [1j]])
def test_value_rejects_other_types(obj: object) -> None:
    with pytest.raises(TypeError):
        value(obj)


NESTED = {
    "version": 2,
    "name": "relu",
    "if": [],
    "a.b": {},
    "flags": ["-O3", "--use_fast_math", -1, None, True, 0.5],
    "archs": ["sm_80" * 4, "sm_86" * 4, "sm_89" * 4, "sm_90" * 4],
    "deps": [["torch"], {"cuda": raw("pkgs.cudaPackages")}],
}
NESTED_TEXT = """\
{
  "a.b" = { };
  archs = [
    "sm_80sm_80sm_80sm_80"
    "sm_86sm_86sm_86sm_86"
    "sm_89sm_89sm_89sm_89"
    "sm_90sm_90sm_90sm_90"
  ];
  deps = [
    [ "torch" ]
    {
      cuda = pkgs.cudaPackages;
    }
  ];
  flags = [ "-O3" "--use_fast_math" (-1) null true 0.5 ];
  "if" = [ ];
  name = "relu";
  version = 2;
}"""


def test_value_layout_of_nested_data() -> None:
    assert value(NESTED) == NESTED_TEXT


def test_value_indent_moves_closing_brackets_and_nested_lines() -> None:
    assert value({"a": [{"b": 1}]}, indent=4) == (
        "{\n      a = [\n        {\n          b = 1;\n        }\n      ];\n    }"
    )


def test_value_list_breaks_past_80_columns() -> None:
    fits = ["x" * 74]  # '[ "xxx…" ]' is exactly 80 characters
    assert value(fits) == f'[ "{"x" * 74}" ]'
    assert value(fits, indent=1) == f'[\n   "{"x" * 74}"\n ]'
    # Inside a dict, `  k = ` before the list and `;` after it count too: 2 + 4 + 73 + 1 = 80.
    assert value({"k": ["x" * 67]}) == f'{{\n  k = [ "{"x" * 67}" ];\n}}'
    assert value({"k": ["x" * 68]}) == f'{{\n  k = [\n    "{"x" * 68}"\n  ];\n}}'


def test_value_puts_multiline_raw_on_its_own_line() -> None:
    assert value([raw("let x = 1;\nin x")]) == "[\n  let x = 1;\nin x\n]"


@budget(200)
@given(json_data)
@pytest.mark.slow
def test_value_is_canonical(data: object) -> None:
    text = value(data)
    assert not any(line != line.rstrip() for line in text.split("\n"))
    if isinstance(data, dict):
        assert value(dict(reversed(list(data.items())))) == text
    assert all(line.startswith("  ") for line in value(data, indent=2).split("\n")[1:])


# --- finalize and Jinja -------------------------------------------------------------


def test_finalize_passes_raw_and_escapes_the_rest() -> None:
    marked = raw("./.")
    assert finalize(marked) == "./."  # written as it is, not quoted
    assert finalize("./.") == '"./."'
    assert finalize(["a", 1]) == '[ "a" 1 ]'


TEMPLATE = "{ pname = {{ name }}; version = {{ version }}; src = {{ src }}; tags = {{ tags }}; }\n"
HOSTILE = '"; x = builtins.abort "pwned"; y = "${builtins.abort "pwned"}\\'


def render(**context: object) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, finalize=finalize, autoescape=False)
    return env.from_string(TEMPLATE).render(**context)


def test_jinja_template_escapes_every_interpolation() -> None:
    text = render(name=HOSTILE, version="1.0", src=raw("./."), tags=[HOSTILE])
    assert text.startswith(r'{ pname = "\"; x = builtins.abort \"pwned\"; y = \"\${builtins')


# --- against Nix --------------------------------------------------------------------


def nix_test(function: Callable) -> Callable:
    """Mark a test as needing nix-instantiate."""
    for mark in needs_nix:
        function = mark(function)
    return function


@nix_test
def test_nix_reads_back_hostile_template_data(nix_eval: Callable) -> None:
    text = render(name=HOSTILE, version="1.0", src=raw('"/src"'), tags=[HOSTILE, "$"])
    assert nix_eval(text) == {
        "pname": HOSTILE,
        "version": "1.0",
        "src": "/src",
        "tags": [HOSTILE, "$"],
    }


@nix_test
def test_nix_reads_back_every_code_point(nix_eval: Callable) -> None:
    code_points = [c for c in range(1, sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    assert all(unrepresentable(chr(c)) is None for c in code_points)
    chunks = [
        "".join(map(chr, code_points[i : i + 4096])) for i in range(0, len(code_points), 4096)
    ]
    got = nix_eval(value(chunks))
    differing = [i for i, (a, b) in enumerate(zip(chunks, got, strict=False)) if a != b]
    assert got == chunks, differing[:5]


def _nix_version() -> tuple[int, ...]:
    from nixgen.building import nixcheck

    version = nixcheck.nix_version()
    assert version is not None
    return version


@nix_test
def test_nix_cannot_carry_what_unrepresentable_reports(tmp_path: Path) -> None:
    """What Nix does with what `unrepresentable` reports changed (2.8 → 2.26), but never gives
    it back: Nix 2.8 cut a string at a raw NUL and printed a forced-in surrogate's bytes as
    they were; 2.26 refuses both with an error. Either way the escaper must report them."""

    def evaluate(source: bytes) -> subprocess.CompletedProcess[bytes]:
        path = tmp_path / "expr.nix"
        path.write_bytes(source)
        command = [str(NIX_INSTANTIATE), "--eval", "--strict", "--json", str(path)]
        return subprocess.run(command, capture_output=True, timeout=120, check=False)

    # Seen on 2.8 and on 2.26.3; a Nix between them may do either.
    version = _nix_version()[:2]
    cuts, refuses = version <= (2, 8), version >= (2, 26)
    # Written raw, a NUL cuts the literal short (2.8), or is refused (2.26).
    done = evaluate(b'"a\x00b" + "c"')
    if done.returncode == 0:
        assert not refuses and json.loads(done.stdout) == "ac"
    else:
        assert not cuts
        assert b"cannot be represented as Nix string because it contains null bytes" in done.stderr
    assert unrepresentable("a\x00b") == 1
    # A surrogate has no UTF-8 encoding, so a generated file cannot hold it, and if its
    # CESU-8 bytes are forced in anyway, Nix 2.8 prints them, not UTF-8, and 2.26 refuses to.
    with pytest.raises(UnicodeEncodeError):
        '"a\ud800b"'.encode()
    done = evaluate('"a\ud800b"'.encode("utf-8", "surrogatepass"))
    if done.returncode == 0:
        assert not refuses
        with pytest.raises(UnicodeDecodeError):
            done.stdout.decode()
    else:
        assert not cuts
        assert b"JSON serialization error" in done.stderr and b"invalid UTF-8" in done.stderr
    assert unrepresentable("a\ud800b") == 1


@nix_test
def test_nix_reads_back_string(nix_eval: Callable) -> None:
    texts = collect(representable_text, 2000)
    got = nix_eval("[\n" + "\n".join(map(string, texts)) + "\n]")
    assert got == texts, shortest([(t, g) for t, g in zip(texts, got, strict=False) if t != g])


@nix_test
def test_nix_reads_back_attr_names_in_a_dotted_path(nix_eval: Callable) -> None:
    pairs = collect(st.tuples(names, names), 1000)
    entries = []
    for outer, inner in pairs:
        path = f"{attr_name(outer)}.{attr_name(inner)}"
        entries.append(
            f"(let x = {{ {path} = 1; }}; in "
            f"[ (builtins.attrNames x) (builtins.attrNames x.{attr_name(outer)}) x.{path} ])"
        )
    got = nix_eval("[\n" + "\n".join(entries) + "\n]")
    expected = [[[outer], [inner], 1] for outer, inner in pairs]
    assert got == expected, shortest(
        [(e, g) for e, g in zip(expected, got, strict=False) if e != g]
    )


@nix_test
def test_nix_reads_back_value(nix_eval: Callable) -> None:
    data = collect(json_data, 500)
    reference = string(json.dumps(data, ensure_ascii=False))
    # Nix compares floats exactly with `==`, but prints them with only 6 digits of JSON.
    source = (
        f"let\n  data = {value(data, indent=2)};\n  reference = builtins.fromJSON {reference};\n"
        "in {\n  inherit data;\n"
        "  same = builtins.genList (i: builtins.elemAt data i == builtins.elemAt reference i)"
        " (builtins.length data);\n}\n"
    )
    got = nix_eval(source)
    assert isinstance(got, dict)
    exact = [d for d, same in zip(data, got["same"], strict=True) if not same]
    assert not exact, shortest([(d, value(d)) for d in exact])
    assert len(got["data"]) == len(data)
    printed = [(d, g) for d, g in zip(data, got["data"], strict=True) if not same_data(d, g)]
    assert not printed, shortest(printed)


@nix_test
def test_nix_reads_back_layout_examples(nix_eval: Callable) -> None:
    expected = {**NESTED, "deps": [["torch"], {"cuda": 7}]}
    assert nix_eval(f"let pkgs.cudaPackages = 7; in {NESTED_TEXT}") == expected
    assert nix_eval(value([-(2**63), -1, 2**63 - 1, -0.5, 1e-05])) == [
        -(2**63),
        -1,
        2**63 - 1,
        -0.5,
        1e-05,
    ]
