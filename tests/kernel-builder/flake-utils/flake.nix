# Stand-in (test only) of the flake numtide/flake-utils, the kernels toolchain's input
# `flake-utils` (huggingface/kernels flake.nix; locked to 11707dc2f618dd54ca8739b309ec4fc024de578b).
# The toolchain stand-in's outputs do not use it, so it has no outputs: it is declared only
# so that the stand-in's inputs are the real flake's (tests/test_real_toolchain.py).
{
  description = "stand-in of numtide/flake-utils for the nixgen tests (no outputs)";

  outputs = _: { };
}
