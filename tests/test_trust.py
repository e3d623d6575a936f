"""What makes a variant one the `kernels` client trusts (issue 45), without Nix: the library's
digest program (nix/support/digest.py) against the client's own `Digest.hash_variant` on a
tree with every edge case the rule has; the symbols the load check writes
(nix/support/load_check.py) as `kernels describe-api` reads them; and `nixgen verify`, whose
digest half runs here in full and whose signature half runs as far as no network allows (a
bundle the client refuses before it asks Sigstore; the signer policy, checked against
certificates made here with the extensions Fulcio writes for GitHub Actions).

tests/test_trust_build.py checks the same in real builds.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import importlib.util
import json
import logging
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nixgen.app import verify as verify_mod
from nixgen.cmdline.cli import main
from tests import client as oracle

REPO = Path(__file__).resolve().parent.parent
SUPPORT = REPO / "nix" / "support"


def _module(name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, SUPPORT / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


digest = _module("digest")
load_check = _module("load_check")


def _client_files(path: Path) -> dict[str, str]:
    rust = oracle.rust()
    return dict(rust.Digest.hash_variant(rust.DigestAlgorithm.SHA256, path).files)


def _b64(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


# ------------------------------------------------------------------ the digest rule


@pytest.fixture
def edges(tmp_path: Path) -> Path:
    """A variant with each case the client's rule decides (docs/trust.md, "The digest")."""
    v = tmp_path / "variant"
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "file").write_bytes(b"outside\n")
    (outside / "dir" / "inner").write_bytes(b"not hashed\n")
    for rel, data in {
        "__init__.py": b"x = 1\n",
        "_ops.py": b"ops\n",
        "empty": b"",
        ".hidden": b"h\n",
        "metadata.json": b"{}\n",  # the metadata itself: left out
        "metadata.json.sigstore": b"{}\n",  # its bundle: left out
        "sub/metadata.json": b"deeper: hashed\n",
        "sub/metadata.json.sigstore": b"deeper: hashed\n",
        "sub/__pycache__/a.txt": b"bytecode folder: left out\n",
        "__pycache__/m.cpython-311.pyc": b"left out\n",
        "stray.pyc": b"left out\n",
        "deep/er/x.PYC": b"other case: hashed\n",
        ".pyc": b"a dot file, no extension: hashed\n",
        "back\\slash": b"its key has a /\n",
    }.items():
        (v / rel).parent.mkdir(parents=True, exist_ok=True)
        (v / rel).write_bytes(data)
    (v / "emptydir").mkdir()
    (v / "link-in").symlink_to("_ops.py")
    (v / "link-out").symlink_to(outside / "file")
    (v / "linked-dir").symlink_to(outside / "dir")
    (v / os.fsdecode(b"bad\xffname")).write_bytes(b"not UTF-8\n")
    os.mkfifo(v / "fifo")
    return v


def test_the_digest_program_agrees_with_the_client_on_every_edge_case(edges: Path) -> None:
    mine = digest.files(edges)
    assert mine == _client_files(edges)
    assert mine["empty"] == _b64(b"") == "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
    assert mine["link-in"] == mine["_ops.py"]
    assert mine["link-out"] == _b64(b"outside\n")
    assert "back/slash" in mine and "bad\ufffdname" in mine
    assert {"sub/metadata.json", "sub/metadata.json.sigstore", ".pyc", "deep/er/x.PYC"} <= set(mine)
    for left_out in ("metadata.json", "metadata.json.sigstore", "stray.pyc", "fifo"):
        assert left_out not in mine
    assert not any("__pycache__" in k or k.startswith(("linked-dir", "emptydir")) for k in mine)


def test_a_variant_under_a_pycache_folder_hashes_to_nothing_as_in_the_client(
    tmp_path: Path,
) -> None:
    v = tmp_path / "__pycache__" / "variant"
    v.mkdir(parents=True)
    (v / "a.py").write_text("a\n")
    assert digest.files(v) == _client_files(v) == {}


def test_a_dangling_link_fails_the_digest_as_in_the_client(tmp_path: Path) -> None:
    rust = oracle.rust()
    (tmp_path / "a.py").write_text("a\n")
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    with pytest.raises(OSError):
        rust.Digest.hash_variant(rust.DigestAlgorithm.SHA256, tmp_path)
    with pytest.raises(digest.DigestError, match="gone"):
        digest.files(tmp_path)


def test_a_variant_root_that_is_a_link_is_followed(edges: Path, tmp_path: Path) -> None:
    link = tmp_path / "torch213-cxx11-cpu-x86_64-linux"
    link.symlink_to(edges)
    assert digest.files(link) == digest.files(edges) == _client_files(link)


def test_write_puts_the_digest_in_the_metadata_the_client_validates(tmp_path: Path) -> None:
    rust = oracle.rust()
    v = tmp_path / "v"
    v.mkdir()
    (v / "__init__.py").write_text("x = 1\n")
    base = tmp_path / "base.json"
    base.write_text(
        json.dumps(
            {
                "name": "relu",
                "id": "_relu_cpu_0",
                "version": 1,
                "license": "MIT",
                "python-depends": [],
                "backend": {"type": "cpu"},
                "digest": {"algorithm": "sha256", "files": {"stale": "x"}},
            }
        )
    )
    assert digest.main(["write", str(v), "--metadata", str(base)]) == 0
    text = (v / "metadata.json").read_text()
    assert text.endswith("}\n") and "\n" not in text[:-1], "one line, as Nix writes it"
    assert list(json.loads(text)) == sorted(json.loads(text)), "keys sorted"
    metadata = rust.Metadata.read_from_file(v / "metadata.json")
    assert metadata.digest.files == {"__init__.py": _b64(b"x = 1\n")}
    assert metadata.digest.validate(rust.Digest.hash_variant(metadata.digest.algorithm, v)) is None
    # Written again over itself: the same bytes (a rebuild is bit for bit).
    assert digest.main(["write", str(v)]) == 0
    assert (v / "metadata.json").read_text() == text
    assert not list(v.glob(".metadata.json*")), "no partial file left"


@pytest.mark.slow
def test_the_digest_program_is_standard_library_only() -> None:
    """The build's Python runs it with nothing installed."""
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            "import runpy, sys; sys.argv=['d', '--help'];"
            f"runpy.run_path({str(SUPPORT / 'digest.py')!r}, run_name='__main__')",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "write" in done.stdout


# --------------------------------------------------------------------- symbols.json


def _kernel(**members: Any) -> types.ModuleType:
    module = types.ModuleType("_k_cpu_0123456789")
    module.__path__ = []  # a package
    for name, value in members.items():
        setattr(module, name, value)
    return module


def _defined(module: types.ModuleType, fn: Any) -> Any:
    fn.__module__ = module.__name__
    return fn


def _read_as_describe_api(tmp_path: Path, symbols: dict[str, Any]) -> dict[str, Any]:
    """`symbols` written as the load check writes it and read by the client's reader."""
    reader = oracle.describe_api()
    path = tmp_path / "symbols.json"
    path.write_text(json.dumps(symbols, indent=2) + "\n")
    result: dict[str, Any] = reader._read_symbols(path)
    return result


def test_symbols_follow_all_and_the_layer_defaults_the_client_uses(tmp_path: Path) -> None:
    kernel = _kernel()

    def relu(x: Any) -> Any:
        return x

    def _private(x: Any) -> Any:
        return x

    class Plain:
        pass

    class NoBackward(Plain):
        has_backward = False

    class Compiles:
        can_torch_compile = True
        has_backward = "yes"  # not a boolean: unknown

    layers = types.ModuleType(f"{kernel.__name__}.layers")
    layers.Plain, layers.NoBackward, layers.Compiles = Plain, NoBackward, Compiles
    layers.helper = relu
    layers.__all__ = ["NoBackward", "Plain", "Compiles", "helper"]
    kernel.relu = _defined(kernel, relu)
    kernel._private = _private
    kernel.ops = types.ModuleType("torch.ops.x")  # torch's op namespace is a module
    kernel.CONSTANT = 3
    kernel.layers = layers
    kernel.__all__ = ["relu", "relu", "_private", "ops", "CONSTANT", "layers"]
    symbols = load_check.symbols(kernel)
    assert symbols == {
        "schema_version": 1,
        "functions": [{"name": "relu"}],
        "layers": [
            {
                "name": "NoBackward",
                "attributes": {"has_backward": False, "can_torch_compile": False},
            },
            {"name": "Plain", "attributes": {"has_backward": True, "can_torch_compile": False}},
            {"name": "Compiles", "attributes": {"has_backward": None, "can_torch_compile": True}},
        ],
    }
    assert _read_as_describe_api(tmp_path, symbols) == symbols


def test_without_all_the_public_names_defined_in_the_kernel_are_its_functions() -> None:
    kernel = _kernel()

    def relu(x: Any) -> Any:
        return x

    def imported(x: Any) -> Any:
        return x

    imported.__module__ = "torch.functional"
    kernel.relu = _defined(kernel, relu)
    kernel.imported = imported
    assert load_check.symbols(kernel)["functions"] == [{"name": "relu"}]
    assert load_check.symbols(kernel)["layers"] == []


def test_all_naming_a_missing_symbol_is_an_error() -> None:
    kernel = _kernel(__all__=["relu"])
    with pytest.raises(load_check.CheckError, match="relu"):
        load_check.symbols(kernel)


# ------------------------------------------------------- the load check, every client

#: The locked clients: this environment's (0.19.1) and the compatibility tier's
#: (scripts/setup.sh puts 0.17.2 and 0.18.3 in .venv/clients). The toolchain's own client
#: (0.17.0.dev0 at its pin) has the same public interface the check uses.
CLIENTS = {
    "this": Path(sys.executable),
    **{
        p.name: p / "bin" / "python"
        for p in sorted((Path(sys.prefix) / "clients").glob("kernels-*"))
        if (p / "bin" / "python").exists()
    },
}


def _check(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [str(python), str(SUPPORT / "load_check.py"), *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def _pure_variant(root: Path, init: str) -> Path:
    """A loadable variant without an extension module (the client imports `__init__.py`),
    with its digest, under its variant name."""
    v = root / "torch213-cxx11-cpu-x86_64-linux"
    v.mkdir(parents=True)
    (v / "__init__.py").write_text(init)
    (v / "layers.py").write_text(
        "class Layer:\n    has_backward = False\n\n\nclass _Private:\n    pass\n"
    )
    (v / "metadata.json").write_text(
        json.dumps(
            {
                "name": "relu",
                "id": "_relu_cpu_0123456789",
                "version": 1,
                "license": "Apache-2.0",
                "python-depends": [],
                "backend": {"type": "cpu"},
            }
        )
    )
    digest.write(v)
    return v


@pytest.mark.slow
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_every_locked_client_loads_and_describes_the_variant(tmp_path: Path, client: str) -> None:
    v = _pure_variant(
        tmp_path,
        "from . import layers\n\n__all__ = ['relu', 'layers']\n\n\ndef relu(x):\n    return x\n",
    )
    done = _check(CLIENTS[client], "--load", "--symbols", str(v / "symbols.json"), str(v))
    assert done.returncode == 0, done.stderr
    assert "loads torch213-cxx11-cpu-x86_64-linux as _relu_cpu_0123456789" in done.stdout
    assert json.loads((v / "symbols.json").read_text()) == {
        "schema_version": 1,
        "functions": [{"name": "relu"}],
        "layers": [
            {"name": "Layer", "attributes": {"has_backward": False, "can_torch_compile": False}}
        ],
    }
    digest.write(v)
    done = _check(CLIENTS[client], str(v))
    assert done.returncode == 0, done.stderr
    assert "metadata read and digest of 3 file(s) validated" in done.stdout
    assert not list(v.rglob("__pycache__"))


@pytest.mark.slow
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_every_locked_client_refuses_what_it_cannot_load_with_its_reason(
    tmp_path: Path, client: str
) -> None:
    v = _pure_variant(tmp_path, "from . import not_shipped\n")
    done = _check(CLIENTS[client], "--load", str(v))
    assert done.returncode == 1
    assert "the kernels client cannot load the variant" in done.stderr
    assert "not_shipped" in done.stderr


@pytest.mark.slow
def test_the_check_without_loading_refuses_a_changed_file_and_bad_metadata(
    tmp_path: Path,
) -> None:
    v = _pure_variant(tmp_path / "a", "x = 1\n")
    (v / "layers.py").write_text("# changed\n")
    done = _check(CLIENTS["this"], str(v))
    assert done.returncode == 1
    assert "do not match the digest" in done.stderr and "layers.py" in done.stderr
    w = _pure_variant(tmp_path / "b", "x = 1\n")
    metadata = json.loads((w / "metadata.json").read_text())
    metadata["kernels-minver"] = "0.19"
    (w / "metadata.json").write_text(json.dumps(metadata))
    done = _check(CLIENTS["this"], str(w))
    assert done.returncode == 1
    assert "cannot read metadata.json" in done.stderr
    assert "Version has 2 components, expected 3" in done.stderr
    x = _pure_variant(tmp_path / "c", "def broken(:\n")
    done = _check(CLIENTS["this"], str(x))
    assert done.returncode == 1
    assert "__init__.py:1" in done.stderr


# ------------------------------------------------------------------- nixgen verify


def _variant(root: Path, name: str = "torch213-cxx11-cpu-x86_64-linux") -> Path:
    v = root / "build" / name
    v.mkdir(parents=True)
    (v / "__init__.py").write_text("def relu(x):\n    return x\n")
    (v / "_ops.py").write_text("ops = None\n")
    (v / "metadata.json").write_text(
        json.dumps(
            {
                "name": "relu",
                "id": "_relu_cpu_0123456789",
                "version": 1,
                "license": "Apache-2.0",
                "python-depends": [],
                "backend": {"type": "cpu"},
            }
        )
    )
    digest.write(v)
    return v


def _verify(*args: str) -> Any:
    pytest.importorskip("kernels")
    return CliRunner().invoke(main, ["verify", *args])


def test_verify_passes_on_variants_whose_files_match(tmp_path: Path) -> None:
    _variant(tmp_path)
    _variant(tmp_path, "torch212-cxx11-cpu-x86_64-linux")
    done = _verify(str(tmp_path))
    assert done.exit_code == 0, done.output
    assert done.stdout.count("ok    torch21") == 2
    assert "digest: the files match the digest in the metadata (2 file(s))" in done.stdout
    assert "signature: not signed" in done.stdout


def test_verify_fails_on_a_changed_or_added_file_naming_each(tmp_path: Path) -> None:
    v = _variant(tmp_path)
    _variant(tmp_path, "torch212-cxx11-cpu-x86_64-linux")
    (v / "_ops.py").write_text("ops = 'changed'\n")
    (v / "extra.py").write_text("")
    done = _verify(str(tmp_path))
    assert done.exit_code == 1
    assert "FAIL  torch213-cxx11-cpu-x86_64-linux" in done.stdout
    assert "File hash mismatch for _ops.py" in done.stdout
    assert "Unknown file: extra.py" in done.stdout
    assert "ok    torch212-cxx11-cpu-x86_64-linux" in done.stdout
    assert "1 of 2 variant(s) verified; failed: torch213-cxx11-cpu-x86_64-linux" in done.stderr


def test_verify_fails_on_a_removed_file_and_a_missing_digest(tmp_path: Path) -> None:
    v = _variant(tmp_path)
    (v / "_ops.py").unlink()
    w = _variant(tmp_path, "torch212-cxx11-cpu-x86_64-linux")
    metadata = json.loads((w / "metadata.json").read_text())
    del metadata["digest"]
    (w / "metadata.json").write_text(json.dumps(metadata))
    done = _verify(str(tmp_path), "--json")
    assert done.exit_code == 1
    envelope = json.loads(done.stdout)
    assert envelope["ok"] is False and envelope["result"] is None
    by_key = {p["key"]: p["message"] for p in envelope["problems"]}
    assert "Missing file: _ops.py" in by_key["torch213-cxx11-cpu-x86_64-linux"]
    assert by_key["torch212-cxx11-cpu-x86_64-linux"].startswith(
        "digest: the metadata does not record a digest"
    )


def test_verify_json_gives_each_variants_checks(tmp_path: Path) -> None:
    _variant(tmp_path)
    done = _verify(str(tmp_path), "--json")
    assert done.exit_code == 0, done.output
    envelope = json.loads(done.stdout)
    assert envelope["ok"] is True and envelope["command"] == "verify"
    [variant] = envelope["result"]["variants"]
    assert variant["variant"] == "torch213-cxx11-cpu-x86_64-linux" and variant["ok"]
    assert variant["digest"]["status"] == "verified"
    assert variant["signature"] == {
        "ok": True,
        "status": "unsigned",
        "message": "not signed (no metadata.json.sigstore)",
    }
    assert envelope["result"]["signer"] is None


def test_verify_takes_a_build_directory_or_one_variant(tmp_path: Path) -> None:
    v = _variant(tmp_path)
    for where in (tmp_path / "build", v):
        done = _verify(str(where))
        assert done.exit_code == 0, done.output
        assert "ok    torch213-cxx11-cpu-x86_64-linux" in done.stdout


def test_verify_without_variants_is_invalid_input(tmp_path: Path) -> None:
    done = _verify(str(tmp_path))
    assert done.exit_code == 2
    assert "no built variants" in done.stderr and "nixgen build" in done.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--repo", "me"], "is not a GitHub repository"),
        (["--repo", "me/relu"], "--repo needs --workflow"),
        (["--workflow", ".github/workflows/r.yaml"], "--workflow needs --repo"),
        (
            ["--repo", "me/relu", "--workflow", "release.yaml"],
            "did you mean `.github/workflows/release.yaml`",
        ),
        (
            ["--repo", "me/relu", "--workflow", ".github/workflows/r.yaml", "--ref", "main"],
            "did you mean `refs/heads/main`",
        ),
    ],
)
def test_verify_refuses_a_signer_it_cannot_name(tmp_path: Path, args: list[str], says: str) -> None:
    _variant(tmp_path)
    done = _verify(str(tmp_path), *args)
    assert done.exit_code == 2, done.output
    assert says in done.stderr
    assert "Traceback" not in done.output


def test_with_a_signer_named_an_unsigned_variant_fails(tmp_path: Path) -> None:
    _variant(tmp_path)
    done = _verify(
        str(tmp_path), "--repo", "me/relu", "--workflow", ".github/workflows/release.yaml"
    )
    assert done.exit_code == 1
    assert "not signed (no metadata.json.sigstore), but me/relu must sign it" in done.stdout


def test_a_bundle_the_client_cannot_read_is_refused_offline(tmp_path: Path) -> None:
    pytest.importorskip("sigstore")
    v = _variant(tmp_path)
    (v / "metadata.json.sigstore").write_text('{"mediaType": "not a bundle"}')
    done = _verify(str(tmp_path), "--repo", "me/relu", "--workflow", ".github/workflows/r.yaml")
    assert done.exit_code == 1
    assert "the signature bundle is invalid, so its integrity cannot be verified" in done.stdout
    # The digest half still reports on its own; the bundle is not one of the hashed files.
    assert "digest: the files match the digest in the metadata (2 file(s))" in done.stdout


# The signer policy, offline: certificates carrying the extensions Fulcio writes for a
# GitHub Actions identity (OIDs 1.3.6.1.4.1.57264.1.*: the issuer, v1 raw and v2 DER; the
# build signer URI; the source repository URI), checked by the client's policies.

_FULCIO = "1.3.6.1.4.1.57264.1"


def _der_utf8(text: str) -> bytes:
    data = text.encode()
    assert len(data) < 128
    return bytes([0x0C, len(data)]) + data


def _github_certificate(repo: str, workflow: str, ref: str) -> Any:
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    issuer = "https://token.actions.githubusercontent.com"
    extensions = {
        "1": issuer.encode(),  # issuer (v1): the raw string
        "8": _der_utf8(issuer),  # issuer (v2)
        "9": _der_utf8(f"https://github.com/{repo}/{workflow}@{ref}"),  # build signer URI
        "12": _der_utf8(f"https://github.com/{repo}"),  # source repository URI
    }
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test")])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(minutes=10))
    )
    for arc, value in extensions.items():
        builder = builder.add_extension(
            x509.UnrecognizedExtension(x509.ObjectIdentifier(f"{_FULCIO}.{arc}"), value),
            critical=False,
        )
    return builder.sign(key, hashes.SHA256())


def _signature_client() -> Any:
    pytest.importorskip("sigstore")
    _, _, package = verify_mod._client()
    return verify_mod._signature_module(package)


def test_the_policy_of_the_named_signer_accepts_its_workflow_and_nothing_else() -> None:
    from sigstore.errors import VerificationError

    client = _signature_client()
    who = verify_mod.signer("me/relu", (".github/workflows/release.yaml",), "refs/heads/main")
    assert who is not None
    policy = verify_mod._policy(client, who)
    policy.verify(
        _github_certificate("me/relu", ".github/workflows/release.yaml", "refs/heads/main")
    )
    for other in (
        ("me/relu", ".github/workflows/other.yaml", "refs/heads/main"),
        ("me/relu", ".github/workflows/release.yaml", "refs/heads/dev"),
        ("you/relu", ".github/workflows/release.yaml", "refs/heads/main"),
    ):
        with pytest.raises(VerificationError):
            policy.verify(_github_certificate(*other))


def test_the_clients_default_policy_refuses_a_users_own_signature() -> None:
    """Why the README says to name the signer: the client's default trusts only
    kernels-community's (and kernels-community-rs') workflows."""
    from sigstore.errors import VerificationError

    client = _signature_client()
    default = verify_mod._policy(client, None)
    assert default is client.DEFAULT_POLICY
    with pytest.raises(VerificationError):
        default.verify(
            _github_certificate("me/relu", ".github/workflows/release.yaml", "refs/heads/main")
        )
    default.verify(
        _github_certificate(
            "huggingface/kernels-community", ".github/workflows/build.yaml", "refs/heads/main"
        )
    )


def test_a_well_formed_bundle_needs_the_network_and_says_so(tmp_path: Path) -> None:
    """Sigstore's verifier refreshes its trust root before it reads the signature: offline
    the variant fails, saying why (a real Fulcio certificate and Rekor entry are checked
    online only)."""
    pytest.importorskip("sigstore")
    from cryptography.hazmat.primitives.serialization import Encoding

    v = _variant(tmp_path)
    cert = _github_certificate("me/relu", ".github/workflows/r.yaml", "refs/heads/main")
    metadata = (v / "metadata.json").read_bytes()
    body = base64.b64encode(b"{}").decode()
    bundle = {
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {
            "certificate": {"rawBytes": base64.b64encode(cert.public_bytes(Encoding.DER)).decode()},
            "tlogEntries": [
                {
                    "logIndex": "1",
                    "logId": {"keyId": base64.b64encode(b"0" * 32).decode()},
                    "kindVersion": {"kind": "hashedrekord", "version": "0.0.1"},
                    "integratedTime": "1700000000",
                    "inclusionPromise": {"signedEntryTimestamp": body},
                    "inclusionProof": {
                        "logIndex": "1",
                        "rootHash": base64.b64encode(b"0" * 32).decode(),
                        "treeSize": "2",
                        "hashes": [],
                        "checkpoint": {"envelope": "x"},
                    },
                    "canonicalizedBody": body,
                }
            ],
        },
        "messageSignature": {
            "messageDigest": {
                "algorithm": "SHA2_256",
                "digest": base64.b64encode(hashlib.sha256(metadata).digest()).decode(),
            },
            "signature": base64.b64encode(b"not a signature").decode(),
        },
    }
    (v / "metadata.json.sigstore").write_text(json.dumps(bundle))
    env = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        done = _verify(str(tmp_path), "--repo", "me/relu", "--workflow", ".github/workflows/r.yaml")
    finally:
        for k, value in old.items():
            if value is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = value
    assert done.exit_code == 1
    line = next(x for x in done.stdout.splitlines() if "signature:" in x)
    assert "TUFError" in line and "needs the network" in line, done.stdout


def test_the_verb_reports_the_clients_log_silently(tmp_path: Path, caplog: Any) -> None:
    """The client's verifiers log nothing a user must act on when all is well."""
    _variant(tmp_path)
    with caplog.at_level(logging.WARNING):
        done = _verify(str(tmp_path))
    assert done.exit_code == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
