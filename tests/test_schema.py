"""Edition detection and strict structuring, one edition at a time."""

from __future__ import annotations

import textwrap

import pytest

from nixgen.checking import project, validate
from nixgen.core import tables
from nixgen.core.errors import Problem, ProblemError
from nixgen.reading import load, model, schema

BASE6 = """\
[general]
name = "relu"
version = 1
edition = 6
license = "Apache-2.0"
backends = ["cpu", "cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.relu_cuda]
language = "cpp-cuda"
depends = ["torch"]
src = ["relu_cuda/relu.cu"]
cuda-capabilities = ["8.0", "9.0"]

[kernel.relu_cpu]
language = "cpp-cpu"
depends = []
src = ["relu_cpu/relu.cpp"]
cxx-flags = ["-O2"]
"""

#: A Rust kernel in the format: a `[tvm-ffi]` project's, its crate named by `cargo-manifest`.
RUST6 = """\
[general]
name = "relu"
version = 1
edition = 6
license = "Apache-2.0"
backends = ["cpu"]

[tvm-ffi]

[kernel.relu_rs]
language = "rust-cpu"
cargo-manifest = "relu_rs/Cargo.toml"
src = ["relu_rs/Cargo.toml", "relu_rs/src/lib.rs", "Cargo.lock"]
"""


def parse(text: str) -> model.Build:
    document = load.parse(textwrap.dedent(text), load.Path("build.toml"), "build.toml")
    return project.structure(document)[1]


def problems(text: str) -> list[str]:
    return [p.render() for p in problems_of(text)]


def problems_of(text: str) -> list[Problem]:
    with pytest.raises(ProblemError) as info:
        parse(text)
    return info.value.errors


# ----------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("document", "edition"),
    [
        ({"general": {"name": "x", "edition": 6}}, 6),
        ({"general": {"name": "x", "edition": 5}}, 5),
        (
            {
                "general": {"name": "x", "backends": [], "version": 1, "license": "MIT"},
                "torch": {},
            },
            4,
        ),
        # No framework: the format's edition 4 requires one; its edition 3 does not.
        ({"general": {"name": "x", "backends": [], "version": 1, "license": "MIT"}}, 3),
        ({"general": {"name": "x", "backends": [], "version": 1}}, 3),
        ({"general": {"name": "x"}, "kernel": {"k": {"backend": "cuda"}}}, 2),
        ({"general": {"name": "x", "universal": True}}, 2),
        ({"general": {"name": "x"}, "kernel": {"k": {"src": []}}}, 1),
    ],
)
def test_detect(document: dict, edition: int) -> None:
    detected = schema.detect(document)
    assert isinstance(detected, schema.Detected)
    assert detected.edition == edition


def test_unsupported_edition_is_named() -> None:
    (message,) = problems('[general]\nname = "x"\nedition = 7\n')
    assert "build.toml:3:11: error: general.edition: unsupported edition 7" in message


def test_edition_must_be_an_integer() -> None:
    (message,) = problems('[general]\nname = "x"\nedition = "6"\n')
    assert "`edition` must be an integer" in message


def test_edition6_language_without_edition_says_what_to_add() -> None:
    text = BASE6.replace("edition = 6\n", "")
    (message,) = problems(text)
    assert "add `edition = 6`" in message


# ------------------------------------------------------------------------------ edition 6


def test_edition6_round_trip_model() -> None:
    build = parse(BASE6)
    assert build.general.name == "relu"
    assert isinstance(build.framework, model.Torch)
    cuda = build.kernels["relu_cuda"]
    assert isinstance(cuda, model.CppCudaKernel)
    assert cuda.cuda_capabilities == ["8.0", "9.0"]
    rust = parse(RUST6).kernels["relu_rs"]
    assert isinstance(rust, model.RustCpuKernel)
    assert rust.features == []
    assert rust.manifest() == "relu_rs/Cargo.toml"
    assert rust.lockfile() == "Cargo.lock"
    assert model.backend_of(rust) == "cpu"


def test_unknown_language_lists_allowed_and_closest() -> None:
    (message,) = problems(BASE6.replace('language = "cpp-cuda"', 'language = "cpp-cdua"'))
    assert (
        "build.toml:12:12: error: kernel.relu_cuda.language: unknown language `cpp-cdua`" in message
    )
    assert "did you mean `cpp-cuda`?" in message
    assert "`rust-cpu`" in message


def test_missing_language() -> None:
    (message,) = problems(BASE6.replace('language = "cpp-cuda"\n', ""))
    assert "kernel.relu_cuda: missing `language`" in message


@pytest.mark.parametrize(
    ("line", "key", "owner"),
    [
        ('cuda-flags = ["-O3"]', "cuda-flags", "cpp-cuda"),
        ('sycl-flags = ["-O3"]', "sycl-flags", "cpp-xpu"),
        ('tileiras-minver = "13.2"', "tileiras-minver", "rust-cutile"),
    ],
)
def test_impossible_field_for_language_is_a_type_error(line: str, key: str, owner: str) -> None:
    text = BASE6 + f'\n[kernel.c]\nlanguage = "cpp-cpu"\ndepends = []\nsrc = ["a.cpp"]\n{line}\n'
    (message,) = problems(text)
    assert f"kernel.c.{key}: `{key}` is not possible for language `cpp-cpu`" in message
    assert f"it belongs to language `{owner}`" in message


def test_rust_kernel_has_no_cxx_flags() -> None:
    (message,) = problems(RUST6 + 'cxx-flags = ["-O2"]\n')
    assert "`cxx-flags` is not possible for language `rust-cpu`" in message


def test_nixgen_option_in_build_toml_names_nixgen_toml() -> None:
    (message,) = problems(RUST6 + 'features = ["fast"]\n')
    assert "kernel.relu_rs.features: `features` is nixgen's own" in message
    assert "nixgen.toml" in message


def test_unknown_key_names_closest() -> None:
    (message,) = problems(BASE6.replace("cuda-capabilities", "cuda_capabilities"))
    assert "unknown key `cuda_capabilities`; did you mean `cuda-capabilities`?" in message


def test_number_is_not_a_string() -> None:
    (message,) = problems(BASE6.replace('license = "Apache-2.0"', "license = 2"))
    assert (
        "build.toml:5:11: error: general.license: expected a string, got an integer `2`" in message
    )


def test_string_is_not_a_list() -> None:
    (message,) = problems(BASE6.replace('src = ["relu_cuda/relu.cu"]', 'src = "relu_cuda/relu.cu"'))
    assert "kernel.relu_cuda.src: expected an array, got a string" in message


def test_bool_is_not_an_integer() -> None:
    (message,) = problems(BASE6.replace("version = 1", "version = true"))
    assert "general.version: expected an integer, got a boolean" in message


def test_every_problem_is_reported_at_once() -> None:
    text = (
        BASE6.replace("version = 1", 'version = "1"')
        .replace('"8.0"', '"sm_81"')
        .replace('cxx-flags = ["-O2"]', 'cxx-flag = ["-O2"]')
    )
    found = problems(text)
    assert len(found) == 3
    assert [m.split(": ")[2] for m in found] == [
        "general.version",
        "kernel.relu_cuda.cuda-capabilities[0]",
        "kernel.relu_cpu.cxx-flag",
    ]


def test_missing_required_key_points_at_its_table() -> None:
    (message,) = problems(BASE6.replace('license = "Apache-2.0"\n', ""))
    assert message.startswith("build.toml:1:2: error: general.license: required key is missing")


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("relu", True),
        ("my-kernel2", True),
        ("Relu", False),
        ("relu_", False),
        ("r", False),
        ("-r", False),
    ],
)
def test_project_name_rule(name: str, ok: bool) -> None:
    text = BASE6.replace('name = "relu"', f'name = "{name}"')
    if ok:
        assert parse(text).general.name == name
    else:
        (message,) = problems(text)
        assert f"invalid name `{name}`" in message and "`my-kernel`" in message


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("/etc/passwd", "absolute path"),
        ("../outside.cu", "leaves the project"),
        ("a/../../b.cu", "leaves the project"),
        ("src/*.cu", "glob character"),
        ("a//b.cu", "empty or `.` segment"),
        ("a\\\\b.cu", "uses `\\`"),
        ("", "empty path"),
    ],
)
def test_paths_stay_in_the_project(path: str, fragment: str) -> None:
    (message,) = problems(BASE6.replace('"relu_cuda/relu.cu"', f'"{path}"'))
    assert "kernel.relu_cuda.src[0]" in message and fragment in message


def test_include_may_be_the_project_root() -> None:
    text = BASE6.replace(
        'src = ["relu_cuda/relu.cu"]', 'src = ["relu_cuda/relu.cu"]\ninclude = ["."]'
    )
    assert parse(text).kernels["relu_cuda"].include == ["."]


@pytest.mark.parametrize("capability", ["9.0a", "10.0f", "12.0"])
def test_known_capabilities(capability: str) -> None:
    text = BASE6.replace('"8.0", "9.0"', f'"{capability}"')
    assert parse(text).kernels["relu_cuda"].cuda_capabilities == [capability]


def test_depends_per_language() -> None:
    (message,) = problems(RUST6 + 'depends = ["torch"]\n')
    assert "kernel.relu_rs.depends: `depends` is not possible for language `rust-cpu`" in message
    cutlass_on_cpu = (
        BASE6 + '\n[kernel.c]\nlanguage = "cpp-cpu"\nsrc = ["c.cpp"]\ndepends = ["cutlass_3_6"]\n'
    )
    (error,) = problems_of(cutlass_on_cpu)
    assert error.key == "kernel.c.depends[0]"
    assert "unknown value `cutlass_3_6`; expected one of `torch`" in error.message
    # the format takes it (any C++ kernel may list any of its dependencies): nixgen's rule
    assert error.beyond_format
    (error,) = problems_of(cutlass_on_cpu.replace("cutlass_3_6", "cutlass_9_9"))
    assert "unknown value `cutlass_9_9`" in error.message and not error.beyond_format


def test_two_frameworks_are_rejected() -> None:
    (message,) = problems(BASE6 + '\n[tvm-ffi]\nsrc = ["b.cpp"]\n')
    assert "only one framework table is allowed" in message and "tvm-ffi" in message


def test_unknown_top_level_table() -> None:
    (message,) = problems(BASE6 + "\n[kernels.x]\nsrc = []\n")
    assert "unknown table `kernels`; did you mean `kernel`?" in message


def test_stable_abi_version_or_table() -> None:
    single = parse(BASE6.replace("[torch]\n", '[torch]\nstable-abi = "2.11"\n'))
    assert single.framework.stable_abi_for("cuda") == "2.11"
    table = parse(BASE6 + '\n[torch.stable-abi]\ncuda = "2.11"\n')
    assert table.framework.stable_abi_for("cuda") == "2.11"
    assert table.framework.stable_abi_for("cpu") is None
    (message,) = problems(BASE6.replace("[torch]\n", "[torch]\nstable-abi = 2\n"))
    assert "torch.stable-abi: expected a Torch version" in message


def test_kernel_depends_inline_tables() -> None:
    text = BASE6.replace(
        'backends = ["cpu", "cuda"]',
        'backends = ["cpu", "cuda"]\nkernel-depends = [{ repo-id = "org/k", version = 2 }]',
    )
    (dep,) = parse(text).general.kernel_depends
    assert (dep.repo_id, dep.version, dep.revision) == ("org/k", 2, None)


def test_nul_in_string_is_rejected() -> None:
    (message,) = problems(BASE6.replace('license = "Apache-2.0"', 'license = "a\\u0000b"'))
    assert "NUL character" in message


# --------------------------------------------------------------------------- old editions

V5 = """\
[general]
name = "relu"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cuda", "rocm"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.relu]
backend = "cuda"
depends = ["torch"]
src = ["relu_cuda/relu.cu"]
cuda-minver = "12.8"

[kernel.relu_rocm]
backend = "rocm"
depends = ["torch"]
rocm-archs = ["gfx942"]
src = ["relu_cuda/relu.cu"]
"""


def test_edition5_upgrades_backend_to_language() -> None:
    build = parse(V5)
    assert build.general.edition == 6
    assert build.kernels["relu"].language == "cpp-cuda"
    assert build.kernels["relu"].cuda_minver == "12.8"
    assert build.kernels["relu_rocm"].language == "cpp-rocm"


def test_edition5_errors_speak_edition5() -> None:
    (message,) = problems(V5.replace('backend = "rocm"', 'backend = "rcom"'))
    assert "kernel.relu_rocm.backend: unknown backend `rcom`; did you mean `rocm`?" in message


def test_edition5_depends_is_required_like_the_anchor() -> None:
    (message,) = problems(
        V5.replace(
            'depends = ["torch"]\nsrc = ["relu_cuda/relu.cu"]\ncuda',
            'src = ["relu_cuda/relu.cu"]\ncuda',
        )
    )
    assert "kernel.relu.depends: required key is missing" in message


def test_edition1_hipify_expands_into_two_kernels() -> None:
    build = parse(
        """\
        [general]
        name = "old_kernel"
        [torch]
        src = ["torch-ext/b.cpp"]
        [kernel.act]
        language = "cuda-hipify"
        depends = ["torch"]
        src = ["act/act.cu"]
        rocm-archs = ["gfx90a"]
        cuda-capabilities = ["8.0"]
        """
    )
    assert build.general.name == "old-kernel"
    assert build.general.module_name == "old_kernel"
    assert sorted(build.general.backends) == ["cuda", "rocm"]
    assert build.kernels["act"].language == "cpp-cuda"
    assert build.kernels["act_rocm"].language == "cpp-rocm"
    assert build.kernels["act_rocm"].rocm_archs == ["gfx90a"]
    assert build.general.license == "NOASSERTION"


def test_edition2_universal_and_cuda_bounds() -> None:
    build = parse(
        """\
        [general]
        name = "cute"
        universal = true
        cuda-minver = "12.8"
        python-depends = ["nvidia-cutlass-dsl", "einops"]
        """
    )
    assert build.general.backends == ["cpu", "cuda", "metal", "rocm", "xpu"]
    assert isinstance(build.framework, model.TorchNoarch)
    assert build.general.cuda.minver == "12.8"
    assert build.general.cuda.python_depends == ["nvidia-cutlass-dsl"]
    assert build.general.python_depends == ["einops"]


def test_edition2_renames_cutlass_sycl() -> None:
    build = parse(
        """\
        [general]
        name = "fa"
        [torch]
        src = ["b.cpp"]
        [kernel.x]
        backend = "xpu"
        depends = ["torch", "cutlass_sycl"]
        src = ["x.cpp"]
        """
    )
    assert build.kernels["x"].depends == ["torch", "sycl_tla"]


def test_edition4_torch_noarch_snake_keys() -> None:
    build = parse(
        """\
        [general]
        name = "tri"
        version = 1
        license = "MIT"
        backends = ["cuda"]
        [torch-noarch]
        cuda_capabilities = ["9.0"]
        """
    )
    assert build.framework.cuda_capabilities == ["9.0"]


# ----------------------------------------------------- well-formed but unknown values warn


def warnings_of(text: str) -> list[str]:
    """Every problem of the schema, upgrade and validate stages, rendered (no file checks)."""
    path = load.Path("build.toml")
    document = load.parse(textwrap.dedent(text), path, "build.toml")
    _, build, found = project.structure(document)
    found = document.locate_all([*found, *validate.validate(build, None)])
    return [p.render() for p in found]


def test_unknown_cuda_capability_is_a_located_warning() -> None:
    text = BASE6.replace('"8.0", "9.0"', '"8.0", "11.8", "12.0"')
    assert parse(text).kernels["relu_cuda"].cuda_capabilities == ["8.0", "11.8", "12.0"]
    (message,) = warnings_of(text)
    versions = ", ".join(tables.cuda_versions())
    assert message == (
        "build.toml:15:29: warning: kernel.relu_cuda.cuda-capabilities[1]: unknown CUDA "
        "capability `11.8` (closest known: `11.0`); no CUDA toolkit of the build table "
        f"({versions}) builds it, so every CUDA variant skips it"
    )


@pytest.mark.parametrize(
    ("capability", "closest"),
    [("8.0a", "9.0a"), ("9.0f", "10.0f"), ("99.0", "12.0"), ("7.1", "7.0")],
)
def test_unknown_capability_names_the_closest_known_one(capability: str, closest: str) -> None:
    (message,) = warnings_of(BASE6.replace('"8.0", "9.0"', f'"{capability}"'))
    assert f"unknown CUDA capability `{capability}` (closest known: `{closest}`)" in message


@pytest.mark.parametrize(
    ("capability", "fragment"),
    [
        ("sm_80", "did you mean `8.0`?"),
        ("90a", "did you mean `9.0a`?"),
        ("8", "expected `major.minor`"),
        ("8.0.1", "expected `major.minor`"),
        ("8.0b", "expected `major.minor`"),
        (" 8.0", "expected `major.minor`"),
    ],
)
def test_malformed_capability_is_still_an_error(capability: str, fragment: str) -> None:
    (message,) = problems(BASE6.replace('"8.0", "9.0"', f'"8.0", "{capability}"'))
    assert message.startswith("build.toml:15:29: error: kernel.relu_cuda.cuda-capabilities[1]: ")
    assert f"invalid CUDA capability `{capability}`" in message and fragment in message


ROCM6 = """\
[general]
name = "relu"
version = 1
edition = 6
license = "Apache-2.0"
backends = ["rocm"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.relu_rocm]
language = "cpp-rocm"
src = ["relu_rocm/relu.hip"]
rocm-archs = ["gfx942", "ARCH"]
depends = []
"""


@pytest.mark.parametrize("arch", ["gfx1250", "gfx9-4-generic", "gfx942:xnack-", "gfx90c"])
def test_unknown_rocm_target_is_a_located_warning(arch: str) -> None:
    (message,) = warnings_of(ROCM6.replace("ARCH", arch))
    assert message.startswith(
        "build.toml:14:25: warning: kernel.relu_rocm.rocm-archs[1]: "
        f"unknown ROCm architecture `{arch}`"
    )
    assert message.endswith("so every ROCm variant skips it")


@pytest.mark.parametrize("arch", ["mi300", "gfx94", "GFX942", "gfx942 ", "gfx1100x"])
def test_malformed_rocm_target_is_still_an_error(arch: str) -> None:
    (message,) = problems(ROCM6.replace("ARCH", arch))
    assert message.startswith("build.toml:14:25: error: kernel.relu_rocm.rocm-archs[1]: ")
    assert f"invalid ROCm architecture `{arch}`" in message


def test_unknown_values_are_located_in_the_edition_the_file_is_written_in() -> None:
    edition1 = """\
        [general]
        name = "act"
        [torch]
        src = ["torch-ext/torch_binding.cpp"]
        [kernel.act]
        language = "cuda-hipify"
        depends = ["torch"]
        src = ["act/act.cu"]
        cuda-capabilities = ["8.0", "11.8"]
        rocm-archs = ["gfx90a", "gfx1250"]
        """
    found = [m for m in warnings_of(edition1) if "unknown" in m]
    assert [m.split(": unknown")[0] for m in found] == [
        "build.toml:9:29: warning: kernel.act.cuda-capabilities[1]",
        "build.toml:10:25: warning: kernel.act.rocm-archs[1]",
    ]
    edition5 = """\
        [general]
        name = "tri"
        version = 1
        edition = 5
        license = "MIT"
        backends = ["cuda"]
        [torch-noarch]
        cuda_capabilities = ["9.0", "11.8"]
        """
    (message,) = warnings_of(edition5)
    assert message.startswith("build.toml:8:29: warning: torch-noarch.cuda_capabilities[1]: ")
    assert message.endswith(
        "it is written to metadata.json as given (a pure-Python kernel compiles nothing)"
    )


# ------------------------------------------------- older editions accept underscored names

LEGACY_NAMES = {
    1: '[general]\nname = "layer_norm"\n[torch]\nsrc = ["t.cpp"]\n'
    '[kernel.k]\ndepends = ["torch"]\nsrc = ["k.cu"]\n',
    2: '[general]\nname = "layer_norm"\nuniversal = true\n',
    3: '[general]\nname = "layer_norm"\nversion = 1\nbackends = ["cpu"]\n',
    4: '[general]\nname = "gpt_oss_metal_kernels"\nversion = 1\nlicense = "MIT"\n'
    'backends = ["metal"]\n[torch-noarch]\n',
}


@pytest.mark.parametrize("edition", sorted(LEGACY_NAMES))
def test_older_editions_accept_underscores_and_keep_the_module_name(edition: int) -> None:
    text = LEGACY_NAMES[edition]
    document = load.parse(text, load.Path("build.toml"), "build.toml")
    found_edition, build, warnings = project.structure(document)
    old = "layer_norm" if edition < 4 else "gpt_oss_metal_kernels"
    assert found_edition == edition
    assert build.general.name == old.replace("_", "-")
    assert build.general.module_name == old
    (rename,) = [w for w in document.locate_all(warnings) if w.key == "general.name"]
    assert rename.severity == "warning" and rename.line == 2
    assert f"name `{old}` becomes `{old.replace('_', '-')}`" in rename.message


@pytest.mark.parametrize("name", ["Layer_Norm", "layer_norm_", "_layer"])
def test_older_editions_still_reject_names_that_cannot_keep_their_module(name: str) -> None:
    (message,) = problems(LEGACY_NAMES[4].replace("gpt_oss_metal_kernels", name))
    assert f"general.name: invalid name `{name}`" in message


def test_edition5_requires_dashes_like_its_tools() -> None:
    text = BASE6.replace("edition = 6", "edition = 5").replace('"relu"', '"relu_op"', 1)
    assert any("general.name: invalid name `relu_op`" in m for m in problems(text))
