"""A second Nix "machine" on this one, for remote-builder tests and the scale bench.

`RemoteBuilder` starts Debian's OpenSSH server (``/usr/sbin/sshd``, package
``openssh-server``) on a free loopback port, as root, inside its own mount namespace
(``unshare --mount``) in which a fresh directory is bind-mounted on ``/nix``: the builder
has its own, empty Nix store and database, and the host's compilers, Python and torch
(everything outside ``/nix``), as a second machine of the same system would. Nix there is
the one the tests run (the ``nix-daemon`` on PATH: the venv's, scripts/nix.sh, outside
``/nix``; the server's ``SetEnv`` puts its directory on the session's PATH): an
``ssh-ng://`` builder runs ``nix-daemon --stdio`` over SSH, which opens the builder's local
store.

The builder has its own ``nix.conf`` (``NIX_CONF_DIR`` and ``NIX_USER_CONF_FILES``, set by
the server's ``SetEnv``; the venv's Nix is a wrapper that sets ``NIX_CONF_DIR``): no
substituters and no build users, as this machine's tests use, and the sandbox with the host
paths the stand-ins declare (``tests/nixtools.py``'s ``sandbox_paths``), as this machine's
own builds in the tests. Keys are generated for each
run (an ed25519 host key and a client key); the machine spec names the client key and the
host's public key (Nix writes it into a known_hosts file of its own), and ``NIX_SSHOPTS``
gives the port (``-p``) and the host key's alias (Nix 2.8 parses no port in a store URI,
and writes its known_hosts line for the bare host name).

Bounded and clean whatever happens: the server runs in its own process group, started
with a deadline; `stop` (called by the context manager, and at exit) kills the group and
removes the store, the keys and the configuration.

    with RemoteBuilder() as builder:
        nix build --max-jobs 0 --builders "$(builder.spec)"  # env: builder.env()

As a script, ``python tests/remote_builder.py -- COMMAND …`` runs COMMAND with
``NIX_BUILDERS`` (the spec) and ``NIX_SSHOPTS`` set while a builder runs.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

SSHD = "/usr/sbin/sshd"
#: The programs the builder needs: the server, the client and key tools, the namespace.
TOOLS = (SSHD, "ssh", "ssh-keygen", "unshare", "mount", "nix-daemon")

_LIVE: list[RemoteBuilder] = []


def missing_tools() -> list[str]:
    """The programs a builder needs that this machine lacks (empty when it can run one)."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if os.geteuid() != 0:
        missing.append("root (a mount namespace with /nix replaced)")
    return missing


@attrs.frozen
class Placement:
    """Where Nix's internal-json log says each derivation was built, and what it copied."""

    #: Derivations built on a builder: drv -> the builder's store URI.
    remote: dict[str, str]
    #: Derivations built on this machine.
    local: frozenset[str]
    #: Store paths copied from a builder back to this machine.
    copied_back: frozenset[str]


def placement(log: str) -> Placement:
    """Read Nix's ``--log-format internal-json`` stderr `log`.

    A build activity (type 105, actBuild) names the machine in its second field when Nix
    handed the derivation to a builder (``building '<drv>' on 'ssh-ng://…'``, Nix 2.8
    src/build-remote/build-remote.cc); the builder's own activity for it, relayed over
    ssh-ng, has no machine and starts while the handing-over one runs. A build activity
    with no machine and no such enclosing one ran here. Copies (type 100, actCopyPath)
    name their source and destination stores."""
    remote: dict[str, str] = {}
    local: set[str] = set()
    copied: set[str] = set()
    running: dict[int, tuple[str, str]] = {}  # activity id -> (drv, machine)
    for line in log.splitlines():
        if not line.startswith("@nix "):
            continue
        event = json.loads(line[5:])
        if event.get("action") == "stop":
            running.pop(event.get("id"), None)
            continue
        if event.get("action") != "start":
            continue
        fields = event.get("fields") or []
        if event.get("type") == 105 and fields:
            drv, machine = str(fields[0]), str(fields[1]) if len(fields) > 1 else ""
            if machine:
                remote[drv] = machine
            elif not any(d == drv and m for d, m in running.values()):
                local.add(drv)
            running[event["id"]] = (drv, machine)
        elif event.get("type") == 100 and len(fields) >= 3:
            path, source, dest = (str(f) for f in fields[:3])
            if source.startswith("ssh") and dest in ("local", "auto", "daemon"):
                copied.add(path)
    return Placement(remote=remote, local=frozenset(local), copied_back=frozenset(copied))


def _sandbox_paths() -> list[str]:
    """The host paths a sandboxed build of the stand-ins reads (one home: nixtools)."""
    if __package__:
        from .nixtools import sandbox_paths
    else:  # run as a script: tests/ is on sys.path
        from nixtools import sandbox_paths  # type: ignore[no-redef]
    return sandbox_paths()


def _nix_bin() -> str:
    """The directory of the `nix-daemon` this process would run (tools are on PATH here)."""
    found = shutil.which("nix-daemon")
    if found is None:
        raise BuilderError("cannot start a builder here: missing nix-daemon")
    return str(Path(found).parent)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class BuilderError(RuntimeError):
    """The builder could not be started (the server's log is in the message)."""


class RemoteBuilder:
    """A loopback SSH Nix builder with its own store; see the module docstring.

    `max_jobs` and `speed` are the machine spec's fields (derivations at once, speed
    factor); `cores` is the builder's `cores` setting (each build's `$NIX_BUILD_CORES`);
    `lifetime` bounds the server: it is killed after that many seconds whatever happens.
    `build_users`: builds run as the `nixbld` users, as on a real multi-user builder
    (False: as root, as this machine's own single-user Nix does)."""

    def __init__(
        self,
        *,
        max_jobs: int = 2,
        speed: int = 1,
        cores: int = 1,
        lifetime: float = 1800,
        host: str = "127.0.0.1",
        build_users: bool = True,
    ):
        self.max_jobs = max_jobs
        self.speed = speed
        self.cores = cores
        self.lifetime = lifetime
        self.host = host
        self.build_users = build_users
        self.port = 0
        self.work: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> RemoteBuilder:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 20) -> None:
        missing = missing_tools()
        if missing:
            raise BuilderError(f"cannot start a builder here: missing {', '.join(missing)}")
        self.work = Path(tempfile.mkdtemp(prefix="nixgen-builder-"))
        _LIVE.append(self)
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise

    def _start(self, timeout: float) -> None:
        assert self.work is not None
        work = self.work
        (work / "nix").mkdir()
        conf = work / "conf"
        conf.mkdir()
        (conf / "nix.conf").write_text(
            "experimental-features = nix-command flakes\n"
            "substituters =\n"
            + ("" if self.build_users else "build-users-group =\n")
            + "sandbox = true\n"
            f"extra-sandbox-paths = {' '.join(_sandbox_paths())}\n"
            f"cores = {self.cores}\n"
            f"max-jobs = {self.max_jobs}\n"
        )
        for key in ("host_key", "client_key"):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "nixgen-builder",
                 "-f", str(work / key)],
                check=True, capture_output=True, timeout=30,
            )  # fmt: skip
        shutil.copy(work / "client_key.pub", work / "authorized_keys")
        os.chmod(work / "authorized_keys", 0o600)
        self.port = _free_port()
        config = work / "sshd_config"
        config.write_text(
            f"ListenAddress {self.host}\n"
            f"Port {self.port}\n"
            f"HostKey {work / 'host_key'}\n"
            f"AuthorizedKeysFile {work / 'authorized_keys'}\n"
            f"PidFile {work / 'sshd.pid'}\n"
            "PermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            "UsePAM no\n"
            "StrictModes no\n"
            "PrintMotd no\n"
            "LogLevel ERROR\n"
            # The builder's Nix is the one the tests run (`nix-daemon` on this PATH: the venv's,
            # scripts/nix.sh), found on the session's PATH; its settings are `conf`, read as
            # the user's (NIX_USER_CONF_FILES) too, since the venv's Nix is a wrapper that sets
            # NIX_CONF_DIR to its own.
            f"SetEnv NIX_CONF_DIR={conf} NIX_USER_CONF_FILES={conf / 'nix.conf'}"
            f" PATH={_nix_bin()}:/usr/bin:/bin\n"
        )
        # The privilege separation directory sshd checks for (Debian makes it at boot).
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        script = 'mount --bind "$1" /nix && exec timeout -s KILL "$3" "$4" -D -e -f "$2"'
        self.log = open(work / "sshd.log", "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
             str(work / "nix"), str(config), str(int(self.lifetime)), SSHD],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise BuilderError(f"sshd exited with {self.process.returncode}: {self._log()}")
            probe = subprocess.run(
                ["ssh", *self.ssh_options(), f"root@{self.host}", "nix-store --version"],
                capture_output=True, text=True, timeout=30, env=self.env(),
            )  # fmt: skip
            if probe.returncode == 0:
                break
            if time.monotonic() > deadline:
                raise BuilderError(f"no SSH login to the builder: {probe.stderr}{self._log()}")
            time.sleep(0.2)

    def _log(self) -> str:
        assert self.work is not None
        try:
            return (self.work / "sshd.log").read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """Kill the server's process group and remove its store, keys and configuration."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)
            self.process = None
            self.log.close()
        if self.work is not None:
            shutil.rmtree(self.work, ignore_errors=True)
            self.work = None
        if self in _LIVE:
            _LIVE.remove(self)

    # ------------------------------------------------------------------ what Nix needs

    @property
    def uri(self) -> str:
        return f"ssh-ng://root@{self.host}"

    def host_key(self) -> str:
        """The server's public host key, base64-encoded (the spec's last field)."""
        assert self.work is not None
        line = (self.work / "host_key.pub").read_text().split()
        return base64.b64encode(f"{line[0]} {line[1]}".encode()).decode()

    def spec(self, *, max_jobs: int | None = None, speed: int | None = None) -> str:
        """The machine spec for `--builders`: URI, system, key, jobs, speed, supported
        and mandatory features, public host key (nix.conf's `builders` format)."""
        assert self.work is not None
        jobs = self.max_jobs if max_jobs is None else max_jobs
        factor = self.speed if speed is None else speed
        return (
            f"{self.uri} x86_64-linux {self.work / 'client_key'} {jobs} {factor} - - "
            f"{self.host_key()}"
        )

    def ssh_options(self) -> list[str]:
        """The SSH client options Nix needs for this builder (`NIX_SSHOPTS`): the port,
        and the host key under the bare host name Nix's known_hosts line uses."""
        assert self.work is not None
        return [
            "-p", str(self.port),
            "-o", f"HostKeyAlias={self.host}",
            "-o", "BatchMode=yes",
            "-o", f"IdentityFile={self.work / 'client_key'}",
            "-o", f"UserKnownHostsFile={self.work / 'known_hosts'}",
            "-o", "StrictHostKeyChecking=yes",
        ]  # fmt: skip

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """`base` (default: os.environ) with `NIX_SSHOPTS` for this builder."""
        assert self.work is not None
        known = self.work / "known_hosts"
        if not known.exists():
            pub = (self.work / "host_key.pub").read_text().split()
            known.write_text(f"{self.host} {pub[0]} {pub[1]}\n")
        env = dict(os.environ if base is None else base)
        env["NIX_SSHOPTS"] = " ".join(self.ssh_options())
        return env

    def store_paths(self) -> list[str]:
        """The valid paths of the builder's store (asked over SSH, as Nix would)."""
        done = subprocess.run(
            ["nix", "--extra-experimental-features", "nix-command", "path-info", "--all",
             "--store", self.uri],
            capture_output=True, text=True, timeout=120, env=self.env(), check=True,
        )  # fmt: skip
        return sorted(done.stdout.split())


@atexit.register
def _stop_all() -> None:
    for builder in list(_LIVE):
        builder.stop()


def main(argv: Sequence[str]) -> int:
    command = list(argv)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        print(__doc__, file=sys.stderr)
        return 2
    with RemoteBuilder() as builder:
        env = builder.env()
        env["NIX_BUILDERS"] = builder.spec()
        return subprocess.run(command, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
