"""`nixgen compdb`: write `compile_commands.json` (for clangd, clang-tidy) from a variant's
planned compile commands (`nixgen.app.compdb`)."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from nixgen.app import compdb, pipeline
from nixgen.app.build import make_ready, nix_settings
from nixgen.app.pipeline import kept_warnings, prepare
from nixgen.app.settings import Given, resolve
from nixgen.building import nixbuild, nixcommand, process
from nixgen.cmdline.cli import (
    accept_flake_config_option,
    built_out_option,
    complete_variant,
    handle_errors,
    nix_option_option,
    override_input_option,
    print_problems,
    project_argument,
)
from nixgen.core import console, paths, writer
from nixgen.core.console import status
from nixgen.core.errors import NixgenError, OutputError, ProblemError, error, warning
from nixgen.planning import selection, variants
from nixgen.writing import write

#: How many lines of a failed Nix command's output an error shows.
TAIL = 20


@click.command(name="compdb")
@project_argument
@click.option(
    "--variant",
    metavar="NAME",
    shell_complete=complete_variant,
    help="The variant whose commands to write (default: `nixgen shell`'s, the system's best "
    "variant: bundled, CUDA first, newest torch, oldest toolkit).",
)
@click.option(
    "-o",
    "--output",
    "output_path",
    default="compile_commands.json",
    show_default=True,
    help="The file to write, relative to PROJECT.",
)
@click.option(
    "--no-realise",
    is_flag=True,
    help="Do not build or fetch the variant's inputs (the include paths may then be missing).",
)
@override_input_option
@accept_flake_config_option
@nix_option_option
@built_out_option
@click.option(
    "--force",
    is_flag=True,
    help="Replace a file at OUTPUT that is not a compilation database (never an input of "
    "the project: build.toml, a listed source, the generated Nix).",
)
@click.option("--dry-run", is_flag=True, help="Print the `nix` commands; run nothing.")
@handle_errors
def compdb_command(
    project: Path,
    variant: str | None,
    output_path: str,
    no_realise: bool,
    overrides: tuple[tuple[str, str], ...],
    accept_flake_config: bool,
    options: tuple[tuple[str, str], ...],
    out: str | None,
    force: bool,
    dry_run: bool,
) -> None:
    """Write PROJECT/compile_commands.json: every compile command of the variant's C++
    kernels and of its binding, as the build runs them, with the toolchain's compiler and
    include paths (store paths).

    \b
      nixgen compdb                        # the default variant, for this machine
      nixgen compdb --variant torch213-cxx11-cpu-x86_64-linux
      clangd --query-driver='/nix/store/**' ...   # let clangd ask the wrapper for its headers

    The commands come from one `nix eval` of the variant; its inputs (torch, Python, the
    toolchain and the C++ libraries, not the kernels) are then built or fetched with
    `nix build --no-link`, so every include path exists. Renders the Nix files first when
    stale. Exit status: 0 written, 1 Nix failed, 2 invalid input.
    """
    settings = resolve(project, Given(out=out, overrides=overrides))
    system = nixbuild.host_system()
    prepared = prepare(project, settings)
    loaded, rendered, planned = prepared.project, prepared.rendered, prepared.plan
    print_problems(prepared.problems)
    root = loaded.root.resolve()
    # The path rule of every output (`nixgen.core.paths.output_path`): inside the project,
    # through no link, a regular file or nothing, never an input of the project.
    output_rel = paths.output_path(
        root, output_path, option="--output", inputs=pipeline.inputs(loaded, settings.out)
    )
    names = [v.name for v in planned.for_system(system)]
    if not names:
        raise ProblemError(
            [
                error(
                    f"{loaded.build.general.name} has no variants for {system}, so no "
                    "compile commands",
                    hint=selection.other_systems(planned, system),
                )
            ]
        )
    if variant is not None and variant not in names:
        raise ProblemError([selection.unknown_variant(planned, variant, system, names, flag=False)])
    # The flake's default dev shell's variant, as the plan chose it (no evaluation).
    variant = variant or variants.default_shell_variant(planned.for_system(system))
    # compdb downloads what it must: it has no --offline, and takes not nixgen.toml's.
    nix = nix_settings(settings, options, accept_flake_config=accept_flake_config, offline=False)

    def evaluate(name: str) -> nixcommand.Command:
        target = nixcommand.installable(root, "packages", system, name)
        return nixcommand.eval_json(target, compdb.APPLY, nix)

    stale = write.plan(root, rendered)
    if dry_run:
        changed = [*stale.added, *stale.changed, *stale.removed]
        if changed:
            status(f"would render {rendered.out_dir}/ ({len(changed)} file(s) stale)")
        ref = nixcommand.flake_ref(root)
        cd = f"cd {shlex.quote(str(root))} && " if ref == "." else ""
        console.out(cd + evaluate(variant).shown())
        if not no_realise:
            realise = nixcommand.realise([], nix).argv
            console.out(shlex.join([*realise, "<drvPath of each input>"]))
        return
    for note in kept_warnings(stale.kept, root, loaded.build.general.backends):
        console.err(note)
    make_ready(prepared, root, stale)
    status(f"evaluating {variant}", level=1)
    parts = compdb.parse(_run(evaluate(variant), root, f"evaluating {variant}"))
    if not no_realise:
        # Every derivation the evaluation named is checked (`nixcommand.derivation`)
        # before it goes on `nix build`'s command line, after its `--`.
        drvs = compdb.drv_paths(parts)
        status(f"realising {len(drvs)} input(s) of {variant}", level=1)
        _run(nixcommand.realise(drvs, nix), root, f"building the inputs of {variant}")
    try:
        gcc_only = compdb.gcc_only_flags()
    except OSError as exc:
        raise NixgenError(
            f"reading the compiler families of nixgen's Nix library failed: {exc}"
        ) from None
    entries = compdb.database(parts, root, gcc_only)
    missing = compdb.missing_paths(entries)
    if missing:
        print_problems(
            [
                warning(
                    f"{len(missing)} store path(s) the commands name do not exist "
                    f"({', '.join(missing[:3])}{', …' if len(missing) > 3 else ''})",
                    hint="run without --no-realise to build or fetch them",
                )
            ]
        )
    data = compdb.encode(entries)
    if not _write(root, output_rel, data, force=force):
        status(f"{output_path} is up to date ({len(entries)} command(s), {variant})")
        return
    status(f"wrote {output_path}: {len(entries)} command(s) of {variant}")


def _write(root: Path, rel: str, data: bytes, *, force: bool) -> bool:
    """Write the database as `rel` (`nixgen.core.writer`); False when it already holds
    it. A file already there is replaced only when it is a compilation database, or with
    --force."""
    current = paths.read_under(root, rel, limit=max(len(data), paths.MAX_READ))
    if current == data:
        return False
    if isinstance(current, paths.Blocked) and not current.too_large:
        raise OutputError(f"{root / rel}: {current.reason}; nixgen writes only regular files")
    if isinstance(current, bytes) and not force and not compdb.is_database(current):
        raise OutputError(
            f"{root / rel}: exists and is not a compilation database (a JSON list of "
            "entries with `directory` and `file`); nixgen replaces only a database: move "
            "it away, choose another --output, or pass --force"
        )
    with writer.transaction(root) as tx:
        tx.file(rel, data, expect=current if isinstance(current, bytes) else writer.ANY)
        tx.commit()
    return True


def _run(command: nixcommand.Command, root: Path, what: str) -> str:
    """Run a Nix command in `root` (`process.run`: stopped, with everything it started, on
    Ctrl-C); its stdout, or a `NixgenError` with its output's tail."""
    done = process.run(command, cwd=root)
    if done.code != 0:
        lines = [line.replace("\0", "") for line in done.stderr.splitlines() if line.strip()]
        for line in lines[-TAIL:]:
            console.err(f"  {line}")
        raise NixgenError(f"{what} failed (nix exited {done.code}; its output is above)")
    if done.stdout_truncated:
        raise NixgenError(f"{what}: nix printed more than {process.STDOUT_LIMIT} characters")
    return done.stdout


command = compdb_command
