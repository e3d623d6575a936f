"""`nixgen upload`: publish a project's built variants (build/) to a Hub repository."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

import click

from nixgen.app import hub as hub_mod
from nixgen.app import upload as upload_mod
from nixgen.app.settings import Given
from nixgen.checking import project as project_mod
from nixgen.cmdline.cli import (
    accept_flake_config_option,
    built_out_option,
    handle_errors,
    nix_option_option,
    offline_option,
    override_input_option,
    print_problems,
    project_argument,
)
from nixgen.core import console, outside
from nixgen.core.console import status
from nixgen.core.errors import NixgenError, OutputError, ProblemError, error, warning
from nixgen.core.outside import Outside
from nixgen.reading import load
from nixgen.writing import write

repo_id_option = click.option(
    "--repo-id",
    metavar="OWNER/NAME",
    help="The Hub repository (default: general.hub.repo-id of build.toml).",
)
branch_option = click.option(
    "--branch",
    metavar="NAME",
    help="The branch (default: general.hub.branch, else v<version> of the variants).",
)
private_option = click.option("--private", is_flag=True, help="Create the repository as private.")
repo_type_option = click.option(
    "--repo-type",
    type=click.Choice(["kernel", "model"]),
    default="kernel",
    show_default=True,
    help="The repository's type on the Hub (`model`: a legacy kernel repository).",
)
create_pr_option = click.option(
    "--create-pr",
    is_flag=True,
    help="Open a pull request instead of committing (no write access needed).",
)
output_json_option = click.option(
    "--output-json",
    metavar="PATH",
    default=None,
    help="Write a JSON summary of the upload to PATH, as kernel-builder's upload does "
    "(status, repo_id, branch, url, pull_requests).",
)
#: The options `nixgen build-and-upload` takes from `nixgen upload` (the rest are build's).
UPLOAD_ONLY = ("repo_id", "branch", "private", "repo_type", "create_pr", "output_json")


@click.command(name="upload")
@project_argument
@repo_id_option
@branch_option
@private_option
@repo_type_option
@create_pr_option
@click.option(
    "--build-dir",
    default="build",
    show_default=True,
    help="Where the built variants are, relative to PROJECT (`nixgen build` links them there).",
)
@click.option(
    "--variant",
    "variants",
    multiple=True,
    metavar="NAME",
    help="Upload only this variant of the build directory; repeat for several (default: all).",
)
@output_json_option
@click.option(
    "--allow-stale",
    is_flag=True,
    help="Upload variants that are not what the current sources build, or whose files do "
    "not match their digest (warned about; the kernels client refuses the latter), without "
    "evaluating the flake.",
)
@override_input_option
@built_out_option
@nix_option_option
@offline_option
@accept_flake_config_option
@click.option("--dry-run", is_flag=True, help="Check and list what would be sent; send nothing.")
@handle_errors
def upload_command(
    project: Path,
    repo_id: str | None,
    branch: str | None,
    private: bool,
    repo_type: str,
    create_pr: bool,
    build_dir: str,
    variants: tuple[str, ...],
    output_json: str | None,
    allow_stale: bool,
    overrides: tuple[tuple[str, str], ...],
    out: str | None,
    options: tuple[tuple[str, str], ...],
    offline: bool,
    accept_flake_config: bool,
    dry_run: bool,
) -> None:
    """Upload PROJECT's built variants to a Hub repository, as kernel-builder does: every
    file of BUILD_DIR/<variant>/ to build/<variant>/ on the branch v<version>, in a
    `kernel` repository (created when missing, unless --create-pr).

    \b
      nixgen build && nixgen upload --dry-run
      nixgen upload --repo-id me/relu

    First, each variant must be what the current flake builds from the current sources
    (its build/<variant> link leads to the output the flake evaluates to now: one `nix
    eval`, with the --override-input, --option and --offline of the build), and its files
    must match the digest its metadata.json records (checked by the kernels client's own
    Digest). Otherwise nothing is sent: the error names each variant and the command that
    rebuilds it; --allow-stale uploads them as they are. Only the variant directories are
    sent: a link that leads out of one, a FIFO or a device is refused. A signature bundle
    (metadata.json.sigstore, inside the variant or as BUILD_DIR/<variant>.metadata.json.sigstore
    beside its link) goes along, checked to sign the variant's metadata.json.

    The token is huggingface_hub's: $HF_TOKEN, else the `hf auth login` one; $HF_ENDPOINT
    picks another Hub (its credentials are never printed). Every answer of the Hub is
    bounded in time ($NIXGEN_HUB_TIMEOUT seconds per step, default 60) and size, and checked
    before use. Exit status: 0 uploaded, 1 the Hub refused or failed, 2 invalid input (a
    refused variant included).
    """
    run(
        project,
        repo_id=repo_id,
        branch=branch,
        private=private,
        repo_type=repo_type,
        create_pr=create_pr,
        build_dir=build_dir,
        variants=variants,
        output_json=output_json,
        allow_stale=allow_stale,
        given=Given(out=out, offline=offline, overrides=overrides),
        options=options,
        accept_flake_config=accept_flake_config,
        dry_run=dry_run,
    )


def run(
    project: Path,
    *,
    repo_id: str | None,
    branch: str | None,
    private: bool,
    repo_type: str,
    create_pr: bool,
    build_dir: str,
    variants: Sequence[str],
    output_json: str | None,
    allow_stale: bool,
    given: Given,
    options: Sequence[tuple[str, str]],
    accept_flake_config: bool,
    dry_run: bool = False,
    just_built: bool = False,
) -> None:
    """The upload itself (`nixgen upload`, and `nixgen build-and-upload` after its build,
    with `just_built`: the variants were linked from this very evaluation of the sources,
    so they are not evaluated again)."""
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
    where_dir = upload_mod.build_dir(root, build_dir)
    summary_path = _summary_path(root, output_json)
    found = upload_mod.discover(where_dir, variants)
    if not found:
        raise NixgenError(
            f"{Outside(str(where_dir))}: no built variants (folders with a metadata.json, or "
            "links `nixgen build` made); run `nixgen build` first"
        )
    branch = branch or (hub.branch if hub is not None else None) or upload_mod.version_branch(found)
    target = hub_mod.target(repo_id, branch, repo_type)
    upload = upload_mod.plan(found)
    refusals = upload_mod.check_digests(found)
    if not allow_stale and not just_built:
        refusals += upload_mod.stale_variants(
            project, found, given, options=options, accept_flake_config=accept_flake_config
        )
    elif allow_stale:
        print_problems(
            [warning("--allow-stale: the variants are not compared with the current sources")]
        )
    if refusals:
        _refuse(project, refusals, given.overrides, allowed=allow_stale)
    where = f"{target.repo_id} (branch {target.branch})"
    if dry_run:
        for path in upload.files:
            console.out(str(Outside(path)))
        how = "open a pull request against" if create_pr else "upload to"
        status(f"would {how} {where}: {len(found)} variant(s), {len(upload.files)} file(s)")
        return
    status(f"uploading {len(found)} variant(s), {len(upload.files)} file(s) to {where}")
    result = hub_mod.publish(
        target, upload.files, list(found), private=private, create_pr=create_pr
    )
    if result.deleted:
        status(f"deleted {result.deleted} file(s) no longer built")
    label = "Pull request created" if create_pr else "Kernel uploaded"
    console.out(f"{label}: {result.url}")
    if summary_path is not None:
        url = outside.redact(result.url.raw)  # a summary is printed too, in effect
        pulls = [{"branch": target.branch, "url": url}] if create_pr else []
        data = upload_mod.output_json(
            result.status, target.repo_id, target.branch, None if create_pr else url, pulls
        )
        try:
            write.atomic_write(summary_path, data)
        except OSError as exc:
            raise NixgenError(
                f"uploaded, but the summary cannot be written to {Outside(str(summary_path))} "
                f"({exc.strerror})"
            ) from None


def _summary_path(root: Path, given: str | None) -> Path | None:
    """`--output-json`'s path, checked before anything is sent: not a directory or a
    special file, not build.toml, not inside the build directory's variants."""
    if given is None:
        return None
    path = Path(given)
    if os.path.lexists(path) and not (path.is_file() and not path.is_symlink()):
        raise OutputError(f"--output-json {Outside(given)}: exists and is not a plain file")
    if os.path.realpath(path) == os.path.realpath(root / "build.toml"):
        raise OutputError(f"--output-json {Outside(given)}: is the project's build.toml")
    return path


def _refuse(
    project: Path,
    refusals: Sequence[upload_mod.Refusal],
    overrides: Sequence[tuple[str, str]],
    *,
    allowed: bool,
) -> None:
    """Refuse the upload, one problem per variant with the command that rebuilds it; with
    --allow-stale, warn instead."""
    if allowed:
        print_problems(
            [
                warning(f"variant {Outside(r.variant)}: {r.why}; uploaded as it is (--allow-stale)")
                for r in refusals
            ]
        )
        return
    base = ["nixgen", "build", *([str(project)] if str(project) != "." else [])]
    for name, value in overrides:
        base += ["--override-input", name, value]
    raise ProblemError(
        [
            error(
                f"variant {Outside(r.variant)}: {r.why}",
                hint=f"rebuild it: {shlex.join([*base, '--variant', r.variant])}; or pass "
                "--allow-stale to upload it as it is",
            )
            for r in refusals
        ]
    )


command = upload_command
