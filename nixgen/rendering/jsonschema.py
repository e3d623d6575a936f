"""A JSON Schema (Draft 2020-12) of the edition-6 build.toml, derived from the model.

Edition 6 is the field's format (the `kernels` client's `config/v6.rs`); the schema says it
as nixgen reads it, so its value rules are nixgen's (a path stays inside the project), which
can be narrower than the format's. Model fields that nixgen.toml holds are no keys here.

Nothing here restates the format by hand: tables and keys come from the attrs classes of
`nixgen.reading.model` and the edition-6 layout (`nixgen.reading.schema.v6.LAYOUT`), allowed values
from the Literal types (built from the data tables, so a new CUTLASS version reaches the schema by
itself), descriptions from class docstrings, each field's ``doc`` metadata, each NewType's
``__doc__`` and each named allowlist's `model.Named`, and the rule of each NewType from the
regular expressions and tables of `nixgen.reading.values`. The kernel union becomes a discriminated
union: ``language`` must be one of the tags, and ``if language == X then <X's table>`` picks
the one table that applies.

Rules of `nixgen.checking.validate` that JSON Schema can express are added as constraints (each
names the rule it mirrors); the rest are listed in `NOT_EXPRESSED`, so users and tests know
what only ``nixgen validate`` catches.
"""

from __future__ import annotations

import builtins
import inspect
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args, get_origin

import attrs

from nixgen.core import tables
from nixgen.reading import convert, model, values
from nixgen.reading.schema import v6

DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: Identifies the schema (it is not fetched from there: save `nixgen schema` to a file).
SCHEMA_ID = "urn:nixgen:schema:build-toml:edition-6"
TITLE = "build.toml, edition 6, as nixgen reads it"

#: Model rules that this schema cannot express; `nixgen validate` checks them.
NOT_EXPRESSED = (
    "listed files and include directories exist, are files or directories, and stay inside "
    "the project once symlinks are resolved",
    "the Python package `torch-ext/<module>/__init__.py` (or `tvm-ffi-ext/…`) exists",
    "`minver` is not greater than `maxver` (versions compare numerically)",
    "kernel names stay distinct once `-` becomes `_` (compared case-insensitively)",
    "strings carry no NUL character",
    "CUDA capabilities that no toolkit of the build matrix supports (`nixgen validate` and "
    "`nixgen render` check this while planning); capabilities and ROCm targets that are "
    "well-formed but unknown are warnings",
    "a kernel of a listed backend that no variant builds, and a C++ kernel whose `src` lists "
    "nothing its language compiles, are warnings",
    "a Rust kernel's `Cargo.lock` that `src` does not list is found next to the crate's "
    "manifest or above it (a warning); none anywhere is an error",
    "`tileiras-minver` is at least 13.2",
    "a Rust crate's library name is read from its `Cargo.toml`, which names a Rust identifier",
)


# ------------------------------------------------------------------- value rules (NewTypes)

#: The JSON Schema of each NewType's rule, by NewType: read from the one table of value
#: rules (`nixgen.reading.values.NEWTYPES`).
NEWTYPES: dict[Any, Callable[[], dict[str, Any]]] = {
    newtype: rule.schema for newtype, rule in values.NEWTYPES.items()
}


# ----------------------------------------------------------------------- descriptions


def _plain(text: str) -> str:
    """Paragraphs joined into single lines (editors wrap descriptions themselves)."""
    paragraphs = [" ".join(p.replace("``", "`").split()) for p in text.split("\n\n")]
    return "\n\n".join(p for p in paragraphs if p)


def _hints(cls: type) -> dict[str, Any]:
    """The field types of `cls`, `Annotated` kept, with the type parameters of a generic
    base (`model._CppKernel`) bound to what `cls` gives them."""
    hints = typing.get_type_hints(cls, include_extras=True)
    bound: dict[Any, Any] = {}
    for base in getattr(cls, "__orig_bases__", ()):
        params = getattr(get_origin(base), "__parameters__", ())
        bound.update(zip(params, get_args(base), strict=True))

    def bind(t: Any) -> Any:
        if isinstance(t, typing.TypeVar):
            return bound[t]
        params = getattr(t, "__parameters__", ())
        return t[tuple(bound[p] for p in params)] if params else t

    return {name: bind(t) for name, t in hints.items()}


# -------------------------------------------------------------------------- the walker


class _Walker:
    """Turns model types into schema fragments, collecting named ones in `defs`."""

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}

    def ref(self, name: str, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        if name not in self.defs:
            self.defs[name] = {}  # placeholder against recursion
            self.defs[name] = make()
        return {"$ref": f"#/$defs/{name}"}

    def type(self, t: Any) -> dict[str, Any]:
        """The schema of type `t`."""
        origin = get_origin(t)
        if hasattr(t, "__supertype__"):
            return self.ref(t.__name__, lambda: self._newtype(t))
        if attrs.has(t):
            return self.ref(t.__name__, lambda: self.cls(t))
        if origin is Annotated:
            inner, *extras = get_args(t)
            named = next((m for m in extras if isinstance(m, model.Named)), None)
            if named is None:
                return self.type(inner)
            doc = _plain(named.doc)
            return self.ref(named.name, lambda: {"description": doc, **self._literal(inner, True)})
        if origin is Literal:
            return self._literal(t, False)
        if origin in (typing.Union, types.UnionType):
            options = [a for a in get_args(t) if a is not type(None)]
            if len(options) == 1:
                return self.type(options[0])
            return {"oneOf": [self.type(a) for a in options]}
        if origin is list:
            (item,) = get_args(t)
            bare = get_args(item)[0] if get_origin(item) is Annotated else item
            if get_origin(bare) is Literal and not get_args(bare):
                return {"type": "array", "maxItems": 0, "description": "Must be empty."}
            return {"type": "array", "items": self.type(item)}
        if origin is dict:
            key, value = get_args(t)
            return {
                "type": "object",
                "propertyNames": self.type(key),
                "additionalProperties": self.type(value),
            }
        if t is str:
            return {"type": "string"}
        if t is bool:
            return {"type": "boolean"}
        if t is int:
            return {"type": "integer", "minimum": 0}
        raise TypeError(f"no JSON Schema for {t!r}")

    def _newtype(self, t: Any) -> dict[str, Any]:
        if t not in NEWTYPES:
            raise TypeError(f"NewType {t.__name__} has no JSON Schema rule in NEWTYPES")
        out = NEWTYPES[t]()
        doc = vars(t).get("__doc__")  # its own, not the NewType class's
        return {"description": _plain(doc), **out} if doc else out

    def _literal(self, t: Any, named: bool) -> dict[str, Any]:
        """A Literal's values; a named allowlist is an enum even with one value."""
        allowed = list(get_args(t))
        if not allowed:
            return {"not": {}, "description": "No value is allowed here."}
        kind = "string" if all(isinstance(a, str) for a in allowed) else "integer"
        if len(allowed) == 1 and not named:
            return {"type": kind, "const": allowed[0]}
        return {"type": kind, "enum": allowed}

    def cls(self, cls: builtins.type) -> dict[str, Any]:
        """An attrs class as a closed table: its keys, their types, defaults and docs."""
        hints = _hints(cls)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field in attrs.fields(cls):
            if not model.in_build_toml(field):
                continue
            prop = self.type(hints[field.name])
            extra: dict[str, Any] = {}
            if "doc" in field.metadata:
                extra["description"] = _plain(field.metadata["doc"])
            default = field.default
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                default = default.factory()
            if default is attrs.NOTHING:
                required.append(convert.key_of(field))
            elif default is not None:
                extra["default"] = default
            properties[convert.key_of(field)] = {**prop, **extra} if extra else prop
        out: dict[str, Any] = {"type": "object"}
        doc = inspect.getdoc(cls)
        if doc:
            out["description"] = _plain(doc)
        out["properties"] = properties
        if required:
            out["required"] = required
        out["additionalProperties"] = False
        for rule in RULES.get(cls, ()):
            rule(out)
        return out


# ------------------------------------------------- rules of nixgen.checking.validate, where
# expressible


def _version_xor_revision(dep: dict[str, Any]) -> None:
    """validate._general: a kernel dependency gives exactly one of version and revision."""
    dep["oneOf"] = [{"required": ["version"]}, {"required": ["revision"]}]


def _kernel_src(kernel: dict[str, Any]) -> None:
    """validate._kernel: a kernel needs at least one source file."""
    kernel["properties"]["src"]["minItems"] = 1


def _cuda_capabilities(kernel: dict[str, Any]) -> None:
    """validate._kernel: `cuda-capabilities`, when given, is not empty."""
    kernel["properties"]["cuda-capabilities"]["minItems"] = 1


def _rocm_archs(kernel: dict[str, Any]) -> None:
    """validate._kernel: `rocm-archs`, when given, names at least one supported target."""
    prop = kernel["properties"]["rocm-archs"]
    prop["minItems"] = 1
    prop["contains"] = {"enum": tables.supported_rocm_archs()}


def _rust_src(kernel: dict[str, Any]) -> None:
    """validate._rust: `cargo-manifest` names a Cargo.toml; at most one Cargo.lock and at
    most two Cargo.toml files in `src`, and sources (files or directories). A lock `src`
    does not list is no schema error: `validate.listed_lock_files` finds it on disk with a
    warning (see `NOT_EXPRESSED`)."""
    kernel["properties"]["cargo-manifest"]["pattern"] = r"(^|/)Cargo\.toml$"
    src = kernel["properties"]["src"]
    src["allOf"] = [
        {"contains": {"pattern": r"(^|/)Cargo\.toml$"}, "minContains": 0, "maxContains": 2},
        {"contains": {"pattern": r"(^|/)Cargo\.lock$"}, "minContains": 0, "maxContains": 1},
        {"contains": {"not": {"pattern": r"(^|/)(Cargo\.(toml|lock)|rust-toolchain\.toml)$"}}},
    ]


def _rust_cuda(kernel: dict[str, Any]) -> None:
    """validate._rust: a rust-toolchain.toml in src; `cuda-capabilities` not empty."""
    kernel["properties"]["src"]["allOf"].append(
        {"contains": {"pattern": r"(^|/)rust-toolchain\.toml$"}, "minContains": 1, "maxContains": 1}
    )
    kernel["properties"]["cuda-capabilities"]["minItems"] = 1


RULES: dict[type, tuple[Callable[[dict[str, Any]], None], ...]] = {
    model.KernelDependency: (_version_xor_revision,),
    model.CppCpuKernel: (_kernel_src,),
    model.CppCudaKernel: (_kernel_src, _cuda_capabilities),
    model.CppRocmKernel: (_kernel_src, _rocm_archs),
    model.CppXpuKernel: (_kernel_src,),
    model.CppMetalKernel: (_kernel_src,),
    model.RustCpuKernel: (_kernel_src, _rust_src),
    model.RustCudaOxideKernel: (_kernel_src, _rust_src, _rust_cuda),
    model.RustCutileKernel: (_kernel_src, _rust_src),
}


def _kernel_union(walker: _Walker) -> dict[str, Any]:
    return {
        "type": "object",
        "description": "A kernel: `language` names its source language and backend, and "
        "decides which other keys the table may have.",
        "properties": {"language": {"$ref": "#/$defs/Language"}},
        "required": ["language"],
        "allOf": [
            {
                "if": {"required": ["language"], "properties": {"language": {"const": tag}}},
                "then": walker.type(cls),
            }
            for tag, cls in model.KERNEL_CLASSES.items()
        ],
    }


def _backend_listed(backend: str) -> dict[str, Any]:
    """validate._kernel: the backend of every kernel's language is in general.backends."""
    languages = [lang for lang, b in tables.LANGUAGE_BACKEND.items() if b == backend]
    some_kernel_builds_for_it = {
        "required": ["kernel"],
        "not": {
            "properties": {
                "kernel": {
                    "additionalProperties": {
                        "not": {
                            "required": ["language"],
                            "properties": {"language": {"enum": languages}},
                        }
                    }
                }
            }
        },
    }
    return {
        "if": some_kernel_builds_for_it,
        "then": {
            "properties": {
                "general": {"properties": {"backends": {"contains": {"const": backend}}}}
            }
        },
    }


def schema() -> dict[str, Any]:
    """The JSON Schema of an edition-6 build.toml."""
    walker = _Walker()
    walker.defs["Language"] = {"type": "string", "enum": list(model.KERNEL_CLASSES)}
    frameworks = v6.LAYOUT.frameworks
    properties: dict[str, Any] = {"general": walker.type(v6.LAYOUT.general)}
    for table, cls in frameworks.items():
        properties[table] = walker.type(cls)
    kernel = walker.ref("Kernel", lambda: _kernel_union(walker))
    properties["kernel"] = {
        "type": "object",
        "description": "The compiled kernels, one table per kernel: `[kernel.<name>]`.",
        "propertyNames": walker.type(model.KernelName),
        "additionalProperties": kernel,
    }
    compiled = [name for name, cls in frameworks.items() if "src" in attrs.fields_dict(cls)]
    rust = [lang for lang in model.KERNEL_CLASSES if tables.is_rust(lang)]
    rules: list[dict[str, Any]] = [
        # v6.LAYOUT.framework_required: one framework table.
        {"anyOf": [{"required": [name]} for name in frameworks]},
        # v6.rust_needs_tvm_ffi: a Rust kernel belongs to a [tvm-ffi] project.
        {
            "if": {
                "required": ["kernel"],
                "properties": {
                    "kernel": {
                        "not": {
                            "additionalProperties": {
                                "not": {"properties": {"language": {"enum": rust}}}
                            }
                        }
                    }
                },
            },
            "then": {"required": ["tvm-ffi"]},
        },
        # v6.mlx_noarch_is_metal: [mlx-noarch] builds for `metal` only.
        {
            "if": {"required": ["mlx-noarch"]},
            "then": {
                "properties": {
                    "general": {"properties": {"backends": {"items": {"const": "metal"}}}}
                }
            },
        },
        # common.structure: only one framework table. (Pairs under `not` rather than
        # `dependentSchemas`, which draft-7 validators such as taplo 0.9 ignore.)
        {
            "not": {
                "anyOf": [
                    {"required": [a, b]}
                    for i, a in enumerate(frameworks)
                    for b in list(frameworks)[i + 1 :]
                ]
            }
        },
        # validate._framework: compiled kernels need a framework that binds them.
        {
            "if": {"required": ["kernel"], "properties": {"kernel": {"minProperties": 1}}},
            "then": {"anyOf": [{"required": [name]} for name in compiled]},
        },
        *(_backend_listed(b) for b in dict.fromkeys(tables.LANGUAGE_BACKEND.values())),
    ]
    return {
        "$schema": DIALECT,
        "$id": SCHEMA_ID,
        "title": TITLE,
        "description": _plain(
            "The build.toml of a compute-kernel project, edition 6 (the format kernel-builder, "
            "the `kernels` client and the Hub read), as nixgen reads it. Older editions are "
            "read too; `nixgen migrate` rewrites them as edition 6. "
            "Not expressed here (run `nixgen validate`): " + "; ".join(NOT_EXPRESSED) + "."
        ),
        "type": "object",
        "properties": properties,
        "required": ["general"],
        "additionalProperties": False,
        "allOf": rules,
        "$defs": dict(sorted(walker.defs.items())),
    }
