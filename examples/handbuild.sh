#!/usr/bin/env bash
# Build the example kernel projects by hand (plain shell, no Nix), with the
# same steps the nixgen derivations run:
#
#   every kernel      -> lib<kernel>.a        (g++ / nvcc / cargo)
#   torch binding     -> object files         (g++, Py_LIMITED_API, TORCH_EXTENSION_NAME)
#   binding + archives -> _<ops>.abi3.so      (g++ -shared)
#   install           -> OUT/<variant>/{__init__.py,...,_ops.py,_<ops>.abi3.so,metadata.json}
#
# Usage:
#   examples/handbuild.sh build EXAMPLE [OUT]    build every variant this host can build
#   examples/handbuild.sh check EXAMPLE [OUT]    run EXAMPLE/tests against OUT (kernels client)
#   examples/handbuild.sh cuda-archs SO          list the SASS/PTX targets in a CUDA .so
#   examples/handbuild.sh smoke-load VARIANT_DIR KEY   import a variant directly and check
#                                                that its ops have a kernel for dispatch KEY
#   examples/handbuild.sh repro EXAMPLE [--same-path]
#                                                build twice (sources copied to two different
#                                                paths, or in place), compare every byte
#   examples/handbuild.sh xpu-syntax             g++ -fsyntax-only of relu-xpu (SYCL headers)
#
# EXAMPLE is relu-cpu, relu-rust, relu-cuda, relu-mixed or relu-xpu; OUT defaults
# to examples/EXAMPLE/build (the layout `kernels.get_local_kernel` expects).
# See HANDBUILD.md for the command lines this prints.
#
# Environment: PYTHON (a python with torch and kernels; default <repo>/.venv/bin/python),
# CXX (g++), AR (ar), NVCC (nvcc), CUDA_HOME (from nvcc), CARGO (cargo),
# CUOBJDUMP (cuobjdump; else examples/fatbin_archs.py is used), SYCL_INCLUDE
# (SYCL headers, for xpu-syntax), UNIQUE_ID (op-namespace id; default: a hash of
# the project's sources), WORK (scratch dir; default: a fresh mktemp -d),
# SKIP_CUDA=1 (do not build CUDA variants).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
SUPPORT=${SUPPORT:-$REPO/nix/support/torch}
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
CXX=${CXX:-g++}
AR=${AR:-ar}
NVCC=${NVCC:-nvcc}
CARGO=${CARGO:-cargo}

# Python stable ABI floor of the extension (abi3, CPython >= 3.9).
PY_LIMITED_API=0x03090000

say() { printf '%s\n' "$*" >&2; }
die() { say "handbuild: $*"; exit 1; }
# Print a command (shell-quoted) and run it.
run() {
  local arg line='+'
  for arg in "$@"; do
    if [[ $arg =~ ^[A-Za-z0-9_./=:,+@%-]+$ ]]; then line+=" $arg"; else line+=" $(printf '%q' "$arg")"; fi
  done
  printf '%s\n' "$line" >&2
  "$@"
}

# ---------------------------------------------------------------------------
# Toolchain facts

detect_torch() {
  local facts
  facts=$("$PYTHON" -W ignore - <<'EOF'
import os, platform, sysconfig, torch
print(os.path.dirname(torch.__file__))
print(torch.__version__.split("+")[0])
print(int(torch.compiled_with_cxx11_abi()))
print(sysconfig.get_paths()["include"])
print(platform.machine())
EOF
  ) || die "cannot import torch with $PYTHON"
  { read -r TORCH_DIR; read -r TORCH_VERSION; read -r CXX11_ABI; read -r PY_INCLUDE; read -r MACHINE; } <<<"$facts"
  local major minor
  IFS=. read -r major minor _ <<<"$TORCH_VERSION"
  TORCH_MM="$major$minor"                      # 2.13.0 -> 213
  if [[ $CXX11_ABI == 1 ]]; then ABI_TAG=cxx11; else ABI_TAG=cxx98; fi
  SYSTEM="$MACHINE-linux"
  TORCH_INCLUDES=(-isystem "$TORCH_DIR/include" -isystem "$TORCH_DIR/include/torch/csrc/api/include")
}

detect_cuda() {
  command -v "$NVCC" >/dev/null || return 1
  CUDA_VERSION=$("$NVCC" --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
  [[ -n $CUDA_VERSION ]] || return 1
  # nvcc may be a wrapper script; ask nvcc itself where its toolkit is.
  CUDA_HOME=${CUDA_HOME:-$(realpath "$("$NVCC" --dryrun -c -x cu /dev/null -o /dev/null 2>&1 |
    sed -n 's/^#\$ TOP=//p')")}
  local major minor
  IFS=. read -r major minor <<<"$CUDA_VERSION"
  CUDA_MM="$major$minor"                       # 13.0 -> 130
}

# <variant> = torch<MM>-cxx11-<compute>-<arch>-linux (anchor scheme; parse_variant accepts it)
variant_name() { printf 'torch%s-%s-%s-%s\n' "$TORCH_MM" "$ABI_TAG" "$1" "$SYSTEM"; }

# Op namespace id: a hash of the project's sources (everything but build
# outputs and tests), so identical sources give identical bytes.
source_hash() {
  (cd "$1" && find . -type f ! -path './build/*' ! -path './tests/*' ! -path '*/target/*' \
      ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 | LC_ALL=C sort -z |
    while IFS= read -r -d '' f; do printf '%s\0%s\n' "$f" "$(sha256sum <"$f" | cut -d' ' -f1)"; done) |
    sha256sum | cut -c1-10
}

# ---------------------------------------------------------------------------
# Per-variant state, reset by begin_variant

begin_variant() {  # BACKEND(cpu|cuda|xpu)
  BACKEND=$1
  case $BACKEND in
    cpu) BACKEND_DEFS=(-DCPU_KERNEL) ;;
    cuda) BACKEND_DEFS=(-DCUDA_KERNEL -DUSE_CUDA=1) ;;
    xpu) BACKEND_DEFS=(-DXPU_KERNEL -DUSE_XPU) ;;
    *) die "unknown backend $BACKEND" ;;
  esac
  OPS_NAME="_${PYTHON_NAME}_${BACKEND}_${UNIQUE_ID}"
  VWORK="$WORK/$BACKEND"
  rm -rf "$VWORK"
  mkdir -p "$VWORK/lib"
  WHOLE_ARCHIVES=()   # C++/CUDA kernel archives (static registrations must survive)
  PLAIN_ARCHIVES=()   # Rust staticlibs (only the referenced members are needed)
  NEEDS_CUDART=0
  NEEDS_RUST_LIBS=0
  GPU_ARCHS=()
  # Paths that __FILE__ (TORCH_CHECK in torch's inline headers) would embed:
  # the project (made relative) and torch (else the .so names the torch
  # store path, and Nix counts torch as a run-time dependency).
  PREFIX_MAPS=("-ffile-prefix-map=$PROJ/=" "-ffile-prefix-map=$TORCH_DIR/include/=torch/include/")
  # Flags shared by every C++ compile (kernels and binding).
  CXXFLAGS_BASE=(-std=c++20 -fPIC -O2 "-D_GLIBCXX_USE_CXX11_ABI=$CXX11_ABI" -fno-gnu-unique
    "${PREFIX_MAPS[@]}")
}

obj_name() { local s=${1//\//__}; printf '%s.o\n' "$s"; }

# Parse the kernel options shared by the cpp-* languages into arrays.
parse_kernel_args() {
  K_SRC=(); K_INCLUDE=(); K_CXXFLAGS=(); K_TORCH=0; K_CUDA_FLAGS=(); K_CAPS=()
  while (($#)); do
    case $1 in
      --src) K_SRC+=("$2") ;;
      --include) K_INCLUDE+=(-I "$2") ;;
      --cxx-flag) K_CXXFLAGS+=("$2") ;;
      --cuda-flag) K_CUDA_FLAGS+=("$2") ;;
      --cuda-capability) K_CAPS+=("$2") ;;
      --depends) [[ $2 == torch ]] && K_TORCH=1 ;;
      *) die "unknown kernel option $1" ;;
    esac
    shift 2
  done
}

archive() {  # NAME OBJ...
  local name=$1; shift
  # D: deterministic (zero timestamps/uids). Members are named after their
  # flattened source path, so two sources with one basename cannot collide.
  run "$AR" rcsD "$VWORK/lib/lib$name.a" "$@"
  WHOLE_ARCHIVES+=("$VWORK/lib/lib$name.a")
}

# cpp-cpu: g++ for .cpp/.cc/.cxx; headers are inputs only.
kernel_cpp_cpu() {  # NAME [--src F]... [--include D]... [--cxx-flag X]... [--depends torch]
  local name=$1; shift
  parse_kernel_args "$@"
  local deps=(); ((K_TORCH)) && deps=("${TORCH_INCLUDES[@]}")
  local objs=() src obj
  mkdir -p "$VWORK/obj/$name"
  for src in "${K_SRC[@]}"; do
    case $src in *.cpp | *.cc | *.cxx) ;; *) continue ;; esac
    obj="$VWORK/obj/$name/$(obj_name "$src")"
    run "$CXX" "${CXXFLAGS_BASE[@]}" "${BACKEND_DEFS[@]}" "${deps[@]}" "${K_INCLUDE[@]}" \
      "${K_CXXFLAGS[@]}" -c "$src" -o "$obj"
    objs+=("$obj")
  done
  archive "$name" "${objs[@]}"
}

# "8.0" -> -gencode=arch=compute_80,code=sm_80; "9.0+PTX" adds code=compute_90;
# "9.0a" -> compute_90a/sm_90a.
gencode_flags() {
  local cap base mm
  for cap in "$@"; do
    base=${cap%+PTX}
    mm=${base/./}
    printf -- '-gencode=arch=compute_%s,code=sm_%s\n' "$mm" "$mm"
    [[ $cap == *+PTX ]] && printf -- '-gencode=arch=compute_%s,code=compute_%s\n' "$mm" "$mm"
  done
  return 0
}

# cpp-cuda: nvcc for .cu (cuda-flags, gencode per capability), g++ for .cpp
# (cxx-flags), both with the CUDA backend defines.
kernel_cpp_cuda() {  # NAME [--src F]... [--include D]... [--cxx-flag X]... [--cuda-flag X]... [--cuda-capability C]... [--depends torch]
  local name=$1; shift
  parse_kernel_args "$@"
  ((${#K_CAPS[@]})) || die "kernel $name: no cuda capabilities"
  local deps=(); ((K_TORCH)) && deps=("${TORCH_INCLUDES[@]}")
  local gencode=(); mapfile -t gencode < <(gencode_flags "${K_CAPS[@]}")
  local objs=() src obj
  mkdir -p "$VWORK/obj/$name"
  for src in "${K_SRC[@]}"; do
    obj="$VWORK/obj/$name/$(obj_name "$src")"
    case $src in
      *.cu)
        # torch's COMMON_NVCC_FLAGS minus the __CUDA_NO_HALF* defines (as the
        # anchor does for CUDA >= 11.8).
        run "$NVCC" -ccbin "$CXX" -std=c++20 -O2 \
          "-Xcompiler=-fPIC,-fno-gnu-unique,$(IFS=,; echo "${PREFIX_MAPS[*]}")" \
          "-D_GLIBCXX_USE_CXX11_ABI=$CXX11_ABI" "${BACKEND_DEFS[@]}" --expt-relaxed-constexpr \
          "${gencode[@]}" "${deps[@]}" "${K_INCLUDE[@]}" "${K_CUDA_FLAGS[@]}" -c "$src" -o "$obj"
        ;;
      *.cpp | *.cc | *.cxx)
        run "$CXX" "${CXXFLAGS_BASE[@]}" "${BACKEND_DEFS[@]}" -isystem "$CUDA_HOME/include" \
          "${deps[@]}" "${K_INCLUDE[@]}" "${K_CXXFLAGS[@]}" -c "$src" -o "$obj"
        ;;
      *) continue ;;
    esac
    objs+=("$obj")
  done
  archive "$name" "${objs[@]}"
  GPU_ARCHS+=("${K_CAPS[@]}")
  NEEDS_CUDART=1
}

# rust-cpu: cargo builds the staticlib lib<NAME>.a (NAME = kernel table name
# with - -> _, which must be the crate's [lib] name).
kernel_rust_cpu() {  # NAME MANIFEST [FEATURE...]
  local name=$1 manifest=$2; shift 2
  local lib=${name//-/_}
  local features=(); (($#)) && features=(--features "$(IFS=,; echo "$*")")
  local target="$VWORK/cargo/$name"
  run env CARGO_TARGET_DIR="$target" "$CARGO" build --release --offline --locked --lib \
    --manifest-path "$manifest" "${features[@]}"
  run cp "$target/release/lib$lib.a" "$VWORK/lib/lib$lib.a"
  PLAIN_ARCHIVES+=("$VWORK/lib/lib$lib.a")
  NEEDS_RUST_LIBS=1
}

# Compile the [torch] binding sources and link the extension.
link_extension() {  # BINDING_SRC...
  local objs=() src obj
  mkdir -p "$VWORK/obj/_binding"
  for src in "$@"; do
    case $src in *.cpp | *.cc | *.cxx) ;; *) continue ;; esac
    obj="$VWORK/obj/_binding/$(obj_name "$src")"
    run "$CXX" "${CXXFLAGS_BASE[@]}" "${BACKEND_DEFS[@]}" "-DTORCH_EXTENSION_NAME=$OPS_NAME" \
      "-DPy_LIMITED_API=$PY_LIMITED_API" -I "$SUPPORT" "${TORCH_INCLUDES[@]}" -isystem "$PY_INCLUDE" \
      -c "$src" -o "$obj"
    objs+=("$obj")
  done
  local whole=() plain=() libs=() extra=()
  ((${#WHOLE_ARCHIVES[@]})) && whole=(-Wl,--whole-archive "${WHOLE_ARCHIVES[@]}" -Wl,--no-whole-archive)
  ((${#PLAIN_ARCHIVES[@]})) && plain=("${PLAIN_ARCHIVES[@]}")
  # `cargo rustc --lib -- --print native-static-libs` for x86_64-unknown-linux-gnu:
  ((NEEDS_RUST_LIBS)) && libs+=(-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc)
  if ((NEEDS_CUDART)); then
    libs+=(-L "$CUDA_HOME/lib64" -lcudart)
    # nvcc names its host temp file tmpxft_<pid>_..., and g++ names the static
    # initializer of a .cu file after it (_GLOBAL__sub_I_tmpxft_...): drop
    # local symbols so the .so does not depend on process ids.
    extra+=(-Wl,--discard-all)
  fi
  # No rpath: libc10/libtorch_cpu (and libcudart) are found by soname among the
  # libraries torch has already loaded; `import torch` precedes the extension.
  run "$CXX" -shared -o "$VWORK/$OPS_NAME.abi3.so" "${objs[@]}" "${whole[@]}" "${plain[@]}" \
    -Wl,--exclude-libs,ALL -Wl,-z,noexecstack -Wl,-O1 "${extra[@]}" \
    -L "$TORCH_DIR/lib" -lc10 -ltorch_cpu "${libs[@]}"
}

# Lay out OUT/<variant>/ like the anchor's flattened build.
install_variant() {  # COMPUTE (cpu|cu130|...)
  local variant; variant=$(variant_name "$1")
  local dest="$OUT/$variant"
  run rm -rf "$dest"
  run mkdir -p "$dest"
  # The Python package: every .py under torch-ext/<module>/ (no bytecode).
  (cd "torch-ext/$PYTHON_NAME" && find . -type f -name '*.py' ! -path '*/__pycache__/*' -print0 |
    LC_ALL=C sort -z | while IFS= read -r -d '' f; do
      install -D -m 0644 "$f" "$dest/$f"
    done)
  run sed "s/@OPS_NAME@/$OPS_NAME/g" "$SUPPORT/_ops.py.in" >"$dest/_ops.py"
  run install -m 0755 "$VWORK/$OPS_NAME.abi3.so" "$dest/"
  local archs=""
  if ((${#GPU_ARCHS[@]})); then
    local sorted; sorted=$(printf '%s\n' "${GPU_ARCHS[@]}" | LC_ALL=C sort -u -V | sed 's/.*/"&"/' | paste -sd, | sed 's/,/, /g')
    archs=$(printf ',\n    "archs": [%s]' "$sorted")
  fi
  local backend_type=$BACKEND
  cat >"$dest/metadata.json" <<EOF
{
  "name": "$KERNEL_NAME",
  "id": "$OPS_NAME",
  "version": $KERNEL_VERSION,
  "license": "$KERNEL_LICENSE",
  "python-depends": [],
  "backend": {
    "type": "$backend_type"$archs
  }
}
EOF
  say "installed $dest"
  (cd "$dest" && find . -type f | LC_ALL=C sort | sed 's/^/    /') >&2
}

# ---------------------------------------------------------------------------
# The examples (each mirrors its build.toml)

project() {  # EXAMPLE NAME VERSION LICENSE
  PROJ="$HERE/$1"
  [[ -f $PROJ/build.toml ]] || die "no such example: $1"
  KERNEL_NAME=$2 KERNEL_VERSION=$3 KERNEL_LICENSE=$4
  PYTHON_NAME=${KERNEL_NAME//-/_}
  UNIQUE_ID=${UNIQUE_ID:-$(source_hash "$PROJ")}
  cd "$PROJ"
}

can_cuda() { [[ ${SKIP_CUDA:-0} != 1 ]] && detect_cuda; }

build_relu_cpu() {
  project relu-cpu relu-cpu 1 Apache-2.0
  begin_variant cpu
  kernel_cpp_cpu relu_cpu --src relu_cpu/relu_cpu.cpp --src relu_cpu/relu_impl.h \
    --include relu_cpu --cxx-flag -Wall --cxx-flag -DRELU_CPU_BLOCK=64 --depends torch
  link_extension torch-ext/torch_binding.cpp
  install_variant cpu
}

build_relu_rust() {
  project relu-rust relu-rust 1 Apache-2.0
  begin_variant cpu
  kernel_rust_cpu relu_rs relu_rs/Cargo.toml chunked
  link_extension torch-ext/torch_binding.cpp
  install_variant cpu
}

build_relu_cuda() {
  project relu-cuda relu-cuda 1 Apache-2.0
  can_cuda || die "relu-cuda needs nvcc"
  begin_variant cuda
  kernel_cpp_cuda relu_cuda --src relu_cuda/relu.cu --cuda-capability 8.0 --cuda-capability 9.0 \
    --depends torch
  link_extension torch-ext/torch_binding.cpp
  install_variant "cu$CUDA_MM"
}

build_relu_mixed() {
  project relu-mixed relu-mixed 1 Apache-2.0
  begin_variant cpu
  kernel_cpp_cpu relu_cpu --src relu_cpu/relu_cpu.cpp --depends torch
  kernel_rust_cpu leaky_relu_rs leaky_relu_rs/Cargo.toml
  link_extension torch-ext/torch_binding.cpp
  install_variant cpu
  if can_cuda; then
    begin_variant cuda
    kernel_cpp_cuda relu_cuda --src relu_cuda/relu_cuda.cu --cuda-capability 8.0 \
      --cuda-capability 9.0 --cuda-flag -lineinfo
    link_extension torch-ext/torch_binding.cpp
    install_variant "cu$CUDA_MM"
  else
    say "relu-mixed: no nvcc, CUDA variant skipped"
  fi
}

build_relu_xpu() {
  die "relu-xpu needs the oneAPI compiler (icpx -fsycl); use 'xpu-syntax' for a header check"
}

# ---------------------------------------------------------------------------
# Commands

cmd_build() {
  local example=${1:?example}
  OUT=$(realpath -m "${2:-$HERE/$example/build}")
  detect_torch
  if [[ -z ${WORK:-} ]]; then
    WORK=$(mktemp -d)
    trap 'rm -rf "$WORK"' EXIT
  fi
  mkdir -p "$OUT"
  "build_${example//-/_}"
}

cmd_check() {
  local example=${1:?example}
  local out; out=$(realpath -m "${2:-$HERE/$example/build}")
  cd "$HERE/$example"
  KERNEL_BUILD="$out" run "$PYTHON" -m pytest -q -p no:cacheprovider tests
}

cmd_cuda_archs() {
  local so=${1:?shared object}
  local tool=${CUOBJDUMP:-$(command -v cuobjdump || true)}
  if [[ -n $tool ]]; then
    run "$tool" --list-elf "$so" || true
    run "$tool" --list-ptx "$so" || true
  fi
  run "$PYTHON" "$HERE/fatbin_archs.py" "$so"
}

cmd_smoke_load() {
  local vdir=${1:?variant dir} key=${2:?dispatch key}
  detect_torch
  local ld=${LD_LIBRARY_PATH:-}
  if detect_cuda; then ld="$CUDA_HOME/lib64${ld:+:$ld}"; fi
  LD_LIBRARY_PATH="$ld" run "$PYTHON" -W ignore - "$vdir" "$key" <<'EOF'
import importlib.util, json, sys
from pathlib import Path
import torch
vdir, key = Path(sys.argv[1]), sys.argv[2]
meta = json.loads((vdir / "metadata.json").read_text())
spec = importlib.util.spec_from_file_location(meta["id"], vdir / "__init__.py")
mod = importlib.util.module_from_spec(spec)
sys.modules[meta["id"]] = mod
spec.loader.exec_module(mod)
ns = mod.add_op_namespace_prefix("relu").split("::")[0]
for op in ("relu",):
    name = f"{ns}::{op}"
    has = torch._C._dispatch_has_kernel_for_dispatch_key(name, key)
    print(f"{name}: {key} kernel registered = {has}")
    assert has, name
print("loaded", mod.__name__, "from", vdir)
EOF
}

# Build EXAMPLE twice and compare every output byte. By default the two
# builds run from copies of the sources at different paths (and with different
# scratch dirs); with --same-path both build the sources in place (as Nix
# does: the sandbox path is always the same), only the scratch dirs differ.
cmd_repro() {
  local example=${1:?example} mode=${2:-}
  local a b
  a=$(mktemp -d) b=$(mktemp -d)
  if [[ $mode == --same-path ]]; then
    PYTHON=$PYTHON WORK="$a/work" "$HERE/handbuild.sh" build "$example" "$a/out" 2>/dev/null
    PYTHON=$PYTHON WORK="$b/work2/x" "$HERE/handbuild.sh" build "$example" "$b/out" 2>/dev/null
  else
    mkdir -p "$b/some/deeper/place"
    cp -r "$HERE" "$a/examples"
    cp -r "$HERE" "$b/some/deeper/place/examples"
    rm -rf "$a/examples/$example/build" "$b/some/deeper/place/examples/$example/build"
    PYTHON=$PYTHON SUPPORT=$SUPPORT WORK="$a/work" "$a/examples/handbuild.sh" build "$example" "$a/out" 2>/dev/null
    PYTHON=$PYTHON SUPPORT=$SUPPORT WORK="$b/work2/x" "$b/some/deeper/place/examples/handbuild.sh" build "$example" "$b/out" 2>/dev/null
  fi
  (cd "$a/out" && find . -type f | LC_ALL=C sort | xargs sha256sum) >"$a/sums"
  (cd "$b/out" && find . -type f | LC_ALL=C sort | xargs sha256sum) >"$b/sums"
  cat "$a/sums"
  if cmp -s "$a/sums" "$b/sums"; then
    say "repro $example: identical ($(wc -l <"$a/sums") files)"
    rm -rf "$a" "$b"
  else
    diff "$a/sums" "$b/sums" >&2 || true
    die "repro $example: outputs differ (kept $a and $b)"
  fi
}

cmd_xpu_syntax() {
  [[ -n ${SYCL_INCLUDE:-} ]] || die "set SYCL_INCLUDE to a directory with sycl/sycl.hpp (see HANDBUILD.md)"
  detect_torch
  PROJ="$HERE/relu-xpu"
  cd "$PROJ"
  KERNEL_NAME=relu-xpu PYTHON_NAME=relu_xpu UNIQUE_ID=${UNIQUE_ID:-$(source_hash "$PROJ")}
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
  begin_variant xpu
  run "$CXX" "${CXXFLAGS_BASE[@]}" "${BACKEND_DEFS[@]}" -isystem "$SYCL_INCLUDE" "${TORCH_INCLUDES[@]}" \
    -fsyntax-only relu_xpu/relu.cpp
  run "$CXX" "${CXXFLAGS_BASE[@]}" "${BACKEND_DEFS[@]}" "-DTORCH_EXTENSION_NAME=$OPS_NAME" \
    "-DPy_LIMITED_API=$PY_LIMITED_API" -I "$SUPPORT" "${TORCH_INCLUDES[@]}" -isystem "$PY_INCLUDE" \
    -fsyntax-only torch-ext/torch_binding.cpp
  say "relu-xpu: kernel and binding pass g++ -fsyntax-only"
}

main() {
  local cmd=${1:-}
  (($#)) && shift
  case $cmd in
    build) cmd_build "$@" ;;
    check) cmd_check "$@" ;;
    cuda-archs) cmd_cuda_archs "$@" ;;
    smoke-load) cmd_smoke_load "$@" ;;
    repro) cmd_repro "$@" ;;
    xpu-syntax) cmd_xpu_syntax "$@" ;;
    *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 2 ;;
  esac
}

main "$@"
