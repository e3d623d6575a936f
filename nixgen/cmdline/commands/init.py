"""`nixgen init`: start a kernel project that builds as it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import click

from nixgen.app import config, scaffold
from nixgen.app.pipeline import prepare
from nixgen.app.scaffold import INIT_LANGUAGES
from nixgen.app.settings import Given, resolve
from nixgen.building import gitfiles, nixbuild
from nixgen.cmdline.cli import handle_errors, print_problems
from nixgen.core.console import status
from nixgen.core.paths import DEFAULT_OUT
from nixgen.planning import variants
from nixgen.reading import values
from nixgen.writing import write


def _name(ctx: click.Context, param: click.Parameter, value: str) -> str:

    problem = values.project_name(value)
    if problem:
        raise click.BadParameter(problem)
    return value


def license_value(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A ``--license`` argument, stripped and checked (`init` and `migrate`); None when the
    option is not given."""

    problem = scaffold.check_license(value.strip()) if value is not None else None
    if problem:
        raise click.BadParameter(problem)
    return value.strip() if value is not None else None


@click.command()
@click.argument("name", callback=_name)
@click.option(
    "--language",
    "-l",
    "languages",
    type=click.Choice(INIT_LANGUAGES),
    multiple=True,
    help="A kernel language; repeat for several (default: cpp-cpu); noarch (alone): a "
    "pure-Python package, `[torch-noarch]`.",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where to create the project (default: ./NAME).",
)
@click.option(
    "--license",
    "license_",
    default="Apache-2.0",
    show_default=True,
    callback=license_value,
    metavar="SPDX",
    help="general.license of the new project.",
)
@click.option(
    "--binding",
    type=click.Choice(["torch", "tvm-ffi"]),
    default="torch",
    show_default=True,
    help="torch: a C++ binding registers the kernels as torch ops (rust-cpu: it calls the "
    'crate\'s extern "C" functions). tvm-ffi: one CPU kernel exported through TVM FFI, with '
    "one --language alone: rust-cpu (the crate is the binding) or cpp-cpu (a C++ kernel "
    "and its binding).",
)
@click.option(
    "--force", is_flag=True, help="Write into a non-empty directory (same-name files replaced)."
)
@handle_errors
def init(
    name: str,
    languages: tuple[str, ...],
    directory: Path | None,
    license_: str,
    binding: str,
    force: bool,
) -> None:
    """Create a kernel project NAME: a ReLU kernel per --language, ready to build.

    Writes an edition-6 build.toml, the kernel sources (a Rust crate with its Cargo.lock
    for rust-cpu), the torch binding, the Python package, tests that compare the kernels
    with torch.relu, and then the Nix files (flake.nix, nix/) exactly as `nixgen render`
    makes them. Refuses a directory that is not empty unless --force.
    """

    chosen = list(dict.fromkeys(languages)) or ["cpp-cpu"]
    problem = scaffold.check_binding(chosen, binding)
    if problem:
        raise click.UsageError(problem)
    root = directory if directory is not None else Path(name)
    done: list[Any] = []

    def render_nix(made: Path) -> None:
        # `made` is where the project is being made (a hidden directory next to `root`
        # until it is complete): the render is part of init's one transaction.
        prepared = prepare(made, resolve(made, Given(out=DEFAULT_OUT)))
        loaded = prepared.project
        written = write.write(loaded.root, prepared.rendered, force=force)
        done[:] = [written, prepared.problems, loaded.build]

    written = scaffold.create(
        root, name, chosen, license=license_, force=force, binding=binding, then=render_nix
    )
    result, problems, build = done
    print_problems(
        [p if p.file is None else attrs.evolve(p, file=str(root / "build.toml")) for p in problems]
    )
    generated = len(result.added) + len(result.changed) + len(result.unchanged)
    status(
        f"created {root}/ "
        f"({', '.join(k.language for k in scaffold.kernels(chosen, binding)) or 'noarch'}): "
        f"{len(written)} files, and {generated} generated Nix files"
    )
    status("next:")
    if root.resolve() != Path.cwd().resolve():
        status(f"  cd {root}")
    if gitfiles.git_work_tree(root) is not None:
        # A flake in a git work tree sees only the files git tracks (`nixgen build` checks).
        status("  git add .                 # Nix sees only files git tracks (or: git add -N .)")

    system = nixbuild.host_system()
    settings = config.project_settings(root)
    if not variants.variants(build, system=system, settings=settings):
        # No variant builds here (cpp-metal on Linux): say so rather than `nixgen build`.
        others = sorted({v.system for v in variants.variants(build, settings=settings)})
        status(
            f"  nixgen variants           # none is for {system}: they are for {', '.join(others)}"
        )
        status(f"  # `nixgen build` builds them on an {others[0]} machine (or a --builders one)")
        return
    status("  nixgen build              # build the variants for this machine into build/")
    status("  nixgen shell              # a shell with the compilers, torch and the kernels client")
    status("  python -m pytest tests    # check the built kernels against torch.relu")


command = init
