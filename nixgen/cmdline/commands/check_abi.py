"""`nixgen check-abi`: the build's ABI check, on a directory of built variants."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from nixgen.cmdline.cli import handle_errors, json_option
from nixgen.core.errors import EXIT_FAILURE


@click.command(name="check-abi")
@click.argument(
    "path", required=False, default=".", type=click.Path(path_type=Path, file_okay=False)
)
@click.option(
    "-m",
    "--manylinux",
    default="manylinux_2_28",
    show_default=True,
    metavar="POLICY",
    help="The manylinux policy of Linux objects' symbol versions.",
)
@click.option(
    "--macos", default="15.0", show_default=True, metavar="VERSION", help="Newest minimum macOS."
)
@click.option(
    "-p",
    "--python-abi",
    default="3.9",
    show_default=True,
    metavar="VERSION",
    help="Python's limited API (abi3) version the objects keep to.",
)
@click.option(
    "--torch-stable-abi",
    default=None,
    metavar="VERSION",
    help="Hold every variant to this torch stable ABI (default: a `torch-stable-abi*` "
    "variant to the version in its name, the others to none).",
)
@json_option
@handle_errors
def check_abi_command(
    path: Path,
    manylinux: str,
    macos: str,
    python_abi: str,
    torch_stable_abi: str | None,
    as_json: bool,
) -> None:
    """Check the ABI of built variants in PATH, as every extension build does.

    PATH (default: here) holds variants, directories with a metadata.json, found as
    kernel-builder's `check-abi` finds them: in PATH/result, PATH/build, or PATH (or PATH is
    one). Each `*.so`/`*.pyd` is held to what the build holds it to after linking it:

    \b
      kernel-builder's check (its library, the PyPI `kernel-abi-check`): the manylinux
        policy's symbol versions, the minimum macOS, Python's limited API; for a torch
        stable-ABI variant, no C++ symbol of torch outside torch::stable::
      nixgen's addition (nix/support/abi_check.py): the libraries each object needs, and
        undefined unversioned glibc symbols newer than the policy's glibc

    The build already ran both on each variant it built (a failure fails the build); this
    checks a build from elsewhere, or again. Needs `pip install 'nixgen[abi]'` and readelf
    (binutils). Exit status: 0 all keep to the policies, 1 a problem was found, 2 invalid
    input (no variants, a checker missing).
    """
    from nixgen.app import abicheck
    from nixgen.cmdline import output
    from nixgen.core import console

    checked = abicheck.check(
        path,
        manylinux=manylinux,
        macos=macos,
        python_abi=python_abi,
        torch_stable_abi=torch_stable_abi,
    )
    ok = all(v.ok for v in checked)
    if as_json:
        console.emit_json(output.envelope(ok=ok, result=[v.to_json() for v in checked]))
    else:
        for variant in checked:
            held = f", torch stable ABI {variant.stable_abi}" if variant.stable_abi else ""
            state = "ok" if variant.ok else "FAILED"
            console.out(f"{variant.name} ({variant.backend or '?'}{held}): {state}")
            for lib in variant.libraries:
                if not lib.problems:
                    console.out(f"  ok  {lib.path}")
                for problem in lib.problems:
                    console.out(f"  !!  {lib.path}: {problem}")
            if not variant.libraries:
                console.out("  (no shared objects: nothing to check)")
        if abicheck.policy(manylinux, None) is None:
            console.err(
                f"nixgen: warning: nixgen's addition has no {manylinux} policy "
                "(data/abi-policies.json): only kernel-builder's check ran"
            )
        libraries = sum(len(v.libraries) for v in checked)
        problems = sum(len(lib.problems) for v in checked for lib in v.libraries)
        console.status(
            f"checked {libraries} shared object(s) of {len(checked)} variant(s) against "
            f"{manylinux}: {problems} problem(s)"
        )
    if not ok:
        sys.exit(EXIT_FAILURE)


command = check_abi_command
