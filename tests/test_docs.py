"""The generated build.toml reference is fresh and complete; the migration guide is true."""

from __future__ import annotations

import re

import attrs
import pytest
import tomli

from nixgen.app import migrate
from nixgen.reading import convert, model
from nixgen.rendering import docs, jsonschema

from .conftest import REPO

REFERENCE = REPO / "docs" / "build-toml.md"
GUIDE = REPO / "docs" / "migrating-from-edition-5.md"


def test_committed_reference_is_fresh():
    assert REFERENCE.read_text(encoding="utf-8") == docs.reference(), (
        "docs/build-toml.md is stale: run `python -m nixgen.rendering.docs docs/build-toml.md`"
    )


def _section(text: str, heading: str) -> str:
    start = text.index(f"{heading}\n")
    following = re.search(r"^#{2,3} ", text[start + len(heading) :], re.M)
    end = start + len(heading) + following.start() if following else len(text)
    return text[start:end]


@pytest.mark.parametrize(
    ("heading", "cls"),
    [
        ("## `[general]`", model.General),
        ("### `[general.cuda]`", model.CudaGeneral),
        ("### `[general.hub]`", model.Hub),
        ("## `[torch]`", model.Torch),
        ("## `[torch-noarch]`", model.TorchNoarch),
        ("## `[tvm-ffi]`", model.TvmFfi),
        ("## `[mlx-noarch]`", model.MlxNoarch),
        *(
            (f'### `language = "{language}"`', cls)
            for language, cls in model.KERNEL_CLASSES.items()
        ),
    ],
    ids=lambda x: x if isinstance(x, str) else x.__name__,
)
def test_every_key_is_documented_in_its_section(heading, cls):
    section = _section(docs.reference(), heading)
    rows = re.findall(r"^\| `([a-z_-]+)` \|", section, re.M)
    assert rows == [convert.key_of(f) for f in attrs.fields(cls) if model.in_build_toml(f)]


def test_required_keys_and_defaults_are_stated():
    general = _section(docs.reference(), "## `[general]`")
    assert "| `name` | [`ProjectName`](#projectname) | required |" in general
    torch = _section(docs.reference(), "## `[torch]`")
    assert '| `pyext` | array of [`Extension`](#extension) | default `["py", "pyi"]` |' in torch


def test_internal_links_point_at_headings():
    text = docs.reference()
    anchors = {docs._slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}
    links = set(re.findall(r"\]\(#([^)]+)\)", text))
    assert links, "the reference links its value types"
    assert links <= anchors, f"dangling links: {sorted(links - anchors)}"


def test_value_types_show_their_rules():
    text = docs.reference()
    version = _section(text, "### `Version`")
    assert jsonschema.SCHEMA_ID not in version
    assert "`^[0-9]+\\.[0-9]+$`" in version
    assert "`cutlass_4_5`" in _section(text, "### `CudaDep`")


def test_unexpressible_rules_are_listed():
    text = docs.reference()
    for rule in jsonschema.NOT_EXPRESSED:
        assert rule[1:] in text


def test_regenerating_writes_then_reports_up_to_date(tmp_path, capsys):
    target = tmp_path / "build-toml.md"
    assert docs.main([str(target)]) == 0
    assert target.read_text(encoding="utf-8") == docs.reference()
    assert docs.main([str(target)]) == 0
    assert "up to date" in capsys.readouterr().out


# ------------------------------------------------------------------- migration guide


def _examples() -> list[tuple[str, str]]:
    text = GUIDE.read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- migration: (before|after) -->\n```toml\n(.*?)```", text, re.S)
    pairs = []
    for (kind_a, before), (kind_b, after) in zip(blocks[::2], blocks[1::2], strict=True):
        assert (kind_a, kind_b) == ("before", "after")
        pairs.append((before, after))
    return pairs


def test_guide_has_examples():
    assert len(_examples()) >= 2


@pytest.mark.parametrize("index", range(len(_examples())))
def test_guide_example_is_what_nixgen_migrate_writes(tmp_path, index):
    before, after = _examples()[index]
    assert tomli.loads(before)["general"]["edition"] == 5
    path = tmp_path / "build.toml"
    path.write_text(before, encoding="utf-8")
    migration = migrate.plan(path)
    assert migration.edition == 5
    assert migration.after == after


def test_guide_names_every_kernel_language():
    text = GUIDE.read_text(encoding="utf-8")
    for language in model.KERNEL_CLASSES:
        assert f"`{language}`" in text or f'"{language}"' in text


#: kernel-builder's verbs at the pinned revision (huggingface/kernels `kernel-builder/src/
#: main.rs`, `Commands`; `fill-card` and `generate-docs` are hidden there).
KERNEL_BUILDER_VERBS = (
    "completions",
    "init",
    "build",
    "build-and-copy",
    "build-and-upload",
    "upload",
    "check-config",
    "check-abi",
    "check-builds",
    "create-pyproject",
    "clean-pyproject",
    "devshell",
    "testshell",
    "list-variants",
    "hash",
    "update-build",
    "skills",
    "fill-card",
    "generate-docs",
)


def test_the_guide_answers_every_kernel_builder_verb():
    """Each verb has its row (nixgen's answer, or "none"), and each nixgen verb the table
    names is one nixgen has."""
    from nixgen.cmdline.cli import ALIASES, COMMANDS

    table = _section(GUIDE.read_text(encoding="utf-8"), "## Around `build.toml`")
    rows = [line for line in table.splitlines() if line.startswith("| `kernel-builder ")]
    named = {re.match(r"\| `kernel-builder ([a-z-]+)", row).group(1) for row in rows}
    assert named == set(KERNEL_BUILDER_VERBS)
    for row in rows:
        answer = row.split(" | ", 1)[1]
        verbs = re.findall(r"`nixgen ([a-z-]+)", answer)
        assert verbs or answer.startswith("none"), row
        assert set(verbs) <= {*COMMANDS, *ALIASES}, row


def test_the_client_contract_is_the_installed_clients():
    """docs/kernels-client-contract.md describes the client the lock installs, and each of
    its `file:line` references is a line of that client's `kernels/_internals/`."""
    from importlib import metadata, util

    spec = util.find_spec("kernels")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the kernels client is not installed")
    version = metadata.version("kernels")
    text = (REPO / "docs" / "kernels-client-contract.md").read_text(encoding="utf-8")
    assert text.startswith(f"# What the `kernels` client {version} needs")
    internals = REPO / "nonexistent"
    for location in spec.submodule_search_locations:
        internals = type(REPO)(location) / "_internals"
    refs = re.findall(r"\b([a-z_]+\.py):(\d+)(?:-(\d+))?", text)
    assert len(refs) > 20
    for name, start, end in refs:
        lines = (internals / name).read_text(encoding="utf-8").splitlines()
        assert int(end or start) <= len(lines), f"{name}:{start} is past its end"
