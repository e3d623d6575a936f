"""The strict cattrs converter shared by every edition's schema, and its error translation.

Strict means: unknown keys are errors that name the closest valid key; a number is never
silently a string; an array is never a string; a Literal names its allowed values; the
kernel union dispatches on ``language`` and lists the allowed tags. Every failure, however
deep, becomes a `Problem` with the key path where it happened.

attrs classes and arrays are structured by cattrs' own generated hooks, with the converter's
``detailed_validation`` (every failure collected) and ``forbid_extra_keys``; nixgen adds the
scalar, Literal, NewType and tagged-union rules. `problems_from` is the one place where
cattrs' errors become problems.
"""

from __future__ import annotations

import functools
import json
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args, get_origin

import attrs
import cattrs
from cattrs.cols import list_structure_factory
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from nixgen.core.errors import PathPart, Problem, closest, did_you_mean, one_of, unknown_key_message
from nixgen.reading import model, values

T = typing.TypeVar("T")

#: The largest integer a Nix literal can hold (Nix integers are signed 64-bit).
INT_MAX = 2**63 - 1


class InvalidValue(ValueError):
    """A value that breaks a rule; `subpath` points below the value being structured."""

    def __init__(
        self,
        message: str,
        subpath: tuple[PathPart, ...] = (),
        hint: str | None = None,
        *,
        at_key: bool = False,
        beyond_format: bool = False,
    ):
        super().__init__(message)
        self.message = message
        self.subpath = subpath
        self.hint = hint
        #: The value is a table key (a kernel name, a backend in `stable-abi`): point at it.
        self.at_key = at_key
        #: A rule of nixgen's own that the field's format does not have (`Problem.beyond_format`).
        self.beyond_format = beyond_format


#: The TOML name of each type a parsed value can have (`bool` before `int`: it is one).
_TOML_TYPES = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a float"),
    (str, "a string"),
    (list, "an array"),
    (dict, "a table"),
)


def toml_type(value: object) -> str:
    """The TOML name of a Python value's type, for messages."""
    for kind, name in _TOML_TYPES:
        if isinstance(value, kind):
            return name
    return "a date/time" if hasattr(value, "isoformat") else type(value).__name__


def show(value: object) -> str:
    """A short rendering of a wrong value, written the way TOML writes it: ``an integer `5```."""
    if isinstance(value, (dict, list)):
        return toml_type(value)
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
    elif hasattr(value, "isoformat"):
        text = value.isoformat()
    else:
        text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{toml_type(value)} `{text}`"


def key_of(field: attrs.Attribute[Any]) -> str:
    """The TOML spelling of an attrs field: its `key` metadata, else kebab-case."""
    key: str = field.metadata.get("key", field.name.replace("_", "-"))
    return key


def keys_of(cls: type) -> list[str]:
    """The keys of `cls` in build.toml (a model field of nixgen.toml's, or derived, is none)."""
    return [key_of(f) for f in attrs.fields(cls) if model.in_build_toml(f)]


#: Which fields `to_table` writes: build.toml's, nixgen.toml's, or both.
Fields = Literal["build.toml", "nixgen.toml", "both"]


def _writes(fields: Fields, field: attrs.Attribute[Any]) -> bool:
    where = field.metadata.get("file")
    if fields == "build.toml":
        return where is None
    if fields == "nixgen.toml":
        return where == model.NIXGEN_TOML or field.name == "language"
    return where != model.DERIVED


def to_table(value: Any, *, defaults: bool = True, fields: Fields = "build.toml") -> Any:
    """An attrs instance as a TOML table (kebab-case keys), recursively; the inverse of
    structuring. Unset (None) fields are dropped, and so are fields at their default
    unless `defaults`. A kernel's ``language`` tag is always kept. `fields` picks the
    file's: build.toml's (the default), nixgen.toml's (a kernel's options, with its
    `language`) or both; a derived field is never written. Unstructured by cattrs
    (`make_dict_unstructure_fn` with each field's TOML key), as `nixgen.core.contract`
    does for the generated data files."""
    return _table_converter(defaults, fields).unstructure(value)


@functools.cache
def _table_converter(defaults: bool, fields: Fields) -> cattrs.Converter:
    converter = cattrs.Converter()

    def hook(cls: type) -> Callable[[Any], dict[str, Any]]:
        overrides: dict[str, Any] = {
            field.name: (
                override(
                    rename=key_of(field),
                    omit_if_default=not defaults and field.name != "language",
                )
                if _writes(fields, field)
                else override(omit=True)
            )
            for field in attrs.fields(cls)
        }
        unstructure: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(
            cls, converter, **overrides
        )

        def table(value: Any) -> dict[str, Any]:
            return {k: v for k, v in unstructure(value).items() if v is not None}

        return table

    converter.register_unstructure_hook_factory(attrs.has, hook)
    return converter


# ------------------------------------------------------------------------------ hooks


def _strict_str(value: object, _: type) -> str:
    if not isinstance(value, str):
        raise InvalidValue(f"expected a string, got {show(value)}")
    if "\x00" in value:
        raise InvalidValue(
            f"the string contains a NUL character at index {value.index(chr(0))}, "
            "which Nix strings cannot carry",
            beyond_format=True,
        )
    return value


def _strict_int(value: object, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValue(f"expected an integer, got {show(value)}")
    if value < 0:
        raise InvalidValue(f"expected a non-negative integer, got `{value}`")
    if value > INT_MAX:
        raise InvalidValue(
            f"integer `{value}` is too large; Nix integers are signed 64-bit (at most {INT_MAX})"
        )
    return value


def _strict_bool(value: object, _: type) -> bool:
    if not isinstance(value, bool):
        raise InvalidValue(f"expected a boolean (`true` or `false`), got {show(value)}")
    return value


def _is_literal(t: Any) -> bool:
    return get_origin(t) is Literal


def _structure_literal(value: object, t: Any) -> Any:
    allowed = get_args(t)
    if value in allowed and type(value) is type(allowed[0]):
        return value
    if not allowed:
        raise InvalidValue(f"no value is allowed here, got {show(value)}; this array must be empty")
    if isinstance(value, str) and all(isinstance(a, str) for a in allowed):
        raise _unknown_value(value, allowed)
    if len(allowed) == 1:
        raise InvalidValue(f"expected `{allowed[0]}`, got {show(value)}")
    raise InvalidValue(f"expected one of {one_of(map(str, allowed))}, got {show(value)}")


def _unknown_value(value: str, allowed: tuple[Any, ...]) -> InvalidValue:
    hint = next((h for fn in _value_hints if (h := fn(value, allowed))), "")
    return InvalidValue(
        f"unknown value `{value}`{did_you_mean(value, allowed)}; expected one of "
        f"{one_of(allowed)}{hint}"
    )


def _is_list(t: Any) -> bool:
    return get_origin(t) is list or t is list


def _is_dict(t: Any) -> bool:
    return get_origin(t) is dict or t is dict


def _newtype_hook(rule: values.ValueRule) -> Callable[[object, type], str]:
    """A NewType's value: a string that the field's format accepts (`rule.format`), then
    one that nixgen's own rule accepts (`rule.check`; a failure there is beyond the format)."""

    def hook(value: object, _: type) -> str:
        text = _strict_str(value, str)
        message = rule.format(text) if rule.format is not None else None
        if message:
            raise InvalidValue(message)
        message = rule.check(text)
        if message:
            raise InvalidValue(message, beyond_format=True)
        return text

    return hook


def _allowlist_of(t: Any) -> model.Allowlist | None:
    if get_origin(t) is not typing.Annotated:
        return None
    return next((m for m in get_args(t)[1:] if isinstance(m, model.Allowlist)), None)


def _structure_allowlist(value: object, t: Any) -> Any:
    """A value of an allowlist narrower than the format: a string among the format's
    values (`Allowlist.format_values`, any string when None), then one of nixgen's."""
    inner = get_args(t)[0]
    rule = _allowlist_of(t)
    assert rule is not None
    if not isinstance(value, str):
        raise InvalidValue(f"expected a string, got {show(value)}")
    if rule.format_values is not None and value not in rule.format_values:
        raise _unknown_value(value, tuple(rule.format_values))
    try:
        return _structure_literal(value, inner)
    except InvalidValue as exc:
        raise InvalidValue(f"{exc.message} ({rule.reason})", beyond_format=True) from None


class Strict:
    """A cattrs converter with nixgen's strict rules, plus per-schema special hooks.

    `reads` says which fields of a model class the converter reads (the others are left
    at their default, and their keys are unknown keys): build.toml's converter reads no
    field of nixgen.toml's. `checks` are rules over a whole structured value (a kernel
    dependency's `version` or `revision`), run right after its class is structured."""

    def __init__(
        self,
        newtypes: dict[Any, values.ValueRule],
        *,
        reads: Callable[[attrs.Attribute[Any]], bool] = lambda _: True,
        checks: Mapping[type, Callable[[Any], None]] | None = None,
    ):
        self.reads = reads
        self.checks = dict(checks or {})
        self.converter = cattrs.Converter(detailed_validation=True, forbid_extra_keys=True)
        c = self.converter
        c.register_structure_hook(str, _strict_str)
        c.register_structure_hook(int, _strict_int)
        c.register_structure_hook(bool, _strict_bool)
        for newtype, rule in newtypes.items():
            c.register_structure_hook(newtype, _newtype_hook(rule))
        c.register_structure_hook_func(_is_literal, _structure_literal)
        c.register_structure_hook_func(lambda t: _allowlist_of(t) is not None, _structure_allowlist)
        c.register_structure_hook_factory(_is_list, self._list_hook)
        c.register_structure_hook_factory(_is_dict, self._dict_hook)
        c.register_structure_hook_factory(attrs.has, self._class_hook)

    # -- containers ----------------------------------------------------------------------
    def _list_hook(self, t: Any) -> Callable[[object, type], list[Any]]:
        """cattrs' list hook (every item's failure collected, noted with its index), for
        arrays only: cattrs would take any iterable, a string included."""
        structure = list_structure_factory(t, self.converter)

        def hook(value: object, _: type) -> list[Any]:
            if not isinstance(value, list):
                raise InvalidValue(f"expected an array, got {show(value)}")
            items: list[Any] = structure(value, t)
            return items

        return hook

    def _dict_hook(self, t: Any) -> Callable[[object, type], dict[Any, Any]]:
        """A table with typed keys. nixgen's own rather than cattrs' mapping hook: a key is
        judged before its value and a bad key is located at the key itself (a kernel name,
        a backend in `stable-abi`); failures are collected as cattrs' detailed validation
        does, so `problems_from` reads them alike."""
        key_type, value_type = get_args(t) or (str, Any)
        structure = self.converter.structure

        def hook(value: object, _: type) -> dict[Any, Any]:
            if not isinstance(value, dict):
                raise InvalidValue(f"expected a table, got {show(value)}")
            out: dict[Any, Any] = {}
            errors: list[Exception] = []
            for key, item in value.items():
                try:
                    try:
                        name = structure(key, key_type)
                    except InvalidValue as exc:
                        exc.at_key = True
                        raise
                    out[name] = structure(item, value_type)
                except Exception as exc:
                    note = IterableValidationNote(f"Structuring {t} @ key {key!r}", key, value_type)
                    exc.__notes__ = [*getattr(exc, "__notes__", []), note]
                    errors.append(exc)
            if errors:
                raise IterableValidationError(f"While structuring {t}", errors, t)
            return out

        return hook

    # -- attrs classes -------------------------------------------------------------------
    def _class_hook(self, cls: type) -> Callable[[object, type], Any]:
        """cattrs' generated structure function of `cls`, reading each field from its TOML
        key (`key_of`); the converter's `forbid_extra_keys` and `detailed_validation` hold."""
        # Any, not AttributeOverride: mypy checks a `**` argument against every keyword
        # parameter of make_dict_structure_fn, the boolean ones included.
        renames: dict[str, Any] = {
            f.name: override(rename=key_of(f)) if self.reads(f) else override(omit=True)
            for f in attrs.fields(cls)
        }
        structure: Callable[[Mapping[str, Any], Any], Any] = make_dict_structure_fn(
            cls, self.converter, **renames
        )
        check = self.checks.get(cls)

        def hook(value: object, _: type) -> Any:
            if not isinstance(value, dict):
                raise InvalidValue(f"expected a table, got {show(value)}")
            out = structure(value, cls)
            if check is not None:
                check(out)
            return out

        return hook

    # -- entry points --------------------------------------------------------------------
    def register(self, t: Any, hook: Callable[[object, type], Any]) -> None:
        self.converter.register_structure_hook(t, hook)

    def structure(self, value: object, t: type[T] | Any) -> T:
        result: T = self.converter.structure(value, t)
        return result


def tagged_union_hook(
    strict: Strict,
    tag: str,
    classes: dict[str, type],
    *,
    what: str,
    hint: Callable[[str, dict[str, Any]], str | None] | None = None,
) -> Callable[[object, type], Any]:
    """A hook for a union of attrs classes told apart by the string field `tag`."""

    def hook(value: object, _: type) -> Any:
        if not isinstance(value, dict):
            raise InvalidValue(f"expected a table, got {show(value)}")
        if tag not in value:
            # A misspelt tag (`languag`) is said as every other misspelt key is.
            typo = next((k for k in value if isinstance(k, str) and closest(k, [tag])), None)
            if typo is not None:
                raise InvalidValue(
                    f"unknown key `{typo}`; did you mean `{tag}`? every {what} needs "
                    f"`{tag}`, one of {one_of(classes)}",
                    subpath=(typo,),
                    at_key=True,
                )
            raise InvalidValue(
                f"missing `{tag}`: every {what} needs one of {one_of(classes)}",
                hint=hint("", value) if hint else None,
            )
        name = value[tag]
        if not isinstance(name, str) or name not in classes:
            shown = f"`{name}`" if isinstance(name, str) else show(name)
            extra = did_you_mean(name, classes) if isinstance(name, str) else ""
            raise InvalidValue(
                f"unknown {tag} {shown}{extra}; expected one of {one_of(classes)}",
                subpath=(tag,),
                hint=hint(name, value) if hint and isinstance(name, str) else None,
            )
        return strict.structure(value, classes[name])

    return hook


# ---------------------------------------------------------------------------- errors


def problems_from(exc: BaseException, path: tuple[PathPart, ...] = ()) -> list[Problem]:
    """Flatten a (possibly nested) cattrs exception into located-by-path problems."""
    if isinstance(exc, ClassValidationError):
        out: list[Problem] = []
        fields = {f.name: f for f in attrs.fields(exc.cl)} if attrs.has(exc.cl) else {}
        for sub in exc.exceptions:
            sub_path = path
            for note in getattr(sub, "__notes__", []):
                if isinstance(note, AttributeValidationNote):
                    field = fields.get(note.name)
                    sub_path = (*path, key_of(field) if field else note.name)
            if isinstance(sub, KeyError) and not isinstance(sub, ForbiddenExtraKeysError):
                out.append(Problem(message="required key is missing", path=sub_path, at_key=True))
            elif isinstance(sub, ForbiddenExtraKeysError):
                out.extend(_extra_keys(sub, path))
            else:
                out.extend(problems_from(sub, sub_path))
        return out
    if isinstance(exc, IterableValidationError):
        out = []
        for sub in exc.exceptions:
            sub_path = path
            for note in getattr(sub, "__notes__", []):
                if isinstance(note, IterableValidationNote):
                    sub_path = (*path, note.index)
            out.extend(problems_from(sub, sub_path))
        return out
    if isinstance(exc, ForbiddenExtraKeysError):
        return _extra_keys(exc, path)
    if isinstance(exc, InvalidValue):
        return [
            Problem(
                message=exc.message,
                path=(*path, *exc.subpath),
                hint=exc.hint,
                at_key=exc.at_key,
                beyond_format=exc.beyond_format,
            )
        ]
    if isinstance(exc, ExceptionGroup):
        return [p for sub in exc.exceptions for p in problems_from(sub, path)]
    return [Problem(message=str(exc) or type(exc).__name__, path=path)]


#: Set by schemas: explains that a key exists, but for another kernel language.
ForeignKeyHint = Callable[[type, str], str | None]
_foreign_key_hints: list[ForeignKeyHint] = []


def add_foreign_key_hint(fn: ForeignKeyHint) -> None:
    _foreign_key_hints.append(fn)


#: Set by schemas: a sentence (starting with "; ") appended to an unknown value's error,
#: given the value and the allowed values, when the value means something elsewhere.
ValueHint = Callable[[str, tuple[Any, ...]], str | None]
_value_hints: list[ValueHint] = []


def add_value_hint(fn: ValueHint) -> None:
    _value_hints.append(fn)


def _extra_keys(exc: ForbiddenExtraKeysError, path: tuple[PathPart, ...]) -> list[Problem]:
    allowed = keys_of(exc.cl) if attrs.has(exc.cl) else []
    out = []
    for key in sorted(exc.extra_fields):
        message = None
        for fn in _foreign_key_hints:
            message = fn(exc.cl, key)
            if message:
                break
        if message is None:
            message = unknown_key_message(key, allowed)
        out.append(Problem(message=message, path=(*path, key), at_key=True))
    return out


__all__ = [
    "InvalidValue",
    "Strict",
    "add_foreign_key_hint",
    "key_of",
    "keys_of",
    "problems_from",
    "show",
    "tagged_union_hook",
    "to_table",
    "toml_type",
]
