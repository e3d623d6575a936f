"""nixgen.reading.convert: the strict converter on small attrs classes of its own, and the one
translation of cattrs' errors into located problems (`problems_from`)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from nixgen.core.errors import Problem
from nixgen.reading.convert import Strict, problems_from

STRICT = Strict({})


@attrs.frozen(kw_only=True)
class Inner:
    src: list[str]
    cxx_flags: list[str] = attrs.field(factory=list)


@attrs.frozen(kw_only=True)
class Outer:
    name: str
    inner: Inner | None = None
    # A private field: its init argument is its alias (`secret`), its TOML key is named.
    _secret: str = attrs.field(default="", alias="secret", metadata={"key": "secret-key"})


def problems(value: Any) -> list[Problem]:
    with pytest.raises(Exception) as caught:
        STRICT.structure(value, Outer)
    return problems_from(caught.value)


def test_each_field_is_read_from_its_toml_key_and_passed_by_its_init_alias():
    out = STRICT.structure(
        {"name": "k", "secret-key": "s", "inner": {"src": ["a.cu"], "cxx-flags": ["-O3"]}}, Outer
    )
    assert out == Outer(name="k", secret="s", inner=Inner(src=["a.cu"], cxx_flags=["-O3"]))


def test_every_failure_is_collected_with_its_key_path():
    found = problems({"name": 5, "inner": {"src": ["a.cu", 7], "cxx-flags": "-O3"}})
    assert [(p.path, p.message) for p in found] == [
        (("name",), "expected a string, got an integer `5`"),
        (("inner", "src", 1), "expected a string, got an integer `7`"),
        (("inner", "cxx-flags"), 'expected an array, got a string `"-O3"`'),
    ]


def test_a_missing_key_is_located_at_the_table_key():
    (found,) = problems({"inner": {"src": []}})
    assert (found.path, found.message, found.at_key) == (
        ("name",),
        "required key is missing",
        True,
    )


def test_an_unknown_key_names_the_closest_valid_one():
    (found,) = problems({"name": "k", "inner": {"src": [], "cxx-flag": []}})
    assert found.path == ("inner", "cxx-flag")
    assert found.at_key
    assert found.message == (
        "unknown key `cxx-flag`; did you mean `cxx-flags`?; allowed keys: `src`, `cxx-flags`"
    )


def test_a_table_key_that_breaks_its_rule_is_located_at_the_key():
    strict = Strict({})
    with pytest.raises(Exception) as caught:
        strict.structure({"a": 1, 2: 3}, dict[str, int])
    (found,) = problems_from(caught.value)
    assert (found.path, found.at_key) == ((2,), True)
    assert found.message == "expected a string, got an integer `2`"
