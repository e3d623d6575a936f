"""``nixgen upload``: publish ``build/`` to a Hub repository as kernel-builder does.

The layout and branch scheme are kernel-builder's (``kernel-builder/src/upload.rs``,
huggingface/kernels 8ac69fc5): a ``kernel`` repository (created if missing, unless a pull
request is opened), one branch per kernel version (``v<version>``, from the variants'
``metadata.json``, unless ``--branch`` or ``general.hub.branch`` says otherwise), every file
of each variant at ``build/<variant>/…`` on it, and files under ``build/`` the upload does
not carry deleted: under the uploaded variants' folders on an existing branch, under all
of ``build/`` on a new one. One commit per branch (``--create-pr``: a pull request instead).
The Hub is reached with huggingface_hub, the Hub's own client: its endpoint
(``HF_ENDPOINT``) and token (``HF_TOKEN``, else ``hf auth login``) are its usual ones.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import attrs

from nixgen.core.errors import NixgenError

#: The commit message (kernel-builder's says `kernel-builder`).
MESSAGE = "Uploaded using `nixgen`."


@attrs.frozen
class Upload:
    """What an upload sends: the repository, the branch and each file."""

    repo_id: str
    branch: str
    #: Variant name → its directory (a `build/<variant>` link or folder).
    variants: dict[str, Path]
    #: Path in the repository → local file, sorted.
    files: dict[str, Path]


def variants(build_dir: Path) -> dict[str, Path]:
    """The variants in `build_dir`: each folder (or link to one) with a metadata.json,
    by name (kernel-builder's `discover_variants`)."""
    if not build_dir.is_dir():
        return {}
    return {
        entry.name: Path(entry.path)
        for entry in sorted(os.scandir(build_dir), key=lambda e: e.name)
        if entry.is_dir() and os.path.isfile(os.path.join(entry.path, "metadata.json"))
    }


def version_branch(found: dict[str, Path]) -> str:
    """``v<version>`` of the variants' metadata.json, which must agree."""
    versions: dict[int, list[str]] = {}
    for name, path in found.items():
        try:
            data = json.loads((path / "metadata.json").read_text(encoding="utf-8"))
            version = data["version"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise NixgenError(
                f"{path / 'metadata.json'}: cannot read its version ({exc})"
            ) from None
        if isinstance(version, bool) or not isinstance(version, int):
            raise NixgenError(f"{path / 'metadata.json'}: `version` is not an integer")
        versions.setdefault(version, []).append(name)
    if len(versions) > 1:
        which = "; ".join(f"{v}: {', '.join(n)}" for v, n in sorted(versions.items()))
        raise NixgenError(
            f"the variants in build/ have different versions ({which}); rebuild them, or "
            "pass --branch"
        )
    return f"v{next(iter(versions))}"


def files(found: dict[str, Path]) -> dict[str, Path]:
    """Every file of the variants as ``build/<variant>/<path>``: links inside a variant
    are followed (a built variant is a link into the Nix store)."""
    out: dict[str, Path] = {}
    for name, root in found.items():
        for folder, dirs, names in os.walk(root, followlinks=True):
            dirs.sort()
            rel = os.path.relpath(folder, root)
            for file in sorted(names):
                path = Path(folder) / file
                if path.is_file():
                    inner = file if rel == "." else f"{rel}/{file}".replace(os.sep, "/")
                    out[f"build/{name}/{inner}"] = path
    return dict(sorted(out.items()))


def deletions(upload: Upload, existing: list[str], *, new_branch: bool) -> list[str]:
    """The files on the branch to delete: under the uploaded variants' folders (all of
    ``build/`` on a new branch) and not uploaded again."""
    prefixes = ("build/",) if new_branch else tuple(f"build/{v}/" for v in upload.variants)
    return sorted(f for f in existing if f.startswith(prefixes) and f not in upload.files)


def send(upload: Upload, *, private: bool, create_pr: bool) -> dict[str, Any]:
    """Upload with huggingface_hub; what happened (`status`, `url`, `deleted`). The
    endpoint is read from ``HF_ENDPOINT`` now, not when huggingface_hub was imported."""
    try:
        import httpx2  # huggingface_hub's HTTP client (a dependency of huggingface_hub 2.x)
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
        from huggingface_hub.errors import HfHubHTTPError
        from huggingface_hub.hf_api import RepoFile
    except ImportError:
        raise NixgenError(
            "`nixgen upload` needs huggingface_hub 2.4 or newer: pip install 'nixgen[hub]' "
            "(or huggingface_hub)"
        ) from None

    api = HfApi(endpoint=os.environ.get("HF_ENDPOINT") or None)
    kind = "kernel"
    try:
        if not create_pr:
            api.create_repo(upload.repo_id, repo_type=kind, private=private, exist_ok=True)
        refs = api.list_repo_refs(upload.repo_id, repo_type=kind)
        new_branch = upload.branch not in {b.name for b in refs.branches}
        if new_branch:
            if create_pr:
                raise NixgenError(
                    f"a pull request can only target an existing branch: ask a maintainer of "
                    f"`{upload.repo_id}` to create `{upload.branch}` first"
                )
            api.create_branch(upload.repo_id, branch=upload.branch, repo_type=kind)
        existing = [
            entry.path
            for entry in api.list_repo_tree(
                upload.repo_id, revision=upload.branch, recursive=True, repo_type=kind
            )
            if isinstance(entry, RepoFile)
        ]
        operations: list[Any] = [
            CommitOperationDelete(path_in_repo=path)
            for path in deletions(upload, existing, new_branch=new_branch)
        ]
        operations += [
            CommitOperationAdd(path_in_repo=path, path_or_fileobj=str(local))
            for path, local in upload.files.items()
        ]
        info = api.create_commit(
            upload.repo_id,
            operations,
            commit_message=MESSAGE,
            revision=upload.branch,
            repo_type=kind,
            create_pr=create_pr,
        )
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "no response"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        hint = (
            "; set HF_TOKEN or run `hf auth login` (publishing under an organisation such as "
            "kernels-community needs its approval)"
            if status in (401, 403)
            else ""
        )
        raise NixgenError(f"the Hub refused the upload (HTTP {status}: {first}){hint}") from None
    except (OSError, httpx2.TransportError) as exc:
        raise NixgenError(f"cannot reach the Hub at {_base(api)}: {exc}") from None
    return {
        "status": "pull-request" if create_pr else "uploaded",
        "new_branch": new_branch,
        "deleted": len([op for op in operations if isinstance(op, CommitOperationDelete)]),
        "url": info.pr_url
        if create_pr
        else f"{_base(api)}/kernels/{upload.repo_id}/tree/{upload.branch}",
    }


def _base(api: Any) -> str:
    return str(api.endpoint).rstrip("/")
