"""The one module that talks to the Hub (with huggingface_hub, the Hub's own client, over
its httpx2 client), for `nixgen upload`.

Before anything is sent, every value is checked by `nixgen.core.remote` (the repository id,
the branch, every path, the endpoint) and the token by its characters. While it talks to
the Hub:

- **Every answer is bounded** (`Limits`): each connection, read, write and wait for a
  connection times out (``NIXGEN_HUB_TIMEOUT`` seconds, default 60), each answer's body
  must arrive within five times that and hold at most `Limits.answer` bytes (decompressed),
  and one upload makes at most `Limits.requests` requests and reads at most `Limits.total`
  bytes, so a Hub that never answers, trickles, or pages forever ends in an error.
- **The token goes only to the endpoint's origin**: a request to another host (a page link
  or an upload URL the Hub answered) is sent without it.
- **Every answer is checked before use**: a file the Hub lists must be a valid repository
  path (`remote.REPO_PATH`), a pull request's URL a plain http(s) URL; every string shown
  is an `Outside` value; an answer huggingface_hub cannot read is one error naming the step.
- **Credentials are never shown**: the token and the endpoint's user and password are
  registered with `nixgen.core.outside.keep_secret`, and the endpoint is shown redacted.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import attrs

from nixgen.core import outside, remote
from nixgen.core.errors import EXIT_FAILURE, NixgenError, ProblemError, error
from nixgen.core.outside import Outside

#: The commit message (kernel-builder's says `kernel-builder`).
MESSAGE = "Uploaded using `nixgen`."
#: The environment variable of the Hub timeout, in seconds.
TIMEOUT_ENV = "NIXGEN_HUB_TIMEOUT"
DEFAULT_TIMEOUT = 60.0
#: URL prefix of each repository type on the Hub's web pages.
_URL_PREFIX = {"kernel": "kernels/", "model": ""}

T = TypeVar("T")


class HubError(NixgenError):
    """The Hub refused, failed, or answered something nixgen cannot use (exit status 1)."""

    exit_code = EXIT_FAILURE


@attrs.frozen
class Limits:
    """What one upload accepts from the Hub."""

    #: Seconds for each connection, read, write and wait for a free connection.
    timeout: float = DEFAULT_TIMEOUT
    #: The most bytes of one answer (after decompression): far above any listing page.
    answer: int = 16 * 1024 * 1024
    #: The most bytes of all answers together.
    total: int = 256 * 1024 * 1024
    #: The most requests of one upload (a listing is paged; each page is one).
    requests: int = 1000

    @property
    def answer_seconds(self) -> float:
        """Seconds within which an answer's body must have arrived, once it began."""
        return 5 * self.timeout


@attrs.frozen
class Target:
    """Where an upload goes, every part checked (`target`)."""

    endpoint: remote.Endpoint
    repo_id: str
    branch: str
    repo_type: str = "kernel"

    @property
    def shown_endpoint(self) -> str:
        return outside.redact(self.endpoint.url)

    def web_url(self, *, tree: bool = True) -> str:
        base = f"{self.shown_endpoint}/{_URL_PREFIX[self.repo_type]}{self.repo_id}"
        return f"{base}/tree/{self.branch}" if tree else base


def endpoint_from_env() -> remote.Endpoint:
    """The Hub endpoint: ``HF_ENDPOINT``, else huggingface.co (huggingface_hub's default),
    checked by `remote.endpoint`; its credentials are registered as secrets."""
    value = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    try:
        found = remote.endpoint(value)
    except ValueError as exc:
        raise ProblemError(
            [error(f"HF_ENDPOINT `{Outside(value)}` {exc}", hint="e.g. https://huggingface.co")]
        ) from None
    for secret in found.secrets:
        outside.keep_secret(secret)
    return found


def limits_from_env() -> Limits:
    """`Limits` with the timeout of ``NIXGEN_HUB_TIMEOUT`` (seconds, 0.1 to 3600)."""
    value = os.environ.get(TIMEOUT_ENV)
    if not value:
        return Limits()
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0.1 <= seconds <= 3600:
        raise ProblemError(
            [
                error(
                    f"{TIMEOUT_ENV} is `{Outside(value)}`, not a number of seconds from 0.1 to 3600"
                )
            ]
        )
    return Limits(timeout=seconds)


def target(repo_id: str, branch: str, repo_type: str = "kernel") -> Target:
    """The checked `Target`; a `ProblemError` (exit status 2) naming each bad value."""
    problems = []
    endpoint = endpoint_from_env()
    why = remote.repo_id_problem(repo_id)
    if why is not None:
        problems.append(error(f"invalid Hub repository id `{Outside(repo_id)}`: {why}"))
    why = remote.branch_problem(branch)
    if why is not None:
        problems.append(error(f"invalid branch `{Outside(branch)}`: {why}"))
    if repo_type not in remote.REPO_TYPES:
        problems.append(error(f"no repository type `{Outside(repo_type)}`"))
    if problems:
        raise ProblemError(problems)
    return Target(endpoint, repo_id, branch, repo_type)


# ------------------------------------------------------------------ the bounded session


class AnswerError(Exception):
    """An answer over a bound (size, time, count); raised inside the HTTP client."""


class _Session:
    """Counts and bounds every request and answer of one upload (httpx2 event hooks)."""

    def __init__(self, origin: tuple[str, str, int], limits: Limits) -> None:
        self.origin = origin
        self.limits = limits
        self.requests = 0
        self.received = 0

    def on_request(self, request: Any) -> None:
        from huggingface_hub import constants

        if constants.is_offline_mode():
            raise OSError("HF_HUB_OFFLINE is set: nothing is sent to the Hub")
        self.requests += 1
        if self.requests > self.limits.requests:
            raise AnswerError(f"more than {self.limits.requests} requests")
        url = request.url
        port = url.port or {"http": 80, "https": 443}.get(url.scheme, 0)
        if (url.scheme, url.host, port) != self.origin:
            request.headers.pop("Authorization", None)  # the token stays with the Hub
        request.headers["Accept-Encoding"] = "gzip, deflate, identity"

    def on_response(self, response: Any) -> None:
        length = response.headers.get("Content-Length")
        if length is not None and (not length.isdigit() or int(length) > self.limits.answer):
            raise AnswerError(f"an answer of {Outside(length)} bytes, over {self.limits.answer}")
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("identity", "gzip", "deflate", ""):
            raise AnswerError(f"an answer encoded as `{Outside(encoding)}`")
        if encoding in ("gzip", "deflate"):
            # Decompressed here, within the bound, rather than by httpx2 without one.
            del response.headers["Content-Encoding"]
        response.stream = _bounded_stream()(response.stream, self, encoding)


@functools.cache
def _bounded_stream() -> type:
    """The class of a bounded answer body: an httpx2 byte stream (made on first use, as
    httpx2 is only imported by an upload)."""
    import httpx2

    class BoundedStream(httpx2.SyncByteStream):
        """An answer's body, within the session's bounds (size, time), decompressed."""

        def __init__(self, inner: Any, session: _Session, encoding: str) -> None:
            self.inner = inner
            self.session = session
            self.deadline = time.monotonic() + session.limits.answer_seconds
            self.decoder = zlib.decompressobj(47) if encoding in ("gzip", "deflate") else None

        @property
        def elapsed(self) -> Any:
            return getattr(self.inner, "elapsed", None)

        def __iter__(self) -> Iterator[bytes]:
            limits = self.session.limits
            size = 0
            for chunk in self.inner:
                if self.decoder is not None:
                    chunk = self.decoder.decompress(chunk, limits.answer - size + 1)
                    if self.decoder.unconsumed_tail:
                        raise AnswerError(f"an answer over {limits.answer} bytes")
                size += len(chunk)
                self.session.received += len(chunk)
                if size > limits.answer:
                    raise AnswerError(f"an answer over {limits.answer} bytes")
                if self.session.received > limits.total:
                    raise AnswerError(f"answers over {limits.total} bytes in all")
                if time.monotonic() > self.deadline:
                    raise AnswerError(f"an answer taking over {limits.answer_seconds:g} s")
                yield chunk

        def close(self) -> None:
            self.inner.close()

    return BoundedStream


@contextlib.contextmanager
def _bounded_client(session: _Session) -> Iterator[None]:
    """huggingface_hub's HTTP client, for the time of one upload, with `session`'s hooks
    and timeouts (its default client has none: it would wait forever)."""
    import httpx2
    from huggingface_hub import set_client_factory

    def factory() -> Any:
        return httpx2.Client(
            event_hooks={"request": [session.on_request], "response": [session.on_response]},
            follow_redirects=True,
            timeout=httpx2.Timeout(session.limits.timeout),
        )

    set_client_factory(factory)
    try:
        yield
    finally:
        from huggingface_hub.utils import _http

        # The client huggingface_hub makes by default again (guarded: a private name).
        set_client_factory(getattr(_http, "default_client_factory", factory))


# ------------------------------------------------------------------------- the upload


@attrs.frozen
class Published:
    """What an upload did."""

    status: str  # "uploaded" or "pull_request_created" (kernel-builder's names)
    new_branch: bool
    deleted: int
    #: The branch's page (redacted), or the pull request's URL (checked, from the Hub).
    url: Outside


def deletions(
    files: dict[str, Path], variants: list[str], existing: list[str], *, new_branch: bool
) -> list[str]:
    """The files on the branch to delete: under the uploaded variants' folders (all of
    ``build/`` on a new branch) and not uploaded again (kernel-builder's rule)."""
    prefixes = ("build/",) if new_branch else tuple(f"build/{v}/" for v in variants)
    return sorted(f for f in existing if f.startswith(prefixes) and f not in files)


def publish(
    where: Target,
    files: dict[str, Path],
    variants: list[str],
    *,
    private: bool,
    create_pr: bool,
    limits: Limits | None = None,
) -> Published:
    """Upload `files` (path in the repository → local file, every path checked) of
    `variants` to `where`, in one commit (`create_pr`: a pull request)."""
    try:
        import httpx2
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
        from huggingface_hub.errors import HfHubHTTPError
        from huggingface_hub.hf_api import RepoFile, RepoFolder
    except ImportError:
        raise NixgenError(
            "`nixgen upload` needs huggingface_hub 2.4 or newer: pip install 'nixgen[hub]' "
            "(or huggingface_hub)"
        ) from None
    for path in files:
        why = remote.repo_path_problem(path)
        if why is not None:  # the caller checked them: this is the last guard
            raise NixgenError(f"invalid path in a repository `{Outside(path)}`: {why}")
    limits = limits or limits_from_env()
    session = _Session(where.endpoint.origin, limits)
    kind = where.repo_type

    def step(what: str, call: Callable[[], T]) -> T:
        """`call`, its failures turned into one message naming `what`."""
        try:
            return call()
        except HfHubHTTPError as exc:
            code = exc.response.status_code if exc.response is not None else "no response"
            said = getattr(exc, "server_message", None) or str(exc) or type(exc).__name__
            first = Outside(str(said).strip().splitlines()[0][:300] if str(said).strip() else "")
            hint = (
                "; set HF_TOKEN or run `hf auth login` (publishing under an organisation "
                "such as kernels-community needs its approval)"
                if code in (401, 403)
                else ""
            )
            raise HubError(f"the Hub refused {what} (HTTP {code}: {first}){hint}") from None
        except AnswerError as exc:
            raise HubError(
                f"gave up {what} at {where.shown_endpoint}: {exc} (the limits of one "
                f"upload; {TIMEOUT_ENV} sets the timeout)"
            ) from None
        except httpx2.TimeoutException:
            raise HubError(
                f"the Hub at {where.shown_endpoint} did not answer {what} within "
                f"{limits.timeout:g} s ({TIMEOUT_ENV} sets the timeout)"
            ) from None
        except (OSError, httpx2.TransportError) as exc:
            raise HubError(
                f"cannot reach the Hub at {where.shown_endpoint} ({what}): {Outside(str(exc))}"
            ) from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise HubError(
                f"the Hub's answer to {what} is not what its API returns "
                f"({type(exc).__name__}: {Outside(str(exc)[:200])}); nothing more was sent"
            ) from None

    with _bounded_client(session):
        token = step("reading the token", _token)
        api = HfApi(endpoint=where.endpoint.url, token=token)
        if not create_pr:
            step(
                f"creating {where.repo_id}",
                lambda: api.create_repo(
                    where.repo_id, repo_type=kind, private=private, exist_ok=True
                ),
            )
        refs = step(
            f"listing the branches of {where.repo_id}",
            lambda: api.list_repo_refs(where.repo_id, repo_type=kind),
        )
        names = _branch_names(refs)
        new_branch = where.branch not in names
        if new_branch:
            if create_pr:
                raise HubError(
                    f"a pull request can only target an existing branch: ask a maintainer "
                    f"of `{where.repo_id}` to create `{where.branch}` first"
                )
            step(
                f"creating the branch {where.branch}",
                lambda: api.create_branch(where.repo_id, branch=where.branch, repo_type=kind),
            )
        entries = step(
            f"listing the files of branch {where.branch}",
            lambda: list(
                api.list_repo_tree(
                    where.repo_id, revision=where.branch, recursive=True, repo_type=kind
                )
            ),
        )
        existing = _listed_files(entries, where.branch, RepoFile, RepoFolder)
        gone = deletions(files, variants, existing, new_branch=new_branch)
        operations: list[Any] = [CommitOperationDelete(path_in_repo=p) for p in gone]
        operations += [
            CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(local))
            for p, local in files.items()
        ]
        what = "the pull request" if create_pr else f"the commit to {where.branch}"
        info = step(
            what,
            lambda: api.create_commit(
                where.repo_id,
                operations,
                commit_message=MESSAGE,
                revision=where.branch,
                repo_type=kind,
                create_pr=create_pr,
            ),
        )
    if create_pr:
        url = getattr(info, "pr_url", None)
        why = remote.url_problem(url) if url is not None else "is missing"
        if why is not None:
            raise HubError(
                f"the Hub opened a pull request, but its URL {why} "
                f"(`{Outside(str(url)[:200])}`); see {where.web_url(tree=False)}/discussions"
            )
        return Published("pull_request_created", new_branch, len(gone), Outside(str(url)))
    return Published("uploaded", new_branch, len(gone), Outside(where.web_url()))


def _token() -> str | None:
    """huggingface_hub's token (``HF_TOKEN``, else ``hf auth login``'s), registered as a
    secret; refused when it holds a character no token has (it would be sent as a header)."""
    from huggingface_hub import get_token

    token = get_token()
    outside.keep_secret(token)
    if token is not None and not re.fullmatch(r"[\x21-\x7e]{1,4096}", token):
        raise HubError(
            "the Hub token (HF_TOKEN, or `hf auth login`'s) holds a space, a control or a "
            "non-ASCII character: no token does; set it again"
        )
    return token


def _branch_names(refs: Any) -> set[str]:
    branches = getattr(refs, "branches", None)
    if not isinstance(branches, list):
        raise HubError("the Hub's list of branches is not a list; nothing was sent")
    names = {getattr(b, "name", None) for b in branches}
    if not all(isinstance(n, str) for n in names):
        raise HubError("the Hub listed a branch without a name; nothing was sent")
    return {n for n in names if isinstance(n, str)}


def _listed_files(entries: list[Any], branch: str, file_type: type, folder_type: type) -> list[str]:
    """The paths of the files the Hub listed on `branch`, each a valid repository path."""
    files = []
    for entry in entries:
        if not isinstance(entry, (file_type, folder_type)):
            raise HubError(f"the Hub listed something neither a file nor a folder on {branch}")
        path = cast(Any, entry).path
        why = remote.repo_path_problem(path)
        if why is not None:
            raise HubError(
                f"the Hub listed `{Outside(str(path)[:300])}` on branch {branch}: {why}; "
                "nixgen neither deletes nor replaces such a path, and sent nothing"
            )
        if isinstance(entry, file_type):
            files.append(path)
    return files
