"""nixgen.core.tomledit: format-preserving edits of TOML text (used by `nixgen migrate`)."""

from __future__ import annotations

import pytest
import tomli

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
