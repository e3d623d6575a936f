"""How each real-world build.toml of tests/corpus/ reads: loaded (with the edition it was
written in) or rejected (at the line and key, with the message). `test_corpus.py` holds every
file to this table; the other tests take the files that load from it (`LOADING`), so that
collecting them parses nothing.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from .conftest import CORPUS_FILES


@attrs.frozen
class Loads:
    edition: int
    why: str = ""


@attrs.frozen
class Rejected:
    line: int
    key: str
    message: str
    why: str


V2_SHAPE = "`general.universal` only exists from edition 2 on, so the shape is edition 2"

EXPECTED: dict[str, Loads | Rejected] = {
    "community__activation": Loads(5),
    "community__aiter-flash-attn": Loads(4),
    "community__aiter-rope": Loads(4),
    "community__causal-conv1d": Loads(4),
    "community__deep-gemm": Loads(4),
    "community__einops": Loads(5),
    "community__finegrained-fp8": Loads(4),
    "community__flash-attn-ops": Loads(4),
    "community__flash-attn3": Loads(4),
    "community__flash-mla": Loads(4, "repeated src entries are warnings, not errors"),
    "community__gpt-oss-metal-kernels": Loads(4),
    "community__layer-norm": Loads(4),
    "community__mamba-ssm": Loads(4),
    "community__metal-flash-sdpa": Loads(4),
    "community__mlx-rmsnorm": Loads(4),
    "community__msa": Loads(4),
    "community__nvfp4-gemm": Loads(5),
    "community__punica-sgmv": Loads(4),
    "community__quantization-eetq": Loads(4),
    "community__relu": Loads(4),
    "community__rotary": Loads(4),
    "community__sage-attention": Loads(4),
    "community__sgl-flash-attn3": Loads(4),
    "community__tinygrad-rms": Loads(4),
    "community__triton-kernels": Loads(4),
    "community__vllm-moe": Loads(4),
    "history-invalid-toml__bitsandbytes-mps_build__163a0fa1": Rejected(
        16,
        "general.hub",
        "invalid TOML: table `[general.hub]` is declared twice",
        "duplicate table",
    ),
    "history-invalid-toml__kernel-builder_src_init_templates_build__739779be": Rejected(
        3, "", "invalid TOML: Invalid initial character for a key part", "a Jinja template"
    ),
    "history-invalid-toml__kernel-builder_src_init_templates_build__ef2b6320": Rejected(
        5, "", "invalid TOML: Invalid initial character for a key part", "a Jinja template"
    ),
    "history-v1__examples_cutlass-gemm_build__8ae8bb8f": Loads(1),
    "history-v1__flash-attn-cute_build__4114e0e4": Loads(2, V2_SHAPE),
    "history-v1__scattermoe_build__20808001": Loads(2, V2_SHAPE),
    "history-v2__causal-conv1d_build__71fd16cd": Loads(2),
    "history-v2__flash-attn2_build__deeda02b": Loads(2),
    "history-v2__layer_norm_build__a2fba7fd": Loads(2),
    "history-v3__examples_kernels_cutlass-gemm-tvm-ffi_build__e6d5087d": Loads(3),
    "history-v3__examples_silu-and-mul_build__c42fbecc": Loads(3),
    "history-v3__gpt-oss-triton-kernels_build__e35219b5": Loads(3),
    "history-v4__examples_kernels_relu-metal-cpp_build__ffef4ff3": Loads(4),
    "history-v4__examples_kernels_relu-torch-bounds_build__c054d276": Loads(4),
    "history-v4__tokenspeed-attention_build__420e8770": Rejected(
        6,
        "general.python-depends[0]",
        "unknown value `triton`; expected one of `einops`, `helion`, `tvm-ffi`",
        "`triton` is not in the Python dependency allowlist (the anchor rejects it too)",
    ),
    "kernels-examples__cpp20-symbols": Loads(5),
    "kernels-examples__cutlass-gemm-tvm-ffi": Loads(5),
    "kernels-examples__cutlass-gemm": Loads(5),
    "kernels-examples__extra-data": Loads(5),
    "kernels-examples__gemm-triton-autotune": Loads(5),
    "kernels-examples__relu-archs-subset": Loads(4),
    "kernels-examples__relu-backprop-compile": Loads(5),
    "kernels-examples__relu-compiler-flags": Loads(5),
    "kernels-examples__relu-invalid-capability": Rejected(
        26,
        "kernel.relu_rocm.rocm-archs",
        "none of the listed ROCm architectures is supported by the builder",
        "the anchor's negative example: its only capability and target are unknown, so "
        "nothing is left to build (the anchor fails with `empty set of architectures`)",
    ),
    "kernels-examples__relu-metal-cpp": Loads(5),
    "kernels-examples__relu-nki": Loads(5),
    "kernels-examples__relu-specific-torch": Loads(5),
    "kernels-examples__relu-torch-bounds": Loads(5),
    "kernels-examples__relu-torch-stable-abi": Loads(5),
    "kernels-examples__relu-tpu": Loads(5),
    "kernels-examples__relu-triton": Loads(5),
    "kernels-examples__relu-tvm-ffi-compiler-flags": Loads(5),
    "kernels-examples__relu-tvm-ffi": Loads(5),
    "kernels-examples__relu": Loads(5),
    "kernels-examples__silu-and-mul-bad-registration": Loads(5),
    "kernels-examples__silu-and-mul": Loads(5),
    "kernels-examples__symbol-conflicts": Loads(5),
    "kernels-examples__symbol-conflicts2": Loads(5),
}


#: The corpus files that load, in file order: what the corpus tests of other files run on.
LOADING: list[Path] = [p for p in CORPUS_FILES if isinstance(EXPECTED.get(p.stem), Loads)]
