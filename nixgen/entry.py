"""The `nixgen` executable's entry point.

`nixgen render` is the verb people put in their inner loop and CI, so its plain form —
``nixgen render [PROJECT] [--out DIR]`` — skips what it does not need:

- when the render stamp is fresh (`nixgen.stamp`), it finishes before click, cattrs or
  Jinja2 are imported;
- otherwise it runs the pipeline (`nixgen.pipeline`) without loading click, printing
  exactly what the click command prints.

Every other command line goes to the click application (`nixgen.cli`). The process ends
with `os._exit` once output is flushed: tearing down a few hundred modules costs more
than a no-op render.
"""

from __future__ import annotations

import os
import sys


def _plain_render(argv: list[str]) -> tuple[str, str] | None:
    """`(project, out)` for ``render [PROJECT] [--out DIR]``, else None."""
    if not argv or argv[0] != "render":
        return None
    args = argv[1:]
    out = "nix"
    if len(args) >= 2 and args[-2] == "--out":
        out = args[-1]
        args = args[:-2]
    if len(args) > 1 or any(a.startswith("-") for a in args):
        return None
    return (args[0] if args else ".", out)


def _fast_render(argv: list[str]) -> bool:
    """Finish an unchanged render from the stamp; False when the pipeline must run."""
    plain = _plain_render(argv)
    if plain is None or os.environ.get("NIXGEN_NO_STAMP"):
        return False
    project, out = plain
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


def _run_plain_render(project: str, out: str) -> int:
    from nixgen import output, pipeline

    try:
        return pipeline.render_project(project, out)
    except (Exception, KeyboardInterrupt) as exc:
        if os.environ.get("NIXGEN_DEBUG") and not output.expected(exc):
            raise
        return output.report(exc, as_json=False)


def _exit(code: object) -> None:
    """Flush and leave, with the status `sys.exit(code)` would give."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        sys.stderr.write(f"{code}\n")
        status = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, OSError):
        pass
    os._exit(status)


def main() -> None:
    argv = sys.argv[1:]
    plain = _plain_render(argv)
    if plain is not None:
        # A one-shot render makes many objects and no garbage worth collecting before it
        # exits; the collector's passes would only add to its start-up.
        import gc

        gc.disable()
    if _fast_render(argv):
        _exit(0)
    if plain is not None:
        _exit(_run_plain_render(*plain))
    from nixgen.cli import main as cli

    try:
        cli()
    except SystemExit as exc:
        _exit(exc.code)
    _exit(0)
