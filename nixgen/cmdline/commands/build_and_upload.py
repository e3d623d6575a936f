"""`nixgen build-and-upload`: `nixgen build`, then `nixgen upload` of what it built, in one
step (kernel-builder's `build-and-upload`)."""

from __future__ import annotations

import os
from typing import Any

import click

from nixgen.app.settings import Given
from nixgen.cmdline.cli import common_options, handle_errors
from nixgen.cmdline.commands import build as build_verb
from nixgen.cmdline.commands import upload as upload_verb

#: What `nixgen build` takes that makes no sense before an upload.
_NOT_HERE = {"dry_run", "as_json", "no_link"}
_COMMON = {p.name for p in common_options()}


def _params() -> list[click.Parameter]:
    own = [
        p
        for p in build_verb.build_command.params
        if p.name not in _NOT_HERE and p.name not in _COMMON
    ]
    return own + [p for p in upload_verb.upload_command.params if p.name in upload_verb.UPLOAD_ONLY]


@handle_errors
def _build_and_upload(**kwargs: Any) -> None:
    """Build PROJECT's variants (as `nixgen build`: every bundled variant of this machine,
    or each --variant), then upload exactly those (as `nixgen upload`: their digests are
    checked, the branch is v<version> unless --branch). The variants were just linked from
    this build's evaluation of the current sources, so they are not evaluated again.

    \b
      nixgen build-and-upload --repo-id me/relu
      nixgen build-and-upload --variant torch213-cxx11-cpu-x86_64-linux --create-pr

    Exit status: 0 built and uploaded, 1 a build or the Hub failed, 2 invalid input.
    """
    links = kwargs["links"] or build_verb.DEFAULT_LINKS
    if os.path.isabs(links):
        raise click.UsageError(
            "--out-link must be relative to PROJECT here: it is what is uploaded"
        )
    given = {p.name: kwargs[p.name] for p in build_verb.build_command.params if p.name in kwargs}
    built = build_verb.build_command.callback(  # type: ignore[misc]
        **given, dry_run=False, as_json=False, no_link=False
    )
    upload_verb.run(
        kwargs["project"],
        repo_id=kwargs["repo_id"],
        branch=kwargs["branch"],
        private=kwargs["private"],
        repo_type=kwargs["repo_type"],
        create_pr=kwargs["create_pr"],
        build_dir=links,
        variants=built or (),
        output_json=kwargs["output_json"],
        allow_stale=False,
        given=Given(out=kwargs["out"], offline=kwargs["offline"], overrides=kwargs["overrides"]),
        options=kwargs["options"],
        accept_flake_config=kwargs["accept_flake_config"],
        just_built=True,
    )


build_and_upload_command = click.Command(
    name="build-and-upload",
    callback=_build_and_upload,
    params=_params(),
    help=_build_and_upload.__doc__,
)

command = build_and_upload_command
