"""``nixgen upload``: what is published from ``build/``, and whether it may be.

The layout and branch scheme are kernel-builder's (``kernel-builder/src/upload.rs``,
huggingface/kernels 8ac69fc5): every file of each variant at ``build/<variant>/…`` on the
branch ``v<version>`` (from the variants' ``metadata.json``, unless ``--branch`` or
``general.hub.branch`` says otherwise); talking to the Hub is `nixgen.app.hub`'s.

**What is published is exactly the variant directory** (the one path rule of publishing):

- ``--build-dir`` is relative, inside the project, each of its components a real
  directory (no link, no ``..``);
- ``build/<variant>`` is a folder, or a link to a top-level Nix store path (what
  `nixgen build` makes), followed once as the variant's root; a link to anywhere else is
  refused;
- inside the variant nothing is followed out of it: a link to a file inside the variant is
  published under the link's name with the file's bytes (as the client's digest hashes it);
  a link that leads out of the variant, to a directory, or nowhere is refused, and so are
  FIFOs, sockets and devices;
- a signature bundle (``metadata.json.sigstore``, the field's CI writes one beside each
  variant's ``metadata.json``) travels as ``build/<variant>/metadata.json.sigstore``, from
  inside the variant or, for a variant in the read-only Nix store, from
  ``build/<variant>.metadata.json.sigstore`` beside its link; it must be a Sigstore bundle of
  this ``metadata.json``.

**What may be published** (`check_digests`, `match_sources`): a variant whose files match
the digest in its ``metadata.json`` (checked by the `kernels` client's own
``Digest.hash_variant``), and whose build is what the current flake builds from the current
sources (its link leads to the output path the flake evaluates to now, one evaluation for all
variants of a system; a folder holds that output's files). Otherwise the upload is refused,
naming the variant and the command that rebuilds it, unless the user accepts it knowingly.
"""

from __future__ import annotations

import base64
import filecmp
import hashlib
import json
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from nixgen.app.build import nix_settings
from nixgen.app.pipeline import prepare
from nixgen.app.settings import Given, resolve
from nixgen.building import gitfiles, nixbuild, nixcommand
from nixgen.core import bounded, paths, remote
from nixgen.core.console import print_problems
from nixgen.core.errors import EXIT_INVALID, NixgenError, ProblemError
from nixgen.core.outside import Outside
from nixgen.writing import write

#: The signature bundle's name beside a variant's metadata.json (the client's).
BUNDLE = "metadata.json.sigstore"
#: The most bytes of a metadata.json or a bundle read (real ones are a few KiB).
MAX_SMALL_FILE = 1024 * 1024
#: The most files of one variant (a kernel has a handful).
MAX_FILES = 100_000


class PublishError(NixgenError):
    """What would be published breaks the rules above; the user must fix it (exit 2)."""

    exit_code = EXIT_INVALID


@attrs.frozen
class Variant:
    """One variant to publish."""

    name: str
    #: Its directory: ``build/<name>`` itself, or the store path its link leads to.
    root: Path
    #: The store path ``build/<name>`` links to; None for a folder.
    link: str | None
    #: Path inside the variant (``/``-separated) → the local file whose bytes are sent.
    files: dict[str, Path]

    @property
    def metadata(self) -> Path:
        return self.root / "metadata.json"


@attrs.frozen
class Upload:
    """What an upload sends: the variants and every file, by its path in the repository."""

    variants: dict[str, Variant]
    #: Path in the repository → local file, sorted.
    files: dict[str, Path]


def build_dir(root: Path, rel: str) -> Path:
    """The directory `rel` (``--build-dir``) of the project at `root`, refused unless it is
    relative, has no ``..`` and each of its components is a real directory inside it."""
    parts = rel.replace(os.sep, "/").split("/")
    if os.path.isabs(rel) or ".." in parts or not rel.strip():
        raise PublishError(
            f"--build-dir `{Outside(rel)}`: give a directory inside the project, relative to "
            "it and without `..` (nixgen publishes only what the project built)"
        )
    blocked = paths.check_dirs(root, rel, last=True)
    if blocked is not None:
        raise PublishError(
            f"{Outside(str(root / blocked.where))}: {blocked.reason}; nixgen publishes the "
            "variants of a real directory inside the project (--build-dir)"
        )
    return root.joinpath(*paths.parts(rel))


def discover(where: Path, only: Sequence[str] = ()) -> dict[str, Variant]:
    """The variants in `where` (kernel-builder's `discover_variants`: each folder, or link
    to a store path, holding a metadata.json), or only those named in `only`, each with its
    files; a `PublishError` for anything the rule above refuses."""
    found: dict[str, Variant] = {}
    try:
        entries = sorted(os.scandir(where), key=lambda e: e.name)
    except FileNotFoundError:
        entries = []
    except OSError as exc:
        raise PublishError(f"{Outside(str(where))}: cannot be listed ({exc.strerror})") from None
    for entry in entries:
        name = entry.name
        if only and name not in only:
            continue
        shown = Outside(os.path.join(str(where), name))
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError as exc:
            raise PublishError(f"{shown}: cannot be read ({exc.strerror})") from None
        if stat.S_ISDIR(mode):
            root, link = Path(entry.path), None
        elif stat.S_ISLNK(mode):
            target = os.readlink(entry.path)
            try:
                target_mode = os.lstat(target).st_mode if os.path.isabs(target) else None
            except OSError:
                target_mode = None
            if not (nixcommand.is_store_path(target) and target_mode and stat.S_ISDIR(target_mode)):
                if not os.path.isdir(entry.path) and not only:
                    continue  # a link to a file or to nothing is no variant
                raise PublishError(
                    f"{shown}: links to {Outside(target)}, not to a build in the Nix store "
                    f"({nixcommand.store_dir()}/<hash>-<name>): nixgen publishes a variant "
                    "folder of the project or a link `nixgen build` made, nothing else"
                )
            root, link = Path(target), target
        else:
            continue  # a file beside the variants (a bundle, a card) is no variant
        metadata = paths.lstat_under(root, "metadata.json")
        if metadata is None:
            if only:
                raise PublishError(f"{shown}: holds no metadata.json (is it a build?)")
            continue  # no build: kernel-builder skips it too
        if not isinstance(metadata, os.stat_result) or not stat.S_ISREG(metadata.st_mode):
            why = (
                metadata.reason if isinstance(metadata, paths.Blocked) else _kind(metadata.st_mode)
            )
            raise PublishError(f"{shown}/metadata.json: {why}, not the variant's own file")
        bad_name = remote.repo_path_problem(f"build/{name}")
        if bad_name is not None:
            raise PublishError(f"{shown}: `{Outside(name)}` is no variant name: {bad_name}")
        found[name] = Variant(name, root, link, _files(name, root, where))
    missing = [n for n in only if n not in found]
    if missing:
        raise PublishError(
            f"{Outside(str(where))}: no built variant {', '.join(str(Outside(n)) for n in missing)}"
            " (a folder, or a link `nixgen build` made, holding a metadata.json)"
        )
    return found


def _files(name: str, root: Path, where: Path) -> dict[str, Path]:
    """Every file of the variant `name` at `root` (path inside it → what is read), by the
    rule of publishing; its signature bundle beside it in `where` when it has none inside."""
    real_root = os.path.realpath(root)
    #: The store deduplicates identical files with hard links: there they are expected.
    in_store = nixcommand.is_store_path(str(root))
    out: dict[str, Path] = {}

    def refuse(rel: str, why: str) -> PublishError:
        return PublishError(
            f"{Outside(str(root / rel))}: {why}; nixgen publishes the files of the variant "
            f"{Outside(name)} and nothing outside it (remove it, or rebuild the variant)"
        )

    def unreadable(rel: str, exc: OSError) -> None:
        raise refuse(rel or ".", f"cannot be listed ({exc.strerror})")

    for folder, _, names in paths.walk(root, onerror=unreadable):
        for file in names:
            rel = f"{folder}/{file}" if folder else file
            rel = rel.replace(os.sep, "/")
            path = root / rel
            try:
                info = os.lstat(path)
            except OSError as exc:
                raise refuse(rel, f"cannot be read ({exc.strerror})") from None
            mode = info.st_mode
            if stat.S_ISREG(mode) and info.st_nlink > 1 and not in_store:
                # The same file as one elsewhere: as good as a link out of the variant.
                raise refuse(rel, f"is a hard link (one of {info.st_nlink} names of one file)")
            if stat.S_ISLNK(mode):
                real = os.path.realpath(path)
                if not paths.inside(real_root, real):
                    raise refuse(rel, f"is a link out of the variant (to {Outside(real)})")
                try:
                    target_mode = os.stat(real).st_mode
                except OSError:
                    raise refuse(rel, "is a link to nothing") from None
                if not stat.S_ISREG(target_mode):
                    raise refuse(rel, "is a link to a directory or a special file")
                path = Path(real)
            elif not stat.S_ISREG(mode):
                raise refuse(rel, _kind(mode))
            why = remote.repo_path_problem(f"build/{name}/{rel}")
            if why is not None:
                raise refuse(rel, f"its name cannot be a path in a repository: {why}")
            out[rel] = path
            if len(out) > MAX_FILES:
                raise refuse(".", f"holds over {MAX_FILES} files")
    beside = where / f"{name}.{BUNDLE}"
    found = paths.lstat_under(where, f"{name}.{BUNDLE}")
    if isinstance(found, os.stat_result):
        if not stat.S_ISREG(found.st_mode):
            raise PublishError(f"{Outside(str(beside))}: {_kind(found.st_mode)}, not a bundle file")
        if BUNDLE in out and _read(out[BUNDLE]) != _read(beside):
            raise PublishError(
                f"{Outside(str(beside))} and {Outside(str(root / BUNDLE))} differ: keep one "
                "signature bundle of the variant"
            )
        out[BUNDLE] = beside
    return dict(sorted(out.items()))


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a FIFO"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device"
    return "is not a regular file"


def _read(path: Path, limit: int = MAX_SMALL_FILE) -> bytes:
    """A small file's bytes (metadata.json, a bundle), bounded."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise PublishError(f"{Outside(str(path))}: over {limit} bytes")
    return data


def plan(found: dict[str, Variant]) -> Upload:
    """The `Upload` of the variants `found`: each bundle checked, every path in the
    repository checked."""
    files: dict[str, Path] = {}
    for name, variant in found.items():
        if BUNDLE in variant.files:
            check_bundle(variant)
        for rel, local in variant.files.items():
            files[f"build/{name}/{rel}"] = local
    return Upload(found, dict(sorted(files.items())))


def metadata(variant: Variant) -> tuple[bytes, dict[str, Any]]:
    """The variant's metadata.json: its bytes and its JSON object (bounded)."""
    data = _read(variant.files.get("metadata.json", variant.metadata))
    try:
        parsed = bounded.json_loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise PublishError(f"{Outside(str(variant.metadata))}: not JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise PublishError(f"{Outside(str(variant.metadata))}: not a JSON object")
    return data, parsed


def version_branch(found: dict[str, Variant]) -> str:
    """``v<version>`` of the variants' metadata.json, which must agree, each a version
    the client reads (`remote.version_branch`)."""
    branches: dict[str, list[str]] = {}
    for name, variant in found.items():
        _, parsed = metadata(variant)
        try:
            branch = remote.version_branch(parsed.get("version"))
        except ValueError as exc:
            raise PublishError(
                f"{Outside(str(variant.metadata))}: {exc}; rebuild it, or pass --branch"
            ) from None
        branches.setdefault(branch, []).append(name)
    if len(branches) > 1:
        which = "; ".join(
            f"{b[1:]}: {', '.join(str(Outside(n)) for n in names)}"
            for b, names in sorted(branches.items(), key=lambda item: int(item[0][1:]))
        )
        raise PublishError(
            f"the variants have different versions ({which}); rebuild them, or pass --branch"
        )
    return next(iter(branches))


def check_bundle(variant: Variant) -> None:
    """The variant's signature bundle must be a Sigstore bundle (JSON) that, when it
    records the digest of the message it signs, signs this metadata.json."""
    where = Outside(str(variant.files[BUNDLE]))
    try:
        bundle = bounded.json_loads(_read(variant.files[BUNDLE]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise PublishError(f"{where}: not a Sigstore bundle (not JSON: {exc})") from None
    media = bundle.get("mediaType") if isinstance(bundle, dict) else None
    if not isinstance(media, str) or not media.startswith("application/vnd.dev.sigstore.bundle"):
        raise PublishError(f"{where}: not a Sigstore bundle (no Sigstore `mediaType`)")
    message = bundle.get("messageSignature")
    digest = message.get("messageDigest") if isinstance(message, dict) else None
    if not isinstance(digest, dict) or digest.get("algorithm") != "SHA2_256":
        return  # no digest of the message to compare here: the client's verifier checks it
    data, _ = metadata(variant)
    if digest.get("digest") != base64.b64encode(hashlib.sha256(data).digest()).decode():
        raise PublishError(
            f"{where}: signs another metadata.json than the variant {Outside(variant.name)}'s "
            "(left from an earlier build?): sign this build's metadata.json again"
        )


# ----------------------------------------------------------- what may be published


@attrs.frozen
class Refusal:
    """A variant that may not be published as it is, and why."""

    variant: str
    why: str


def check_digests(found: dict[str, Variant]) -> list[Refusal]:
    """The variants whose files do not match the digest their metadata.json records,
    checked with the `kernels` client's own `Digest` (a variant without a digest is not
    checked here: the client warns about it on every load)."""
    refusals = []
    for name, variant in found.items():
        data, parsed = metadata(variant)
        if "digest" not in parsed:
            continue
        why = _digest_problem(variant, data)
        if why is not None:
            refusals.append(Refusal(name, why))
    return refusals


def _digest_problem(variant: Variant, data: bytes) -> str | None:
    try:
        from kernels._rust import Digest, DigestValidationError, Metadata
    except ImportError:
        raise PublishError(
            f"the metadata.json of {Outside(variant.name)} records a digest, and checking it "
            "needs the `kernels` client: pip install 'nixgen[hub]' (or kernels)"
        ) from None
    try:
        recorded = Metadata.from_bytes(data).digest
    except ValueError as exc:
        return f"the kernels client cannot read its metadata.json ({Outside(str(exc))})"
    if recorded is None:
        return None
    try:
        recorded.validate(Digest.hash_variant(recorded.algorithm, variant.root))
    except DigestValidationError as exc:
        found = [str(Outside(str(v))) for v in exc.violations]
        more = f" and {len(found) - 5} more" if len(found) > 5 else ""
        return (
            f"its files do not match the digest in its metadata.json: {'; '.join(found[:5])}{more}"
        )
    except (OSError, RuntimeError) as exc:
        return f"its files cannot be hashed ({Outside(str(exc))})"
    return None


def match_sources(
    found: dict[str, Variant],
    current: Mapping[str, str | None],
    *,
    why_none: Callable[[str], str],
) -> list[Refusal]:
    """The variants that are not what the current flake builds: `current` is the output
    path the flake evaluates to now for each variant (None when there is none: `why_none`
    says why). A link must lead to it; a folder must hold its files (the signature bundle
    aside), and it must be in the store."""
    refusals = []
    for name, variant in found.items():
        now = current.get(name)
        if now is None:
            refusals.append(Refusal(name, why_none(name)))
        elif variant.link is not None:
            if variant.link != now:
                refusals.append(
                    Refusal(
                        name,
                        f"its build {Outside(variant.link)} is not what the current sources "
                        f"build ({Outside(now)})",
                    )
                )
        elif not os.path.isdir(now):
            refusals.append(
                Refusal(
                    name,
                    f"it is a folder, and what the current sources build ({Outside(now)}) is "
                    "not in the Nix store to compare it with",
                )
            )
        elif not _same_files(variant, Path(now)):
            refusals.append(
                Refusal(
                    name,
                    f"it is a folder whose files are not those of the current sources' build "
                    f"({Outside(now)})",
                )
            )
    return refusals


def _same_files(variant: Variant, built: Path) -> bool:
    mine = {rel: path for rel, path in variant.files.items() if rel != BUNDLE}
    try:
        theirs = _files(variant.name, built, built / ".nixgen-no-such-directory")
    except PublishError:
        return False
    theirs.pop(BUNDLE, None)
    if set(mine) != set(theirs):
        return False
    return all(filecmp.cmp(mine[rel], theirs[rel], shallow=False) for rel in mine)


def output_json(
    status: str, repo_id: str, branch: str, url: str | None, pull_requests: list[dict[str, str]]
) -> bytes:
    """kernel-builder's ``--output-json`` summary: ``status`` (``uploaded``,
    ``pull_request_created``), ``repo_id``, ``branch``, ``url`` (null for a pull request)
    and ``pull_requests`` (each ``branch`` and ``url``), pretty-printed."""
    summary = {
        "status": status,
        "repo_id": repo_id,
        "branch": branch,
        "url": url,
        "pull_requests": pull_requests,
    }
    return (json.dumps(summary, indent=2) + "\n").encode()


def current_outputs(
    root: Path,
    systems: dict[str, str],
    command: Callable[[str, list[str]], nixcommand.Command],
) -> dict[str, str]:
    """The output path the flake at `root` evaluates to now for each variant of `systems`
    (variant → its system): one `nix eval` (`command(system, variants)`) per system."""

    out: dict[str, str] = {}
    by_system: dict[str, list[str]] = {}
    for name, system in systems.items():
        by_system.setdefault(system, []).append(name)
    for system, names in sorted(by_system.items()):
        result = nixbuild.run(command(system, names), cwd=root)
        if result.code != 0:
            report = "\n".join(
                str(Outside(line, lines=True)) for line in result.log.failure_report(20)
            )
            raise NixgenError(
                f"evaluating the flake for {system}, to compare the builds with the current "
                f"sources, failed (pass --allow-stale to upload without comparing):\n{report}"
            )
        try:
            found = bounded.json_loads(result.stdout)
        except ValueError as exc:
            raise NixgenError(f"`nix eval` printed no list of output paths ({exc})") from None
        if not isinstance(found, list) or len(found) != len(names):
            raise NixgenError(f"`nix eval` printed no list of {len(names)} output path(s)")
        for name, path in zip(names, found, strict=True):
            if not nixcommand.is_store_path(path):
                raise NixgenError(
                    f"the flake's packages.{system}.{name}.outPath is "
                    f"{Outside(json.dumps(path)[:200])}, not a path in {nixcommand.store_dir()}"
                )
            out[name] = path
    return out


def stale_variants(
    project: Path,
    found: dict[str, Variant],
    given: Given,
    *,
    options: Sequence[tuple[str, str]],
    accept_flake_config: bool,
) -> list[Refusal]:
    """The variants of `found` that are not what the project's flake builds from its
    current sources (`match_sources`), after one evaluation per system with the settings
    of the build (`nixgen build`'s --override-input, --out, --offline: `given`, resolved
    with nixgen.toml; --option: `options`)."""

    settings = resolve(project, given)
    prepared = prepare(project, settings)
    loaded, rendered, planned = prepared.project, prepared.rendered, prepared.plan
    print_problems([p for p in prepared.problems if p.severity == "warning"])
    root = loaded.root.resolve()
    if write.plan(root, rendered).stale:
        why = (
            f"the project's Nix files ({rendered.out_dir}/, flake.nix) are not what build.toml "
            "renders now, so no build of them is current"
        )
        return match_sources(found, {}, why_none=lambda _: why)
    unseen = gitfiles.unseen_problems(loaded, rendered, root)
    if unseen:
        raise ProblemError(unseen)
    systems = {v.name: v.system for v in planned.variants if v.name in found}
    nix = nix_settings(settings, options, accept_flake_config=accept_flake_config)

    def evaluate(system: str, names: list[str]) -> nixcommand.Command:
        return nixcommand.eval_out_paths(root, system, names, nix)

    current = current_outputs(root, systems, evaluate)
    return match_sources(
        found,
        current,
        why_none=lambda name: f"{Outside(name)} is not a variant of build.toml now",
    )
