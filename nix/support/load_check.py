"""A built variant, checked by the `kernels` client inside its build.

Run by support/variant-check-hook.sh with the variant's check Python (`nixgen.trust`: the
toolchain's `python3.pkgs.kernels`, the variant's framework and its Python dependencies):

    python3 load_check.py VARIANT                        # what needs no device (below)
    python3 load_check.py --load --symbols FILE VARIANT  # the variant loaded, FILE written

VARIANT is the variant's directory under its variant name (the hook links `$out` as
`<dir>/<variant name>`, so the client's messages name the variant). Only the client's public
interface is used (`kernels.Metadata`, `kernels.get_local_kernel`, the `Digest` that the
metadata holds), so the check runs with the toolchain's client (0.17.0.dev0 at its pin) and
with the PyPI ones alike.

Without `--load` (every variant; on a variant the build machine cannot load, the whole check):

1. the client parses `metadata.json` (`Metadata.read_from_file`): a key or value it refuses
   (a `kernels-minver` of two parts, a bad `provenance`) fails the build;
2. the client hashes the variant (`Digest.hash_variant`) and validates the recorded digest
   against it (`Digest.validate`): the digest nixgen wrote is the client's, file for file;
3. every Python file of the package compiles (nothing is written).

With `--load`: `kernels.get_local_kernel(VARIANT)`, as the kernels toolchain's get-kernel-check
hook loads its builds: the client's own checks of the metadata (its Python dependencies, the
minimum client version, and since 0.18.3 the digest) and the import of the package and its
extension module. Whatever the client refuses fails the build with the client's reason; what
it logs (warnings) is printed. Then the kernel's public symbols are written to FILE
(`symbols.json`, read by `kernels describe-api`; schema version 1):

- `functions`: the names in the package's `__all__` (without it: its public names, those of
  objects defined in the package) that name something callable that is neither a class nor
  a module, in `__all__` order; names starting with `_`, and `layers`, are not functions;
- `layers`: the classes of its `layers` module (the package's attribute `layers`, else the
  submodule `<package>.layers` when it exists), named by that module's `__all__` (without
  it: its public classes defined there), each with `attributes`: `has_backward` and
  `can_torch_compile` as the client's `kernelize` reads them (the class attribute,
  inherited or not, else its default: `True` and `False`); a value that is not a boolean is
  `null` (unknown), as `describe-api` allows.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import logging
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

SCHEMA_VERSION = 1
#: The layer attributes `describe-api` shows, with the value the client's `kernelize`
#: takes when a layer does not set it (kernels' layer/layer.py: `getattr(layer, name, default)`).
LAYER_ATTRIBUTES = {"has_backward": True, "can_torch_compile": False}


class CheckError(Exception):
    """A variant the client refuses, or whose package cannot be described."""


def _client() -> Any:
    try:
        import kernels
    except ImportError as exc:
        raise CheckError(f"the kernels client cannot be imported ({exc})") from None
    return kernels


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def check_metadata(variant: Path) -> str:
    """The client parses the metadata and validates the recorded digest; returns a summary."""
    kernels = _client()
    try:
        metadata = kernels.Metadata.read_from_file(variant / "metadata.json")
    except Exception as exc:  # the client's parser raises its own types
        raise CheckError(f"the kernels client cannot read metadata.json: {_reason(exc)}") from None
    recorded = getattr(metadata, "digest", None)
    if recorded is None:
        raise CheckError("metadata.json records no digest")
    try:
        actual = type(recorded).hash_variant(recorded.algorithm, variant)
        recorded.validate(actual)
    except Exception as exc:
        raise CheckError(
            f"the kernels client finds that the files do not match the digest: {_reason(exc)}"
        ) from None
    return f"metadata read and digest of {len(actual.files)} file(s) validated"


def compile_sources(variant: Path) -> int:
    """Compile every Python file of the variant (syntax only; nothing is written)."""
    count = 0
    for path in sorted(variant.rglob("*.py")):
        if "__pycache__" in path.relative_to(variant).parts:
            continue
        try:
            compile(path.read_bytes(), str(path.relative_to(variant)), "exec", dont_inherit=True)
        except SyntaxError as exc:
            raise CheckError(f"{path.relative_to(variant)}:{exc.lineno}: {exc.msg}") from None
        count += 1
    return count


class _Collect(logging.Handler):
    """Keeps what the client logs at WARNING and above, to print it."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def load(variant: Path) -> ModuleType:
    """The variant, loaded by the client (`get_local_kernel`); what it logs is printed."""
    kernels = _client()
    collect = _Collect()
    root = logging.getLogger()
    root.addHandler(collect)
    try:
        module = kernels.get_local_kernel(variant)
    except Exception as exc:
        raise CheckError(f"the kernels client cannot load the variant: {_reason(exc)}") from None
    finally:
        root.removeHandler(collect)
        for record in collect.records:
            print(f"nixgen: the kernels client says ({record.levelname}): {record.getMessage()}")
    if not isinstance(module, ModuleType):
        raise CheckError(f"the kernels client returned {type(module).__name__}, not a module")
    return module


def _exports(module: ModuleType, keep: Any) -> list[tuple[str, Any]]:
    """(name, object) of `module`'s public exports that `keep` accepts, in `__all__` order;
    without `__all__`, its public names of objects defined in the package, sorted."""
    declared = getattr(module, "__all__", None)
    if declared is None:
        package = module.__name__.split(".")[0]
        names = sorted(
            name
            for name, value in vars(module).items()
            if str(getattr(value, "__module__", "") or "").split(".")[0] == package
        )
    elif isinstance(declared, (list, tuple)) and all(isinstance(n, str) for n in declared):
        names = list(dict.fromkeys(declared))
    else:
        raise CheckError(f"{module.__name__}.__all__ is not a list of strings")
    out = []
    for name in names:
        if name.startswith("_") or name == "layers":
            continue
        if not hasattr(module, name):
            raise CheckError(f"{module.__name__}.__all__ names `{name}`, which it does not define")
        value = getattr(module, name)
        if keep(value):
            out.append((name, value))
    return out


def _is_function(value: Any) -> bool:
    return callable(value) and not inspect.isclass(value) and not inspect.ismodule(value)


def _layers_module(module: ModuleType) -> ModuleType | None:
    layers = getattr(module, "layers", None)
    if inspect.ismodule(layers):
        return layers
    if layers is None and hasattr(module, "__path__") and module.__name__ in sys.modules:
        # A package that does not import its `layers` itself: the submodule, if it has one.
        name = f"{module.__name__}.layers"
        try:
            if importlib.util.find_spec(name) is not None:
                return importlib.import_module(name)
        except ImportError as exc:
            raise CheckError(f"{name} cannot be imported: {_reason(exc)}") from None
    return None


def _attribute(layer: type, name: str) -> bool | None:
    value = getattr(layer, name, LAYER_ATTRIBUTES[name])
    return value if isinstance(value, bool) else None


def symbols(module: ModuleType) -> dict[str, Any]:
    """`symbols.json` of a loaded kernel (schema version 1, as `kernels describe-api` reads)."""
    layers = _layers_module(module)
    return {
        "schema_version": SCHEMA_VERSION,
        "functions": [{"name": name} for name, _ in _exports(module, _is_function)],
        "layers": [
            {
                "name": name,
                "attributes": {attr: _attribute(layer, attr) for attr in LAYER_ATTRIBUTES},
            }
            for name, layer in (_exports(layers, inspect.isclass) if layers is not None else [])
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("variant", type=Path, help="the variant, under its variant name")
    parser.add_argument("--load", action="store_true", help="load it with get_local_kernel")
    parser.add_argument("--symbols", type=Path, help="where --load writes symbols.json")
    args = parser.parse_args(argv)
    name = args.variant.name
    try:
        if args.load:
            module = load(args.variant)
            described = symbols(module)
            if args.symbols is not None:
                text = json.dumps(described, indent=2, ensure_ascii=False) + "\n"
                args.symbols.write_text(text, encoding="utf-8")
            print(
                f"nixgen: the kernels client loads {name} as {module.__name__}: "
                f"{len(described['functions'])} function(s), {len(described['layers'])} layer(s)"
            )
        else:
            print(f"nixgen: the kernels client checks {name}: {check_metadata(args.variant)}")
            count = compile_sources(args.variant)
            print(f"nixgen: {count} Python file(s) of {name} compile")
    except CheckError as exc:
        print(f"nixgen: {name}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
