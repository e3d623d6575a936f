"""A small stand-in of the Hugging Face Hub's HTTP API on 127.0.0.1, for `nixgen upload`.

It answers the requests huggingface_hub's `HfApi` makes to publish files, at the paths
that client builds (huggingface_hub 2.4: `hf_api.py` `create_repo`, `list_repo_refs`,
`create_branch`, `list_repo_tree`; `_commit_api.py` `_fetch_upload_modes` (the
`preupload` call), `_create_commit` (the NDJSON `commit` call)), keeps each branch's files
in memory and records every request (method, path, query). Every file is accepted as a
`regular` upload (inline in the commit), so no LFS or Xet transfer is involved: the
layout, branches and deletions are what is tested, not the Hub's storage.

For the hostile cases, a test sets `answer` (a function of the request returning a `Raw`
answer, or None for the normal one) or `hang` (every request is read and never answered).
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import attrs

from .conftest import copy_out


@attrs.define
class Raw:
    """An answer as sent: status, body, headers; `trickle` sends the body one byte per
    `trickle` seconds."""

    status: int
    body: bytes
    headers: dict[str, str] = attrs.field(factory=dict)
    trickle: float | None = None


@attrs.define
class Repo:
    kind: str
    private: bool
    #: Branch → path → bytes.
    branches: dict[str, dict[str, bytes]] = attrs.field(factory=lambda: {"main": {}})
    pull_requests: list[dict[str, bytes]] = attrs.field(factory=list)
    commits: list[dict[str, Any]] = attrs.field(factory=list)


@attrs.define
class Hub:
    """The stand-in's state: repositories by id, and every request seen."""

    repos: dict[str, Repo] = attrs.field(factory=dict)
    requests: list[tuple[str, str, dict[str, list[str]]]] = attrs.field(factory=list)
    #: The `Authorization` header of each request, in order.
    tokens: list[str | None] = attrs.field(factory=list)
    server: ThreadingHTTPServer | None = None
    #: When set, every request is answered with this HTTP status (a Hub that refuses).
    refuse: int | None = None
    #: When set, asked first for each request (method, path, query): a `Raw` answer, or
    #: None for the normal one.
    answer: Any = None
    #: When set, every request is read and never answered (until `stop`).
    hang: bool = False
    #: The `Host` header of each request, in order.
    hosts: list[str | None] = attrs.field(factory=list)
    released: threading.Event = attrs.field(factory=threading.Event)

    @property
    def endpoint(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Hub:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

            def _answer(self, method: str) -> None:
                url = urlsplit(self.path)
                query = parse_qs(url.query)
                hub.requests.append((method, url.path, query))
                hub.tokens.append(self.headers.get("Authorization"))
                hub.hosts.append(self.headers.get("Host"))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if hub.hang:
                    hub.released.wait(120)
                    return
                raw = hub.answer(method, url.path, query) if hub.answer else None
                if raw is None:
                    status, payload = hub.route(method, url.path, query, body)
                    raw = Raw(status, json.dumps(payload).encode())
                self.send_response(raw.status)
                self.send_header("Content-Type", "application/json")
                headers = {"Content-Length": str(len(raw.body)), **raw.headers}
                for key, value in headers.items():
                    if value:
                        self.send_header(key, value)
                self.end_headers()
                if raw.trickle is None:
                    self.wfile.write(raw.body)
                    return
                for byte in raw.body:
                    if hub.released.wait(raw.trickle):
                        return
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A short poll: `stop` (shutdown) waits for the loop to see it, 0.5 s by default.
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        self.released.set()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    # ------------------------------------------------------------------ the API

    def route(
        self, method: str, path: str, query: dict[str, list[str]], body: bytes
    ) -> tuple[int, Any]:
        if self.refuse is not None:
            return self.refuse, {"error": "You don't have the rights to create a kernel"}
        if (method, path) == ("POST", "/api/repos/create"):
            data = json.loads(body)
            repo_id = f"{data.get('organization') or 'me'}/{data['name']}"
            self.repos.setdefault(
                repo_id, Repo(data.get("type") or "model", data.get("visibility") == "private")
            )
            return 200, {"url": f"{self.endpoint}/kernels/{repo_id}"}
        parts = [unquote(p) for p in path.split("/")]
        # /api/kernels/<ns>/<name>/<action>/<rev…> (or /api/models/…)
        if len(parts) < 6 or parts[:2] != ["", "api"] or parts[2] not in ("kernels", "models"):
            return 404, {"error": f"stand-in: no route {method} {path}"}
        repo_id, action, rest = f"{parts[3]}/{parts[4]}", parts[5], "/".join(parts[6:])
        repo = self.repos.get(repo_id)
        if repo is not None and parts[2] != f"{repo.kind}s":
            repo = None  # a kernel is not found among the models, nor the other way round
        if repo is None:
            return 404, {"error": f"Repository {repo_id} not found"}
        if (method, action) == ("GET", "refs"):
            branches = [
                {"name": b, "ref": f"refs/heads/{b}", "targetCommit": "0" * 40}
                for b in sorted(repo.branches)
            ]
            return 200, {"branches": branches, "converts": [], "tags": [], "pullRequests": []}
        if (method, action) == ("POST", "branch"):
            repo.branches[rest] = dict(repo.branches["main"])
            return 200, {}
        if (method, action) == ("GET", "tree"):
            files = repo.branches.get(rest)
            if files is None:
                return 404, {"error": f"Revision {rest} not found"}
            return 200, [
                {
                    "type": "file",
                    "path": p,
                    "size": len(d),
                    "oid": hashlib.sha1(d).hexdigest(),
                }
                for p, d in sorted(files.items())
            ]
        if (method, action) == ("POST", "preupload"):
            files = json.loads(body)["files"]
            return 200, {
                "files": [
                    {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                    for f in files
                ],
                "commitOid": "0" * 40,
            }
        if (method, action) == ("POST", "commit"):
            return self._commit(repo, repo_id, rest, query, body)
        return 404, {"error": f"stand-in: no route {method} {path}"}

    def _commit(
        self, repo: Repo, repo_id: str, branch: str, query: dict[str, list[str]], body: bytes
    ) -> tuple[int, Any]:
        if branch not in repo.branches:
            return 404, {"error": f"Revision {branch} not found"}
        files = dict(repo.branches[branch])
        record: dict[str, Any] = {"branch": branch, "added": [], "deleted": []}
        for line in body.splitlines():
            item = json.loads(line)
            if item["key"] == "header":
                record["message"] = item["value"]["summary"]
            elif item["key"] == "file":
                value = item["value"]
                assert value["encoding"] == "base64"
                files[value["path"]] = base64.b64decode(value["content"])
                record["added"].append(value["path"])
            elif item["key"] == "deletedFile":
                files.pop(item["value"]["path"], None)
                record["deleted"].append(item["value"]["path"])
            else:
                return 400, {"error": f"stand-in: unexpected commit item {item['key']}"}
        repo.commits.append(record)
        if query.get("create_pr") == ["1"]:
            repo.pull_requests.append(files)
            number = len(repo.pull_requests)
            url = f"{self.endpoint}/kernels/{repo_id}/discussions/{number}"
            commit = f"{self.endpoint}/kernels/{repo_id}/commit/{'2' * 40}"
            return 200, {"commitUrl": commit, "commitOid": "2" * 40, "pullRequestUrl": url}
        repo.branches[branch] = files
        return 200, {
            "commitUrl": f"{self.endpoint}/kernels/{repo_id}/commit/{'1' * 40}",
            "commitOid": "1" * 40,
            "pullRequestUrl": None,
        }


# ------------------------------------------------------------ what the upload tests share

#: The two CPU variants `fake_project` puts in build/.
VARIANTS = ("torch212-cxx11-cpu-x86_64-linux", "torch213-cxx11-cpu-x86_64-linux")


def serve(monkeypatch: Any, *, token: str = "hf_stand_in_token") -> Hub:
    """A started stand-in, reached through HF_ENDPOINT with HF_TOKEN `token` (stop it)."""
    stub = Hub().start()
    monkeypatch.setenv("HF_ENDPOINT", stub.endpoint)
    monkeypatch.setenv("HF_TOKEN", token)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.delenv("NIXGEN_HUB_TIMEOUT", raising=False)
    return stub


def fake_project(
    tmp_path: Any,
    *,
    version: Any = 1,
    hub_table: str = "",
    variants: tuple[str, ...] = VARIANTS,
) -> Any:
    """The CPU example (without its nix/) with `variants` in build/ as plain folders
    holding a metadata.json (of `version`), an `__init__.py` and `sub/data.bin`."""

    from .conftest import EXAMPLES

    root = tmp_path / "relu-cpu"
    copy_out(EXAMPLES / "relu-cpu", root, "nix")
    if hub_table:
        text = (root / "build.toml").read_text()
        (root / "build.toml").write_text(text.replace("\n[torch]", f"{hub_table}\n[torch]", 1))
    for variant in variants:
        out = root / "build" / variant
        (out / "sub").mkdir(parents=True)
        (out / "metadata.json").write_text(json.dumps({"version": version, "backend": "cpu"}))
        (out / "__init__.py").write_text(f"# {variant}\n")
        (out / "sub" / "data.bin").write_bytes(bytes(range(256)))
    return root


def client_metadata(variant_dir: Any, **extra: Any) -> dict[str, Any]:
    """A metadata.json the kernels client reads, written into `variant_dir`, with the
    digest of the variant's files computed by the client's own `Digest.hash_variant`."""
    from tests import client

    Digest, DigestAlgorithm = client.rust().Digest, client.rust().DigestAlgorithm

    data: dict[str, Any] = {
        "name": "relu-cpu",
        "id": "_relu_cpu_cpu_0123456789",
        "version": 1,
        "license": "Apache-2.0",
        "python-depends": [],
        "backend": {"type": "cpu"},
        **extra,
    }
    digest = Digest.hash_variant(DigestAlgorithm.SHA256, variant_dir)
    data["digest"] = {"algorithm": "sha256", "files": dict(digest.files)}
    (variant_dir / "metadata.json").write_text(json.dumps(data))
    return data
