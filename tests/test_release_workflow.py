"""The release half of the workflow `nixgen render --ci github` writes: what each job may
do (its permissions, its secrets, its triggers, its timeout), and the release jobs' own
scripts replayed here in order: the sign step (with a stand-in `cosign` that writes a
bundle, since Fulcio and Rekor need GitHub's OIDC token and the network), the upload
job's check, and its `nixgen upload` step against the Hub stand-in (tests/hubstub.py),
which receives every `metadata.json.sigstore` beside its `metadata.json`.

Not verified here, because none of it is reachable from this machine: a run on GitHub
(its expression evaluator, `runs-on` from a matrix row, the artifact service behind
upload-artifact and download-artifact, deployment environments and their secrets),
cosign against Fulcio and Rekor, and an upload to the real Hub.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nixgen import __version__
from nixgen.cmdline.cli import main
from nixgen.rendering import workflow as workflow_mod

from . import workflows
from .conftest import EXAMPLES, copy_out
from .hubstub import Hub
from .workflows import RELEASE

#: A nixgen.toml that moves the release settings away from their defaults.
SETTINGS = """
[ci]
release-tags = ["release-*"]
environment = "hub"
cache-environment = "cache"
nixgen = "nixgen[hub] @ git+https://github.com/example/nixgen@0123abc"

[ci.build.cuda]
runs-on = { group = "gpu" }
timeout-minutes = 900
"""

#: The guarded form of every secret a job that may run for a pull request reads: empty
#: unless the event is not a pull request.
GUARDED = "${{{{ github.event_name != 'pull_request' && secrets.{name} || '' }}}}"


def render(tmp_path: Path, example: str, settings: str | None = None) -> Path:
    root = tmp_path / example
    copy_out(EXAMPLES / example, root, "nix", "build")
    if settings is not None:
        (root / "nixgen.toml").write_text(settings)
    result = CliRunner().invoke(main, ["render", str(root), "--ci", "github"])
    assert result.exit_code == 0, result.output
    return root


@pytest.fixture(params=["defaults", "configured"])
def case(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[dict[str, Any], str | None]:
    """A rendered workflow (parsed) and its nixgen.toml."""
    settings = None if request.param == "defaults" else SETTINGS
    example = "relu-cpu" if settings is None else "relu-mixed"
    root = render(tmp_path, example, settings)
    return workflows.load(root / workflow_mod.GITHUB_WORKFLOW), settings


# ----------------------------------------------------------------------------- structure


def test_only_the_signing_job_can_mint_an_oidc_token(case: tuple[dict[str, Any], Any]) -> None:
    workflow, _ = case
    assert workflow["permissions"] == {}
    for name, job in workflow["jobs"].items():
        if name == "sign":
            assert job["permissions"] == {"id-token": "write"}
        else:
            assert job["permissions"] == {"contents": "read"}, name
    holders = [n for n, j in workflow["jobs"].items() if "id-token" in j["permissions"]]
    assert holders == ["sign"]


def test_a_pushed_tag_builds_signs_and_uploads(case: tuple[dict[str, Any], Any]) -> None:
    workflow, settings = case
    tags = ["release-*"] if settings else ["v*"]
    assert workflow["on"]["push"] == {"branches": ["main"], "tags": tags}
    jobs = workflow["jobs"]
    # A tag push is a push: the full matrix, every variant (pull requests get one each).
    evaluate = workflows.step(workflow, "matrix", "matrix")
    assert evaluate["env"]["OUTPUT"] == (
        "${{ github.event_name == 'pull_request' && 'pullRequestMatrix' || 'matrix' }}"
    )
    assert jobs["build"]["env"]["RELEASE"] == f"${{{{ {RELEASE} }}}}"
    assert (jobs["sign"]["if"], jobs["sign"]["needs"]) == (RELEASE, "build")
    assert (jobs["upload"]["if"], jobs["upload"]["needs"]) == (RELEASE, ["build", "sign"])
    # The sign job signs every variant's metadata.json as kernels-community's CI does.
    sign = workflows.step(workflow, "sign", "sign")["run"]
    assert 'cosign sign-blob --yes --bundle "$metadata.sigstore" "$metadata"' in sign
    uses = [s.get("uses", "").split("@")[0] for s in jobs["sign"]["steps"]]
    assert uses == [
        "actions/download-artifact",
        "sigstore/cosign-installer",
        "",
        "actions/upload-artifact",
    ]
    # It checks nothing out and runs nothing of the project's: no checkout, no Nix.
    assert "nix " not in sign and "python" not in sign


def test_the_bundles_travel_with_the_upload(case: tuple[dict[str, Any], Any]) -> None:
    """The build jobs' artifacts and the sign job's bundles land in the same build/ of
    the upload job, which refuses a variant without its bundle and uploads them all."""
    workflow, _ = case
    keep = workflows.step(workflow, "build", "artifact")["with"]
    assert (keep["name"], keep["path"]) == ("nixgen-build-${{ strategy.job-index }}", "build/")
    bundles = workflows.step(workflow, "sign", "bundles")["with"]
    assert (bundles["name"], bundles["path"]) == (
        "nixgen-signatures",
        "build/*/metadata.json.sigstore",
    )
    builds = {"pattern": "nixgen-build-*", "merge-multiple": True, "path": "build"}
    assert workflows.step(workflow, "sign", "variants")["with"] == builds
    assert workflows.step(workflow, "upload", "variants")["with"] == builds
    assert workflows.step(workflow, "upload", "signatures")["with"] == {
        "name": "nixgen-signatures",
        "path": "build",
    }
    # The check (every variant has its bundle) comes before the upload of build/.
    ids = [s.get("id") for s in workflow["jobs"]["upload"]["steps"]]
    assert ids.index("signatures") < ids.index("check") < ids.index("upload")
    # Before the upload, `nixgen verify` holds every variant's files to its digest and its
    # bundle to this repository's workflow at this ref (the client's default policy would
    # trust only kernels-community's); the context reaches the script through env.
    assert ids.index("install") < ids.index("verify") < ids.index("upload")
    verify = workflows.step(workflow, "upload", "verify")
    assert verify["env"] == {"REPOSITORY": "${{ github.repository }}", "REF": "${{ github.ref }}"}
    assert verify["run"] == (
        'nixgen verify build --repo "$REPOSITORY" --workflow '
        f'"{workflow_mod.GITHUB_WORKFLOW}" --ref "$REF"'
    )
    upload = workflows.step(workflow, "upload", "upload")
    assert upload["run"] == "nixgen upload --allow-stale --build-dir build ."


def test_the_hub_token_lives_in_the_upload_jobs_environment(
    case: tuple[dict[str, Any], Any],
) -> None:
    workflow, settings = case
    upload = workflow["jobs"]["upload"]
    assert upload["environment"] == ("hub" if settings else "release")
    assert workflows.secrets_used(upload) == {"HF_TOKEN"}
    step = workflows.step(workflow, "upload", "upload")
    assert step["env"] == {"HF_TOKEN": "${{ secrets.HF_TOKEN }}"}
    others = {n: workflows.secrets_used(j) for n, j in workflow["jobs"].items() if n != "upload"}
    assert others == {
        "matrix": set(),
        "shards": {"CACHIX_AUTH_TOKEN"},
        "build": {"CACHIX_AUTH_TOKEN"},
        "sign": set(),
    }
    wanted = (
        f"nixgen[hub]=={__version__}"
        if settings is None
        else ("nixgen[hub] @ git+https://github.com/example/nixgen@0123abc")
    )
    install = workflows.step(workflow, "upload", "install")
    assert install["env"] == {"NIXGEN": wanted}
    # The requirement is data: pip reads it after `--`.
    assert install["run"] == 'python -m pip install -- "$NIXGEN"'


def test_pull_requests_never_see_a_secret(case: tuple[dict[str, Any], Any]) -> None:
    """Every secret is read either by a release-only job (its `if` is a tag push, which is
    never a pull request) or through the guard that is empty for a pull request; no
    trigger runs a pull request's code with the base repository's secrets; and the
    Cachix token's environment is named only off pull requests."""
    workflow, settings = case
    assert set(workflow["on"]) == {"push", "pull_request", "workflow_dispatch"}
    environment = "cache" if settings else "cachix"
    for name, job in workflow["jobs"].items():
        release_only = job.get("if") == RELEASE
        for where, text in workflows.strings(job):
            if "secrets." not in text:
                continue
            (secret,) = workflows.secrets_used(text)
            assert release_only or text == GUARDED.format(name=secret), (name, where, text)
        if not release_only and "environment" in job:
            assert job["environment"] == (
                "${{ github.event_name != 'pull_request' && vars.CACHIX_NAME != '' && "
                f"'{environment}' || '' }}}}"
            )
    # The release condition itself excludes pull requests.
    assert RELEASE.startswith("github.event_name == 'push' && ")


def test_every_job_has_a_timeout(case: tuple[dict[str, Any], Any]) -> None:
    workflow, settings = case
    jobs = workflow["jobs"]
    assert {n: j["timeout-minutes"] for n, j in jobs.items() if "strategy" not in j} == {
        "matrix": 30,
        "sign": 15,
        "upload": 60,
    }
    for name in ("shards", "build"):
        assert jobs[name]["timeout-minutes"] == "${{ matrix.timeout-minutes }}"
        assert jobs[name]["runs-on"] == "${{ matrix.runs-on }}"
    table = json.loads(jobs["matrix"]["env"]["RUNNERS"])
    assert all(row["timeout-minutes"] >= 1 for row in table.values())
    if settings:
        assert table["x86_64-linux/cuda"] == {"runs-on": {"group": "gpu"}, "timeout-minutes": 900}
        assert table["x86_64-linux/cpu"] == {"runs-on": "ubuntu-latest", "timeout-minutes": 360}


# ------------------------------------------------------------------------------- replay


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Hub]:
    stub = Hub().start()
    yield stub
    stub.stop()


def fake_cosign(directory: Path, record: Path) -> Path:
    """A `cosign` that records its arguments and writes, for `sign-blob --yes --bundle B
    F`, a JSON bundle of a Sigstore bundle's shape whose message digest is F's SHA-256 (what
    a real one signs: F's bytes; no certificate or signature, which only Fulcio and the
    GitHub OIDC token can give)."""
    directory.mkdir(parents=True)
    script = directory / "cosign"
    script.write_text(
        f"#!{sys.executable}\n"
        "import base64, hashlib, json, sys\n"
        f"with open({str(record)!r}, 'a') as log:\n"
        "    print(' '.join(sys.argv[1:]), file=log)\n"
        "if sys.argv[1:4] != ['sign-blob', '--yes', '--bundle']:\n"
        "    sys.exit(64)\n"
        "digest = hashlib.sha256(open(sys.argv[5], 'rb').read())\n"
        "bundle = {'mediaType': 'application/vnd.dev.sigstore.bundle.v0.3+json',\n"
        "          'stand-in': True, 'sha256': digest.hexdigest(),\n"
        "          'messageSignature': {'messageDigest': {'algorithm': 'SHA2_256',\n"
        "              'digest': base64.b64encode(digest.digest()).decode()}}}\n"
        "open(sys.argv[4], 'w').write(json.dumps(bundle) + '\\n')\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return directory


@pytest.mark.slow
def test_release_jobs_replayed_sign_then_upload_with_the_bundles(tmp_path: Path, hub: Hub) -> None:
    """The sign job's script, then the upload job's check and upload, in one checkout
    holding build/<variant> as the build artifacts leave it: every metadata.json gets its
    bundle, the check refuses a variant without one, and `nixgen upload` sends each bundle
    beside its metadata.json (byte for byte) to the Hub stand-in."""
    root = render(tmp_path, "relu-cpu")
    text = (root / "build.toml").read_text()
    (root / "build.toml").write_text(
        text.replace("\n[torch]", '\n[general.hub]\nrepo-id = "me/relu-cpu"\n\n[torch]', 1)
    )
    workflow = workflows.load(root / workflow_mod.GITHUB_WORKFLOW)
    names = ("torch212-cxx11-cpu-x86_64-linux", "torch213-cxx11-cpu-x86_64-linux")
    for name in names:
        variant = root / "build" / name
        variant.mkdir(parents=True)
        (variant / "metadata.json").write_text(json.dumps({"version": 1, "name": name}))
        (variant / "__init__.py").write_text(f"# {name}\n")
    record = tmp_path / "cosign-args"
    record.write_text("")
    path = f"{fake_cosign(tmp_path / 'bin', record)}:{os.environ['PATH']}"

    done, _ = workflows.run_step(workflow, "sign", "sign", cwd=root, path=path, tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "signed 2 variant(s)" in done.stdout
    assert record.read_text().splitlines() == [
        f"sign-blob --yes --bundle build/{n}/metadata.json.sigstore build/{n}/metadata.json"
        for n in names
    ]
    for name in names:
        bundle = json.loads((root / "build" / name / "metadata.json.sigstore").read_text())
        digest = hashlib.sha256((root / "build" / name / "metadata.json").read_bytes())
        assert bundle["sha256"] == digest.hexdigest()

    check = root / "build" / names[0] / "metadata.json.sigstore"
    kept = check.read_bytes()
    check.unlink()
    done, _ = workflows.run_step(workflow, "upload", "check", cwd=root, tmp=tmp_path)
    assert done.returncode == 1
    assert f"::error title=Unsigned variant::build/{names[0]}/ has no" in done.stdout
    check.write_bytes(kept)
    done, _ = workflows.run_step(workflow, "upload", "check", cwd=root, tmp=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr

    done, _ = workflows.run_step(
        workflow, "upload", "upload", cwd=root, tmp=tmp_path,
        expressions={"HF_TOKEN": "hf_stand_in_token"},  # ${{ secrets.HF_TOKEN }}
        runner={"HF_ENDPOINT": hub.endpoint, "HF_HUB_DISABLE_TELEMETRY": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    uploaded = hub.repos["me/relu-cpu"].branches["v1"]
    for name in names:
        for file in ("metadata.json", "metadata.json.sigstore", "__init__.py"):
            local = (root / "build" / name / file).read_bytes()
            assert uploaded[f"build/{name}/{file}"] == local, (name, file)
    assert set(hub.tokens) == {"Bearer hf_stand_in_token"}


@pytest.mark.slow
def test_the_sign_job_fails_when_nothing_was_built(tmp_path: Path) -> None:
    workflow = workflows.load(
        workflow_mod.github_workflow("x", nixgen_version="0", pairs=[("x86_64-linux", "cpu")])
    )
    record = tmp_path / "cosign-args"
    record.write_text("")
    path = f"{fake_cosign(tmp_path / 'bin', record)}:{os.environ['PATH']}"
    done, _ = workflows.run_step(workflow, "sign", "sign", cwd=tmp_path, path=path, tmp=tmp_path)
    assert done.returncode == 1
    assert "::error title=Nothing to sign::" in done.stdout
    assert record.read_text() == ""
