"""`nixgen upload`: publish a project's built variants (build/) to a Hub repository."""

from __future__ import annotations

from pathlib import Path

import click

from nixgen.cmdline.cli import handle_errors, print_problems, project_argument
from nixgen.core import console
from nixgen.core.console import status
from nixgen.core.errors import NixgenError


@click.command(name="upload")
@project_argument
@click.option(
    "--repo-id",
    metavar="OWNER/NAME",
    help="The Hub repository (default: general.hub.repo-id of build.toml).",
)
@click.option(
    "--branch",
    metavar="NAME",
    help="The branch (default: general.hub.branch, else v<version> of the variants).",
)
@click.option("--private", is_flag=True, help="Create the repository as private.")
@click.option(
    "--create-pr",
    is_flag=True,
    help="Open a pull request instead of committing (no write access needed).",
)
@click.option(
    "--build-dir",
    default="build",
    show_default=True,
    help="Where the built variants are, relative to PROJECT (`nixgen build` links them there).",
)
@click.option("--dry-run", is_flag=True, help="List what would be sent; send nothing.")
@handle_errors
def upload_command(
    project: Path,
    repo_id: str | None,
    branch: str | None,
    private: bool,
    create_pr: bool,
    build_dir: str,
    dry_run: bool,
) -> None:
    """Upload PROJECT's built variants to a Hub repository, as kernel-builder does: every
    file of BUILD_DIR/<variant>/ to build/<variant>/ on the branch v<version>, in a
    `kernel` repository (created when missing, unless --create-pr).

    \b
      nixgen build && nixgen upload --dry-run
      nixgen upload --repo-id me/relu

    The token is huggingface_hub's: $HF_TOKEN, else the `hf auth login` one; $HF_ENDPOINT
    picks another Hub. Exit status: 0 uploaded, 1 the Hub refused or failed, 2 invalid input.
    """
    from nixgen.app import upload as upload_mod
    from nixgen.checking import project as project_mod
    from nixgen.core.errors import ProblemError, error
    from nixgen.reading import load

    document = load.load(project)
    _, build, warnings = project_mod.structure(document)
    print_problems(warnings)
    root = document.path.parent
    hub = build.general.hub
    repo_id = repo_id or (hub.repo_id if hub is not None else None)
    if not repo_id:
        raise ProblemError(
            [
                error(
                    "no Hub repository to upload to: pass --repo-id OWNER/NAME, or set "
                    "`repo-id` in [general.hub]",
                    ("general", "hub", "repo-id"),
                )
            ]
        )
    found = upload_mod.variants(root / build_dir)
    if not found:
        raise NixgenError(
            f"{root / build_dir}: no built variants (folders with a metadata.json); run "
            "`nixgen build` first"
        )
    branch = branch or (hub.branch if hub is not None else None) or upload_mod.version_branch(found)
    upload = upload_mod.Upload(repo_id, branch, found, upload_mod.files(found))
    where = f"{repo_id} (branch {branch})"
    if dry_run:
        for path in upload.files:
            console.out(path)
        how = "open a pull request against" if create_pr else "upload to"
        status(f"would {how} {where}: {len(found)} variant(s), {len(upload.files)} file(s)")
        return
    status(f"uploading {len(found)} variant(s), {len(upload.files)} file(s) to {where}")
    result = upload_mod.send(upload, private=private, create_pr=create_pr)
    if result["deleted"]:
        status(f"deleted {result['deleted']} file(s) no longer built")
    label = "Pull request created" if create_pr else "Kernel uploaded"
    console.out(f"{label}: {result['url']}")


command = upload_command
