"""The closed Nix subset nixgen reads flakes' arguments and inputs with
(`nixgen.core.nixexpr`): what it evaluates agrees with Nix, what it cannot read is refused
with its line, and no text makes it fail any other way (no recursion error, no hang)."""

from __future__ import annotations

import contextlib
import json
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nixgen.core import nixexpr

from . import nixtools


def value(text: str) -> object:
    evaluator = nixexpr.Evaluator()
    return evaluator.deep(nixexpr.evaluate(nixexpr.parse(text), evaluator))


#: Expressions of the subset and their values, each checked against Nix itself below.
CASES = [
    ("1 + 2 * 3", 7),
    ("10 - 3 - 2", 5),
    ('"a" + "b"', "ab"),
    ("[ 1 ] ++ [ 2 ] ++ [ 3 ]", [1, 2, 3]),
    ("{ a = 1; } // { b = 2; } // { a = 3; }", {"a": 3, "b": 2}),
    ("{ a.b = 1; a.c = 2; }", {"a": {"b": 1, "c": 2}}),
    ('{ a = 1; } ? a && !({ a = 1; } ? "b")', True),
    ("1 < 2 == true", True),
    ("true -> false -> true", True),
    ("(x: x.a.b or 5) { a = 1; }", 5),
    (
        'let f = v: v.cudaVersion or null; in [ (f { cudaVersion = "12.6"; }) (f { }) ]',
        ["12.6", None],
    ),
    ("let a = b + 1; b = 2; in a", 3),
    ("({ a, b ? a + 1, ... }: [ a b ]) { a = 1; c = 3; }", [1, 2]),
    ("with { x = 1; }; let y = 2; in [ x y ]", [1, 2]),
    ("let map = 1; in with { map = 2; }; map", 1),
    ('builtins.filter (s: s != "b") [ "a" "b" "c" ]', ["a", "c"]),
    ("map (x: x * 2) [ 1 2 ]", [2, 4]),
    ('builtins.compareVersions "2.10" "2.9"', 1),
    ('builtins.compareVersions "2.9pre1" "2.9"', -1),
    ('builtins.compareVersions "1.2a" "1.2.1"', -1),
    ('builtins.compareVersions "2025.3.2" "2026.0.0"', -1),
    ('builtins.elem "x" [ "y" "x" ]', True),
    ("builtins.attrNames { b = 1; a = 2; }", ["a", "b"]),
    ('builtins.removeAttrs { a = 1; b = 2; } [ "a" ]', {"b": 2}),
    ('if 1 == 1 then [ ] else throw "no"', []),
    ("let inherit ({ a = 1; b = 2; }) a; in a", 1),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_subset_evaluates_as_it_should(text: str, expected: object) -> None:
    assert value(text) == expected


@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
@pytest.mark.nix
def test_the_subset_agrees_with_nix() -> None:
    """Every case above, evaluated by Nix (one `nix-instantiate` run)."""
    expr = "[ " + " ".join(f"({text})" for text, _ in CASES) + " ]"
    done = subprocess.run(
        ["nix-instantiate", "--eval", "--strict", "--json", "--expr", expr],
        capture_output=True,
        text=True,
        env=nixtools.nix_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [expected for _, expected in CASES]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('x: "a${x}"', "a string with an interpolation"),
        ("x: ''a''", "an indented string"),
        ("rec { a = 1; }", "`rec`"),
        ("assert true; 1", "`assert`"),
        ("import ./x.nix", "undefined variable `import`"),
        ("./x.nix", "a path (./x.nix) as a value"),
        ("let a = a; in a", "infinite recursion"),
        ("let f = x: f x; in f 1", "evaluation nested too deep"),
        ("{ a = 1; a = 2; }", "attribute `a` defined twice"),
        ("1 + true", "`+` of an integer and a Boolean"),
        ('throw "stop"', "`throw` called"),
        ("(" * 80 + "1" + ")" * 80, "nested deeper than"),
    ],
)
def test_what_the_subset_cannot_read_is_refused_naming_it(text: str, why: str) -> None:
    with pytest.raises(nixexpr.Unsupported, match=r"line 1|infinite") as caught:
        value(text)
    assert why in str(caught.value)


def test_an_interpolated_or_indented_string_is_one_token() -> None:
    """What follows such a string is read as it is (a flake's `inputs` after one)."""
    text = "{ a = \"${ { b = \"}\"; }.b }\"; c = ''x ''${y} '''z''; inputs.i.url = \"u\"; }"
    kinds = [(t.kind, t.text) for t in nixexpr.tokens(text)]
    assert ("name", "inputs") in kinds and ("string", '"u"') in kinds
    assert [k for k, _ in kinds].count("interpolated") == 1
    assert [k for k, _ in kinds].count("indented") == 1


def test_a_package_set_names_its_packages() -> None:
    evaluator = nixexpr.Evaluator()
    for text in ("ps: with ps; [ einops py-cpuinfo ]", "ps: [ ps.einops ps.py-cpuinfo ]"):
        function = nixexpr.evaluate(nixexpr.parse(text), evaluator)
        assert nixexpr.apply(function, nixexpr.PackageSet(), evaluator) == [
            nixexpr.Opaque("einops"),
            nixexpr.Opaque("py-cpuinfo"),
        ]


_PIECES = st.sampled_from(
    [
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        ";",
        ":",
        "=",
        ".",
        "?",
        "!",
        "-",
        "//",
        "++",
        "||",
        "&&",
        "==",
        "<",
        " x",
        " y",
        " 1",
        ' "s"',
        " let",
        " in",
        " with",
        " if",
        " then",
        " else",
        " or",
        " inherit",
        " rec",
        " ...",
        ",",
        "@",
        "'",
        '"',
        "${",
        "''",
        " ./p",
        " builtins.map",
        " map",
        " true",
        " null",
        "\n",
        "#c\n",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=60))
def test_no_text_fails_other_than_unsupported(pieces: list[str]) -> None:
    text = "".join(pieces)
    with contextlib.suppress(nixexpr.Unsupported):
        value(text)


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=1, max_value=5000), st.sampled_from(["!", "-", "(", "[", "{a="]))
def test_deep_nesting_is_refused_not_a_recursion_error(depth: int, opener: str) -> None:
    closer = {"(": ")", "[": "]", "{a=": ";}"}.get(opener, "")
    text = opener * depth + "1" + closer * depth
    with contextlib.suppress(nixexpr.Unsupported):
        value(text)


@given(
    st.lists(st.integers(0, 30), min_size=1, max_size=4),
    st.lists(st.integers(0, 30), min_size=1, max_size=4),
)
def test_compare_versions_orders_numeric_versions_by_their_numbers(
    left: list[int], right: list[int]
) -> None:
    a, b = ".".join(map(str, left)), ".".join(map(str, right))
    padded = max(len(left), len(right))
    key = lambda parts: parts + [-1] * (padded - len(parts))  # noqa: E731
    expected = (key(left) > key(right)) - (key(left) < key(right))
    assert nixexpr.compare_versions(a, b) == expected
