"""`nixgen upload`: build/ to a Hub repository, in kernel-builder's layout and branches.

Offline, against `tests/hubstub.py` (a stand-in of the Hub's HTTP API on 127.0.0.1,
reached through `HF_ENDPOINT`, recording every request huggingface_hub makes).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.cmdline.cli import main

from . import nixtools
from .conftest import EXAMPLES, copy_out
from .hubstub import VARIANTS, Hub, fake_project, serve


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Hub]:
    stub = serve(monkeypatch)
    yield stub
    stub.stop()


def project(tmp_path: Path, *, version: int = 1, hub_table: str = "") -> Path:
    return fake_project(tmp_path, version=version, hub_table=hub_table)


def test_dry_run_lists_the_files_and_sends_nothing(tmp_path: Path, hub: Hub) -> None:
    root = project(tmp_path)
    result = CliRunner().invoke(
        main, ["upload", "--allow-stale", str(root), "--repo-id", "me/relu", "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"build/{v}/{f}" for v in VARIANTS for f in ("__init__.py", "metadata.json", "sub/data.bin")
    ]
    assert "would upload to me/relu (branch v1): 2 variant(s), 6 file(s)" in result.stderr
    assert hub.requests == []


# ---- [general.hub] of the field's edition 6: upload's default repository and branch (issue 44)


def test_general_hub_names_the_repository_and_the_branch(tmp_path: Path, hub: Hub) -> None:
    table = '\n[general.hub]\nrepo-id = "me/relu-cpu"\nbranch = "release"\n'
    root = project(tmp_path, hub_table=table)
    # Plain folders, not Nix builds: nothing to compare with the sources.
    result = CliRunner().invoke(main, ["upload", str(root), "--dry-run", "--allow-stale"])
    assert result.exit_code == 0, result.output
    assert "would upload to me/relu-cpu (branch release): 2 variant(s)" in result.stderr
    # the command line still wins over build.toml
    result = CliRunner().invoke(
        main,
        [
            "upload",
            str(root),
            "--dry-run",
            "--allow-stale",
            "--repo-id",
            "me/other",
            "--branch",
            "v9",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "would upload to me/other (branch v9): 2 variant(s)" in result.stderr
    assert hub.requests == []


def test_upload_creates_the_repo_and_the_version_branch(tmp_path: Path, hub: Hub) -> None:
    root = project(tmp_path, hub_table='\n[general.hub]\nrepo-id = "me/relu-cpu"\n')
    result = CliRunner().invoke(main, ["upload", "--allow-stale", str(root), "--private"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"Kernel uploaded: {hub.endpoint}/kernels/me/relu-cpu/tree/v1\n"
    repo = hub.repos["me/relu-cpu"]
    assert (repo.kind, repo.private) == ("kernel", True)
    assert set(repo.branches) == {"main", "v1"}
    assert repo.branches["main"] == {}
    # The branch holds exactly build/, byte for byte.
    uploaded = repo.branches["v1"]
    local = {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.glob("build/**/*")
        if p.is_file()
    }
    assert uploaded == local
    assert [c["message"] for c in repo.commits] == ["Uploaded using `nixgen`."]
    # huggingface_hub's requests, in order, each with the token from HF_TOKEN.
    api = "/api/kernels/me/relu-cpu"
    assert [(m, p) for m, p, _ in hub.requests] == [
        ("POST", "/api/repos/create"),
        ("GET", f"{api}/refs"),
        ("POST", f"{api}/branch/v1"),
        ("GET", f"{api}/tree/v1"),
        ("POST", f"{api}/preupload/v1"),
        ("POST", f"{api}/commit/v1"),
    ]
    assert hub.tokens and set(hub.tokens) == {"Bearer hf_stand_in_token"}


def test_a_second_upload_deletes_what_is_no_longer_built(tmp_path: Path, hub: Hub) -> None:
    root = project(tmp_path)
    runner = CliRunner()
    assert (
        runner.invoke(
            main, ["upload", "--allow-stale", str(root), "--repo-id", "me/relu"]
        ).exit_code
        == 0
    )
    (root / "build" / VARIANTS[0] / "sub" / "data.bin").unlink()
    shutil.rmtree(root / "build" / VARIANTS[1])
    again = runner.invoke(main, ["upload", "--allow-stale", str(root), "--repo-id", "me/relu"])
    assert again.exit_code == 0, again.output
    files = hub.repos["me/relu"].branches["v1"]
    # The variant uploaded again loses its stale file; the other variant, not uploaded
    # this time, stays (kernel-builder deletes only under the uploaded variants' folders).
    assert f"build/{VARIANTS[0]}/sub/data.bin" not in files
    assert f"build/{VARIANTS[1]}/__init__.py" in files
    assert "deleted 1 file(s)" in again.stderr


def test_branch_and_pull_request(tmp_path: Path, hub: Hub) -> None:
    root = project(tmp_path)
    runner = CliRunner()
    args = ["upload", "--allow-stale", str(root), "--repo-id", "me/relu"]
    assert runner.invoke(main, [*args, "--branch", "dev"]).exit_code == 0
    assert set(hub.repos["me/relu"].branches) == {"main", "dev"}
    pr = runner.invoke(main, [*args, "--branch", "dev", "--create-pr"])
    assert pr.exit_code == 0, pr.output
    assert pr.stdout == f"Pull request created: {hub.endpoint}/kernels/me/relu/discussions/1\n"
    # A pull request never creates the repository, nor a branch.
    assert [p for m, p, _ in hub.requests].count("/api/repos/create") == 1
    refused = runner.invoke(main, [*args, "--branch", "v9", "--create-pr"])
    assert refused.exit_code == 1
    assert "can only target an existing branch" in refused.stderr


def test_errors_are_one_line_and_located(tmp_path: Path, hub: Hub) -> None:
    root = project(tmp_path)
    runner = CliRunner()
    no_repo = runner.invoke(main, ["upload", "--allow-stale", str(root)])
    assert no_repo.exit_code == 2
    assert "no Hub repository to upload to: pass --repo-id" in no_repo.stderr
    (root / "build" / VARIANTS[1] / "metadata.json").write_text('{"version": 2}')
    mixed = runner.invoke(main, ["upload", "--allow-stale", str(root), "--repo-id", "me/relu"])
    assert mixed.exit_code == 2  # input to fix: rebuild, or pass --branch
    assert "different versions (1: " in mixed.stderr and "Traceback" not in mixed.output
    shutil.rmtree(root / "build")
    none = runner.invoke(main, ["upload", "--allow-stale", str(root), "--repo-id", "me/relu"])
    assert none.exit_code == 1 and "run `nixgen build` first" in none.stderr
    assert hub.requests == []


def test_a_refusing_hub_is_one_error_with_the_token_hint(tmp_path: Path, hub: Hub) -> None:
    root = project(tmp_path)
    hub.refuse = 403
    result = CliRunner().invoke(
        main, ["upload", "--allow-stale", str(root), "--repo-id", "kernels-community/x"]
    )
    assert result.exit_code == 1
    assert "nixgen: error: the Hub refused creating kernels-community/x (HTTP 403" in result.stderr
    assert "set HF_TOKEN or run `hf auth login`" in result.stderr
    assert "Traceback" not in result.output and result.stdout == ""


@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
@pytest.mark.build
def test_an_uploaded_build_loads_in_the_kernels_client(
    tmp_path: Path, hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch = pytest.importorskip("torch")
    import kernels  # locked (requirements/dev.txt): never skipped

    root = tmp_path / "relu-cpu"
    copy_out(EXAMPLES / "relu-cpu", root, "nix")
    stub = nixtools.make_stub(tmp_path)
    monkeypatch.setenv("NIX_CONFIG", nixtools.NIX_CONFIG)
    runner = CliRunner()
    variant = VARIANTS[1]
    built = runner.invoke(
        main, ["build", str(root), "--variant", variant, *nixtools.overrides(stub)]
    )
    assert built.exit_code == 0, built.output
    result = runner.invoke(
        main, ["upload", str(root), "--repo-id", "me/relu-cpu", *nixtools.overrides(stub)]
    )
    assert result.exit_code == 0, result.output
    # The tree fetched back from the stand-in, as a kernel directory the client loads.
    fetched = tmp_path / "fetched"
    for path, data in hub.repos["me/relu-cpu"].branches["v1"].items():
        target = fetched / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    local = root / "build" / variant
    assert sorted(p.name for p in (fetched / "build" / variant).iterdir()) == sorted(
        p.name for p in local.iterdir()
    )
    module = kernels.get_local_kernel(fetched / "build", backend="cpu")
    x = torch.randn(7, 5, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(module.relu(x), torch.relu(x), rtol=0, atol=0)
