"""``nixgen verify``: the variants of a build directory, checked by the `kernels` client.

Each variant is checked with the client's own verifiers (kernels 0.18.3 or newer,
``kernels[sigstore]`` for signatures), nothing re-implemented:

- its digest: ``verify_digest`` (``Digest.hash_variant`` of its files against the ``digest``
  of its ``metadata.json``), as every load does since 0.18.3, without the receipt cache;
  a variant without a digest fails here (the client only warns);
- its signature, where ``metadata.json.sigstore`` is present: ``verify_signature`` (Sigstore's
  ``Verifier.production()`` and a signer policy), without the receipt cache. The policy is
  the signer the user names (`Signer`: a GitHub repository, its workflow(s) and the ref
  they ran on, the client's ``GitHubWorkflowPolicy``), else the client's default one, which
  trusts kernels-community's workflows only. With a signer named, an unsigned variant fails.

Sigstore's verifier refreshes its trust root (TUF, tuf-repo-cdn.sigstore.dev) first: without
the network a signature cannot be checked, and the variant says so.
"""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path
from typing import Any

import attrs

from nixgen.core.errors import NixgenError, ProblemError, error

#: The signature bundle next to a variant's metadata (as kernels-community's release CI
#: writes it: `cosign sign-blob metadata.json --bundle metadata.json.sigstore`).
BUNDLE = "metadata.json.sigstore"
#: GitHub's rules for an owner (user or organisation) and a repository name.
_OWNER = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?")
_REPOSITORY = re.compile(r"[A-Za-z0-9._-]{1,100}")
#: A workflow file of the repository, as its signer URI names it.
_WORKFLOW = re.compile(r"\.github/workflows/[A-Za-z0-9._-]+\.ya?ml")
#: A git ref a workflow ran on (`refs/heads/main`, `refs/tags/v1`).
_REF = re.compile(r"refs/(heads|tags)/[^\s~^:?*\[\\]+")
#: The receipt-cache key the client's verifiers take; unused here (no cache), but required.
_NO_LOCATION_REPO = "nixgen/verify"


@attrs.frozen
class Signer:
    """Who may have signed the variants: workflows of one GitHub repository, on one ref."""

    repo: str
    workflows: tuple[str, ...]
    ref: str

    def uris(self) -> list[str]:
        """The build-signer URIs of the signing certificate (Fulcio's GitHub Actions
        extension), one per workflow."""
        return [f"https://github.com/{self.repo}/{w}@{self.ref}" for w in self.workflows]

    def describe(self) -> str:
        return f"{self.repo}: {', '.join(self.workflows)} on {self.ref}"


@attrs.frozen
class Check:
    """One half of a variant's verification."""

    ok: bool
    #: `verified`, `failed`, `missing` (no digest or no bundle) or `unsigned` (no bundle,
    #: none asked for).
    status: str
    message: str


@attrs.frozen
class Result:
    variant: str
    path: Path
    digest: Check
    signature: Check

    @property
    def ok(self) -> bool:
        return self.digest.ok and self.signature.ok

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "path": str(self.path),
            "ok": self.ok,
            "digest": attrs.asdict(self.digest),
            "signature": attrs.asdict(self.signature),
        }


def signer(repo: str | None, workflows: tuple[str, ...], ref: str) -> Signer | None:
    """The signer the options name (None when neither --repo nor --workflow is given);
    every problem with them at once."""
    if repo is None and not workflows:
        return None
    problems = []
    if repo is None:
        problems.append(error("--workflow needs --repo OWNER/NAME: the repository it is in"))
    else:
        owner, _, name = repo.partition("/")
        if not (_OWNER.fullmatch(owner) and _REPOSITORY.fullmatch(name)) or name in (".", ".."):
            problems.append(
                error(
                    f"--repo {repo!r} is not a GitHub repository",
                    hint="give it as OWNER/NAME, e.g. --repo my-org/relu",
                )
            )
    if not workflows:
        problems.append(
            error(
                "--repo needs --workflow: the workflow file that signed the variants",
                hint="e.g. --workflow .github/workflows/release.yaml",
            )
        )
    for workflow in workflows:
        if not _WORKFLOW.fullmatch(workflow):
            base = os.path.basename(workflow)
            suggestion = f".github/workflows/{base}" if base.endswith((".yaml", ".yml")) else None
            problems.append(
                error(
                    f"--workflow {workflow!r} is not a workflow file of the repository",
                    hint=f"did you mean `{suggestion}`?"
                    if suggestion
                    else "give its path, e.g. .github/workflows/release.yaml",
                )
            )
    if not _REF.fullmatch(ref):
        guess = f"refs/heads/{ref}"
        problems.append(
            error(
                f"--ref {ref!r} is not a git ref a workflow runs on",
                hint=f"did you mean `{guess}`?"
                if _REF.fullmatch(guess)
                else "e.g. refs/heads/main or refs/tags/v1",
            )
        )
    if problems:
        raise ProblemError(problems)
    assert repo is not None
    return Signer(repo, tuple(dict.fromkeys(workflows)), ref)


def variants(directory: Path) -> dict[str, Path]:
    """The variants to check in `directory`, as kernel-builder discovers them: the
    folders holding a metadata.json of the first of `directory`/build and `directory` that
    has any; else `directory` itself when it holds a metadata.json (one variant)."""
    for base in (directory / "build", directory):
        found = (
            {
                entry.name: Path(entry.path)
                for entry in sorted(os.scandir(base), key=lambda e: e.name)
                if entry.is_dir() and os.path.isfile(os.path.join(entry.path, "metadata.json"))
            }
            if base.is_dir()
            else {}
        )
        if found:
            return found
    if (directory / "metadata.json").is_file():
        return {directory.resolve().name: directory}
    return {}


def _client() -> tuple[Any, Any, Any]:
    """The client's Rust types, digest verifier and signature verifier modules (kernels
    0.19's `kernels._internals`, 0.18's `kernels`); an error saying what to install."""
    try:
        rust = importlib.import_module("kernels._rust")
    except ImportError:
        raise NixgenError(
            "`nixgen verify` needs the kernels client (0.18.3 or newer): pip install "
            "'kernels[sigstore]'"
        ) from None
    for package in ("kernels._internals", "kernels"):
        try:
            digest = importlib.import_module(f"{package}.digest")
        except ImportError:
            continue
        if hasattr(digest, "verify_digest"):
            return rust, digest, package
    raise NixgenError(
        "the installed kernels client cannot verify digests (it is older than 0.18.3): pip "
        "install --upgrade 'kernels[sigstore]'"
    )


def _signature_module(package: str) -> Any:
    try:
        return importlib.import_module(f"{package}.verify")
    except ImportError:
        return None


def _policy(verify: Any, who: Signer | None) -> Any:
    if who is None:
        return verify.DEFAULT_POLICY
    return verify.GitHubWorkflowPolicy(repo_id=who.repo, signer_uris=who.uris())


def _check_digest(rust: Any, digest: Any, path: Path) -> Check:
    try:
        metadata = rust.Metadata.read_from_file(path / "metadata.json")
    except (OSError, ValueError, RuntimeError) as exc:
        return Check(False, "failed", f"the kernels client cannot read metadata.json: {exc}")
    try:
        result = digest.verify_digest(path, metadata=metadata, location=None, cache=False)
    except (OSError, RuntimeError) as exc:
        return Check(False, "failed", f"the files cannot be hashed: {exc}")
    text = str(result)
    if isinstance(result, digest.DigestVerificationResult.Success):
        count = len(metadata.digest.files)
        return Check(True, "verified", f"{text} ({count} file(s))")
    if isinstance(result, digest.DigestVerificationResult.DigestMissing):
        return Check(False, "missing", text)
    return Check(False, "failed", text)


def _check_signature(rust: Any, verify: Any, path: Path, name: str, who: Signer | None) -> Check:
    signed = (path / BUNDLE).is_file()
    if not signed:
        if who is None:
            return Check(True, "unsigned", f"not signed (no {BUNDLE})")
        return Check(False, "missing", f"not signed (no {BUNDLE}), but {who.repo} must sign it")
    if verify is None:
        return Check(
            False,
            "failed",
            "signed, but its signature cannot be checked: the kernels client needs sigstore "
            "(pip install 'kernels[sigstore]')",
        )
    location = rust.KernelLocation.remote(_NO_LOCATION_REPO, rust.Oid.from_str("0" * 40), name)
    try:
        result = verify.verify_signature(
            path, location=location, policy=_policy(verify, who), cache=False
        )
    except Exception as exc:  # sigstore's own errors: the trust root (TUF), the network
        reason = str(exc).strip() or type(exc).__name__
        return Check(
            False,
            "failed",
            f"the signature cannot be checked: {type(exc).__name__}: {reason} (Sigstore's "
            "verifier first refreshes its trust root from tuf-repo-cdn.sigstore.dev, which "
            "needs the network)",
        )
    text = str(result)
    if isinstance(result, verify.SignatureVerificationResult.Success):
        by = (
            who.describe() if who is not None else "kernels-community (the client's default policy)"
        )
        return Check(True, "verified", f"{text} by {by}")
    if who is None and isinstance(
        result, verify.SignatureVerificationResult.SignatureVerificationFailure
    ):
        text += (
            "\n(checked against the client's default policy, which trusts kernels-community's "
            "workflows only; name your signer: --repo OWNER/NAME --workflow "
            ".github/workflows/FILE)"
        )
    return Check(False, "failed", text)


def find(directory: Path) -> dict[str, Path]:
    """`variants` of `directory`; none is invalid input."""
    if not directory.exists():
        raise ProblemError([error(f"{directory}: no such directory")])
    found = variants(directory)
    if not found:
        raise ProblemError(
            [
                error(
                    f"{directory}: no built variants (folders with a metadata.json, in "
                    f"{directory / 'build'} or {directory})",
                    hint="run `nixgen build` first, or give the build directory",
                )
            ]
        )
    return found


def verify(found: dict[str, Path], who: Signer | None) -> list[Result]:
    """Each variant of `found` checked: its digest, and its signature (`who`: the signer
    policy; None: the client's default one)."""
    rust, digest, package = _client()
    needs_signatures = who is not None or any((p / BUNDLE).is_file() for p in found.values())
    verify_module = _signature_module(package) if needs_signatures else None
    return [
        Result(
            name,
            path,
            _check_digest(rust, digest, path),
            _check_signature(rust, verify_module, path, name, who),
        )
        for name, path in found.items()
    ]
