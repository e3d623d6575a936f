/**
  Build phases that compile a kernel's sources into a static archive, `lib<name>.a`.

  One function per kernel language; each returns the text of a `buildPhase`. Source files
  are compiled by extension (headers are inputs only), one object per source, named after
  its flattened path so two files with one basename cannot collide, then archived
  deterministically (`ar rcsD`). Every value from build.toml is shell-quoted.
*/
{ shell, cuda }:
let
  inherit (builtins)
    any
    concatStringsSep
    filter
    head
    replaceStrings
    stringLength
    substring
    ;
  esc = shell.escapeShellArgs;
  hasSuffix = suffix: s: stringLength s >= stringLength suffix && substring (stringLength s - stringLength suffix) (stringLength suffix) s == suffix;
in
rec {
  /**
    Flags every C++ compile shares: C++20, position-independent code, the C++11 ABI that
    torch wheels use, no `STB_GNU_UNIQUE` symbols (so an extension can be unloaded).

    # Type

    ```
    baseCxxFlags :: [ String ]
    ```
  */
  baseCxxFlags = [
    "-std=c++20"
    "-O2"
    "-fPIC"
    "-D_GLIBCXX_USE_CXX11_ABI=1"
    "-fno-gnu-unique"
  ];

  /**
    Strips the build directory from debug info and `__FILE__`, for reproducible objects.
    Shell text (expanded at build time), never user data.
  */
  prefixMap = "-ffile-prefix-map=$NIX_BUILD_TOP/=";

  /**
    Preprocessor defines that tell one binding which backend it is compiled for.

    # Examples

    ```nix
    backendDefines.cuda
    => [ "-DCUDA_KERNEL" "-DUSE_CUDA=1" ]
    ```
  */
  backendDefines = {
    cpu = [ "-DCPU_KERNEL" ];
    cuda = [ "-DCUDA_KERNEL" "-DUSE_CUDA=1" ];
    rocm = [ "-DROCM_KERNEL" "-DUSE_ROCM=1" ];
    xpu = [ "-DXPU_KERNEL" "-DUSE_XPU" ];
    metal = [ "-DMETAL_KERNEL" ];
  };

  /**
    `-I` flags for include directories relative to the source root.

    # Examples

    ```nix
    includeFlags [ "relu_cpu" "." ]
    => [ "-Irelu_cpu" "-I." ]
    ```
  */
  includeFlags = map (dir: "-I${dir}");

  /**
    The object file name of a source: its path with `/` turned into `__`.

    # Examples

    ```nix
    objectName "relu_cpu/relu.cpp"
    => "relu_cpu%2Frelu.cpp.o"
    ```

    The encoding is one-to-one (`%` → `%25`, `/` → `%2F`), so two sources never share an
    object name (`a/b_c.cpp` and `a_b/c.cpp` stay apart); archives keep base names only.
  */
  objectName = src: replaceStrings [ "%" "/" ] [ "%25" "%2F" ] src + ".o";

  /**
    A source path as a command-line argument: a name that starts with `-` gets `./`, so
    the compiler reads it as a file, never as an option.

    # Example

    ```nix
    sourceArg "-x.cpp"
    => "./-x.cpp"
    ```
  */
  sourceArg = src: if substring 0 1 src == "-" then "./${src}" else src;

  /**
    A build phase compiling `sources` with the first matching rule and archiving the
    objects into `lib<name>.a`. A rule is `{ extensions; command; }` where `command` is
    shell text (the compiler and its quoted flags). `prelude` runs before the first compile
    (files the sources include, such as an embedded Metal library).

    # Type

    ```
    archivePhase :: { name :: String, sources :: [ String ], rules :: [ Rule ], prelude :: String ? } -> String
    ```
  */
  archivePhase =
    {
      name,
      sources,
      rules,
      prelude ? "",
    }:
    let
      ruleFor =
        src:
        let
          matching = filter (rule: any (ext: hasSuffix ".${ext}" src) rule.extensions) rules;
        in
        if matching == [ ] then null else head matching;
      compiled = filter (src: ruleFor src != null) sources;
      object = src: "nixgen-obj/${objectName src}";
      compile = src: "${(ruleFor src).command} -c ${shell.escapeShellArg (sourceArg src)} -o ${shell.escapeShellArg (object src)}";
    in
    ''
      runHook preBuild
      mkdir -p nixgen-obj
      ${prelude}
      ${concatStringsSep "\n" (map compile compiled)}
      ar rcsD ${shell.escapeShellArg "lib${name}.a"} ${esc (map object compiled)}
      runHook postBuild
    '';

  /**
    An install phase putting `lib<name>.a` into `$out/lib`.

    # Type

    ```
    installArchivePhase :: String -> String
    ```
  */
  installArchivePhase = name: ''
    runHook preInstall
    install -Dm644 ${shell.escapeShellArg "lib${name}.a"} "$out/lib/"${shell.escapeShellArg "lib${name}.a"}
    runHook postInstall
  '';

  /**
    Shell text copying one file inside the source tree (both paths relative to it).

    # Examples

    ```nix
    copyPhase "Cargo.lock" "crate/Cargo.lock"
    => "cp Cargo.lock crate/Cargo.lock\n"
    ```
  */
  copyPhase = from: to: "cp ${shell.escapeShellArg from} ${shell.escapeShellArg to}\n";

  cxxExtensions = [ "cpp" "cc" "cxx" "c++" ];

  /**
    Whether a source is C++ compiled by the stdenv's compiler (by its extension).

    # Examples

    ```nix
    map isCxx [ "b.c++" "b.c" "b.cpp" "b.h" ]
    => [ true false true false ]
    ```
  */
  isCxx = src: any (ext: hasSuffix ".${ext}" src) cxxExtensions;

  /**
    Rule for C and C++ sources compiled by the stdenv's compiler.

    # Inputs

    `flags`
    : extra flags after the shared ones (defines, dependency includes, include dirs,
      the kernel's `cxx-flags` last so they win)
  */
  cxxRules = flags: [
    {
      extensions = cxxExtensions;
      command = "$CXX ${prefixMap} ${esc (baseCxxFlags ++ flags)}";
    }
    {
      extensions = [ "c" ];
      command = "$CC ${prefixMap} ${esc ([ "-O2" "-fPIC" ] ++ flags)}";
    }
  ];

  /**
    Build phase of a `cpp-cpu` kernel.

    # Type

    ```
    cppCpu :: { name, sources, includes, cxxFlags, depFlags } -> String
    ```
  */
  cppCpu =
    {
      name,
      sources,
      includes,
      cxxFlags,
      depFlags ? [ ],
    }:
    archivePhase {
      inherit name sources;
      rules = cxxRules (backendDefines.cpu ++ depFlags ++ includeFlags includes ++ cxxFlags);
    };

  /**
    A flag as nvcc takes it: nvcc rejects the host compiler's path-mapping options
    (`-ffile-prefix-map=…`, e.g. from `nixgen.torch.includeFlags`), so those go to the host
    compiler through `-Xcompiler`; every other flag is passed as it is.

    # Examples

    ```nix
    map nvccFlag [ "-isystem" "/t/include" "-ffile-prefix-map=/t/include/=torch/include/" ]
    => [ "-isystem" "/t/include" "-Xcompiler=-ffile-prefix-map=/t/include/=torch/include/" ]
    ```
  */
  nvccFlag =
    flag:
    if builtins.match "-f(file|macro|debug)-prefix-map=.*" flag != null then "-Xcompiler=${flag}" else flag;

  /**
    Build phase of a `cpp-cuda` kernel: `.cu` with nvcc for each capability, C++ with the
    host compiler.

    # Inputs

    `capabilities`
    : the capabilities to compile for (already intersected with the toolkit's)

    `cudaFlags`
    : the kernel's `cuda-flags`, after nixgen's own nvcc flags
  */
  cppCuda =
    {
      name,
      sources,
      includes,
      cxxFlags,
      cudaFlags,
      capabilities,
      depFlags ? [ ],
    }:
    let
      defines = backendDefines.cuda;
      hostFlags = "-Xcompiler=-fPIC,-fno-gnu-unique,${prefixMap}";
    in
    archivePhase {
      inherit name sources;
      rules = [
        {
          extensions = [ "cu" ];
          command = "nvcc -ccbin \"$CXX\" ${hostFlags} ${
            esc (
              [
                "-std=c++20"
                "-O2"
                "-D_GLIBCXX_USE_CXX11_ABI=1"
                "--expt-relaxed-constexpr"
              ]
              ++ defines
              ++ cuda.gencodeFlags capabilities
              ++ map nvccFlag depFlags
              ++ includeFlags includes
              ++ cudaFlags
            )
          }";
        }
      ]
      ++ cxxRules (defines ++ depFlags ++ includeFlags includes ++ cxxFlags);
    };

  /**
    Build phase of a `cpp-rocm` kernel: HIP sources (`.cu`, `.hip`) with hipcc for each
    `--offload-arch`, C++ with the host compiler.
  */
  cppRocm =
    {
      name,
      sources,
      includes,
      cxxFlags,
      hipFlags,
      archs,
      depFlags ? [ ],
    }:
    let
      defines = backendDefines.rocm;
    in
    archivePhase {
      inherit name sources;
      rules = [
        {
          extensions = [ "cu" "hip" ];
          command = "hipcc ${prefixMap} ${
            esc (
              baseCxxFlags
              ++ defines
              ++ map (arch: "--offload-arch=${arch}") archs
              ++ depFlags
              ++ includeFlags includes
              ++ hipFlags
            )
          }";
        }
      ]
      ++ cxxRules (defines ++ depFlags ++ includeFlags includes ++ cxxFlags);
    };

  /**
    Build phase of a `cpp-xpu` kernel: SYCL C++ with the oneAPI compiler (`icpx -fsycl`).
  */
  cppXpu =
    {
      name,
      sources,
      includes,
      cxxFlags,
      syclFlags,
      depFlags ? [ ],
    }:
    archivePhase {
      inherit name sources;
      rules = [
        {
          extensions = cxxExtensions;
          command = "icpx -fsycl ${prefixMap} ${
            esc (baseCxxFlags ++ backendDefines.xpu ++ depFlags ++ includeFlags includes ++ cxxFlags ++ syclFlags)
          }";
        }
        {
          extensions = [ "c" ];
          command = "icx ${prefixMap} ${
            esc ([ "-O2" "-fPIC" ] ++ backendDefines.xpu ++ depFlags ++ includeFlags includes ++ cxxFlags)
          }";
        }
      ];
    };

  /**
    Build phase of a `cpp-metal` kernel: Metal shaders (`.metal`) are compiled first into
    `<name>.metallib`, which is embedded in the generated header `<name>_metallib.h`
    (`nix/support/metal/metallib-header.py`; the sources reach it through the definitions
    `EMBEDDED_METALLIB_HEADER` and `EMBEDDED_METALLIB_NAMESPACE = <name>_metal`, as in the
    anchor's Metal build); then Objective-C++ (`.mm`) and C++ compile with clang.
    `installMetalPhase` installs the archive and the metallib.
  */
  cppMetal =
    {
      name,
      sources,
      includes,
      cxxFlags,
      depFlags ? [ ],
    }:
    let
      shaders = filter (hasSuffix ".metal") sources;
      air = src: "nixgen-obj/${replaceStrings [ "%" "/" ] [ "%25" "%2F" ] src}.air";
      embedded =
        if shaders == [ ] then
          [ ]
        else
          [
            "-Inixgen-metal"
            "-DEMBEDDED_METALLIB_HEADER=\"${name}_metallib.h\""
            "-DEMBEDDED_METALLIB_NAMESPACE=${name}_metal"
          ];
      flags = backendDefines.metal ++ depFlags ++ includeFlags includes ++ embedded ++ cxxFlags;
      metal = src: "xcrun -sdk macosx metal -std=metal4.0 -O2 ${esc (includeFlags includes)} -c ${shell.escapeShellArg (sourceArg src)} -o ${shell.escapeShellArg (air src)}";
    in
    archivePhase {
      inherit name sources;
      prelude =
        if shaders == [ ] then
          ""
        else
          ''
            mkdir -p nixgen-metal
            ${concatStringsSep "\n" (map metal shaders)}
            xcrun -sdk macosx metallib ${esc (map air shaders)} -o ${shell.escapeShellArg "${name}.metallib"}
            python3 ${./support/metal/metallib-header.py} ${shell.escapeShellArg "${name}.metallib"} ${shell.escapeShellArg "nixgen-metal/${name}_metallib.h"} ${shell.escapeShellArg name}
          '';
      rules = [
        {
          extensions = [ "mm" ];
          command = "$CXX -x objective-c++ -fobjc-arc ${esc (baseCxxFlags ++ flags)}";
        }
      ]
      ++ cxxRules flags;
    };

  /**
    Install phase of a `cpp-metal` kernel: `lib<name>.a` and, when the kernel has shaders,
    `<name>.metallib` into `$out/lib`.

    # Type

    ```
    installMetalPhase :: { name :: String, sources :: [ String ] } -> String
    ```
  */
  installMetalPhase =
    { name, sources }:
    ''
      runHook preInstall
      install -Dm644 ${shell.escapeShellArg "lib${name}.a"} "$out/lib/"${shell.escapeShellArg "lib${name}.a"}
      ${
        if any (hasSuffix ".metal") sources then
          ''install -Dm644 ${shell.escapeShellArg "${name}.metallib"} "$out/lib/"${shell.escapeShellArg "${name}.metallib"}''
        else
          ""
      }
      runHook postInstall
    '';
}
