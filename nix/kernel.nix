/**
  The derivation of every kind of kernel, from the data of its generated file.

  A generated kernel file (`nix/kernels/<name>.nix`, from `kernel.nix.j2`) and the
  pure-Python variant's file (`nix/noarch.nix`) are data: each calls `build` with what
  build.toml says and what nixgen planned. Which builder a language uses is the table
  `languages`, here and nowhere else; what differs between the C++ languages (the plan, the
  compilers, the backend's runtime inputs, Metal's install) is the table `cppLanguages`.
*/
{
  lib,
  compile,
  cuda,
  sources,
  rust,
  torch,
  tvmFfi,
  extension,
  toolchains,
  # What makes a variant trusted (digest, load check, symbols.json); a default, so callers
  # that give the modules this one uses keep working.
  trust ? import ./trust.nix,
}:
let
  inherit (sources) select;
  nixgenTorch = torch;
in
rec {
  /**
    What every CUDA kernel compiles with, by name in `cudaPackages`: the anchor's CUDA build
    inputs (its extension derivation, nix-builder/lib/extension/<backend>/arch.nix): the runtime,
    CCCL, and the cuBLAS, cuSOLVER and cuSPARSE headers `ATen/cuda/CUDAContext.h` includes.
    The kernel's dependencies follow them in `buildInputs`.

    # Type

    ```
    cudaInputs :: [ String ]
    ```
  */
  cudaInputs = [
    "cuda_cudart"
    "cccl"
    "libcublas"
    "libcusolver"
    "libcusparse"
  ];

  /**
    The same for ROCm, by name in `rocmPackages`: the HIP runtime and the anchor's
    header-only ROCm libraries.

    # Type

    ```
    rocmInputs :: [ String ]
    ```
  */
  rocmInputs = [
    "clr"
    "hipcub-devel"
    "hipsparselt"
    "rocprim-devel"
    "rocthrust-devel"
    "rocwmma-devel"
  ];

  /**
    Build inputs as a C++ consumer takes them: a package with a `cxxdev` output (torch-bin:
    "propagated deps for the cmake consumers of torch", which carries the ROCm libraries of
    a ROCm torch, hipBLAS, hipSOLVER, rocBLAS…, and the CUDA ones of a CUDA torch) comes with
    that output, as the anchor's extensions take `torch.cxxdev`
    (nix-builder/lib/extension/torch/arch.nix).

    # Examples

    ```nix
    map (p: p.name) (cxxInputs [ { name = "torch"; cxxdev = { name = "torch-cxxdev"; }; } { name = "cutlass"; } ])
    => [ "torch" "torch-cxxdev" "cutlass" ]
    ```
  */
  cxxInputs = builtins.concatMap (p: [ p ] ++ (if p ? cxxdev then [ p.cxxdev ] else [ ]));

  /**
    What each C++ language adds to the common kernel build. An entry takes the kernel's
    `{ name, sources, cudaFlags, hipFlags, syclFlags, capabilities, archs }` (as `cpp`
    receives them, defaults filled in) and returns

    - `plan`: its plan function, `compile.cpp<Backend>`
    - `planArgs`: the plan's backend arguments (flags, GPU targets), besides the common
      `name`, `sources`, `includes`, `cxxFlags` and `depFlags`
    - `nativeBuildInputs`: the compilers (ninja follows)
    - `buildInputs`: the backend's own (the kernel's dependencies follow)
    - `passthru`: what `passthru.nixgen` adds (the GPU targets compiled for: `targets`,
      and `capabilities` or `archs` by their own names)
    - `installPhase` (default: the archive) and `attrs` (more derivation attributes)

    A CUDA kernel's capabilities are read as nixgen planned them for the variant's toolkit
    (`cuda.capabilitiesFor`): a kernel none of them can build was refused at render
    (`plan.unbuildable_capabilities`); a toolkit the plan does not know fails, naming it.

    # Inputs

    `pkgs`
    : the variant's package set (`nixgen.project.pkgsFor`)

    `toolchain`
    : the variant's toolchain (`nixgen.toolchains`)

    `torch`
    : the variant's torch (null: a variant without torch); a CUDA kernel's compiles get
      what its CMake config gives (`toolchain.torchFlags`)

    # Type

    ```
    cppLanguages :: { pkgs, toolchain, torch ? Derivation } -> { ${language} :: AttrSet -> Language }
    ```

    # Examples

    ```nix
    builtins.attrNames (cppLanguages { pkgs = { }; toolchain = { }; })
    => [ "cpp-cpu" "cpp-cuda" "cpp-metal" "cpp-rocm" "cpp-xpu" ]
    ```
  */
  cppLanguages =
    {
      pkgs,
      toolchain,
      torch ? null,
    }:
    {
      cpp-cpu = kernel: {
        plan = compile.cppCpu;
      };

      cpp-cuda =
        kernel:
        let
          cudaVersion = pkgs.cudaPackages.cudaMajorMinorVersion;
          # The kernel's capabilities that each CUDA toolkit of the build table can compile
          # for (planned by nixgen); this variant's toolkit picks its list (a toolkit the
          # plan lacks fails, naming it).
          capabilities = cuda.capabilitiesFor kernel.capabilities cudaVersion;
          # What torch's CMake config gives the compiles of a torch variant, read from the
          # variant's torch (null: a variant without torch, such as tvm-ffi's).
          frameworkFlags = toolchain.torchFlags torch;
        in
        builtins.seq capabilities {
          plan = compile.cppCuda;
          planArgs = {
            inherit capabilities;
            inherit (kernel) cudaFlags;
            frameworkFlags = { inherit (frameworkFlags) nvcc cxx; };
          };
          nativeBuildInputs = [ pkgs.cudaPackages.cuda_nvcc ];
          buildInputs = map (name: pkgs.cudaPackages.${name}) cudaInputs ++ frameworkFlags.inputs;
          passthru = {
            inherit capabilities;
            targets = capabilities;
          };
        };

      # `archs`: the kernel's GPU targets that the builder supports (planned by nixgen).
      cpp-rocm = kernel: {
        plan = compile.cppRocm;
        planArgs = { inherit (kernel) archs hipFlags; };
        nativeBuildInputs = [ pkgs.rocmPackages.clr ];
        buildInputs = map (name: pkgs.rocmPackages.${name}) rocmInputs;
        passthru = {
          inherit (kernel) archs;
          targets = kernel.archs;
        };
      };

      # icpx (-fsycl) comes from the variant's oneAPI (xpuPackages.oneapi-torch-dev, in
      # toolchain.compilers, with ocloc). The kernel's sycl-flags reach the extension's
      # `icpx -fsycl` link too (`linkFlags`): device code for `-fsycl-targets` is made there.
      cpp-xpu = kernel: {
        plan = compile.cppXpu;
        planArgs = { inherit (kernel) syclFlags; };
        nativeBuildInputs = toolchain.compilers;
        passthru.linkFlags = kernel.linkFlags ++ kernel.syclFlags;
      };

      cpp-metal = kernel: {
        plan = compile.cppMetal;
        # python3 writes the header that embeds the kernel's Metal library.
        nativeBuildInputs = [ pkgs.python3 ];
        buildInputs = [ pkgs.apple-sdk_26 ];
        installPhase = compile.installMetalPhase { inherit (kernel) name sources; };
        attrs = {
          # Metal shaders need the host's Metal toolchain (xcrun), outside the sandbox.
          __noChroot = true;
          meta.platforms = pkgs.lib.platforms.darwin;
        };
      };
    };

  /**
    The derivation of a C++ kernel, built with the variant's stdenv (`toolchain.stdenv`: on
    Linux the toolchain's portable `manylinux_2_28.stdenv`, `cudaBackendStdenv` for CUDA).
    Its source is exactly the kernel's files plus every header the project lists
    (`headers`): those are inputs only, never compiled (a kernel may include a sibling's or
    the binding's header).

    The build is data: the derivation's attributes `sources`, `includes`, `cxxFlags`,
    `depFlags` and the backend flags the language reads (`cudaFlags`, `hipFlags` or
    `syclFlags`) are what its plan, its source tree and its `configurePhase` (the
    `build.ninja`, written when the build runs) are made from, through the final attributes
    (`finalAttrs`). So `overrideAttrs` changes the compile commands:

    ```
    kernel.overrideAttrs (old: { cxxFlags = old.cxxFlags ++ [ "-DX=1" ]; })
    ```

    `passthru.nixgen` holds `kernel`, `library`, `language`, `linkFlags` (what the
    extension's link adds for the kernel: OpenMP's runtime), `plan` and `plannedObjects`
    (for `compile.withObjects`), `targets` (the GPU targets compiled for, `[ ]` for none)
    and `capabilities` (CUDA) or `archs` (ROCm).

    # Inputs

    The first argument is what every kernel file is called with (`pkgs`, the variant's
    `toolchain`, the project `root` and its `headers`); the second is the kernel's data:

    `name`, `pname`, `version`, `language`
    : the kernel, its derivation's name and version, and one of `languages`

    `sources`, `includes`, `cxxFlags`
    : as build.toml lists them

    `cudaFlags`, `hipFlags`, `syclFlags`
    : the backend's flags (CUDA, ROCm, XPU kernels)

    `depends`
    : the kernel's dependencies by the library's names (`dependencies`)

    `depFlags`, `buildInputs`
    : further compile flags and inputs (`depends` gives the dependencies' own)

    `linkFlags`
    : flags the extension's link adds for this kernel

    `capabilities`
    : CUDA version → capabilities, as nixgen planned them (CUDA kernels)

    `archs`
    : the GPU targets to compile for (ROCm kernels)

    `plannedObjects`
    : source → `{ key, pname }` (the object's key in the flake output `objects` and its
      derivation's name), when nixgen planned the kernel one derivation per object
      (`KernelPlan.objects`; null: one derivation)

    # Type

    ```
    cpp :: { pkgs, toolchain, root :: Path, headers :: [ String ], torch ? null, variant ? null } -> AttrSet -> Derivation
    ```

    # Examples

    ```nix
    (cpp { pkgs.ninja = "ninja"; toolchain.stdenv.mkDerivation = f: let a = f a; in a; root = ./.; headers = [ ]; } {
      name = "relu"; pname = "p-relu"; version = "1"; language = "cpp-cpu";
      sources = [ "relu/relu.cpp" ]; includes = [ ]; cxxFlags = [ ];
    }).passthru.nixgen.plan.archive
    => "librelu.a"
    ```
  */
  cpp =
    {
      pkgs,
      toolchain,
      root,
      headers,
      torch ? null,
      variant ? null,
    }:
    {
      name,
      pname,
      version,
      language,
      sources,
      includes,
      cxxFlags,
      cudaFlags ? [ ],
      hipFlags ? [ ],
      syclFlags ? [ ],
      depends ? [ ],
      depFlags ? [ ],
      buildInputs ? [ ],
      linkFlags ? [ ],
      capabilities ? null,
      archs ? null,
      plannedObjects ? null,
    }:
    let
      table = cppLanguages { inherit pkgs toolchain torch; };
      entry =
        table.${language}
          or (throw "nixgen: kernel ${name}: `${language}` is not a C++ kernel language (${builtins.concatStringsSep ", " (builtins.attrNames table)})");
      deps = dependencies { inherit pkgs torch variant; } depends;
      # The language's entry for the kernel's data `k` (its sources and flags as the
      # derivation's attributes hold them, so `overrideAttrs` reaches the plan).
      backendOf =
        k:
        entry {
          inherit name capabilities archs linkFlags;
          inherit (k) sources;
          cudaFlags = k.cudaFlags or cudaFlags;
          hipFlags = k.hipFlags or hipFlags;
          syclFlags = k.syclFlags or syclFlags;
        };
      # The backend flags the language reads (`cudaFlags` of a CUDA kernel…): those are
      # derivation attributes too. Decided from the arguments, so the derivation's
      # attribute names never depend on its own attributes.
      backendFlags = builtins.filter (n: ((backendOf { inherit sources; }).planArgs or { }) ? ${n}) [
        "cudaFlags"
        "hipFlags"
        "syclFlags"
      ];
      flagArgs = {
        inherit cudaFlags hipFlags syclFlags;
      };
      # The project's headers that `s` does not list (a set lookup: linear in both).
      others =
        s:
        let
          listed = builtins.listToAttrs (map (name: { inherit name; value = null; }) s);
        in
        builtins.filter (h: !(listed ? ${h})) headers;
    in
    # Forced first: a language's entry that throws (a CUDA toolkit the plan does not
    # know) fails the derivation, not only one of its attributes.
    builtins.seq (backendOf { inherit sources; }) (
      toolchain.stdenv.mkDerivation (
        finalAttrs:
        let
          backend = backendOf finalAttrs;
          plan = backend.plan (
            {
              inherit name;
              inherit (finalAttrs) includes cxxFlags depFlags;
              sources = finalAttrs.sources ++ others finalAttrs.sources;
            }
            # The family of the toolchain's `$CXX` (compile.families).
            // { inherit (toolchain) cxxFamily; }
            // (backend.planArgs or { })
          );
        in
        {
          inherit pname version;
          # The build's data (in `.attrs.json`/`.attrs.sh` at build time, not the
          # environment): `configurePhase` (the build.ninja) follows these attributes.
          __structuredAttrs = true;
          inherit
            sources
            includes
            cxxFlags
            ;
          depFlags = deps.flags ++ depFlags;
          src = select pkgs.lib root (finalAttrs.sources ++ others finalAttrs.sources);
          nativeBuildInputs = (backend.nativeBuildInputs or [ ]) ++ [ pkgs.ninja ];
          buildInputs = (backend.buildInputs or [ ]) ++ cxxInputs (deps.inputs ++ buildInputs);
          configurePhase = compile.configurePhase plan;
          installPhase = backend.installPhase or (compile.installArchivePhase name);
          passthru.nixgen = {
            inherit
              language
              linkFlags
              plan
              plannedObjects
              ;
            kernel = name;
            library = name;
            # The GPU targets compiled for: the language entry's (`passthru.targets`).
            targets = [ ];
          }
          // (backend.passthru or { });
        }
        // builtins.listToAttrs (map (n: { name = n; value = flagArgs.${n}; }) backendFlags)
        // (backend.attrs or { })
      )
    );

  /**
    The compile flags and build inputs of a C++ kernel's dependencies, by the names nixgen
    plans (`depends`): `torch` is the variant's torch (its headers and the variant's
    stable-ABI target), `tvm-ffi` the Python set's tvm-ffi (its headers), and any other name
    a package-set attribute (a dotted one, `xpuPackages.sycl-tla`, a path into it).

    # Type

    ```
    dependencies :: { pkgs, torch, variant } -> [ String ] -> { flags :: [ String ], inputs :: [ Derivation ] }
    ```

    # Examples

    ```nix
    (dependencies { pkgs.xpuPackages.sycl-tla = "sycl-tla"; torch = null; variant = null; } [ "xpuPackages.sycl-tla" ]).inputs
    => [ "sycl-tla" ]
    ```
  */
  dependencies =
    {
      pkgs,
      torch,
      variant,
    }:
    depends:
    let
      has = name: builtins.elem name depends;
      tvm = pkgs.python3.pkgs.tvm-ffi;
      others = builtins.filter (d: d != "torch" && d != "tvm-ffi") depends;
      # A dotted name (`cudaPackages.nccl`) is an attribute path in the package set.
      package = d: lib.getAttrFromPath (lib.splitString "." d) pkgs;
    in
    {
      flags =
        (if has "torch" then nixgenTorch.includeFlags torch ++ nixgenTorch.abiDefines variant else [ ])
        ++ (if has "tvm-ffi" then tvmFfi.includeFlags tvm else [ ]);
      inputs =
        (if has "tvm-ffi" then [ tvm ] else [ ]) ++ (if has "torch" then [ torch ] else [ ]) ++ map package others;
    };

  /**
    The pure-Python variant's derivation (`torch-noarch`, or a backend without compiled
    kernels): the kernel's Python package, `_ops.py` and `metadata.json`; nothing to compile.

    # Inputs

    The first argument is what `noarch.nix` is called with (`pkgs`, the project `root`, the
    `variant` and the project's data); the second its data: `pname`, `version`, `moduleDir`
    (the package's directory), `moduleName` and `pyext` (the extensions that ship).

    The package is checked for torch ops registered without `add_op_namespace_prefix` by
    the backend's toolchain's setup hook (`toolchains.<backend>.opsCheck`), after the
    unpack, on the directory the derivation's `torchOpsCheckDir` names; the variant check
    (`nixgen.trust`) ends the build: its digest (the client does not check it in the build:
    `trust.noClient`).

    # Type

    ```
    noarch :: { pkgs, root :: Path, variant, projectData } -> AttrSet -> Derivation
    ```
  */
  noarch =
    {
      pkgs,
      root,
      variant,
      projectData,
    }:
    {
      # The key `build` dispatched on (always `"noarch"` here).
      language,
      pname,
      version,
      moduleDir,
      moduleName,
      pyext,
    }:
    # A fixed point: the ops name and `metadata.json` follow the derivation's `src`, so
    # `overrideAttrs { src = …; }` renames the ops of what it installs.
    pkgs.stdenvNoCC.mkDerivation (
      finalAttrs:
      let
        toolchain = toolchains.${variant.backend} pkgs;
        opsName = extension.opsName {
          inherit moduleName;
          inherit (variant) backend;
          sources = [ finalAttrs.src ];
        };
        # What `metadata.json` holds (`nixgen.provenance.stamp` adds the build's provenance).
        metadata = extension.metadata {
          project = projectData;
          inherit variant opsName;
        };
      in
      {
        inherit pname version;
        src = sources.selectWithPackage pkgs.lib root [ ] moduleDir pyext;
        dontConfigure = true;
        dontBuild = true;
        # Fails the build on torch ops registered without `add_op_namespace_prefix`
        # (`env.dontCheckPythonOps = "1";` skips it; an MLX package registers none); then
        # the variant check (`nixgen.trust`): the digest only, as no torch is named for the
        # client (`trust.noClient`).
        nativeBuildInputs =
          (if variant.framework == "mlx-noarch" then [ ] else [ toolchain.opsCheck ])
          ++ [ (toolchain.variantCheck null) ];
        env = {
          torchOpsCheckDir = moduleDir;
        }
        // trust.env {
          inherit variant;
          project = projectData;
        };
        installPhase = extension.installPhase {
          packageDir = moduleDir;
          inherit opsName;
          compiled = false;
          framework = if variant.framework == "mlx-noarch" then "mlx" else "torch";
          layout = projectData.buildLayout;
          python = pkgs.buildPackages.python3;
          metadataFile = extension.metadataFileOf metadata;
        };
        passthru.nixgen = {
          inherit variant opsName metadata;
        };
      }
    );

  /**
    Every language's builder, by the `language` of a generated file's data: the C++ ones
    (`cpp`), the Rust ones (`nixgen.rust.kernel`), by `data/languages.json`'s `builder`
    (one table with nixgen), and `noarch`, the pure-Python variant.
    Each takes what its generated file is called with, then the data.

    # Examples

    ```nix
    builtins.attrNames languages
    => [ "cpp-cpu" "cpp-cuda" "cpp-metal" "cpp-rocm" "cpp-xpu" "noarch" "rust-cpu" "rust-cuda-oxide" "rust-cutile" ]
    ```
  */
  languages =
    builtins.mapAttrs (
      language: row:
      {
        cpp = cpp;
        rust = rust.kernel;
      }
      .${row.builder}
    ) (builtins.fromJSON (builtins.readFile ./data/languages.json)).languages
    // {
      inherit noarch;
    };

  /**
    The one entry of every generated kernel file and of `noarch.nix`: the builder that
    `languages` holds for the data's `language`, called with the file's arguments and the
    data. An unknown language fails, naming the known ones.

    # Type

    ```
    build :: AttrSet -> { language :: String, ... } -> Derivation
    ```
  */
  build =
    args: data:
    let
      builder =
        languages.${data.language}
          or (throw "nixgen: `${data.language}` is not a kernel language (${builtins.concatStringsSep ", " (builtins.attrNames languages)})");
    in
    builder (builtins.intersectAttrs (builtins.functionArgs builder) args) data;
}
