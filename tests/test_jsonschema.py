"""The JSON Schema (`nixgen schema`) accepts what the model accepts and rejects what it rejects.

Good inputs: every real-world corpus file that loads, migrated to edition 6, and the example
projects. Bad inputs: a sample of edition-6 documents the model rejects, one rule each. The
rules JSON Schema cannot express (`jsonschema.NOT_EXPRESSED`) are pinned too: the schema
accepts those documents, the model does not.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import typing
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

import attrs
import jsonschema as js
import pytest
import tomli
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nixgen.app import migrate
from nixgen.checking import project, validate
from nixgen.cmdline.cli import main
from nixgen.core import tables
from nixgen.core.errors import ProblemError
from nixgen.reading import convert, load, model, values
from nixgen.rendering import jsonschema

from . import test_bad_input as _bad
from .conftest import EXAMPLES
from .corpus_table import LOADING

SCHEMA = jsonschema.schema()
VALIDATOR = js.Draft202012Validator(SCHEMA)


def model_errors(text: str) -> list[str]:
    """The errors the model (schema stage and validate stage, no file checks) finds."""
    document = load.parse(text, Path("build.toml"), "build.toml")
    try:
        _, build, _ = project.structure(document)
    except ProblemError as exc:
        return [p.render() for p in exc.errors]
    return [p.render() for p in validate.validate(build, None) if p.severity == "error"]


def schema_errors(text: str) -> list[str]:
    return [e.message for e in VALIDATOR.iter_errors(tomli.loads(text))]


# --------------------------------------------------------------------------- the schema


def test_is_a_valid_draft_2020_12_schema_with_id_and_title():
    js.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["$id"] == jsonschema.SCHEMA_ID
    assert "edition 6" in SCHEMA["title"]
    assert SCHEMA["additionalProperties"] is False


def test_cli_prints_pure_json(runner):
    result = runner.invoke(main, ["schema"])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == SCHEMA
    envelope = json.loads(runner.invoke(main, ["schema", "--json"]).stdout)
    assert envelope["result"] == SCHEMA and envelope["command"] == "schema"


def _model_classes() -> list[type]:
    """The model's table classes, from the top-level ones down through their field types."""
    seen: list[type] = []

    def tables_in(t: Any) -> list[type]:
        if attrs.has(t):
            return [t]
        if get_origin(t) is Annotated:  # an allowlist's `model.Named` is no table
            return tables_in(get_args(t)[0])
        return [c for arg in get_args(t) for c in tables_in(arg)]

    def visit(cls: type) -> None:
        if cls in seen:
            return
        seen.append(cls)
        for t in typing.get_type_hints(cls, include_extras=True).values():
            for inner in tables_in(t):
                visit(inner)

    for cls in (model.General, *model.FRAMEWORKS.values(), *model.KERNEL_CLASSES.values()):
        visit(cls)
    return seen


@pytest.mark.parametrize("cls", _model_classes(), ids=lambda c: c.__name__)
def test_every_model_class_is_a_closed_table_with_its_toml_keys(cls):
    definition = SCHEMA["$defs"][cls.__name__]
    fields = [f for f in attrs.fields(cls) if model.in_build_toml(f)]
    assert list(definition["properties"]) == [convert.key_of(f) for f in fields]
    assert definition["additionalProperties"] is False
    required = [convert.key_of(f) for f in fields if f.default is attrs.NOTHING]
    assert definition.get("required", []) == required


def test_keys_of_nixgen_toml_are_no_keys_of_build_toml():
    rust = SCHEMA["$defs"]["RustCudaOxideKernel"]["properties"]
    assert "cargo-manifest" in rust
    assert not {"features", "device-manifest", "ptx-dir", "library", "lib-name"} & set(rust)


def test_allowed_values_come_from_the_data_tables():
    defs = SCHEMA["$defs"]
    assert defs["CudaDep"]["enum"] == tables.cpp_dependencies("cpp-cuda")
    assert defs["XpuDep"]["enum"] == tables.cpp_dependencies("cpp-xpu")
    assert defs["CudaCapability"]["examples"] == list(tables.known_cuda_capabilities())
    assert defs["RocmArch"]["examples"] == tables.known_rocm_archs()
    assert defs["GeneralPythonDep"]["enum"] == tables.python_dependencies("general")
    assert defs["Language"]["enum"] == list(model.KERNEL_CLASSES)
    assert "depends" not in defs["RustCpuKernel"]["properties"]


def test_descriptions_are_read_from_the_classes_not_their_source_text():
    # A class made by `exec` has no source file to parse: its descriptions still come from
    # its docstring, its fields' `doc` metadata, its NewTypes and its named allowlists.
    namespace: dict[str, Any] = {"__name__": __name__, "attrs": attrs, "model": model}
    exec(
        "@attrs.frozen(kw_only=True)\n"
        "class Made:\n"
        "    'A made-up table.'\n"
        "    flags: list[model.Flag] = attrs.field(factory=list, metadata={'doc': 'Made up.'})\n"
        "    backend: model.Backend | None = None\n",
        namespace,
    )
    walker = jsonschema._Walker()
    made = walker.cls(namespace["Made"])
    assert made["description"] == "A made-up table."
    assert made["properties"]["flags"]["description"] == "Made up."
    assert "description" not in made["properties"]["backend"]
    assert walker.defs["Flag"]["description"].startswith("A compiler flag")
    assert walker.defs["Backend"]["description"].startswith("A backend:")


def test_the_cpp_kernels_share_one_base_and_keep_their_own_allowlists():
    for language in ("cpp-cpu", "cpp-cuda", "cpp-rocm", "cpp-xpu", "cpp-metal"):
        cls = model.KERNEL_CLASSES[language]
        names = [f.name for f in attrs.fields(cls)]
        assert names[:5] == ["language", "depends", "src", "include", "cxx_flags"], language
        table = SCHEMA["$defs"][cls.__name__]["properties"]
        assert table["language"]["const"] == language
        dep = f"{language.removeprefix('cpp-').capitalize()}Dep"
        assert table["depends"]["items"] == {"$ref": f"#/$defs/{dep}"}


def test_descriptions_come_from_docstrings_and_metadata():
    defs = SCHEMA["$defs"]
    assert defs["CudaGeneral"]["description"].startswith("`[general.cuda]`: bounds")
    assert "`kernels-minver`" in defs["General"]["properties"]["build-layout"]["description"]
    assert defs["Version"]["description"].startswith("`major.minor`")
    assert defs["Torch"]["properties"]["pyext"]["default"] == ["py", "pyi"]


def test_every_newtype_of_the_model_has_a_rule():
    newtypes = {v for v in vars(model).values() if hasattr(v, "__supertype__")}
    assert newtypes == set(jsonschema.NEWTYPES)


def test_kernel_tables_are_discriminated_by_language():
    kernel = SCHEMA["$defs"]["Kernel"]
    tags = [rule["if"]["properties"]["language"]["const"] for rule in kernel["allOf"]]
    assert tags == list(model.KERNEL_CLASSES)
    assert kernel["required"] == ["language"]
    # An error names the key that is wrong for this language, not "no variant matched".
    text = BASE + '\n[kernel.k]\nlanguage = "cpp-cpu"\nsrc = ["k.cpp"]\ncuda-flags = ["-O3"]\n'
    assert any("'cuda-flags' was unexpected" in e for e in schema_errors(text))


# ------------------------------------------------------------------------ good inputs


@pytest.mark.parametrize("path", LOADING, ids=lambda p: p.stem)
def test_corpus_file_migrated_to_edition_6_validates(path):
    after = tomli.loads(migrate.plan(path).after)
    assert after["general"]["edition"] == 6
    assert [e.message for e in VALIDATOR.iter_errors(after)] == []


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*/build.toml")), ids=lambda p: p.parent.name)
def test_example_validates(path):
    assert schema_errors(path.read_text()) == []


# ------------------------------------------------------------------------- bad inputs

BASE = """\
[general]
name = "relu"
version = 1
edition = 6
license = "Apache-2.0"
backends = ["cpu", "cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp"]
"""
CPU = '\n[kernel.relu_cpu]\nlanguage = "cpp-cpu"\ndepends = []\nsrc = ["relu_cpu/relu.cpp"]\n'
#: A `[tvm-ffi]` project, which may hold Rust kernels.
TVM = BASE.replace('[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n', "[tvm-ffi]\n")
RUST = '\n[kernel.r]\nlanguage = "rust-cpu"\ncargo-manifest = "r/Cargo.toml"\n'


def _general(**changes: str) -> str:
    text = BASE
    for key, value in changes.items():
        pattern = rf"^{key.replace('_', '-')} = .*$"
        line = f"{key.replace('_', '-')} = {value}"
        text = re.sub(pattern, lambda _, line=line: line, text, count=1, flags=re.M)
        if line not in text:
            text = text.replace("[torch]", f"{line}\n\n[torch]", 1)
    return text


BAD: dict[str, str] = {
    "unknown top-level table": BASE + "\n[torchh]\nsrc = []\n",
    "two framework tables": BASE + "\n[tvm-ffi]\nsrc = []\n",
    "general missing": '[torch]\nsrc = ["a.cpp"]\n',
    "unknown edition": _general(edition="7"),
    "name with underscore": _general(name='"relu_kernel"'),
    "name too long": _general(name='"' + "a" * 65 + '"'),
    "version negative": _general(version="-1"),
    "version is a string": _general(version='"1"'),
    "license missing": BASE.replace('license = "Apache-2.0"\n', ""),
    "unknown backend": _general(backends='["cpu", "cuda", "tensor"]'),
    "bad upstream scheme": _general(upstream='"ftp://example.com/x"'),
    "general minver, derived now": _general(minver='"0.19.0"'),
    "bad cuda maxver": BASE.replace("[torch]\n", '[general.cuda]\nmaxver = "13.x"\n\n[torch]\n'),
    "a version of three components": BASE.replace("[torch]\n", '[torch]\nminver = "2.11.1"\n'),
    "unknown build layout": _general(build_layout='"tar"'),
    "mlx-noarch for cuda": BASE.replace(
        '[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n', "[mlx-noarch]\n"
    ),
    "rust kernel under torch": BASE + RUST + 'src = ["r/Cargo.lock", "r/src/lib.rs"]\n',
    "cargo-manifest that is no Cargo.toml": TVM
    + RUST.replace("r/Cargo.toml", "r/crate.toml")
    + 'src = ["r/Cargo.lock", "r/src/lib.rs"]\n',
    "unknown python dependency": _general(python_depends='["numpy"]'),
    "unknown key in general": _general(licence='"MIT"'),
    "kernel-depends without version or revision": _general(
        kernel_depends='[{ repo-id = "org/relu" }]'
    ),
    "kernel-depends with both": _general(
        kernel_depends='[{ repo-id = "org/relu", version = 1, revision = "abc" }]'
    ),
    "bad repo id": _general(kernel_depends='[{ repo-id = "relu", version = 1 }]'),
    "absolute src path": BASE + CPU.replace("relu_cpu/relu.cpp", "/abs/relu.cpp"),
    "parent directory in src": BASE + CPU.replace("relu_cpu/relu.cpp", "../relu.cpp"),
    "glob in src": BASE + CPU.replace("relu_cpu/relu.cpp", "relu_cpu/*.cpp"),
    "backslash in src": BASE + CPU.replace("relu_cpu/relu.cpp", "relu_cpu\\\\relu.cpp"),
    "empty src": BASE + CPU.replace('["relu_cpu/relu.cpp"]', "[]"),
    "src missing": BASE + CPU.replace('src = ["relu_cpu/relu.cpp"]\n', ""),
    "src is a string": BASE + CPU.replace('["relu_cpu/relu.cpp"]', '"relu_cpu/relu.cpp"'),
    "language missing": BASE + CPU.replace('language = "cpp-cpu"\n', ""),
    "unknown language": BASE + CPU.replace("cpp-cpu", "cpp-tpu"),
    "backend key of edition 5": BASE + CPU.replace('language = "cpp-cpu"', 'backend = "cpu"'),
    "cuda key on a cpu kernel": BASE + CPU + 'cuda-flags = ["-O3"]\n',
    "cutlass on a cpu kernel": BASE + CPU.replace("depends = []", 'depends = ["cutlass_3_6"]'),
    "snake_case key": BASE + CPU + 'cxx_flags = ["-O3"]\n',
    "flag that is a number": BASE + CPU + "cxx-flags = [3]\n",
    "invalid kernel name": BASE + CPU.replace("[kernel.relu_cpu]", '[kernel."relu cpu"]'),
    "kernel of a backend not listed": BASE
    + CPU.replace("cpp-cpu", "cpp-xpu").replace("relu_cpu]", "relu_xpu]"),
    "rust kernel of a project without cpu": TVM.replace('["cpu", "cuda"]', '["cuda"]')
    + RUST
    + 'src = ["r/Cargo.toml", "r/Cargo.lock", "r/lib.rs"]\n',
    "kernels without a binding framework": BASE.replace(
        '[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n', "[torch-noarch]\n"
    )
    + CPU,
    "empty cuda-capabilities": BASE
    + '\n[kernel.k]\nlanguage = "cpp-cuda"\ndepends = []\nsrc = ["k.cu"]\ncuda-capabilities = []\n',
    "malformed cuda capability": BASE
    + '\n[kernel.k]\nlanguage = "cpp-cuda"\ndepends = []\nsrc = ["k.cu"]\n'
    'cuda-capabilities = ["sm_81"]\n',
    "malformed rocm arch": _general(backends='["rocm"]')
    + '\n[kernel.k]\nlanguage = "cpp-rocm"\ndepends = []\nsrc = ["k.hip"]\n'
    'rocm-archs = ["gfx942", "mi300"]\n',
    "no supported rocm arch": _general(backends='["rocm"]')
    + '\n[kernel.k]\nlanguage = "cpp-rocm"\ndepends = []\nsrc = ["k.hip"]\n'
    'rocm-archs = ["gfx900"]\n',
    "rust with two lock files": TVM
    + RUST
    + 'src = ["r/Cargo.toml", "r/Cargo.lock", "Cargo.lock", "r/src/lib.rs"]\n',
    # two are a crate and its workspace (next to Cargo.lock); three are too many
    "rust with three manifests": TVM
    + RUST
    + 'src = ["r/Cargo.toml", "s/Cargo.toml", "Cargo.toml", "Cargo.lock", "r/src/lib.rs"]\n',
    "rust without sources": TVM + RUST + 'src = ["r/Cargo.toml", "r/Cargo.lock"]\n',
    "rust with depends": TVM
    + RUST
    + 'depends = ["torch"]\nsrc = ["r/Cargo.toml", "r/Cargo.lock", "r/src/lib.rs"]\n',
    "cargo features in build.toml": TVM
    + RUST
    + 'features = ["a"]\nsrc = ["r/Cargo.toml", "r/Cargo.lock", "r/src/lib.rs"]\n',
    "rust-cutile without tileiras-minver": TVM
    + RUST.replace("rust-cpu", "rust-cutile")
    + 'src = ["r/Cargo.lock", "r/src/lib.rs"]\n',
    "pyext with a dot": BASE.replace("[torch]\n", '[torch]\npyext = [".json"]\n'),
    "stable-abi for an unknown backend": BASE.replace(
        "[torch]\n", '[torch]\nstable-abi = { gpu = "2.11" }\n'
    ),
    "a date where a string belongs": _general(license="1979-05-27"),
}


def test_the_sample_of_bad_inputs_is_large_enough():
    assert len(BAD) >= 20


@pytest.mark.parametrize("name", sorted(BAD))
def test_schema_rejects_what_the_model_rejects(name):
    text = BAD[name]
    assert model_errors(text), f"the model accepts the bad input {name!r}"
    assert schema_errors(text), f"the schema accepts the bad input {name!r}"


def test_good_base_inputs_pass_both():
    for text in (BASE, BASE + CPU):
        assert model_errors(text) == []
        assert schema_errors(text) == []


def test_unknown_but_well_formed_capabilities_pass_both():
    """`11.8` and `gfx1250` are warnings in the model, so the schema accepts them too."""
    text = _general(backends='["cuda", "rocm"]') + (
        '\n[kernel.k]\nlanguage = "cpp-cuda"\ndepends = []\nsrc = ["k.cu"]\n'
        'cuda-capabilities = ["8.0", "11.8"]\n'
        '\n[kernel.h]\nlanguage = "cpp-rocm"\ndepends = []\nsrc = ["k.hip"]\n'
        'rocm-archs = ["gfx942", "gfx1250"]\n'
    )
    assert model_errors(text) == []
    assert schema_errors(text) == []


def test_a_backend_listed_twice_passes_both():
    """A warning in the model (the anchor builds such files), so not a schema error."""
    text = _general(backends='["cpu", "cpu"]')
    assert model_errors(text) == []
    assert schema_errors(text) == []


#: Documents only the model rejects, one per rule the schema cannot express.
NOT_EXPRESSED = {
    "minver above maxver": _general(backends='["cuda"]').replace(
        "[torch]\n", '[torch]\nminver = "2.12"\nmaxver = "2.9"\n'
    ),
    "kernel names colliding once - becomes _": BASE
    + CPU
    + CPU.replace("[kernel.relu_cpu]", "[kernel.relu-cpu]"),
    "a NUL character": _general(license='"MIT\\u0000"'),
    # validate finds an unlisted lock on disk (a warning); with none there it is an error
    "rust without Cargo.lock": TVM + RUST + 'src = ["r/Cargo.toml", "r/src/lib.rs"]\n',
    "tileiras-minver below 13.2": TVM
    + RUST.replace("rust-cpu", "rust-cutile")
    + 'src = ["r/Cargo.lock", "r/src/lib.rs"]\ntileiras-minver = "13.1"\n',
}


@pytest.mark.parametrize("name", sorted(NOT_EXPRESSED))
def test_rules_the_schema_cannot_express_are_known(name):
    text = NOT_EXPRESSED[name]
    assert model_errors(text)
    assert schema_errors(text) == []


#: nixgen's earlier edition 6, which nixgen reads with one warning (`nixgen migrate`
#: converts it) and the format, hence the schema, refuses.
DIALECT = {
    "no framework table": BASE.replace('[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n', ""),
    "a C++ kernel without depends": BASE + CPU.replace("depends = []\n", ""),
    "a Rust kernel with features under torch": BASE
    + '\n[kernel.r]\nlanguage = "rust-cpu"\nsrc = ["r/Cargo.toml", "r/Cargo.lock", "r/lib.rs"]\n'
    'features = ["a"]\n',
}


@pytest.mark.parametrize("name", sorted(DIALECT))
def test_the_schema_refuses_what_nixgen_reads_only_as_its_earlier_dialect(name):
    text = DIALECT[name]
    document = load.parse(text, Path("build.toml"), "build.toml")
    read = project.read_document(document)
    assert read.dialect and any(w.beyond_format for w in read.warnings)
    assert schema_errors(text)


def test_not_expressed_is_stated_in_the_schema():
    for rule in jsonschema.NOT_EXPRESSED:
        assert rule in SCHEMA["description"]


# ------------------------------------------------------------- value rules, property-tested

CHARS = st.sampled_from([*"ab-_.:/@+0123456789Gz \\*?[]{}~\t", "é", "gfx942", "9.0a"])


def _rule_case(newtype: Any):
    rule = {
        model.ProjectName: values.project_name,
        model.KernelName: values.kernel_name,
        model.Version: lambda v: values.field_version(v) or values.version(v),
        model.GitUrl: values.git_url,
        model.RelPath: values.rel_path,
        model.RelDir: values.rel_dir,
        model.RepoId: values.repo_id,
        model.HubBranch: values.hub_branch,
        model.CargoFeature: values.cargo_feature,
        model.RustLibName: values.rust_lib_name,
        model.Extension: values.extension,
        model.CudaCapability: values.cuda_capability,
        model.RocmArch: values.rocm_arch,
    }[newtype]
    fragment = {**jsonschema.NEWTYPES[newtype](), "$defs": {}}
    return rule, js.Draft202012Validator(fragment)


RULED = [t for t in jsonschema.NEWTYPES if t is not model.Flag]
PREFIXES = ["", "https://", "git@host:", "a/", "./", "../", "C:/", "git+ssh://"]


@pytest.mark.parametrize("newtype", RULED, ids=lambda t: t.__name__)
@settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(prefix=st.sampled_from(PREFIXES), body=st.lists(CHARS, max_size=12).map("".join))
def test_value_rule_and_schema_pattern_agree(newtype, prefix, body):
    # No newline in the alphabet: Python's `$` (which jsonschema uses) also matches before
    # a final newline, unlike ECMA-262's, so the two engines differ there by design.
    rule, validator = _rule_case(newtype)
    value = prefix + body
    assert (rule(value) is None) == validator.is_valid(value), value


# ------------------------------------------------------------------ an editor's validator


@pytest.mark.skipif(shutil.which("taplo") is None, reason="taplo (pip install taplo) is absent")
@pytest.mark.slow
def test_taplo_uses_the_schema_through_the_schema_directive(tmp_path):
    """What Even Better TOML runs: `#:schema` on the first line of build.toml."""
    schema_file = tmp_path / "build-toml.schema.json"
    schema_file.write_text(json.dumps(SCHEMA))

    def check(text: str) -> subprocess.CompletedProcess[str]:
        (tmp_path / "build.toml").write_text(f"#:schema ./{schema_file.name}\n{text}")
        return subprocess.run(
            ["taplo", "check", "build.toml"], cwd=tmp_path, capture_output=True, text=True
        )

    assert check(BASE + CPU).returncode == 0
    wrong = check(BASE + CPU + 'cuda-flags = ["-O3"]\n')
    assert wrong.returncode != 0
    assert "'cuda-flags' was unexpected" in wrong.stderr


# ------------------------------------- the schema accepts whatever `nixgen validate` accepts

#: Inputs `nixgen validate` accepts with a warning, in the bad-input table's project tree
#: (`test_bad_input.TREE`, where `relu_rs/Cargo.lock` exists): the schema accepts them too.
WARNED = {
    "an unlisted Cargo.lock next to the crate": _bad.rkernel(
        f'language = "rust-cpu"\n{_bad.MANIFEST}\n'
        'src = ["relu_rs/Cargo.toml", "relu_rs/src/lib.rs"]'
    ),
    "an unknown CUDA capability beside a known one": _bad.UNKNOWN_CAPABILITY,
    "a backend listed twice": _bad.edit(
        'backends = ["cpu", "cuda", "rocm", "xpu", "metal"]',
        'backends = ["cpu", "cpu", "cuda", "rocm", "xpu", "metal"]',
    ),
}


def _validate_in_tree(text: str | bytes | None, setup: Any, root: Path) -> tuple[int, str]:
    root.mkdir()
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("XDG_CACHE_HOME", str(root.parent / "cache"))
        _bad.make_tree(root, _bad.Case("x", text, "", "", (), setup=setup), monkeypatch)
        monkeypatch.chdir(root)
        result = CliRunner().invoke(main, ["validate", "."])
    return result.exit_code, result.output


@pytest.mark.parametrize("name", sorted(WARNED))
def test_the_schema_accepts_what_validate_accepts_with_a_warning(name, tmp_path):
    code, output = _validate_in_tree(WARNED[name], None, tmp_path / "project")
    assert code == 0 and ": warning: " in output, output
    assert schema_errors(WARNED[name]) == []


@pytest.mark.parametrize("case", _bad.CASES, ids=[c.id for c in _bad.CASES])
def test_the_schema_accepts_every_bad_input_row_validate_accepts(case, tmp_path):
    """The bad-input table's rows are meant to fail; one that `nixgen validate` accepts
    (warnings allowed) must pass the schema too."""
    if not isinstance(case.input, str):
        pytest.skip("no TOML text to give the schema")
    code, output = _validate_in_tree(case.input, case.setup, tmp_path / "project")
    if code == 0:
        assert schema_errors(case.input) == [], output


@pytest.mark.parametrize("path", LOADING, ids=lambda p: p.stem)
def test_the_schema_accepts_every_corpus_file_validate_accepts(path):
    after = migrate.plan(path).after
    if model_errors(after) == []:
        assert schema_errors(after) == []
