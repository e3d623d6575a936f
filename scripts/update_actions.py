#!/usr/bin/env python3
"""Re-pin the GitHub Actions nixgen's workflows use (needs network; never run by the tests).

For each action in ``nixgen/data/actions.json`` it asks GitHub (``git ls-remote --tags``)
which commit the tracked tag (``track``, e.g. ``v4``) points at now, records that commit and
the most specific tag at the same commit (``v4.4.0``) as ``version``, and rewrites the
``uses:`` lines of the repository's own ``.github/workflows/ci.yml`` to match. Generated
project workflows read the table when they are rendered (``nixgen render --ci github``).

    python scripts/update_actions.py            # update the table and ci.yml
    python scripts/update_actions.py --check    # exit 1 when a tracked tag has moved
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "nixgen" / "data" / "actions.json"
OWN_WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"


def remote_tags(repo: str) -> dict[str, str]:
    """Every tag of ``github.com/<repo>`` and the commit it points at (annotated tags peeled)."""
    out = subprocess.run(
        ["git", "ls-remote", "--tags", f"https://github.com/{repo}.git"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    tags: dict[str, str] = {}
    for line in out.splitlines():
        sha, ref = line.split("\t")
        name = ref.removeprefix("refs/tags/")
        if name.endswith("^{}"):
            tags[name[:-3]] = sha  # the peeled commit wins over the tag object
        else:
            tags.setdefault(name, sha)
    return tags


def most_specific(track: str, commit: str, tags: dict[str, str]) -> str:
    """The longest ``track``-prefixed tag at `commit` (``v4.4.0`` over ``v4``)."""
    same = [
        t for t, sha in tags.items() if sha == commit and (t == track or t.startswith(track + "."))
    ]
    return max(same, key=lambda t: (t.count("."), t))


def pin_line(repo: str, entry: dict[str, str]) -> str:
    return f"{repo}@{entry['commit']} # {entry['version']}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args()
    table = json.loads(TABLE.read_text())
    stale = False
    for repo, entry in table["actions"].items():
        tags = remote_tags(repo)
        if entry["track"] not in tags:
            print(f"{repo}: no tag {entry['track']!r}", file=sys.stderr)
            return 2
        commit = tags[entry["track"]]
        version = most_specific(entry["track"], commit, tags)
        if (commit, version) != (entry["commit"], entry["version"]):
            stale = True
            print(f"{repo}: {entry['version']} {entry['commit']} -> {version} {commit}")
            entry.update(commit=commit, version=version)
    if args.check:
        return 1 if stale else 0
    TABLE.write_text(json.dumps(table, indent=2, ensure_ascii=False) + "\n")
    text = OWN_WORKFLOW.read_text()
    for repo, entry in table["actions"].items():
        text = re.sub(
            rf"(uses: ){re.escape(repo)}@\S+( # \S+)?$",
            rf"\g<1>{pin_line(repo, entry)}",
            text,
            flags=re.M,
        )
    OWN_WORKFLOW.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
