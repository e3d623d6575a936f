"""Dump the drvPath of every variant package, dev shell and check of the examples and the
corpus projects, evaluated through the test stand-ins, as JSON (one object per project).

A refactor of the Nix library or of the renderer should leave every drvPath unchanged
except where it fixes a defect: run this before and after, then compare::

    PYTHONPATH=$PWD python scripts/drvpaths.py /tmp/before.json
    PYTHONPATH=$PWD python scripts/drvpaths.py /tmp/after.json
    python scripts/drvpaths.py --compare /tmp/before.json /tmp/after.json

Each project is rendered into a temporary directory by the nixgen on `PYTHONPATH` and
evaluated with one `nix-instantiate` (a project whose shells or checks fail to evaluate
records the error and its packages alone).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

EXPR = """
let
  p = import ./nix;
  args = system: { nixpkgs = STUB; kernel-builder = KERNEL_BUILDER; inherit system; };
  one = v: {
    name = "${v.system}/${v.name}";
    value = { package = (p.variantPackage (args v.system) v).drvPath; }
      // (if WITH_SHELLS then {
        shell = (p.devShell (args v.system) v).drvPath;
        check = (p.check (args v.system) v).drvPath;
      } else { });
  };
in builtins.listToAttrs (map one (p.variants null))
"""


def _projects(root: Path) -> list[tuple[str, Path]]:
    from tests.conftest import CORPUS_FILES, EXAMPLES, materialize
    from tests.corpus_table import LOADING

    out = []
    for example in sorted(EXAMPLES.iterdir()):
        if (example / "build.toml").is_file():
            target = root / "examples" / example.name
            shutil.copytree(
                example, target, ignore=shutil.ignore_patterns("nix", "flake.nix", "result*")
            )
            out.append((f"examples/{example.name}", target))
    for path in CORPUS_FILES:
        if path in LOADING:
            out.append((f"corpus/{path.stem}", materialize(path, root / "corpus" / path.stem)))
    return out


def dump(out: Path) -> None:
    from tests.nixtools import NixError, kernel_builder, make_stub, nix_eval_json
    from tests.projects import render_into

    result: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="drvpaths-") as tmp:
        stub = make_stub(Path(tmp) / "stub")
        for name, root in _projects(Path(tmp)):
            render_into(root)
            base = EXPR.replace("STUB", str(stub)).replace(
                "KERNEL_BUILDER", str(kernel_builder(stub))
            )
            try:
                result[name] = nix_eval_json(
                    base.replace("WITH_SHELLS", "true"), cwd=root, read_write=True
                )
            except NixError as err:
                packages = nix_eval_json(
                    base.replace("WITH_SHELLS", "false"), cwd=root, read_write=True
                )
                last = [line for line in err.stderr.splitlines() if line.startswith("error:")][-1:]
                result[name] = {"error": last, **packages}
            print(name, file=sys.stderr)
    out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")


def compare(before: Path, after: Path) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    same = changed = 0
    for project in sorted(set(a) | set(b)):
        x, y = a.get(project, {}), b.get(project, {})
        for key in sorted(set(x) | set(y)):
            if x.get(key) == y.get(key):
                same += 1
            else:
                changed += 1
                print(f"{project} {key}: {x.get(key)} -> {y.get(key)}")
    print(f"{len(set(a) | set(b))} projects, {same} entries unchanged, {changed} changed")
    return 1 if changed else 0


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    dump(Path(sys.argv[1]))
