"""`nixgen upload` publishes only what the current sources build, with its digest intact
and its signature bundle; kernel-builder's `--repo-type` and `--output-json`;
`nixgen build-and-upload`.

Offline, against `tests/hubstub.py`. The stale-build cases evaluate the project's flake with
the stand-ins (`nix eval`, seconds); one test (`build`) really builds a variant.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.cmdline.cli import main

from . import nixtools
from .hubstub import VARIANTS, Hub, client_metadata, fake_project, serve

V = VARIANTS[1]


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Hub]:
    stub = serve(monkeypatch)
    yield stub
    stub.stop()


def invoke(*args: str) -> object:
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def nix_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The stand-ins and Nix settings of the tests; the --override-input arguments."""
    if not nixtools.have_nix():
        pytest.skip("nix is not installed")
    monkeypatch.setenv("NIX_CONFIG", nixtools.nix_config())
    return nixtools.overrides(nixtools.make_stub(tmp_path))


def rendered(tmp_path: Path) -> Path:
    """The CPU example, rendered, with nothing in build/."""
    root = fake_project(tmp_path, variants=())
    assert invoke("render", str(root)).exit_code == 0
    return root


def store_dir_with(tmp_path: Path, name: str, files: dict[str, str]) -> str:
    """A directory added to the Nix store (what a build link leads to), holding `files`."""
    source = tmp_path / "to-add" / name
    source.mkdir(parents=True)
    for rel, text in files.items():
        (source / rel).write_text(text)
    done = subprocess.run(
        ["nix-store", "--add", str(source)], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


# ------------------------------------------------------------------ stale builds


@pytest.mark.slow
def test_a_build_of_other_sources_is_refused_naming_it_and_the_rebuild(tmp_path, hub, nix_env):
    root = rendered(tmp_path)
    old = store_dir_with(tmp_path, "relu-cpu-old", {"metadata.json": '{"version": 1}'})
    (root / "build").mkdir()
    (root / "build" / V).symlink_to(old)
    result = invoke("upload", str(root), "--repo-id", "me/relu", *nix_env)
    assert result.exit_code == 2, result.output
    assert f"nixgen: error: variant {V}: its build {old} is not what the current sources " in (
        result.stderr
    )
    rebuild = f"nixgen build {root} --override-input nixpkgs {nix_env[2]}"
    assert rebuild in result.stderr and f"--variant {V}" in result.stderr
    assert hub.requests == []
    # Accepted knowingly: said, and sent.
    accepted = invoke("upload", str(root), "--repo-id", "me/relu", "--allow-stale")
    assert accepted.exit_code == 0, accepted.output
    assert "warning: --allow-stale: the variants are not compared with the current" in (
        accepted.stderr
    )
    assert set(hub.repos["me/relu"].branches["v1"]) == {f"build/{V}/metadata.json"}


@pytest.mark.slow
def test_a_variant_the_project_no_longer_has_is_refused(tmp_path, hub, nix_env):
    root = rendered(tmp_path)
    gone = "torch299-cxx11-cpu-x86_64-linux"
    (root / "build" / gone).mkdir(parents=True)
    (root / "build" / gone / "metadata.json").write_text('{"version": 1}')
    result = invoke("upload", str(root), "--repo-id", "me/relu", *nix_env)
    assert result.exit_code == 2, result.output
    assert f"variant {gone}: {gone} is not a variant of build.toml now" in result.stderr
    assert hub.requests == []


@pytest.mark.slow
def test_a_folder_is_compared_with_what_the_sources_build(tmp_path, hub, nix_env):
    root = rendered(tmp_path)
    (root / "build" / V).mkdir(parents=True)
    (root / "build" / V / "metadata.json").write_text('{"version": 1}')
    result = invoke("upload", str(root), "--repo-id", "me/relu", *nix_env)
    assert result.exit_code == 2, result.output
    # Either the current build is not in this store, or the folder is not its copy.
    assert f"variant {V}: it is a folder" in result.stderr
    assert hub.requests == []


def test_nix_files_older_than_build_toml_make_every_build_stale(tmp_path, hub):
    root = fake_project(tmp_path)  # never rendered: no build of it can be current
    result = invoke("upload", str(root), "--repo-id", "me/relu")
    assert result.exit_code == 2
    for variant in VARIANTS:
        assert f"variant {variant}: the project's Nix files (nix/, flake.nix) are not" in (
            result.stderr
        )
    assert hub.requests == []


# ---------------------------------------------------------------------- digests


def test_files_that_no_longer_match_the_digest_are_refused(tmp_path, hub):
    root = fake_project(tmp_path)
    for variant in VARIANTS:
        client_metadata(root / "build" / variant)
    clean = invoke("upload", str(root), "--repo-id", "me/relu", "--allow-stale", "--dry-run")
    assert clean.exit_code == 0, clean.output
    assert "digest" not in clean.stderr
    (root / "build" / V / "sub" / "data.bin").write_bytes(b"changed after the build")
    (root / "build" / V / "added.py").write_text("print('added')\n")
    refused = invoke("upload", str(root), "--repo-id", "me/relu")
    assert refused.exit_code == 2
    assert f"variant {V}: its files do not match the digest in its metadata.json: " in (
        refused.stderr
    )
    assert "sub/data.bin" in refused.stderr and "added.py" in refused.stderr
    assert f"variant {VARIANTS[0]}: its files" not in refused.stderr
    assert hub.requests == []
    knowingly = invoke("upload", str(root), "--repo-id", "me/relu", "--allow-stale")
    assert knowingly.exit_code == 0
    assert f"warning: variant {V}: its files do not match the digest" in knowingly.stderr


def test_a_digest_the_client_cannot_read_is_refused(tmp_path, hub):
    root = fake_project(tmp_path)
    (root / "build" / V / "metadata.json").write_text(
        json.dumps({"version": 1, "digest": {"algorithm": "md5", "files": {}}})
    )
    result = invoke("upload", str(root), "--repo-id", "me/relu", "--allow-stale", "--dry-run")
    assert result.exit_code == 0
    assert f"variant {V}: the kernels client cannot read its metadata.json" in result.stderr


# ------------------------------------------------------------- signature bundles


def bundle_for(metadata: bytes, **changes: object) -> str:
    """A Sigstore bundle's shape (v0.3, a message signature) over `metadata`."""
    digest = base64.b64encode(hashlib.sha256(metadata).digest()).decode()
    bundle = {
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {"certificate": {"rawBytes": "MIIB"}},
        "messageSignature": {
            "messageDigest": {"algorithm": "SHA2_256", "digest": digest},
            "signature": "MEUC",
        },
        **changes,
    }
    return json.dumps(bundle)


def test_a_bundle_inside_the_variant_travels_as_a_plain_file(tmp_path, hub):
    root = fake_project(tmp_path)
    variant = root / "build" / V
    (variant / "metadata.json.sigstore").write_text(
        bundle_for((variant / "metadata.json").read_bytes())
    )
    result = invoke("upload", str(root), "--repo-id", "me/relu", "--allow-stale")
    assert result.exit_code == 0, result.output
    sent = hub.repos["me/relu"].branches["v1"]
    assert (
        sent[f"build/{V}/metadata.json.sigstore"]
        == (variant / "metadata.json.sigstore").read_bytes()
    )


def test_a_bundle_beside_a_store_link_travels_into_the_variant(tmp_path, hub):
    root = fake_project(tmp_path)
    variant = root / "build" / V
    text = bundle_for((variant / "metadata.json").read_bytes())
    (root / "build" / f"{V}.metadata.json.sigstore").write_text(text)
    result = invoke("upload", str(root), "--repo-id", "me/relu", "--allow-stale")
    assert result.exit_code == 0, result.output
    sent = hub.repos["me/relu"].branches["v1"]
    assert sent[f"build/{V}/metadata.json.sigstore"] == text.encode()
    assert not any(p.endswith(f"{V}.metadata.json.sigstore") for p in sent)


@pytest.mark.parametrize(
    ("bundle", "why"),
    [
        ("not json", "not a Sigstore bundle (not JSON"),
        ('{"mediaType": "text/plain"}', "not a Sigstore bundle (no Sigstore `mediaType`)"),
        (
            bundle_for(b'{"version": 0}'),
            f"signs another metadata.json than the variant {V}'s",
        ),
    ],
)
def test_a_bundle_that_does_not_sign_this_metadata_is_refused(tmp_path, hub, bundle, why):
    root = fake_project(tmp_path)
    (root / "build" / V / "metadata.json.sigstore").write_text(bundle)
    result = invoke("upload", str(root), "--repo-id", "me/relu", "--allow-stale")
    assert result.exit_code == 2, result.output
    assert why in result.stderr
    assert hub.requests == []


# ------------------------------------------------- kernel-builder's options


def test_repo_type_model_uploads_to_a_model_repository(tmp_path, hub):
    root = fake_project(tmp_path)
    result = invoke(
        "upload", str(root), "--repo-id", "me/legacy", "--allow-stale", "--repo-type", "model"
    )
    assert result.exit_code == 0, result.output
    assert hub.repos["me/legacy"].kind == "model"
    assert {p for _, p, _ in hub.requests if p.startswith("/api/")} >= {
        "/api/repos/create",
        "/api/models/me/legacy/refs",
    }
    assert result.stdout == f"Kernel uploaded: {hub.endpoint}/me/legacy/tree/v1\n"


def test_output_json_is_kernel_builders_summary(tmp_path, hub):
    root = fake_project(tmp_path)
    summary = tmp_path / "out" / "upload.json"
    args = ["upload", str(root), "--repo-id", "me/relu", "--allow-stale"]
    assert invoke(*args, "--branch", "dev", "--output-json", str(summary)).exit_code == 0
    assert json.loads(summary.read_text()) == {
        "status": "uploaded",
        "repo_id": "me/relu",
        "branch": "dev",
        "url": f"{hub.endpoint}/kernels/me/relu/tree/dev",
        "pull_requests": [],
    }
    pr = invoke(*args, "--branch", "dev", "--create-pr", "--output-json", str(summary))
    assert pr.exit_code == 0, pr.output
    url = f"{hub.endpoint}/kernels/me/relu/discussions/1"
    assert json.loads(summary.read_text()) == {
        "status": "pull_request_created",
        "repo_id": "me/relu",
        "branch": "dev",
        "url": None,
        "pull_requests": [{"branch": "dev", "url": url}],
    }


@pytest.mark.parametrize("target", ["build.toml", "a directory"])
def test_output_json_never_replaces_an_input_and_is_checked_first(tmp_path, hub, target):
    root = fake_project(tmp_path)
    path = root / "build.toml" if target == "build.toml" else tmp_path
    before = (root / "build.toml").read_bytes()
    result = invoke(
        "upload", str(root), "--repo-id", "me/relu", "--allow-stale", "--output-json", str(path)
    )
    assert result.exit_code == 2
    assert "--output-json" in result.stderr
    assert (root / "build.toml").read_bytes() == before
    assert hub.requests == []


def test_build_and_upload_takes_both_verbs_options():
    result = invoke("build-and-upload", "--help")
    assert result.exit_code == 0
    for option in (
        "--repo-id",
        "--create-pr",
        "--output-json",
        "--repo-type",
        "--variant",
        "--max-jobs",
        "--override-input",
        "--out-link",
    ):
        assert option in result.stdout
    for option in ("--dry-run", "--no-link", "--allow-stale"):
        assert option not in result.stdout


def test_build_and_upload_refuses_an_absolute_link_directory_before_building(tmp_path, hub):
    root = fake_project(tmp_path)
    result = invoke("build-and-upload", str(root), "--repo-id", "me/relu", "--out-link", "/tmp")
    assert result.exit_code == 2
    assert "--out-link must be relative" in result.stderr
    assert hub.requests == []


@pytest.mark.build
def test_build_and_upload_then_an_edit_makes_the_upload_stale(tmp_path, hub, nix_env):
    """One real build: `build-and-upload` sends it; `upload` accepts its link and a copy
    of it (as CI copies builds before signing); after an edit of a source, `upload`
    refuses it and names the rebuild."""
    root = rendered(tmp_path)
    done = invoke("build-and-upload", str(root), "--variant", V, "--repo-id", "me/relu", *nix_env)
    assert done.exit_code == 0, done.output
    assert done.stdout == f"Kernel uploaded: {hub.endpoint}/kernels/me/relu/tree/v1\n"
    link = root / "build" / V
    built = {p.relative_to(link).as_posix() for p in link.rglob("*") if p.is_file()}
    sent = hub.repos["me/relu"].branches["v1"]
    assert {p.removeprefix(f"build/{V}/") for p in sent} == built
    again = invoke("upload", str(root), "--repo-id", "me/relu", *nix_env)
    assert again.exit_code == 0, again.output
    # A copy of the build with its bundle, as the field's CI signs it.
    copy = tmp_path / "copy"
    shutil.copytree(link, copy, symlinks=False)
    link.unlink()
    copy.rename(link)
    (link / "metadata.json.sigstore").write_text(bundle_for((link / "metadata.json").read_bytes()))
    copied = invoke("upload", str(root), "--repo-id", "me/relu", *nix_env)
    assert copied.exit_code == 0, copied.output
    assert f"build/{V}/metadata.json.sigstore" in hub.repos["me/relu"].branches["v1"]
    source = next((root / "relu_cpu").glob("*.cpp"))
    source.write_text(source.read_text() + "\n// edited after the build\n")
    stale = invoke("upload", str(root), "--repo-id", "me/relu", *nix_env)
    assert stale.exit_code == 2, stale.output
    assert f"variant {V}: it is a folder" in stale.stderr
    assert f"nixgen build {root}" in stale.stderr and f"--variant {V}" in stale.stderr
