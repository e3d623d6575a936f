"""nixgen reads `build.toml` as the field reads it, and writes only what the field reads.

The field's parser is the locked `kernels` client's compiled `kernels._rust.Build.open`
(0.19.1; the format is its `kernels-common/src/config/v6.rs` and `mod.rs`). The differential
tests draw documents of edition 6, and of the editions 5 and 4 that the field upgrades in
memory (`tests/fieldformat.py`), read each with both parsers and hold them to one verdict
(`fieldformat.agree`): the same accept or refuse and, where both accept, the same backends
and kernel dependencies for every backend (what `Build` exposes). Where nixgen differs it
says so on the problem (`Problem.beyond_format`): an error of a rule of its own, or a warning
that it reads what the format refuses (an earlier dialect, which `nixgen migrate` converts).

How many documents: `NIXGEN_DIFFERENTIAL_EXAMPLES` per test (default 300 from a fresh seed
each run, so the file stays fast and keeps exploring; `.ci/run` sets 10,000). A run that sets
the number, or runs under `CI`, draws from a fixed seed: the same documents every time.

Then everything nixgen writes must be what the field reads: `nixgen init` for every language
and binding, `nixgen migrate` to 6 and to 5, the examples; and every `metadata.json` a
variant would hold must be what the client's `Metadata.from_bytes` reads.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from nixgen.app import migrate, scaffold
from nixgen.reading import load

from . import fieldformat
from .conftest import CORPUS_FILES, EXAMPLES, copy_out, materialize
from .corpus_table import LOADING
from .goldens import SYNTHETIC
from .nixtools import have_nix, kernel_builder, make_stub, nix_eval_json
from .projects import render_into

rust = pytest.importorskip("kernels._rust")

#: Documents drawn per differential test: 300 by default, what the fast tier's CPU budget
#: holds (tests/tiers.py); CI draws 10,000 (`.ci/run`), which makes each test long.
DEFAULT_DRAWN = 300
EXAMPLES_DRAWN = int(os.environ.get("NIXGEN_DIFFERENTIAL_EXAMPLES", str(DEFAULT_DRAWN)))
#: What the drawn documents came to, by (field, nixgen) verdict: printed with `-s`.
OUTCOMES: collections.Counter[str] = collections.Counter()

DIFFERENTIAL = settings(
    max_examples=EXAMPLES_DRAWN,
    derandomize=bool(os.environ.get("CI")) or "NIXGEN_DIFFERENTIAL_EXAMPLES" in os.environ,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def long_when_drawn_large(test: Any) -> Any:
    """`slow` when more documents are drawn than the default: a test that is simply long
    is in the slow tier, so CI's fast tier leaves these to its whole-suite run."""
    return pytest.mark.slow(test) if EXAMPLES_DRAWN > DEFAULT_DRAWN else test


def _outcome(field: fieldformat.Field, nixgen: fieldformat.Nixgen) -> str:
    if field.accepted and nixgen.accepted:
        return "both accept"
    if field.accepted:
        return "the field accepts, nixgen refuses by a rule of its own"
    if nixgen.accepted:
        return "the field refuses, nixgen reads it beyond the format (warned)"
    return "both refuse"


def _check(document: dict[str, Any]) -> None:
    text = fieldformat.toml(document)
    field = fieldformat.field_reads(text)
    nixgen = fieldformat.nixgen_reads(text)
    OUTCOMES[_outcome(field, nixgen)] += 1
    why = fieldformat.agree(field, nixgen)
    assert why is None, f"{why}\n--- build.toml ---\n{text}"


@long_when_drawn_large
@DIFFERENTIAL
@given(document=fieldformat.documents((6,)))
def test_edition_6_reads_as_the_field_reads_it(document: dict[str, Any]) -> None:
    _check(document)


@long_when_drawn_large
@DIFFERENTIAL
@given(document=fieldformat.documents((5, None)))
def test_editions_5_and_4_read_as_the_field_reads_them(document: dict[str, Any]) -> None:
    _check(document)


def test_the_drawn_documents_reach_every_verdict() -> None:
    """The draw is no mere noise: over a fixed sample, both parsers accept some documents,
    both refuse some, and each kind of difference nixgen owns up to occurs."""
    seen: collections.Counter[str] = collections.Counter()

    @settings(max_examples=300, derandomize=True, deadline=None, database=None)
    @given(document=fieldformat.documents((6,)))
    def draw(document: dict[str, Any]) -> None:
        text = fieldformat.toml(document)
        seen[_outcome(fieldformat.field_reads(text), fieldformat.nixgen_reads(text))] += 1

    draw()
    assert seen["both accept"] >= 30, seen
    assert seen["both refuse"] >= 30, seen
    assert seen["the field accepts, nixgen refuses by a rule of its own"], seen
    assert seen["the field refuses, nixgen reads it beyond the format (warned)"], seen


def test_outcomes_are_printed(capsys: pytest.CaptureFixture[str]) -> None:
    """The verdicts the differential tests came to in this run (visible with `-s`)."""
    with capsys.disabled():
        for outcome, count in sorted(OUTCOMES.items()):
            print(f"differential: {count:6d} {outcome}")


# ------------------------------------------------ the editions the field no longer reads


OLD_EDITIONS = [p for p in LOADING if not p.stem.startswith("community__")]


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.stem)
def test_corpus_file_reads_as_the_field_reads_it_or_older(path: Path) -> None:
    """A real file nixgen reads: the field reads it the same, or refuses it as an edition it
    no longer reads, which nixgen reads with a warning naming `nixgen migrate`."""
    text = path.read_text(encoding="utf-8")
    try:
        nixgen = fieldformat.nixgen_reads(text)
    except Exception:  # not TOML: both refuse, test_corpus pins where
        return
    field = fieldformat.field_reads(text)
    assert fieldformat.agree(field, nixgen) is None


# ------------------------------------------------------- what nixgen writes, the field reads


def field_backends(root: Path) -> list[str]:
    build = rust.Build.open(str(root))
    return [str(b).rpartition(".")[2].lower() for b in build.general.backends]


INIT = [
    *([language] for language in scaffold.LANGUAGES),
    ["cpp-cpu", "rust-cpu"],
    list(scaffold.LANGUAGES),
    [scaffold.NOARCH],
]


@pytest.mark.parametrize(
    ("languages", "binding"),
    [*((langs, "torch") for langs in INIT), (["rust-cpu"], "tvm-ffi"), (["cpp-cpu"], "tvm-ffi")],
    ids=lambda v: "+".join(v) if isinstance(v, list) else v,
)
def test_init_writes_what_the_field_reads(
    languages: list[str], binding: str, tmp_path: Path
) -> None:
    files = scaffold.files("relu-demo", languages, binding=binding)
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert field_backends(tmp_path)
    nixgen = fieldformat.nixgen_reads(files["build.toml"])
    assert nixgen.accepted and not nixgen.dialect


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.iterdir()))
def test_examples_are_what_the_field_reads(example: str) -> None:
    text = (EXAMPLES / example / "build.toml").read_text()
    field, nixgen = fieldformat.field_reads(text), fieldformat.nixgen_reads(text)
    assert field.accepted, field.message
    assert nixgen.accepted and not nixgen.dialect
    assert fieldformat.agree(field, nixgen) is None


def _migrated(path: Path, root: Path, edition: int) -> Path:
    root.mkdir(parents=True)
    shutil.copy(path, root / "build.toml")
    if (path.parent / "nixgen.toml").is_file():
        shutil.copy(path.parent / "nixgen.toml", root / "nixgen.toml")
    migration = migrate.plan(root / "build.toml", to_edition=edition)
    (root / "build.toml").write_text(migration.after)
    return root


@pytest.mark.parametrize("edition", [6, 5])
@pytest.mark.parametrize(
    "path",
    [*LOADING, *sorted(EXAMPLES.glob("*/build.toml")), *SYNTHETIC.values()],
    ids=lambda p: p.parent.name if p.name == "build.toml" else p.stem,
)
def test_migrate_writes_what_the_field_reads(path: Path, edition: int, tmp_path: Path) -> None:
    """Every corpus file nixgen reads, every example and golden case, migrated to edition 6
    and to edition 5 (where edition 5 can say it): the field reads the result, with the
    backends nixgen reads."""
    root = tmp_path / "p"
    try:
        _migrated(path, root, edition)
    except Exception as exc:
        message = getattr(exc, "problems", [exc])[0]
        if edition == 5 and "no edition-5 form" in str(message):
            pytest.skip(f"edition 5 cannot say it: {message}")
        raise
    nixgen = fieldformat.nixgen_reads((root / "build.toml").read_text())
    assert field_backends(root) == list(nixgen.backends)


# ------------------------------------------------------------------- metadata.json


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not have_nix():
        pytest.skip("nix is not installed")
    return make_stub(tmp_path_factory.mktemp("stub"))


METADATA = """
let
  p = import ./nix;
  args = system: { nixpkgs = STUB; kernel-builder = KB; inherit system; };
  one = v: {
    name = "${v.system}/${v.name}";
    value = builtins.toJSON (p.variantPackage (args v.system) v).passthru.nixgen.metadata;
  };
in builtins.listToAttrs (map one (p.variants null))
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [*(f"example-{p.name}" for p in sorted(EXAMPLES.iterdir())), *sorted(SYNTHETIC)],
)
def test_every_variants_metadata_is_what_the_client_reads(
    case: str, stub: Path, tmp_path: Path
) -> None:
    """The `metadata.json` of every variant of every system (as the library computes it,
    evaluated through the stand-ins) is read by the client's `Metadata.from_bytes`, with
    `kernels-minver` as three numbers and the project's `build-layout`."""
    if case.startswith("example-"):
        root = tmp_path / case
        copy_out(
            EXAMPLES / case.removeprefix("example-"), root, "nix", "flake.nix", "result*", "target"
        )
    else:
        root = materialize(SYNTHETIC[case], tmp_path / case)
    build = render_into(root)
    if any(k.language == "rust-cuda-oxide" for k in build.kernels.values()):
        pytest.skip("the stand-ins have no rust-overlay to evaluate a cuda-oxide kernel")
    expr = METADATA.replace("STUB", str(stub)).replace("KB", str(kernel_builder(stub)))
    found = nix_eval_json(expr, cwd=root, read_write=True)
    assert found
    for name, text in found.items():
        metadata = rust.Metadata.from_bytes(text.encode())
        minver = json.loads(text)["kernels-minver"]
        assert minver.count(".") == 2 and str(metadata.kernels_minver) == minver, name
        layout = rust.BuildLayout.ZIP if build.general.build_layout == "zip" else None
        assert metadata.build_layout == (layout or rust.BuildLayout.FILES), name


def test_kernels_minver_is_derived_by_the_fields_rule() -> None:
    """0.14.0 at least; 0.17.0 with kernel dependencies for the variant's backend; 0.19.0
    with the zip layout: never written by hand, always `X.Y.Z`."""
    from nixgen.checking import project
    from nixgen.planning import metadata

    base = (
        (EXAMPLES / "relu-cpu" / "build.toml")
        .read_text()
        .replace('backends = ["cpu"]\n', 'backends = ["cpu", "cuda"]\n')
    )
    cuda_depends = '\n[general.cuda]\nkernel-depends = [{ repo-id = "org/k", revision = "m" }]\n'
    cases = {
        base: {"cpu": "0.14.0", "cuda": "0.14.0"},
        base.replace(
            'backends = ["cpu", "cuda"]\n',
            'backends = ["cpu", "cuda"]\nkernel-depends = [{ repo-id = "org/k", version = 1 }]\n',
        ): {"cpu": "0.17.0", "cuda": "0.17.0"},
        base.replace("\n[torch]", f"{cuda_depends}\n[torch]"): {"cpu": "0.14.0", "cuda": "0.17.0"},
        base.replace(
            'backends = ["cpu", "cuda"]\n', 'backends = ["cpu", "cuda"]\nbuild-layout = "zip"\n'
        ): {
            "cpu": "0.19.0",
            "cuda": "0.19.0",
        },
    }
    for text, expected in cases.items():
        assert fieldformat.field_reads(text).accepted, text
        build = project.read_document(load.parse(text, Path("build.toml"), "build.toml")).build
        assert {b: metadata.kernels_minver(build.general, b) for b in expected} == expected


def test_general_minver_is_refused_by_the_format_and_read_by_nixgen_only_as_its_dialect() -> None:
    text = (
        (EXAMPLES / "relu-cpu" / "build.toml")
        .read_text()
        .replace('license = "Apache-2.0"', 'license = "Apache-2.0"\nminver = "0.19"')
    )
    field, nixgen = fieldformat.field_reads(text), fieldformat.nixgen_reads(text)
    assert not field.accepted and "Unknown field minver" in field.message
    assert nixgen.accepted and nixgen.dialect
    (notice,) = [w for w in nixgen.warnings if w.beyond_format]
    assert "`nixgen migrate`" in notice.message and notice.key == "general.minver"


def test_the_drawn_text_is_toml() -> None:
    """The emitter writes TOML that reads back as the drawn data."""
    import tomli

    @settings(max_examples=50, derandomize=True, deadline=None, database=None)
    @given(document=fieldformat.documents((6, 5, None)))
    def round_trip(document: dict[str, Any]) -> None:
        assert tomli.loads(fieldformat.toml(document)) == document

    round_trip()
