"""Write safety: a killed render, two renders at once, read-only output, hand-written files.

The output tree is assembled in a staging directory and swapped in with one
``renameat2(RENAME_EXCHANGE)``; these tests check what a user would see on disk when a
render is killed at any moment (SIGKILL at random delays, then the next render), when two
renders of one project race, when the output cannot be written, and when the output holds
files that nixgen did not write.

Root ignores file modes, so when the tests run as root the read-only cases run nixgen under
``setpriv`` without CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH: the kernel then enforces the
modes for real. The read-only *file system* case uses a read-only bind mount in a private
mount namespace (``unshare -m``) and is skipped where that is not allowed.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.cmdline.cli import main
from nixgen.core import writer
from nixgen.writing import write
from tests.scale_probe import build_toml, generate, write_tomls

REPO = Path(__file__).resolve().parent.parent
KERNELS = 48
KILL_RUNS = 40
LEFTOVER_PREFIXES = (".nixgen-staging-", ".nixgen-old-", ".nixgen-tmp-")

Tree = dict[str, bytes]


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nixgen's cache (compiled templates) is a private one (subprocesses inherit it)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


def tree(root: Path) -> Tree:
    """The generated output as a user sees it: every file under nix/ plus flake.nix."""
    files: Tree = {}
    out = root / "nix"
    for dirpath, _, filenames in os.walk(out):
        for name in filenames:
            path = Path(dirpath) / name
            files[str(path.relative_to(root))] = path.read_bytes()
    if (root / "flake.nix").exists():
        files["flake.nix"] = (root / "flake.nix").read_bytes()
    return files


def leftovers(root: Path) -> list[str]:
    return sorted(n for n in os.listdir(root) if n.startswith(LEFTOVER_PREFIXES))


def nixgen_env() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "NO_COLOR": "1"}


def spawn(args: list[str], cwd: Path, prefix: list[str] = ()) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*prefix, sys.executable, "-m", "nixgen", *args],
        cwd=cwd,
        env=nixgen_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def run(args: list[str], cwd: Path, prefix: list[str] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "nixgen", *args],
        cwd=cwd,
        env=nixgen_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def render(root: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["render", str(root), *args])
    assert result.exit_code == 0, result.output
    return result.output


def replace_file(path: Path, text: str) -> None:
    """Replace a file the way editors do: write a new file, rename it over the old one."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(text)
    os.replace(tmp, path)


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[str, Tree]]:
    """Two versions of one project (different flags, kernels added and removed) and the
    exact tree each renders to."""
    texts = {
        1: build_toml(KERNELS, flag="-O1"),
        2: build_toml(KERNELS + 12, flag="-O3").replace("[kernel.k0]", "[kernel.k0_renamed]"),
    }
    expected = {}
    for version, text in texts.items():
        root = generate(tmp_path_factory.mktemp(f"v{version}") / "p", KERNELS + 12)
        (root / "build.toml").write_text(text)
        render(root)
        expected[version] = (text, tree(root))
    assert expected[1][1] != expected[2][1]
    changed = {k for k in expected[1][1] if expected[2][1].get(k) != expected[1][1][k]}
    assert len(changed) > KERNELS * 3 // 4  # every C++ kernel file changes: a mix would show
    return expected


# -------------------------------------------------------------------------- kill test


def _staging_appeared(root: Path) -> bool:
    return any(name.startswith(".nixgen-staging-") for name in os.listdir(root))


def _timeline(root: Path, text: str) -> tuple[float, float]:
    """Seconds from start until the staging directory appears, and until the render ends."""
    replace_file(root / "build.toml", text)
    start = time.perf_counter()
    process = spawn(["render", "."], root)
    staging = None
    while process.poll() is None:
        if staging is None and _staging_appeared(root):
            staging = time.perf_counter() - start
        time.sleep(0.001)
    end = time.perf_counter() - start
    assert process.returncode == 0, process.stderr.read() if process.stderr else ""
    return staging or end, end


@pytest.mark.slow
def test_a_killed_render_leaves_the_old_tree_or_the_new_one(
    tmp_path: Path, versions: dict[int, tuple[str, Tree]]
) -> None:
    """SIGKILL a render at KILL_RUNS moments: half at a random delay over the whole run,
    half once its staging tree appears (inside the write) or a random delay later. After each
    kill the output is exactly one of the two renders, and the next render completes it and
    leaves nothing behind."""
    root = generate(tmp_path / "p", KERNELS + 12)
    (root / "build.toml").write_text(versions[1][0])
    render(root)
    assert tree(root) == versions[1][1]
    staging_at, total = _timeline(root, versions[2][0])
    assert tree(root) == versions[2][1]
    rng = random.Random(6)
    current, seen = 2, {"old": 0, "new": 0, "killed mid-write": 0, "finished": 0}
    for run_index in range(KILL_RUNS):
        target = 3 - current
        replace_file(root / "build.toml", versions[target][0])
        process = spawn(["render", "."], root)
        if run_index % 2:
            while process.poll() is None and not _staging_appeared(root):
                time.sleep(0.001)
            # A third of these right away (inside the write), the rest anywhere after it.
            time.sleep(0 if run_index % 3 == 0 else rng.uniform(0, total - staging_at))
        else:
            time.sleep(rng.uniform(0, total))
        if process.poll() is None:
            if _staging_appeared(root):
                seen["killed mid-write"] += 1
            process.send_signal(signal.SIGKILL)
        process.wait()
        if process.returncode == 0:
            seen["finished"] += 1
        else:
            assert process.returncode == -signal.SIGKILL, process.stderr.read()
        state = tree(root)
        assert state in (versions[current][1], versions[target][1]), (
            f"run {run_index}: the output is a mix of two renders"
        )
        seen["old" if state == versions[current][1] else "new"] += 1
        if run_index % 4 < 2:
            render(root)
        else:  # the installed way: a whole `nixgen render` process
            done = run(["render", "."], root)
            assert done.returncode == 0, done.stderr
        assert tree(root) == versions[target][1]
        assert leftovers(root) == []
        current = target
    print(f"kill test: {KILL_RUNS} runs, {seen}")
    assert seen["killed mid-write"] >= KILL_RUNS // 8, seen
    assert seen["old"] and seen["new"], seen


# ------------------------------------------------------------------- two renders at once


@pytest.mark.slow
def test_two_renders_at_once_do_not_corrupt_each_other(
    tmp_path: Path, versions: dict[int, tuple[str, Tree]]
) -> None:
    """Two processes render one project with different build files at the same moment;
    both succeed and the result is exactly one of the two renders."""
    root = generate(tmp_path / "p", KERNELS + 12)
    (root / "build.toml").write_text(versions[1][0])
    (root / "other.toml").write_text(versions[2][0])
    rng = random.Random(2)
    outcomes = set()
    for _ in range(6):
        first = spawn(["render", "build.toml"], root)
        time.sleep(rng.uniform(0, 0.3))
        second = spawn(["render", "other.toml"], root)
        for process in (first, second):
            _, err = process.communicate(timeout=120)
            assert process.returncode == 0, err.decode()
        state = tree(root)
        assert state in (versions[1][1], versions[2][1])
        outcomes.add(1 if state == versions[1][1] else 2)
        assert leftovers(root) == []


def test_the_lock_holds_while_build_toml_is_replaced(tmp_path: Path) -> None:
    """Editors (and `nixgen migrate`) replace build.toml by renaming a new file over it; a
    render holding the project lock still excludes the next one."""
    root = tmp_path / "p"
    root.mkdir()
    (root / "build.toml").write_text("# one\n")
    acquired = threading.Event()

    def second() -> None:
        with write.project_lock(root):
            acquired.set()

    with write.project_lock(root):
        replace_file(root / "build.toml", "# two\n")
        thread = threading.Thread(target=second)
        thread.start()
        assert not acquired.wait(0.5), "a second writer got in while the first held the lock"
    thread.join(5)
    assert acquired.is_set()


# --------------------------------------------------------------------- read-only output


def without_dac_override() -> list[str]:
    """A command prefix under which the kernel enforces file modes (see the module doc)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: file modes cannot be made to apply")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"]


def snapshot_all(root: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            out[str((Path(dirpath) / name).relative_to(root)) + "/"] = None
        for name in filenames:
            path = Path(dirpath) / name
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


@pytest.mark.slow
def test_read_only_project_directory_is_a_clear_error(tmp_path: Path) -> None:
    prefix = without_dac_override()
    root = generate(tmp_path / "p", 6)
    before = snapshot_all(root)
    os.chmod(root, 0o555)
    try:
        done = run(["render", "."], root, prefix)
    finally:
        os.chmod(root, 0o755)
    assert done.returncode == 2, done.stderr
    assert "directory is not writable" in done.stderr
    assert "cannot create or replace nix/ there" in done.stderr
    assert "Traceback" not in done.stderr
    assert snapshot_all(root) == before


@pytest.mark.slow
def test_read_only_output_directory_is_a_clear_error(tmp_path: Path) -> None:
    prefix = without_dac_override()
    root = generate(tmp_path / "p", 6)
    render(root)
    write_tomls(root, 6, flag="-O3")
    before = snapshot_all(root)
    modes = {}
    for dirpath, _, _ in os.walk(root / "nix"):
        modes[dirpath] = os.stat(dirpath).st_mode
        os.chmod(dirpath, 0o555)
    try:
        done = run(["render", "."], root, prefix)
    finally:
        for dirpath, mode in modes.items():
            os.chmod(dirpath, mode)
    assert done.returncode == 2, done.stderr
    assert "error: nix/: the output directory is read-only" in done.stderr
    assert "chmod -R u+w nix" in done.stderr
    assert snapshot_all(root) == before


@pytest.mark.slow
def test_read_only_file_system_is_a_clear_error(tmp_path: Path) -> None:
    """A read-only bind mount of the project (EROFS), in a private mount namespace."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("needs root and unshare for a private read-only bind mount")
    root = generate(tmp_path / "p", 6)
    before = snapshot_all(root)
    script = (
        'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 99\n'
        'touch "$1/probe" 2>/dev/null && exit 98\n'
        'cd "$1" && exec "$2" -m nixgen render .'
    )
    done = subprocess.run(
        [
            unshare,
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
            str(root),
            sys.executable,
        ],
        env=nixgen_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode in (98, 99):
        pytest.skip(f"no read-only bind mount here ({done.returncode}): {done.stderr.strip()}")
    assert done.returncode == 2, done.stderr
    assert "read-only file system" in done.stderr
    assert "Traceback" not in done.stderr
    assert snapshot_all(root) == before


# ---------------------------------------------------------------- hand-written files


def test_a_hand_written_file_in_the_way_is_never_overwritten_without_force(
    tmp_path: Path,
) -> None:
    root = generate(tmp_path / "p", 6)
    render(root)
    (root / "nix" / "project.nix").write_text("{ mine = true; }\n")
    write_tomls(root, 6, flag="-O3")
    before = snapshot_all(root)
    result = CliRunner().invoke(main, ["render", str(root)])
    assert result.exit_code == 2
    assert "refusing to overwrite hand-written file(s)" in result.output
    assert "nix/project.nix" in result.output
    assert "pass --force" in result.output
    assert snapshot_all(root) == before
    output = render(root, "--force")
    assert "changed" in output
    assert b"@generated by nixgen" in (root / "nix" / "project.nix").read_bytes()


def test_hand_written_files_next_to_generated_ones_survive_every_render(tmp_path: Path) -> None:
    root = generate(tmp_path / "p", 12)
    render(root)
    mine = {
        "nix/README.md": b"notes\n",
        "nix/kernels/extra.nix": b"{ }: { }\n",
        "flake.nix": b"{ outputs = _: { }; }\n",  # no marker: the user's own flake
    }
    for rel, data in mine.items():
        (root / rel).write_bytes(data)
    write_tomls(root, 6, flag="-O3")  # removes kernels k6..k11
    render(root)
    for rel, data in mine.items():
        assert (root / rel).read_bytes() == data, rel
    render(root, "--force")
    for rel, data in mine.items():
        if rel != "flake.nix":  # --force hands the project's flake over to nixgen
            assert (root / rel).read_bytes() == data, rel
    assert (root / "flake.nix").read_bytes().startswith(b"# @generated by nixgen")
    assert not (root / "nix" / "kernels" / "k11.nix").exists()


def test_check_writes_nothing_and_exits_1_when_stale(tmp_path: Path) -> None:
    root = generate(tmp_path / "p", 6)
    render(root)
    write_tomls(root, 6, flag="-O3")
    before = snapshot_all(root)
    result = CliRunner().invoke(main, ["render", "--check", str(root)])
    assert result.exit_code == 1
    assert '+  cxxFlags = [ "-O3" ];' in result.output
    assert snapshot_all(root) == before


# ------------------------------------------------------------------ recovery, symlinks


def test_the_next_render_recovers_from_an_interrupted_fallback_swap(
    tmp_path: Path, versions: dict[int, tuple[str, Tree]]
) -> None:
    """Without renameat2, the swap is three renames; a crash after the first leaves only
    `.nixgen-old-nix`. The next render restores it and finishes."""
    root = generate(tmp_path / "p", KERNELS + 12)
    (root / "build.toml").write_text(versions[1][0])
    render(root)
    os.rename(root / "nix", root / ".nixgen-old-nix")
    (root / ".nixgen-staging-abc").mkdir()
    (root / ".nixgen-tmp-flake.nix.xyz").write_text("half")
    replace_file(root / "build.toml", versions[2][0])
    render(root)
    assert tree(root) == versions[2][1]
    assert leftovers(root) == []


def test_renders_without_renameat2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, versions: dict[int, tuple[str, Tree]]
) -> None:
    """Where libc has no renameat2 the swap falls back to renames, with the same result."""
    monkeypatch.setattr(writer, "_libc", lambda: None)
    root = generate(tmp_path / "p", KERNELS + 12)
    for version in (1, 2, 1):
        (root / "build.toml").write_text(versions[version][0])
        render(root)
        assert tree(root) == versions[version][1]
        assert leftovers(root) == []


def test_a_symlinked_output_directory_is_refused(tmp_path: Path) -> None:
    root = generate(tmp_path / "p", 6)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("keep\n")
    os.symlink(elsewhere, root / "nix")
    result = CliRunner().invoke(main, ["render", str(root)])
    assert result.exit_code == 2
    assert "nix: is a symbolic link" in result.output
    assert sorted(os.listdir(elsewhere)) == ["keep.txt"]
    assert (root / "nix").is_symlink()


def test_a_symlinked_ci_directory_is_refused(tmp_path: Path) -> None:
    root = generate(tmp_path / "p", 6)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, root / ".github")
    result = CliRunner().invoke(main, ["render", str(root), "--ci", "github"])
    assert result.exit_code == 2
    assert ".github: is a symbolic link" in result.output
    assert os.listdir(elsewhere) == []


# ------------------------------------------------------- a kill at each step of a commit

#: The steps of a render's commit (`nixgen.core.writer._reached`) for a render that changes
#: nix/, flake.nix and nixgen.toml together (`--library` switched): everything staged; the
#: journal written; the tree swapped; each file renamed into place; the journal removed.
STEPS = ["staged", "journal", "tree", "file:flake.nix", "file:nixgen.toml", "done"]
#: The same where libc has no renameat2: the tree swap is three renames.
FALLBACK_STEPS = ["staged", "journal", "tree:moved aside", "tree:renamed", "tree", "done"]
INPUT = "input:github:owner/nixgen/0123abc"

KILL_AT = """
import os, sys
import nixgen.core.writer as w
step, fallback = sys.argv[1], sys.argv[2] == "1"
if fallback:
    w._libc = lambda: None
w._reached = lambda name: os._exit(137) if name == step else None
sys.argv = ["nixgen", "render", ".", "--library", sys.argv[3]]
import nixgen.cmdline.entry
nixgen.cmdline.entry.main()
"""


def _state(root: Path) -> tuple[Tree, bytes | None]:
    settings = root / "nixgen.toml"
    return tree(root), settings.read_bytes() if settings.exists() else None


@pytest.mark.parametrize(
    ("step", "fallback"),
    [(s, False) for s in STEPS] + [(s, True) for s in FALLBACK_STEPS],
    ids=[*STEPS, *(f"no-renameat2-{s}" for s in FALLBACK_STEPS)],
)
@pytest.mark.slow
def test_a_render_killed_at_each_step_of_its_commit_is_completed_or_undone(
    tmp_path: Path, step: str, fallback: bool
) -> None:
    """Killed before its journal, a render changed nothing (and the next one removes what
    it staged); killed after it, the next run completes it: nix/, flake.nix and nixgen.toml
    are all the new ones, never the new tree beside the old flake or settings."""
    from tests.hostile import project

    root = project(tmp_path)
    reference = project(tmp_path, name="reference")
    render(root)
    old = _state(root)
    render(reference, "--library", INPUT)
    new = _state(reference)
    assert old[0]["flake.nix"] != new[0]["flake.nix"] and old[1] is None and new[1] is not None

    done = subprocess.run(
        [sys.executable, "-c", KILL_AT, step, "1" if fallback else "0", INPUT],
        cwd=root,
        env=nixgen_env(),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 137, done.stderr.decode()
    journal = (root / ".nixgen-journal").exists()
    assert journal == (step not in ("staged", "done")), os.listdir(root)
    if step == "staged":
        assert _state(root) == old  # nothing is changed before the journal

    after = run(["render", "."], root)
    assert after.returncode == 0, after.stderr
    assert ("completed the write of an interrupted nixgen run" in after.stderr) == journal
    assert _state(root) == (old if step == "staged" else new)
    assert run(["render", ".", "--check"], root).returncode == 0
    leftover = list(root.rglob(".nixgen*"))
    assert leftover == [], leftover
