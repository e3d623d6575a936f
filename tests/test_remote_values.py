"""The one module of values sent to a remote (`nixgen.core.remote`), checked against the
remote's own rules: git's `check-ref-format` for branches, huggingface_hub's
`validate_repo_id` and `_validate_path_in_repo` for repository ids and paths."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nixgen.core import remote

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.text(alphabet="ab1._+/-", min_size=1, max_size=16))
@pytest.mark.slow
def test_every_branch_accepted_is_one_git_accepts(value: str) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is absent")
    if remote.branch_problem(value) is not None:
        return
    done = subprocess.run(
        ["git", "check-ref-format", "--branch", value], capture_output=True, check=False
    )
    assert done.returncode == 0, value
    assert not value.startswith("refs/")


@pytest.mark.parametrize(
    "value",
    [
        "refs/pr/1",
        "refs/heads/main",
        "../main",
        "-x",
        "a..b",
        "a//b",
        "a/",
        "a.",
        ".a",
        "a/.b",
        "a/-b",
        "a.lock",
        "a.lock/b",
        "a b",
        "a~1",
        "a^1",
        "a:b",
        "a?",
        "a*",
        "a[b",
        "a\\b",
        "a@{1}",
        "@",
        "",
        "x" * 201,
        "v1\x1b[2J",
        "é",
    ],
)
def test_branches_that_are_refused(value: str) -> None:
    assert remote.branch_problem(value) is not None


@FAST
@given(st.text(alphabet="aZ09_.-/é ", min_size=1, max_size=12))
def test_repo_ids_agree_with_huggingface_hub_for_owner_slash_name(value: str) -> None:
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if value.count("/") != 1:
        assert remote.repo_id_problem(value) is not None
        return
    try:
        validate_repo_id(value)
        hub_accepts = True
    except HFValidationError:
        hub_accepts = False
    assert (remote.repo_id_problem(value) is None) == hub_accepts, value


def test_repo_id_part_lengths_are_the_hubs() -> None:
    assert remote.repo_id_problem("a" * 96 + "/" + "b" * 96) is None
    assert remote.repo_id_problem("a" * 97 + "/b") is not None
    assert remote.repo_id_problem("me/" + "b" * 97) is not None


@FAST
@given(
    st.lists(
        st.sampled_from([*"ab./", ".git", ".cache", "..", "\x1b", "\\"]), min_size=1, max_size=8
    ).map("".join)
)
def test_repo_paths_accepted_are_ones_huggingface_hub_accepts(value: str) -> None:
    from huggingface_hub._commit_api import _validate_path_in_repo

    if remote.repo_path_problem(value) is not None:
        return
    assert _validate_path_in_repo(value) == value


@pytest.mark.parametrize(
    ("version", "branch"), [(0, "v0"), (1, "v1"), (2**64 - 1, f"v{2**64 - 1}")]
)
def test_versions_become_branches(version: int, branch: str) -> None:
    assert remote.version_branch(version) == branch
    assert remote.branch_problem(branch) is None


@pytest.mark.parametrize("version", [-1, True, False, 1.0, "1", None, 2**64, [1]])
def test_versions_the_client_cannot_read_are_refused(version: object) -> None:
    with pytest.raises(ValueError, match="`version`"):
        remote.version_branch(version)


def test_endpoints() -> None:
    found = remote.endpoint("https://user:pass@hub.example:8443/")
    assert found.url == "https://user:pass@hub.example:8443"
    assert found.origin == ("https", "hub.example", 8443)
    assert found.secrets == ("user", "pass")
    assert remote.endpoint("http://127.0.0.1:5000").origin == ("http", "127.0.0.1", 5000)
    for bad in [
        "ftp://x",
        "x",
        "http://",
        "http://x/?q=1",
        "http://x/#f",
        "http://x y",
        "http://x/\x1b",
        "http://x:99999",
    ]:
        with pytest.raises(ValueError) as caught:
            remote.endpoint(bad)
        assert "pass" not in str(caught.value)
