"""`nixgen verify`: check built variants' digests and signatures with the kernels client."""

from __future__ import annotations

from pathlib import Path

import click

from nixgen.cmdline.cli import handle_errors, json_option
from nixgen.core import console
from nixgen.core.console import status
from nixgen.core.errors import EXIT_FAILURE, error, printable


@click.command(name="verify")
@click.argument("directory", type=click.Path(path_type=Path), default=Path("."), required=False)
@click.option(
    "--repo",
    metavar="OWNER/NAME",
    help="The GitHub repository whose workflow signed the variants.",
)
@click.option(
    "--workflow",
    "workflows",
    multiple=True,
    metavar="PATH",
    help="The workflow file that signed them (.github/workflows/FILE.yaml); repeatable.",
)
@click.option(
    "--ref",
    default="refs/heads/main",
    show_default=True,
    help="The git ref that workflow ran on.",
)
@json_option
@handle_errors
def verify_command(
    directory: Path, repo: str | None, workflows: tuple[str, ...], ref: str, as_json: bool
) -> None:
    """Check the built variants in DIRECTORY (a project, whose build/ holds them; a build
    directory; or one variant) as the kernels client checks them: the files against the
    digest in each metadata.json, and where a variant has a metadata.json.sigstore, that
    signature against a signer policy.

    \b
      nixgen verify                      # ./build, digests (and signatures, if any)
      nixgen verify --repo me/relu --workflow .github/workflows/release.yaml

    Without --repo the policy is the client's default one, which trusts only
    kernels-community's workflows: your own signatures need --repo and --workflow (every
    variant must then be signed). Needs the kernels client (0.18.3 or newer; pip install
    'kernels[sigstore]'); checking a signature needs the network (Sigstore's trust root).
    Exit status: 0 every variant verified, 1 one failed, 2 invalid input.
    """
    from nixgen.app import verify as verify_mod

    who = verify_mod.signer(repo, workflows, ref)
    found = verify_mod.find(directory)
    results = verify_mod.verify(found, who)
    failed = [r for r in results if not r.ok]
    if as_json:
        from nixgen.cmdline.output import envelope

        # As for every verb, a failure has no result: each failed half of each variant is
        # a problem, keyed by the variant.
        problems = [
            error(f"{label}: {check.message}", (r.variant,))
            for r in failed
            for label, check in (("digest", r.digest), ("signature", r.signature))
            if not check.ok
        ]
        console.emit_json(
            envelope(
                ok=not failed,
                problems=problems,
                result=None
                if failed
                else {
                    "signer": None
                    if who is None
                    else {"repo": who.repo, "workflows": list(who.workflows), "ref": who.ref},
                    "variants": [r.to_json() for r in results],
                },
            )
        )
    else:
        for result in results:
            mark = "ok  " if result.ok else "FAIL"
            console.out(f"{mark}  {printable(result.variant)}")
            for label, check in (("digest", result.digest), ("signature", result.signature)):
                first, *rest = check.message.splitlines() or [""]
                console.out(f"      {label}: {printable(first)}")
                for line in rest:
                    console.out(f"        {printable(line)}")
        status(
            f"{len(results) - len(failed)} of {len(results)} variant(s) verified"
            + (f"; failed: {', '.join(printable(r.variant) for r in failed)}" if failed else "")
        )
    if failed:
        raise SystemExit(EXIT_FAILURE)


command = verify_command
