# Stand-in (test only) of the flake edolstra/flake-compat, the kernels toolchain's input
# `flake-compat` (huggingface/kernels flake.nix; locked to 5edf11c44bc78a0d334f6334cdaf7d60d732daab).
# Nothing uses it; it is declared only so that the stand-in's inputs are the real flake's
# (tests/test_real_toolchain.py).
{
  description = "stand-in of edolstra/flake-compat for the nixgen tests (no outputs)";

  outputs = _: { };
}
