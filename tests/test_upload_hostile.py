"""`nixgen upload` against a hostile tree, hostile values and a hostile Hub.

Each test is an attack, class by class: reading outside the published variant, values the
Hub must not receive, credentials on the terminal, a Hub that hangs or floods, answers
huggingface_hub cannot use, and text that would drive the terminal. Offline, against
`tests/hubstub.py`; nothing here builds.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.cmdline.cli import main

from .hubstub import VARIANTS, Hub, Raw, fake_project, serve

SECRET = "hf_SECRETSECRETSECRET_0123456789"


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Hub]:
    stub = serve(monkeypatch, token=SECRET)
    yield stub
    stub.stop()


def upload(root: Path, *args: str) -> object:
    """`nixgen upload --allow-stale ROOT --repo-id me/relu ARGS` (the folders in build/ are
    not Nix builds: what is checked here is what reaches the Hub and the terminal)."""
    return CliRunner().invoke(
        main, ["upload", "--allow-stale", str(root), "--repo-id", "me/relu", *args]
    )


def sent_nothing(hub: Hub) -> bool:
    return hub.requests == [] and hub.repos == {}


def clean(output: str) -> bool:
    """No raw escape or control character but newline reached the terminal, and no secret."""
    return "\x1b" not in output and "\x07" not in output and SECRET not in output


# ---------------------------------------------- reading outside the published variant


def test_a_link_to_the_token_file_is_refused_and_its_bytes_never_sent(tmp_path, hub):
    root = fake_project(tmp_path)
    token_file = tmp_path / "hf-home" / "token"
    token_file.parent.mkdir()
    token_file.write_text(SECRET)
    (root / "build" / VARIANTS[0] / "token").symlink_to(token_file)
    result = upload(root)
    assert result.exit_code == 2, result.output
    assert "token: is a link out of the variant" in result.stderr
    assert sent_nothing(hub) and clean(result.output)


def test_a_linked_directory_outside_the_project_is_refused(tmp_path, hub):
    root = fake_project(tmp_path)
    outside_dir = tmp_path / "home" / ".ssh"
    outside_dir.mkdir(parents=True)
    (outside_dir / "id_ed25519").write_text("PRIVATE KEY")
    (root / "build" / VARIANTS[0] / "sub" / "keys").symlink_to(outside_dir)
    result = upload(root)
    assert result.exit_code == 2
    assert "keys: is a link out of the variant" in result.stderr
    assert sent_nothing(hub)


def test_a_symlink_loop_is_refused_not_uploaded_120_times(tmp_path, hub):
    root = fake_project(tmp_path)
    (root / "build" / VARIANTS[0] / "sub" / "loop").symlink_to("..")
    result = upload(root, "--dry-run")
    assert result.exit_code == 2
    assert "loop: is a link to a directory or a special file" in result.stderr
    assert result.stdout == ""


def test_a_link_to_a_file_inside_the_variant_is_sent_with_its_bytes(tmp_path, hub):
    # As the client's digest hashes it: under the link's name, the target's bytes.
    root = fake_project(tmp_path)
    (root / "build" / VARIANTS[0] / "alias.bin").symlink_to("sub/data.bin")
    result = upload(root)
    assert result.exit_code == 0, result.output
    files = hub.repos["me/relu"].branches["v1"]
    assert files[f"build/{VARIANTS[0]}/alias.bin"] == bytes(range(256))


@pytest.mark.parametrize("kind", ["dangling link", "fifo", "socket"])
@pytest.mark.slow
def test_special_files_and_dangling_links_are_refused_without_hanging(tmp_path, hub, kind):
    root = fake_project(tmp_path)
    target = root / "build" / VARIANTS[1] / "sub" / "thing"
    if kind == "dangling link":
        target.symlink_to(tmp_path / "gone")
        expected = "thing: is a link out of the variant"
    elif kind == "fifo":
        os.mkfifo(target)
        expected = "thing: is a FIFO"
    else:
        import socket

        sock = socket.socket(socket.AF_UNIX)
        here = Path.cwd()
        os.chdir(target.parent)  # a socket's path is at most 107 bytes: bind it relatively
        try:
            sock.bind(target.name)
        finally:
            os.chdir(here)
        expected = "thing: is a socket"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "nixgen", "upload", "--allow-stale", str(root), "--repo-id", "me/r"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "HF_ENDPOINT": hub.endpoint},
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr
    assert time.monotonic() - started < 60
    assert sent_nothing(hub)


@pytest.mark.parametrize("given", ["../elsewhere", "/tmp", "build/../..", "linked"])
def test_build_dir_outside_the_project_or_through_a_link_is_refused(tmp_path, hub, given):
    root = fake_project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / VARIANTS[0]).mkdir(parents=True)
    (elsewhere / VARIANTS[0] / "metadata.json").write_text('{"version": 1}')
    (root / "linked").symlink_to(elsewhere)
    result = upload(root, "--build-dir", given)
    assert result.exit_code == 2, result.output
    assert "nixgen publishes" in result.stderr
    assert sent_nothing(hub)


def test_a_build_directory_that_is_a_link_is_refused(tmp_path, hub):
    root = fake_project(tmp_path)
    (root / "build").rename(tmp_path / "moved")
    (root / "build").symlink_to(tmp_path / "moved")
    result = upload(root)
    assert result.exit_code == 2
    assert "build: is a symbolic link" in result.stderr
    assert sent_nothing(hub)


def test_a_variant_link_to_a_directory_outside_the_store_is_refused(tmp_path, hub):
    root = fake_project(tmp_path, variants=())
    private = tmp_path / "private"
    private.mkdir()
    (private / "metadata.json").write_text('{"version": 1}')
    (private / "notes.txt").write_text("private")
    (root / "build").mkdir()
    (root / "build" / VARIANTS[0]).symlink_to(private)
    result = upload(root)
    assert result.exit_code == 2
    assert f"links to {private}, not to a build in the Nix store" in result.stderr
    assert sent_nothing(hub)


# ------------------------------------------------------- values the Hub must not receive


@pytest.mark.parametrize(
    "branch",
    ["refs/pr/1", "../main", "-main", "a..b", "a//b", "x.lock", "v1/", ".hidden", "a b", "a~1"],
)
def test_a_bad_branch_is_refused_before_anything_is_sent(tmp_path, hub, branch):
    result = upload(fake_project(tmp_path), "--branch", branch)
    assert result.exit_code == 2, result.output
    assert "invalid branch" in result.stderr
    assert sent_nothing(hub)


@pytest.mark.parametrize("repo_id", ["me/a..b", "me/a--b", "me/x.git", "relu", "me/-x", "a/b/c"])
def test_a_bad_repository_id_is_refused_by_upload_and_by_validate(tmp_path, hub, repo_id):
    root = fake_project(tmp_path)
    result = CliRunner().invoke(main, ["upload", "--allow-stale", str(root), "--repo-id", repo_id])
    assert result.exit_code == 2
    assert "invalid Hub repository id" in result.stderr
    text = (root / "build.toml").read_text()
    table = f'\n[general.hub]\nrepo-id = "{repo_id}"\n'
    (root / "build.toml").write_text(text.replace("\n[torch]", f"{table}\n[torch]", 1))
    validated = CliRunner().invoke(main, ["validate", str(root)])
    assert validated.exit_code == 2
    assert "general.hub.repo-id: invalid Hub repository id" in validated.stderr
    assert sent_nothing(hub)


def test_a_bad_branch_in_build_toml_fails_validate(tmp_path):
    root = fake_project(tmp_path, hub_table='\n[general.hub]\nbranch = "refs/pr/1"\n')
    validated = CliRunner().invoke(main, ["validate", str(root)])
    assert validated.exit_code == 2
    assert "general.hub.branch: invalid branch `refs/pr/1`: starts with `refs/`" in validated.stderr


@pytest.mark.parametrize("version", [-1, True, 1.5, 2**64, "1", None])
def test_a_metadata_version_the_client_cannot_read_makes_no_branch(tmp_path, hub, version):
    result = upload(fake_project(tmp_path, version=version))
    assert result.exit_code == 2, result.output
    assert "metadata.json: `version`" in result.stderr
    assert "v-1" not in result.output
    assert sent_nothing(hub)


@pytest.mark.parametrize(
    "endpoint", ["ftp://hub.example", "http://hub.example/?x=1", "hub.example", "http://"]
)
def test_an_endpoint_that_is_no_http_url_is_refused(tmp_path, hub, monkeypatch, endpoint):
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    result = upload(fake_project(tmp_path))
    assert result.exit_code == 2
    assert "HF_ENDPOINT" in result.stderr
    assert sent_nothing(hub)


# ------------------------------------------------------------- credentials never shown


def test_credentials_in_the_endpoint_are_never_printed(tmp_path, hub, monkeypatch):
    host = hub.endpoint.removeprefix("http://")
    monkeypatch.setenv("HF_ENDPOINT", f"http://user:{SECRET}@{host}")
    root = fake_project(tmp_path)
    summary = tmp_path / "summary.json"
    result = upload(root, "--output-json", str(summary))
    assert result.exit_code == 0, result.output
    assert result.stdout == f"Kernel uploaded: http://***@{host}/kernels/me/relu/tree/v1\n"
    assert SECRET not in summary.read_text()
    hub.refuse = 500
    refused = upload(root)
    assert refused.exit_code == 1 and clean(refused.output)
    hub.stop()  # nothing listens any more
    gone = upload(root)
    assert gone.exit_code == 1
    assert f"cannot reach the Hub at http://***@{host}" in gone.stderr
    assert clean(gone.output)


def test_a_hub_that_echoes_the_token_does_not_get_it_printed(tmp_path, hub):
    def answer(method, path, query):
        body = {"error": f"token {SECRET} is not allowed here \x1b]0;owned\x07\x1b[2J"}
        return Raw(403, json.dumps(body).encode())

    hub.answer = answer
    result = upload(fake_project(tmp_path))
    assert result.exit_code == 1
    assert "the Hub refused creating me/relu (HTTP 403" in result.stderr
    assert "token *** is not allowed here" in result.stderr
    assert clean(result.output)


# --------------------------------------------------------- a Hub that hangs or floods


@pytest.mark.slow
def test_a_hub_that_never_answers_times_out(tmp_path, hub, monkeypatch):
    monkeypatch.setenv("NIXGEN_HUB_TIMEOUT", "1")
    hub.hang = True
    started = time.monotonic()
    result = upload(fake_project(tmp_path))
    assert result.exit_code == 1
    assert "did not answer creating me/relu within 1 s" in result.stderr
    assert time.monotonic() - started < 30


@pytest.mark.slow
def test_a_hub_that_trickles_its_answer_is_given_up(tmp_path, hub, monkeypatch):
    monkeypatch.setenv("NIXGEN_HUB_TIMEOUT", "1")
    hub.answer = lambda method, path, query: (
        Raw(200, b'{"url": "http://x/kernels/me/relu", "pad": "' + b"." * 60 + b'"}', trickle=0.3)
        if path == "/api/repos/create"
        else None
    )
    started = time.monotonic()
    result = upload(fake_project(tmp_path))
    assert result.exit_code == 1
    assert "an answer taking over 5 s" in result.stderr
    assert time.monotonic() - started < 30


def test_a_decompression_bomb_is_cut_at_the_bound(tmp_path, hub):
    bomb = gzip.compress(b"[" + b" " * (64 * 1024 * 1024) + b"]")
    hub.answer = lambda method, path, query: (
        Raw(200, bomb, {"Content-Encoding": "gzip"}) if "/tree/" in path else None
    )
    result = upload(fake_project(tmp_path))
    assert result.exit_code == 1
    assert "an answer over 16777216 bytes" in result.stderr
    assert hub.repos["me/relu"].commits == []


def test_an_answer_announcing_more_than_the_bound_is_refused_at_once(tmp_path, hub):
    hub.answer = lambda method, path, query: (
        Raw(200, b"[]", {"Content-Length": str(10**12)}) if "/refs" in path else None
    )
    result = upload(fake_project(tmp_path))
    assert result.exit_code == 1
    assert "an answer of 1000000000000 bytes" in result.stderr


@pytest.mark.slow
def test_a_listing_that_pages_forever_ends(tmp_path, hub):
    def answer(method, path, query):
        if "/tree/" not in path:
            return None
        link = f'<{hub.endpoint}{path}?cursor={len(hub.requests)}>; rel="next"'
        return Raw(200, b"[]", {"Link": link})

    hub.answer = answer
    result = upload(fake_project(tmp_path))
    assert result.exit_code == 1
    assert "more than 1000 requests" in result.stderr
    assert hub.repos["me/relu"].commits == []


def test_the_token_never_follows_a_link_to_another_host(tmp_path, hub):
    other = Hub().start()
    try:
        hub.answer = lambda method, path, query: (
            Raw(200, b"[]", {"Link": f'<{other.endpoint}{path}?cursor=1>; rel="next"'})
            if "/tree/" in path
            else None
        )
        result = upload(fake_project(tmp_path))
        assert result.exit_code == 1  # the other host knows no such repository
        assert other.tokens == [None]
        assert all(t == f"Bearer {SECRET}" for t in hub.tokens)
    finally:
        other.stop()


# ------------------------------------------------- answers huggingface_hub cannot use


@pytest.mark.parametrize(
    "path",
    ["..", "build/../../etc/passwd", ".git/config", "build/x/.git/hooks/post-checkout", "/abs"],
)
def test_hostile_tree_entries_stop_the_upload_before_the_commit(tmp_path, hub, path):
    entry = {"type": "file", "path": path, "size": 1, "oid": "0" * 40}
    hub.answer = lambda method, p, query: (
        Raw(200, json.dumps([entry]).encode()) if "/tree/" in p else None
    )
    result = upload(fake_project(tmp_path))
    assert result.exit_code == 1, result.output
    assert "the Hub listed `" in result.stderr and "sent nothing" in result.stderr
    assert "internal error" not in result.output
    assert hub.repos["me/relu"].commits == []


@pytest.mark.parametrize(
    "body", [b"not json", b'{"branches": 5}', b"[]", b'{"branches": [{"nom": "v1"}]}']
)
def test_garbage_answers_are_one_error_not_an_internal_one(tmp_path, hub, body):
    hub.answer = lambda method, path, query: Raw(200, body) if path.endswith("/refs") else None
    result = upload(fake_project(tmp_path))
    assert result.exit_code == 1, result.output
    assert "internal error" not in result.output and "Traceback" not in result.output
    assert "listing the branches of me/relu" in result.stderr or "branch" in result.stderr


def test_a_pull_request_url_with_escape_sequences_is_not_printed_raw(tmp_path, hub):
    root = fake_project(tmp_path)
    assert upload(root, "--branch", "dev").exit_code == 0
    hostile = "http://x/\x1b]8;;http://evil/\x07click here\x1b]8;;\x07\x1b[2J"

    def answer(method, path, query):
        if "/commit/" in path:
            commit = f"{hub.endpoint}/kernels/me/relu/commit/{'1' * 40}"
            return Raw(
                200,
                json.dumps(
                    {"commitUrl": commit, "commitOid": "1" * 40, "pullRequestUrl": hostile}
                ).encode(),
            )
        return None

    hub.answer = answer
    result = upload(root, "--branch", "dev", "--create-pr")
    assert result.exit_code == 1, result.output
    assert clean(result.output)
    assert "\\x1b]8;;http://evil/\\x07click here" in result.stderr


# ---------------------------------------------- text that would drive the terminal


def test_a_variant_name_with_escape_sequences_is_refused_and_shown_escaped(tmp_path, hub):
    root = fake_project(tmp_path)
    (root / "build" / VARIANTS[0]).rename(root / "build" / "torch\x1b]0;owned\x07\x1b[2J")
    result = upload(root)
    assert result.exit_code == 2
    assert "\\x1b]0;owned\\x07\\x1b[2J" in result.stderr
    assert clean(result.output)


def test_a_file_name_that_forges_a_line_is_refused_on_one_line(tmp_path, hub):
    root = fake_project(tmp_path)
    (root / "build" / VARIANTS[0] / "x\nnixgen: uploaded everything").write_text("")
    result = upload(root)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "x\\nnixgen: uploaded everything" in result.stderr


def test_a_bidi_override_in_a_file_name_is_listed_escaped(tmp_path, hub):
    root = fake_project(tmp_path)
    (root / "build" / VARIANTS[0] / "evil\u202eyp.so").write_text("")
    result = upload(root, "--dry-run")
    assert result.exit_code == 0, result.output
    assert f"build/{VARIANTS[0]}/evil\\u202eyp.so" in result.stdout.splitlines()
    assert "\u202e" not in result.output


def test_a_branch_with_escape_sequences_is_shown_escaped(tmp_path, hub):
    result = upload(fake_project(tmp_path), "--branch", "v1\x1b[2J\x1b]0;t\x07")
    assert result.exit_code == 2
    assert "invalid branch `v1\\x1b[2J\\x1b]0;t\\x07`" in result.stderr
    assert clean(result.output)


def test_a_hard_link_to_a_file_outside_is_refused(tmp_path, hub):
    root = fake_project(tmp_path)
    secret = tmp_path / "secret"
    secret.write_text(SECRET)
    os.link(secret, root / "build" / VARIANTS[0] / "innocent.txt")
    result = upload(root)
    assert result.exit_code == 2
    assert "innocent.txt: is a hard link (one of 2 names of one file)" in result.stderr
    assert sent_nothing(hub) and clean(result.output)


def test_a_metadata_json_that_links_out_is_refused_not_skipped(tmp_path, hub):
    root = fake_project(tmp_path)
    elsewhere = tmp_path / "metadata.json"
    elsewhere.write_text('{"version": 1}')
    (root / "build" / VARIANTS[0] / "metadata.json").unlink()
    (root / "build" / VARIANTS[0] / "metadata.json").symlink_to(elsewhere)
    result = upload(root)
    assert result.exit_code == 2
    assert "metadata.json: is a symbolic link, not the variant's own file" in result.stderr
    assert sent_nothing(hub)
