"""The `nixgen` executable's entry point.

A plain ``nixgen render [PROJECT] [--out DIR]`` of a project whose render stamp is fresh
(`nixgen.stamp`) finishes here, before click, cattrs or Jinja2 are imported; everything
else goes to the click application in `nixgen.cli`.
"""

from __future__ import annotations

import os
import sys


def _fast_render(argv: list[str]) -> bool:
    if not argv or argv[0] != "render" or os.environ.get("NIXGEN_NO_STAMP"):
        return False
    args = argv[1:]
    out = "nix"
    if len(args) >= 2 and args[-2] == "--out":
        out = args[-1]
        args = args[:-2]
    if len(args) > 1 or any(a.startswith("-") for a in args):
        return False
    project = args[0] if args else "."
    is_project_dir = os.path.isdir(project) and not project.endswith(".toml")
    if not is_project_dir and os.path.basename(project) != "build.toml":
        return False  # the stamp records build.toml; another file is always rendered
    root = project if is_project_dir else os.path.dirname(project) or "."
    from nixgen import stamp

    found = stamp.fresh(root, out)
    if found is None:
        return False
    if found["messages"]:
        sys.stderr.write(found["messages"] + "\n")
    sys.stdout.write(f"{out}/ is up to date ({len(found['outputs'])} files)\n")
    return True


def main() -> None:
    if _fast_render(sys.argv[1:]):
        return
    from nixgen.cli import main as cli

    cli()
