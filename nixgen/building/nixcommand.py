"""Every Nix command line nixgen runs, typed: the one place that spells ``nix`` argv.

Each builder returns a `process.Command` (run by `nixgen.building.process`, the one
module that starts processes). The rules every command here keeps:

- **Positionals after ``--``**: whatever follows ``--`` is never read as an option. The
  one exception is `develop` with a command: ``nix develop --command`` takes every
  argument after it as the command (``--`` included), so there the installable comes
  before ``--command``; it is an `Installable`, whose text starts with ``/`` or ``.``.
- **Store paths are typed values.** A value from a flake's evaluation, a Nix log, a file or
  the environment reaches a command line as a store path only as a `StorePath` (or a
  `Derivation`), which `store_path` / `derivation` alone make, after checking it is
  ``<store>/<32 base-32 digits>-<name>`` in the store in use (`store_dir`, itself checked);
  a flake attribute is an `Installable`, made by `installable` from the project's directory
  and identifier-only attribute names.
- **Derivation outputs as the running Nix reads them** (`outputs_of`): ``DRV^*`` from Nix
  2.13 (2.15 and later read a bare ``/nix/store/…drv`` as the derivation file itself,
  already valid, so nothing would be built), the bare path before. The version is asked
  once per process (per ``nix`` executable: `nix_version`).
- Options' values (`--override-input NAME REF`, `--option NAME VALUE`, `--builders SPEC`,
  `--apply EXPR`) are the arguments of the option before them, which Nix takes as they
  are, whatever their first character; an input name must still be a flake input path.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs

from nixgen.building import process
from nixgen.building.process import Command as Command
from nixgen.core.errors import EXIT_INVALID, NixgenError, printable
from nixgen.rendering import nixlit

NIX = "nix"
INSTALL = "install Nix (https://nixos.org/download)"


def install_hint() -> str:
    """What to do when `nix` is not on PATH: `INSTALL`, or, when a nixgen checkout's
    scripts/setup.sh put a Nix in the venv's bin/ beside this interpreter and that directory
    is not on PATH (the venv not activated, nixgen run as `.venv/bin/nixgen`), the one command
    that makes it found."""
    beside = Path(sys.executable).parent
    on_path = {os.path.abspath(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p}
    if os.access(beside / NIX, os.X_OK) and os.path.abspath(beside) not in on_path:
        return (
            f"this nixgen's environment has one ({beside / NIX}): run "
            f'`export PATH={shlex.quote(str(beside))}:"$PATH"` (or activate the venv), then '
            "run nixgen again"
        )
    return INSTALL


EXPERIMENTAL = "nix-command flakes"

#: Options that leave only Nix's errors on its stderr: each `--quiet` lowers the verbosity
#: one level, and three reach errors (Nix 2.8 prints the lock-file messages of every
#: `--override-input` run, `warning: not writing modified lock file` and `• Added input`, as
#: one warning, which `--no-write-lock-file` does not silence; 2.26 prints the `• Added
#: input` list). For a `nix develop` after nixgen evaluated and built it, through its own
#: log reader.
ERRORS_ONLY = ("--quiet", "--quiet", "--quiet")

#: Nix's own offline flag (`nix --help`: "disable substituters and consider all
#: previously downloaded files up-to-date"); `nixgen.building.offline` adds its settings.
OFFLINE = "--offline"

#: The first Nix that names a derivation's outputs `DRV^*` (2.13). From 2.15 on a bare
#: `/nix/store/…drv` is the derivation file itself, already valid, so nothing is built.
OUTPUTS_SYNTAX = (2, 13)
#: From this version the settings are printed by `nix config show` (2.20 renamed
#: `nix show-config`).
CONFIG_SHOW = (2, 20)
#: Seconds `nix --version` and `nix config show` may take.
PROBE_TIMEOUT = 60.0

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
#: Nix's base-32 digits (no e, o, t, u) and the characters of a store path's name (not
#: starting with a period), at most 211 of them.
_STORE_NAME = r"[0-9a-df-np-sv-z]{32}-[A-Za-z0-9+_?=-][A-Za-z0-9+._?=-]{0,210}"
#: A store directory: an absolute path of plain components.
_STORE_DIR = re.compile(r"(?:/[A-Za-z0-9_+-][A-Za-z0-9._+-]*)+")
#: A flake input path (`nixpkgs`, `kernel-builder/nixpkgs`): Nix's flake ids, `/`-joined.
_INPUT_PATH = re.compile(r"[A-Za-z][A-Za-z0-9_-]*(?:/[A-Za-z][A-Za-z0-9_-]*)*")
#: A flake reference Nix 2.8 parses as written: it does not decode `%20`, so a path with
#: any other character is given as `.` with Nix running in the project directory.
_PLAIN_PATH = re.compile(r"/[A-Za-z0-9._~/+=@,:-]*")


class NotAStorePath(ValueError):
    """A value that was to be a store path (or a derivation) is not one."""


class StoreDirError(NixgenError):
    """``NIX_STORE_DIR`` / ``NIX_STORE`` name no usable store directory."""

    exit_code = EXIT_INVALID


class SettingsError(NixgenError):
    """A setting given for Nix cannot be passed on (an input name that is none)."""

    exit_code = EXIT_INVALID


def store_dir() -> str:
    """The Nix store in use: ``$NIX_STORE_DIR``, else ``$NIX_STORE``, else ``/nix/store``
    (the order Nix reads them in), which must be an absolute path of plain components."""
    for name in ("NIX_STORE_DIR", "NIX_STORE"):
        value = os.environ.get(name)
        if value:
            store = value.rstrip("/")
            if _STORE_DIR.fullmatch(store) is None or any(
                part in (".", "..") for part in store.split("/")
            ):
                raise StoreDirError(
                    f"${name} is {value!r}, not a store directory (an absolute path of "
                    "letters, digits and `._+-`): unset it, or set it to the Nix store"
                )
            return store
    return "/nix/store"


def _check_store_path(value: object, *, drv: bool) -> str:
    """The one rule of a store path (and a derivation): see `store_path`."""
    store = store_dir()
    suffix = r"\.drv" if drv else ""
    if not isinstance(value, str) or (
        re.fullmatch(re.escape(store) + "/" + _STORE_NAME + suffix, value) is None
    ):
        what = "a derivation" if drv else "a store path"
        raise NotAStorePath(f"not {what} in {store} (`{store}/<hash>-<name>{suffix[1:]}`)")
    return value


@attrs.frozen
class StorePath:
    """A path in the Nix store: ``<store>/<32 of Nix's base-32 digits>-<name>`` in the
    store in use (`store_dir`), nothing else (no option, no other directory, no newline,
    no sub-path). Checked when made (`NotAStorePath` otherwise), so none that is not one
    exists; `store_path` and `derivation` make them from values read elsewhere."""

    path: str

    def __attrs_post_init__(self) -> None:
        _check_store_path(self.path, drv=isinstance(self, Derivation))

    def __str__(self) -> str:
        return self.path


@attrs.frozen
class Derivation(StorePath):
    """A derivation in the Nix store: a `StorePath` whose name ends in ``.drv``."""


def store_path(value: object) -> StorePath:
    """`value` (from an evaluation, a log, a file) as a `StorePath`; raises
    `NotAStorePath` saying what it should be."""
    return StorePath(_check_store_path(value, drv=False))


def derivation(value: object) -> Derivation:
    """`value` as a `Derivation`. Every derivation path nixgen reads from an evaluation
    goes through here before it goes on a command line."""
    return Derivation(_check_store_path(value, drv=True))


def is_store_path(value: object) -> bool:
    """Whether `store_path` accepts `value`."""
    try:
        store_path(value)
    except NotAStorePath:
        return False
    return True


def is_derivation(value: object) -> bool:
    """Whether `derivation` accepts `value`."""
    try:
        derivation(value)
    except NotAStorePath:
        return False
    return True


# ------------------------------------------------------------------------ the version

_versions: dict[tuple[str, int, int, int], tuple[int, int, int] | None] = {}


def version() -> Command:
    """``nix --version``."""
    return Command((NIX, "--version"), install=install_hint())


def parse_version(text: str) -> tuple[int, int, int] | None:
    """The version in ``nix (Nix) 2.26.3``, or None."""
    found = _VERSION.search(text)
    return None if found is None else (int(found[1]), int(found[2]), int(found[3] or 0))


def nix_version() -> tuple[int, int, int] | None:
    """The version of the ``nix`` on PATH, or None when it prints none. Asked once per
    process for each ``nix`` executable (its path and file identity), since every command
    that names derivation outputs depends on it. Raises `process.ProgramMissing`."""
    found = process.find(NIX)
    if found is None:
        raise process.ProgramMissing(f"`{NIX}` is not on PATH: {install_hint()}")
    try:
        info = os.stat(found)
        key = (found, info.st_ino, info.st_mtime_ns, info.st_size)
    except OSError:
        key = (found, 0, 0, 0)
    if key not in _versions:
        done = process.run(version(), cwd=None, timeout=PROBE_TIMEOUT)
        _versions[key] = parse_version(done.stdout) if done.code == 0 else None
    return _versions[key]


def forget_version() -> None:
    """Ask the version again next time (for tests that change what a fake ``nix`` says)."""
    _versions.clear()


def outputs_of(drv: Derivation) -> str:
    """The installable that means the outputs of `drv` to the `nix` on PATH: ``DRV^*`` on
    Nix 2.13 and newer (or a Nix that prints no version), the bare path before (2.8 reads
    that as its outputs and refuses ``^``)."""
    found = nix_version()
    return drv.path if found is not None and found[:2] < OUTPUTS_SYNTAX else f"{drv.path}^*"


def config_show(found: tuple[int, int, int] | None, options: Sequence[str]) -> Command:
    """The settings Nix would build with (`nix config show`, `nix show-config` before
    2.20), with the command's own ``--option`` arguments `options` (`options`)."""
    show = ("config", "show") if found is not None and found >= CONFIG_SHOW else ("show-config",)
    return Command(
        (NIX, *show, "--extra-experimental-features", "nix-command", *options),
        install=install_hint(),
    )


# ---------------------------------------------------------------------- installables


def flake_ref(root: Path) -> str:
    """The flake reference of the project at `root` for a Nix started in `root`.

    The absolute path when Nix can parse it as one, else ``.`` (a path with a space,
    ``#`` or ``?`` is no valid flake URL, and Nix 2.8 does not decode ``%20``)."""
    path = str(root.resolve())
    return path if _PLAIN_PATH.fullmatch(path) else "."


@attrs.frozen
class Installable:
    """``<flake reference>#<attribute path>`` of the project's flake: the reference is
    its absolute path or ``.`` (`flake_ref`), each attribute name an identifier, so the
    text starts with ``/`` or ``.`` and is never an option. Made by `installable`."""

    text: str

    def __str__(self) -> str:
        return self.text


def installable(root: Path, *attr: str) -> Installable:
    """The attribute `attr` (``"packages", system, variant``) of the flake at `root`."""
    for name in attr:
        if not nixlit.is_identifier(name) or name in nixlit.KEYWORDS:
            raise ValueError(f"not a flake attribute name nixgen uses: {name!r}")
    return Installable(f"{flake_ref(root)}#{'.'.join(attr)}")


# ------------------------------------------------------------------------- settings


@attrs.frozen(kw_only=True)
class Settings:
    """What a command reads besides its positionals: the flake inputs overridden
    (``--override-input NAME REF``), Nix settings (``--option NAME VALUE``),
    ``--accept-flake-config`` and ``--offline``."""

    overrides: tuple[tuple[str, str], ...] = ()
    options: tuple[tuple[str, str], ...] = ()
    accept_flake_config: bool = False
    offline: bool = False

    def __attrs_post_init__(self) -> None:
        for name, ref in self.overrides:
            why = override_problem(name, ref)
            if why is not None:
                raise SettingsError(f"--override-input: {why}")

    def for_flake(self) -> list[str]:
        """The arguments of a command that reads the flake: every setting."""
        args = [OFFLINE] if self.offline else []
        for name, ref in self.overrides:
            args += ["--override-input", name, ref]
        return args + options(self.options, accept_flake_config=self.accept_flake_config)

    def for_store(self, cache: Sequence[tuple[str, str]] = ()) -> list[str]:
        """The arguments of a command that reads no flake (a build of evaluated
        derivations), so no ``nixConfig`` either: ``--offline``, the options, then `cache`
        (the flake's cache settings, when they were accepted) as options."""
        args = [OFFLINE] if self.offline else []
        return args + options(self.options) + options(cache if self.accept_flake_config else ())


def input_name_problem(name: str) -> str | None:
    """Why `name` is no flake input name `--override-input` may be given (None: it is)."""
    if _INPUT_PATH.fullmatch(name):
        return None
    dash = " (it starts with `-`: Nix would read it as an option)" if name[:1] == "-" else ""
    return (
        f"`{printable(name)}` is not a flake input name{dash}; an input name is letters, "
        "digits, `_` and `-`, starting with a letter (`nixpkgs`; `nixgen/nixpkgs` for an "
        "input of an input)"
    )


def override_problem(name: str, ref: str) -> str | None:
    """Why `--override-input NAME REF` must not be run (None: it may): a name that is no
    input name (`input_name_problem`), a reference that is empty, starts with `-` or holds
    a line break or another control character (a space is fine: `path:/my stub`). The one
    rule: `Settings` refuses such an override, and nixgen.toml's reader reports it located."""
    why = input_name_problem(name)
    if why is not None:
        return why
    if not ref or ref[:1] == "-" or any(c != " " and not c.isprintable() for c in ref):
        return (
            f"`{printable(ref)}` is not a flake reference (`path:/srv/nixpkgs`, "
            "`github:NixOS/nixpkgs/REV`): it is empty, starts with `-` (Nix would read it "
            "as an option), or holds a control character"
        )
    return None


def options(
    pairs: Sequence[tuple[str, str]] = (), *, accept_flake_config: bool = False
) -> list[str]:
    """The arguments ``--option NAME VALUE`` (repeated) and ``--accept-flake-config``."""
    out = ["--accept-flake-config"] if accept_flake_config else []
    for name, value in pairs:
        out += ["--option", name, value]
    return out


# ------------------------------------------------------------------------- commands


def _nix(*args: str) -> Command:
    return Command((NIX, *args), install=install_hint())


def eval_drv_paths(root: Path, system: str, variants: Sequence[str], settings: Settings) -> Command:
    """`nix eval` printing the drvPath of each variant of the flake at `root`, in order,
    as a JSON list (one evaluation, whatever the number of variants)."""
    return _eval_packages(root, system, variants, settings, "drvPath")


def eval_out_paths(root: Path, system: str, variants: Sequence[str], settings: Settings) -> Command:
    """`nix eval` printing the output path of each variant, as `eval_drv_paths` its drvPath
    (what `nixgen upload` compares the build links with)."""
    return _eval_packages(root, system, variants, settings, "outPath")


def _eval_packages(
    root: Path, system: str, variants: Sequence[str], settings: Settings, attribute: str
) -> Command:
    apply = f"packages: map (name: packages.${{name}}.{attribute}) {nixlit.value(list(variants))}"
    target = installable(root, "packages", system)
    return _nix(
        "eval",
        "--extra-experimental-features",
        EXPERIMENTAL,
        "--json",
        "--apply",
        apply,
        *settings.for_flake(),
        "--",
        str(target),
    )


def eval_json(target: Installable, apply: str, settings: Settings) -> Command:
    """`nix eval --json --apply APPLY` of `target` (`apply` is nixgen's own expression)."""
    return _nix(
        "eval",
        "--extra-experimental-features",
        EXPERIMENTAL,
        "--json",
        "--apply",
        apply,
        *settings.for_flake(),
        "--",
        str(target),
    )


def build(
    drvs: Sequence[Derivation],
    settings: Settings,
    *,
    cache: Sequence[tuple[str, str]] = (),
    keep_going: bool = False,
    max_jobs: int | None = None,
    cores: int | None = None,
    builders: str | None = None,
) -> Command:
    """One `nix build` of the outputs of every derivation in `drvs` (already evaluated:
    no flake here, so no `nixConfig` either: `Settings.for_store`), with Nix's
    internal-json log and a JSON list of results. `builders` is Nix's `builders` setting,
    passed as written: machine specs separated by `;` or newlines, or `@FILE` (the empty
    string: none)."""
    args = [
        "build",
        "--extra-experimental-features",
        EXPERIMENTAL,
        "--log-format",
        "internal-json",
        "--json",
        "--no-link",
    ]
    if keep_going:
        args.append("--keep-going")
    if max_jobs is not None:
        args += ["--max-jobs", str(max_jobs)]
    if cores is not None:
        args += ["--cores", str(cores)]
    if builders is not None:
        args += ["--builders", builders]
    return _nix(*args, *settings.for_store(cache), "--", *map(outputs_of, drvs))


def link(drv: Derivation, at: Path) -> Command:
    """Link the output of `drv` as `at`, registering it as a GC root; with
    `--max-jobs 0`, so an output that was not built fails instead of being built here."""
    return _nix(
        "build",
        "--extra-experimental-features",
        EXPERIMENTAL,
        "--max-jobs",
        "0",
        "--out-link",
        str(at),
        "--",
        outputs_of(drv),
    )


def realise(drvs: Sequence[Derivation], settings: Settings) -> Command:
    """Build or fetch the outputs of `drvs`, linking nothing (`nixgen compdb`'s inputs)."""
    return _nix(
        "build",
        "--extra-experimental-features",
        EXPERIMENTAL,
        "--no-link",
        *settings.for_store(),
        "--",
        *map(outputs_of, drvs),
    )


def develop(
    target: Installable,
    settings: Settings,
    *,
    command: str | None = None,
    print_build_logs: bool = False,
    errors_only: bool = False,
) -> Command:
    """`nix develop` of `target`; with `command`, ``bash -c COMMAND`` in it instead of an
    interactive shell. ``--command`` takes every argument after it, so it comes last and
    the installable (an `Installable`, never an option) before it; without a command the
    installable follows ``--``."""
    args = ["develop", "--extra-experimental-features", EXPERIMENTAL, *settings.for_flake()]
    if print_build_logs:
        args.append("-L")
    if errors_only:
        args += ERRORS_ONLY
    if command is None:
        return _nix(*args, "--", str(target))
    return _nix(*args, str(target), "--command", "bash", "-c", command)


def instantiate_eval(expression: str) -> Command:
    """``nix-instantiate --eval --strict --json --expr EXPRESSION`` (`expression` is
    nixgen's own, its data written by `nixgen.rendering.nixlit`)."""
    return Command(
        ("nix-instantiate", "--eval", "--strict", "--json", "--expr", expression),
        install=install_hint(),
    )
