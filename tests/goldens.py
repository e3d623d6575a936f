"""The golden cases of tests/test_render.py: each directory `tests/golden/<case>/` holds the
case's input, `build.toml` (and its `nixgen.toml`, when it has one), beside the files nixgen
renders from it (regenerated only with `NIXGEN_UPDATE_GOLDEN=1`). The sources a case lists
are not kept: `conftest.materialize` makes each an empty file when the case is rendered."""

from __future__ import annotations

from pathlib import Path

GOLDEN = Path(__file__).resolve().parent / "golden"
#: The input of a golden case, in its directory.
GOLDEN_INPUT = "build.toml"
#: Every input file a golden case may have.
GOLDEN_INPUTS = (GOLDEN_INPUT, "nixgen.toml")
#: The synthetic projects, by case: the path of each one's build.toml.
SYNTHETIC: dict[str, Path] = {p.parent.name: p for p in sorted(GOLDEN.glob(f"*/{GOLDEN_INPUT}"))}
