"""nixgen.core.tomledit: format-preserving edits of TOML text (used by `nixgen migrate`)."""

from __future__ import annotations

import pytest
import tomli
from hypothesis import given, settings
from hypothesis import strategies as st

from nixgen.core import tomledit


def test_unchanged_keys_keep_comments_order_and_layout() -> None:
    text = '# head\n[a]\nz = 1  # keep me\ny = "x"\n\n[b]\nk = [1, 2]\n'
    wanted = {"a": {"z": 1, "y": "x", "new": True}, "b": {"k": [1, 2]}}
    out = tomledit.rewrite(text, wanted)
    assert tomli.loads(out) == wanted
    assert out.startswith('# head\n[a]\nz = 1  # keep me\ny = "x"\n')
    assert "[b]\nk = [1, 2]\n" in out


def test_renamed_key_keeps_its_place_and_comment() -> None:
    text = '[k]\nsrc = ["a"]\nbackend = "cuda"  # the backend\ndepends = []\n'
    wanted = {"k": {"src": ["a"], "language": "cpp-cuda", "depends": []}}
    out = tomledit.rewrite(text, wanted, {"backend": "language"})
    assert out == '[k]\nsrc = ["a"]\nlanguage = "cpp-cuda"  # the backend\ndepends = []\n'


def test_array_edits_keep_element_comments() -> None:
    text = 'a = [\n  "x", # first\n  "y",\n]\n'
    out = tomledit.rewrite(text, {"a": ["x", "y", "z"]})
    assert tomli.loads(out) == {"a": ["x", "y", "z"]}
    assert "# first" in out


def test_removed_key_leaves_its_comment() -> None:
    text = "[g]\nname = 'n'\nold = 1  # why old\n"
    out = tomledit.rewrite(text, {"g": {"name": "n"}})
    assert tomli.loads(out) == {"g": {"name": "n"}}
    assert "# why old" in out
    assert "name = 'n'" in out  # a literal string stays literal


def test_new_table_goes_after_its_predecessor() -> None:
    text = "[a]\nx = 1\n\n[c]\nz = 3\n"
    out = tomledit.rewrite(text, {"a": {"x": 1}, "b": {"y": 2}, "c": {"z": 3}})
    assert out == "[a]\nx = 1\n\n[b]\ny = 2\n\n[c]\nz = 3\n"


def test_read_back_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit that would not parse to the wanted document raises instead of returning."""
    monkeypatch.setattr(tomledit, "_value_like", lambda item, value: __import__("tomlkit").item(0))
    with pytest.raises(tomledit.ReadBackError):
        tomledit.rewrite("a = 1\n", {"a": 2})


def test_tomlkit_private_names_still_exist() -> None:
    """The three private tomlkit names tomledit relies on (pinned in pyproject.toml)."""
    import tomlkit
    from tomlkit.container import Container

    assert callable(getattr(Container, "_replace", None))
    assert callable(getattr(Container, "_insert_at", None))
    array = tomlkit.parse("a = [\n  1, # c\n]\n")["a"]
    groups = tomledit._array_comments(array)
    assert [g.comment.trivia.comment.strip() for g in groups] == ["# c"]


# ----------------------------------------------- a key is its parsed name, not its spelling


def _spell(key: str, how: str) -> str:
    """`key` written the way `how` says: bare, basic or literal quoted, or escaped."""
    if how == "bare":
        return key
    if how == "basic":
        return f'"{key}"'
    if how == "literal":
        return f"'{key}'"
    return '"' + "".join(f"\\u{ord(c):04x}" if i == 0 else c for i, c in enumerate(key)) + '"'


SPELLINGS = st.sampled_from(["bare", "basic", "literal", "escaped"])
KEYS = st.sampled_from(["out", "library", "offline", "nixpkgs", "a-b", "x_1"])
VALUES = st.one_of(st.text(alphabet="abc/:-", max_size=6), st.booleans(), st.integers(0, 9))


@settings(max_examples=200, deadline=None)
@given(
    top=st.dictionaries(KEYS, st.tuples(SPELLINGS, VALUES), max_size=4),
    inner=st.dictionaries(KEYS, st.tuples(SPELLINGS, VALUES), max_size=3),
    table=SPELLINGS,
    changes=st.dictionaries(KEYS, VALUES, max_size=4),
    inner_changes=st.dictionaries(KEYS, VALUES, max_size=3),
)
def test_a_key_is_found_however_it_is_spelled(
    top: dict[str, tuple[str, object]],
    inner: dict[str, tuple[str, object]],
    table: str,
    changes: dict[str, object],
    inner_changes: dict[str, object],
) -> None:
    """Setting a key the file writes quoted, literal or escaped replaces it in place:
    the edit never adds a second definition of the same key (which no TOML reader
    accepts), and the text reads back as exactly the document wanted."""
    lines = [f"{_spell(k, how)} = {tomli_w(v)}" for k, (how, v) in top.items()]
    lines.append(f"[{_spell('override-input', table)}]")
    lines += [f"{_spell(k, how)} = {tomli_w(v)}  # note" for k, (how, v) in inner.items()]
    text = "\n".join(lines) + "\n"
    data = tomli.loads(text)
    wanted = {**{k: v for k, v in data.items() if k != "override-input"}, **changes}
    wanted["override-input"] = {**data["override-input"], **inner_changes}
    out = tomledit.rewrite(text, wanted)
    assert tomli.loads(out) == wanted
    for key, (how, _) in inner.items():
        if key not in inner_changes:
            assert f"{_spell(key, how)} = " in out  # an unchanged key keeps its spelling


def tomli_w(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return '"' + str(value) + '"'
