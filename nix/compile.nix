/**
  Build phases that compile a kernel's sources into a static archive, `lib<name>.a`.

  One function per kernel language; each returns a build plan (`plan`: data, one compile
  command per source), which `configurePhase` writes as a `build.ninja` that ninja's setup
  hook runs on `$NIX_BUILD_CORES` cores, and which `withObjects` can split into one
  derivation per object. Source files are compiled by extension (headers are inputs only),
  one object per source, named after its flattened path so two files with one basename
  cannot collide, then archived deterministically (`ar rcsD`). Every value from build.toml
  is shell-quoted.
*/
{
  lib,
  cuda,
  sources,
}:
let
  # nixpkgs' quoting (`escapeShellArg`, `escapeShellArgs` of lib/strings.nix).
  shell = lib.strings;
  inherit (builtins)
    any
    concatStringsSep
    filter
    head
    replaceStrings
    stringLength
    substring
    ;
  inherit (lib.strings) hasSuffix;
  esc = shell.escapeShellArgs;
  # Source kinds by extension: one table, read by nixgen too (`data/source-kinds.json`).
  kinds = (builtins.fromJSON (builtins.readFile ./data/source-kinds.json)).kinds;
  isKind = kind: src: any (ext: hasSuffix ".${ext}" src) kinds.${kind};
in
rec {
  /**
    The flags nixgen gives each compiler family, as data: a rule's driver decides its flags,
    and a driver never gets a flag it does not read (`-fno-gnu-unique` is GCC's alone; clang
    rejects it). `cxx` are a C++ compile's (C++20, position-independent code, the C++11 ABI
    that torch wheels use), `c` a C compile's, and `codegen` what a compiler driving this one
    as its host compiler passes on (nvcc's `-Xcompiler`).

    - `gcc`: GCC, the Linux stdenvs (`manylinux_2_28`) and so nvcc's host compiler there; no
      `STB_GNU_UNIQUE` symbols, so an extension can be unloaded
    - `clang`: clang and Apple clang (the darwin stdenv, Metal's Objective-C++)
    - `hipcc`: ROCm's clang, driven by `hipcc`
    - `icpx`: Intel's oneAPI clang (`icpx -fsycl`, `icx`)
    - `nvcc`: nvcc's own flags (its host compiler's come from that compiler's `codegen`);
      what torch's CMake config gives a CUDA extension (`--expt-relaxed-constexpr`,
      `--expt-extended-lambda`, …) is read from the variant's torch, not written here
      (`cppCuda`'s `frameworkFlags`)

    Which family `$CXX` and `$CC` are is the toolchain's (`toolchains.<backend>.cxxFamily`).
    tests/test_compilers.py runs every rule of every backend through its family's real
    driver.

    # Examples

    ```nix
    builtins.elem "-fno-gnu-unique" families.clang.cxx
    => false
    ```
  */
  families =
    let
      cxx = [
        "-std=c++20"
        "-O2"
        "-fPIC"
        "-D_GLIBCXX_USE_CXX11_ABI=1"
      ];
      c = [
        "-O2"
        "-fPIC"
      ];
    in
    {
      gcc = {
        cxx = cxx ++ [ "-fno-gnu-unique" ];
        inherit c;
        codegen = [
          "-fPIC"
          "-fno-gnu-unique"
        ];
      };
      clang = {
        inherit cxx c;
        codegen = [ "-fPIC" ];
      };
      hipcc = {
        inherit cxx;
      };
      icpx = {
        cxx = [ "-fsycl" ] ++ cxx;
        inherit c;
      };
      nvcc = {
        cxx = [
          "-std=c++20"
          "-O2"
          "-D_GLIBCXX_USE_CXX11_ABI=1"
        ];
      };
    };

  /**
    The family of a compiler driver `family` names (`families`), or an error naming the
    known ones.
  */
  family =
    name:
    families.${name}
      or (throw "nixgen: no compiler family `${toString name}` (known: ${concatStringsSep ", " (builtins.attrNames families)})");

  /**
    Strips the build directory from debug info and `__FILE__`, for reproducible objects.
    Shell text (expanded at build time), never user data.
  */
  prefixMap = "-ffile-prefix-map=$NIX_BUILD_TOP/=";

  /**
    Preprocessor defines that tell one binding which backend it is compiled for
    (`data/languages.json`'s `defines`, one table with nixgen).

    # Examples

    ```nix
    backendDefines.cuda
    => [ "-DCUDA_KERNEL" "-DUSE_CUDA=1" ]
    ```
  */
  backendDefines = builtins.mapAttrs (_: b: b.defines) (builtins.fromJSON (builtins.readFile ./data/languages.json)).backends;

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
    The object file name of a source: its path with `/` encoded, so that it is one file
    name.

    # Examples

    ```nix
    objectName "relu_cpu/relu.cpp"
    => "relu_cpu%2Frelu.cpp.o"
    ```

    The encoding is one-to-one (`%` → `%25`, `/` → `%2F`), so two sources never share an
    object name (`a/b_c.cpp` and `a_b/c.cpp` stay apart); archives keep base names only.
    A name that would be longer than `maxObjectName` bytes (a file name holds 255) is its
    first 120 bytes, `%h` and the SHA-256 of the whole path: still one-to-one (the encoding
    never writes `%h`), and short whatever the source path.
  */
  objectName =
    src:
    let
      encoded = replaceStrings [ "%" "/" ] [ "%25" "%2F" ] src;
    in
    if stringLength encoded + 2 <= maxObjectName then
      encoded + ".o"
    else
      "${substring 0 120 encoded}%h${builtins.hashString "sha256" src}.o";

  /**
    The longest object file name `objectName` makes (bytes), well under the 255 bytes of
    a file name, so that a tool's own suffixes (`.d`, `.tmp`) still fit.

    # Type

    ```
    maxObjectName :: Int
    ```
  */
  maxObjectName = 200;

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
    The build plan of a kernel: which object each source compiles to, with which command,
    and the archive that collects them. Plain data, so a caller can inspect or extend it
    (`plan // { objects = …; }`) before `configurePhase` turns it into a `build.ninja`.

    Sources are compiled by the first rule whose extensions match; the others (headers)
    are inputs of every object. A rule is `{ extensions; command; compiler ? }` where
    `command` is shell text (the compiler and its quoted flags) and `compiler` the family of
    its driver (`families`), which the rule's objects record as `compiler`.

    # Type

    ```
    plan :: { name :: String, sources :: [ String ], rules :: [ Rule ] }
      -> { name, archive, headers, objects :: [ { source, object, command } ], extraEdges, objectInputs, nvccTargets }
    ```

    # Examples

    ```nix
    (plan { name = "k"; sources = [ "k.cpp" "k.h" ]; rules = [ { extensions = [ "cpp" ]; command = "CXX"; } ]; }).objects
    => [ { source = "k.cpp"; object = "nixgen-obj/k.cpp.o"; command = "CXX -c k.cpp -o nixgen-obj/k.cpp.o"; } ]
    ```
  */
  plan =
    {
      name,
      sources,
      rules,
    }:
    let
      ruleFor =
        src:
        let
          matching = filter (rule: any (ext: hasSuffix ".${ext}" src) rule.extensions) rules;
        in
        if matching == [ ] then null else head matching;
      compiled = filter (src: ruleFor src != null) sources;
      # The family of the driver that compiles `src`, when its rule names one.
      compilerOf =
        src:
        let
          rule = ruleFor src;
        in
        if rule ? compiler then { inherit (rule) compiler; } else { };
      object = src: "nixgen-obj/${objectName src}";
    in
    {
      inherit name;
      archive = "lib${name}.a";
      headers = filter (src: ruleFor src == null) sources;
      objects = map (src: {
        source = src;
        object = object src;
        command = "${(ruleFor src).command} -c ${shell.escapeShellArg (sourceArg src)} -o ${shell.escapeShellArg (object src)}";
      } // compilerOf src) compiled;
      # Steps besides compiling and archiving (`{ outputs; inputs; command; }`).
      extraEdges = [ ];
      # Files every object needs besides its source: outputs of `extraEdges` that the
      # sources include (the embedded Metal library's header).
      objectInputs = [ ];
      # Gencode targets of each `.cu` source (> 1: nvcc gets `--threads`).
      nvccTargets = 0;
    };

  /**
    The steps (ninja edges) of a plan: one per object, then the archive (`ar rcsD`: no
    timestamps, members in source order, read from the response file `responseFile`), then
    the plan's extra steps. An edge is `{ outputs; inputs; command; }` with shell-text
    commands, and `response = { file; text; }` when its command reads a response file that
    `configurePhase` writes first: no command grows with the number of objects (one
    argument of `sh -c` holds at most 128 kB on Linux, and no regular expression reads a
    command whole).

    # Type

    ```
    edges :: Plan -> [ Edge ]
    ```
  */
  edges =
    plan:
    let
      # An object built by its own derivation (`withObjects`) is read from the store.
      path = o: o.prebuilt or o.object;
      paths = map path plan.objects;
      rsp = responseFile plan.archive;
    in
    map (o: {
      outputs = [ o.object ];
      inputs = [ o.source ] ++ plan.objectInputs or [ ];
      inherit (o) command;
    }) (filter (o: !(o ? prebuilt)) plan.objects)
    ++ (
      if plan.archive == null then
        [ ]
      else
        [
          {
            outputs = [ plan.archive ];
            inputs = paths;
            # The members are read from a response file (`configurePhase` writes it), so
            # the command stays short whatever the number of objects.
            command = "rm -f ${shell.escapeShellArg plan.archive} && ar rcsD ${shell.escapeShellArg plan.archive} @${rsp}";
            response = {
              file = rsp;
              text = esc paths;
            };
          }
        ]
    )
    ++ plan.extraEdges;

  /**
    Where `configurePhase` writes the response file (`@file`) of the archive `archive`:
    its members, shell-quoted and separated by spaces, as ar reads it (GNU and LLVM ar
    take the same quoting as a POSIX shell's single quotes).

    # Examples

    ```nix
    responseFile "libk.a"
    => "nixgen-cmd/libk.a.rsp"
    ```
  */
  responseFile = archive: "nixgen-cmd/${replaceStrings [ "%" "/" ] [ "%25" "%2F" ] (toString archive)}.rsp";

  /**
    A path as a ninja build line needs it (`$`, space and `:` escaped). A line break cannot
    be written in a build.ninja path at all, so it is an error (`ninjaFile` never passes
    one: see there).

    # Examples

    ```nix
    ninjaPath "my dir/a:b.cpp"
    => "my$ dir/a$:b.cpp"
    ```
  */
  ninjaPath =
    s:
    if lineBreak s then
      throw "nixgen: the path ${builtins.toJSON s} contains a line break, which a build.ninja cannot hold"
    else
      replaceStrings [ "$" " " ":" ] [ "$$" "$ " "$:" ] s;

  /**
    Whether a string holds a character a ninja line cannot (ninja also rejects a lone CR).
    No regular expression: Nix's regex engine recurses once per character, so a
    `match` over a long command overflows the stack.

    # Examples

    ```nix
    map lineBreak [ "a b" "a\rb" ]
    => [ false true ]
    ```
  */
  lineBreak = holds [ "\n" "\r" ];

  # Whether `s` holds one of the strings `needles` (linear, no regular expression).
  holds = needles: s: replaceStrings needles (map (_: "") needles) s != s;

  /**
    The text of a `build.ninja` running `edges`: one rule whose command is each edge's own
    shell text (ninja runs it with `/bin/sh -c`, so `$CXX` is read from the build's
    environment); every edge's outputs are built by default. Commands must not hold a
    line break (`configurePhase` puts such a command into a script).

    # Type

    ```
    ninjaFile :: [ Edge ] -> String
    ```
  */
  ninjaFile =
    edges:
    let
      value =
        s:
        if lineBreak s then
          throw "nixgen: a build command contains a line break, which a build.ninja cannot hold: ${builtins.toJSON s}"
        else
          replaceStrings [ "$" ] [ "$$" ] s;
      # Ninja cannot name a path with a line break or a `|` (no escape exists): such an
      # output gets a stand-in name (its command still writes the real file), and such a
      # source is left out of the inputs (the build is from scratch anyway).
      nameable = p: !(holds [ "\n" "\r" "|" ] p);
      outputs = builtins.concatMap (e: e.outputs) edges;
      name = p: if nameable p then ninjaPath p else "nixgen-unnamed/${builtins.hashString "sha256" p}";
      paths = ps: concatStringsSep " " (map name ps);
      inputs = filter (p: nameable p || builtins.elem p outputs);
      edge = e: ''
        build ${paths e.outputs}: run ${paths (inputs e.inputs)}
          cmd = ${value e.command}
          desc = ${value (concatStringsSep " " e.outputs)}
      '' + (if e.serial or false then "  pool = serial\n" else "");
      pools = if builtins.any (e: e.serial or false) edges then "pool serial\n  depth = 1\n" else "";
    in
    ''
      # Generated by nixgen's Nix library (compile.nix) from the derivation's build plan.
      ninja_required_version = 1.3
      rule run
        command = $cmd
        description = $desc
      ${pools}${concatStringsSep "" (map edge edges)}
    '';

  /**
    Whether the edges of `plan` run one at a time (`serial`, a ninja pool of depth 1): when
    the derivation compiles a CUDA source beside any other process. nvcc writes its own
    process id into every object (the `tmpxft_<pid>_…` names of its intermediate files,
    kept in symbol names); in the sandbox's PID namespace that id is the same from build to
    build only when processes start in the same order, which parallel edges do not promise.
    One at a time, each nvcc still uses the build's cores for its gencode targets
    (`--threads`, `nvccThreads`). A kernel built one derivation per object (`withObjects`)
    compiles one source a derivation and is not held back.

    # Type

    ```
    serialEdges :: Plan -> Bool
    ```
  */
  serialEdges =
    plan:
    let
      compiled = filter (o: !(o ? prebuilt)) plan.objects;
    in
    builtins.length compiled > 1 && any (o: isKind "cuda" o.source) compiled;

  /**
    A configure phase writing the plan's `build.ninja` (like CMake's configure step); the
    build phase is then ninja's setup hook (`ninjaBuildPhase`, real nixpkgs
    `pkgs/by-name/ni/ninja/setup-hook.sh`), which runs `ninja -j$NIX_BUILD_CORES` unless
    `enableParallelBuilding = false`. Override `ninjaFlags`, `postConfigure` (to edit
    `build.ninja`) or this phase itself with `overrideAttrs`; a C++ kernel's phase is made
    from its derivation's attributes (`cxxFlags`, `sources`…, see `kernel.cpp`), so
    overriding those rewrites it.

    # Type

    ```
    configurePhase :: Plan -> String
    ```
  */
  configurePhase =
    plan:
    let
      serial = serialEdges plan;
      all = map (e: e // { inherit serial; }) (edges plan);
      # A command with a line break (a flag such as "a\nb", quoted) cannot be a ninja
      # line: it goes into a script that the edge runs.
      script = i: "nixgen-cmd/${toString i}.sh";
      steps = builtins.genList (
        i:
        let
          edge = builtins.elemAt all i;
        in
        # An edge's response file (the archive's members) is written here too.
        (
          if edge ? response then
            {
              write = "printf '%s\\n' ${shell.escapeShellArg edge.response.text} > ${shell.escapeShellArg edge.response.file}\n";
            }
          else
            { write = ""; }
        )
        // (
          if lineBreak edge.command then
            {
              edge = edge // { command = "sh ${script i}"; };
              script = "printf '%s\\n' ${shell.escapeShellArg edge.command} > ${script i}\n";
            }
          else
            {
              inherit edge;
              script = "";
            }
        )
      ) (builtins.length all);
      writes = concatStringsSep "" (map (step: step.script + step.write) steps);
    in
    ''
      runHook preConfigure
      mkdir -p nixgen-obj
    ''
    + (if writes == "" then "" else "mkdir -p nixgen-cmd\n" + writes)
    + ''
      printf '%s' ${shell.escapeShellArg (ninjaFile (map (step: step.edge) steps))} > build.ninja
    ''
    + nvccThreads {
      targets = plan.nvccTargets;
      # One at a time (`serialEdges`), each nvcc may take every core.
      sources =
        if serial then
          1
        else
          builtins.length (filter (o: isKind "cuda" o.source) plan.objects);
    }
    + ''
      runHook postConfigure
    '';

  /**
    A kernel derivation whose objects are built one derivation each, as nixgen planned it
    (`mode` `"auto"`: the sources of `passthru.nixgen.plannedObjects`, which is null for a
    kernel built in one derivation; nixgen decides it, `KernelPlan.objects` in
    nixgen/planning/kernels.py, and names each object's derivation there), or never
    (`"ninja"`). The decision is the rendered plan's, read from the final attributes: each
    final source that nixgen planned gets its own derivation, named as planned; one it did
    not plan (added by an `overrideAttrs` of `sources`) is compiled by the kernel itself,
    and a kernel left with no planned source builds in one derivation (`objects` null). An
    override of `passthru.nixgen.plannedObjects` changes the split. Each object derivation
    is the kernel with its sources cut down to the one source (the kernel's headers come
    as one store path shared by every object), so editing one source rebuilds that object,
    the archive and the link, and objects can come from a binary cache. The archive is
    byte-identical to the one `configurePhase` builds (members keep their names; each
    object builds in a directory named like the kernel's).

    A fixed point, like the kernel: the split, the objects and their compile commands are
    made from the final attributes (`finalAttrs.passthru.nixgen.plan`, which the kernel
    makes from its own final attributes), so an `overrideAttrs` of the result
    (`cxxFlags = o.cxxFlags ++ [ "-DX=1" ]`) reaches every object's compile command, and
    each object derivation is the final package with the object's attributes on top.
    `passthru.nixgen.objects` lists the object derivations (null when the kernel builds in
    one derivation).

    # Inputs

    `lib`
    : nixpkgs `lib` (for `lib.fileset`)

    `root`
    : the project root (a path)

    `mode`
    : `"auto"` (default) or `"ninja"`

    # Type

    ```
    withObjects :: { lib, root, mode ? String } -> Derivation -> Derivation
    ```
  */
  withObjects =
    {
      lib,
      root,
      mode ? "auto",
    }:
    kernel:
    let
      modes = [
        "auto"
        "ninja"
      ];
      # Whether object `o` of the final kernel (its `passthru.nixgen`) is built by its own
      # derivation: nixgen planned its source so (`plannedObjects`: source → `{ key, pname }`,
      # or null).
      separate = nixgen: o: nixgen.plannedObjects != null && nixgen.plannedObjects ? ${o.source};
      # The derivation of object `o` of `plan`: `package` (the final kernel) with its
      # sources cut down to the object's, named as planned (`pname`); `headers` the
      # kernel's headers (a store path).
      objectDrv =
        package: plan: headers: pname: o:
        package.overrideAttrs (old: {
          inherit pname;
          # Not the kernel's source tree: an edit to another source must not reach here.
          src = null;
          sources = [ o.source ];
          dontUnpack = true;
          configurePhase = ''
            mkdir source
            cd source
            ${if headers == null then "" else ''cp -r --no-preserve=mode ${headers}/. .''}
            mkdir -p "$(dirname ${shell.escapeShellArg (sourceArg o.source)})"
            cp --no-preserve=mode ${builtins.path {
              path = root + "/${o.source}";
              name = "source";
            }} ${shell.escapeShellArg (sourceArg o.source)}
          ''
          + configurePhase (
            plan
            // {
              objects = [ o ];
              archive = null;
              extraEdges = [ ];
            }
          );
          installPhase = ''
            runHook preInstall
            install -Dm644 ${shell.escapeShellArg o.object} "$out/"${shell.escapeShellArg (objectName o.source)}
            runHook postInstall
          '';
          passthru = { };
        });
      # The attributes that split the final kernel `finalAttrs` (`old`: the ones below).
      split =
        finalAttrs: old:
        let
          plan = finalAttrs.passthru.nixgen.plan;
          # The headers go into every object: one store path shared by all of them.
          headers = if plan.headers == [ ] then null else sources.select lib root plan.headers;
          own = separate finalAttrs.passthru.nixgen;
          built = map (o: {
            plan = o;
            drv = objectDrv finalAttrs.finalPackage plan headers finalAttrs.passthru.nixgen.plannedObjects.${o.source}.pname o;
          }) (filter own plan.objects);
          drvs = builtins.listToAttrs (map (b: { name = b.plan.source; value = b.drv; }) built);
          on = built != [ ];
        in
        # The same attribute names either way, at every level the plan is read through:
        # names must not depend on the fixed point.
        {
          configurePhase =
            if on then
              configurePhase (
                plan
                // {
                  # A source without a key (an override's) compiles here.
                  objects = map (
                    o: if own o then o // { prebuilt = "${drvs.${o.source}}/${objectName o.source}"; } else o
                  ) plan.objects;
                }
              )
            else
              old.configurePhase;
          # `objects`: null when the kernel builds in one derivation.
          passthru = old.passthru // {
            nixgen = old.passthru.nixgen // {
              objects = if on then map (b: b.drv) built else null;
            };
          };
        };
    in
    if !(builtins.elem mode modes) then
      throw "nixgen: compile.withObjects: mode `${toString mode}` is not one of ${builtins.concatStringsSep ", " modes}"
    else if !(kernel.passthru.nixgen or { } ? plan) || mode == "ninja" then
      kernel
    else
      kernel.overrideAttrs split;

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
  copyPhase = from: to: "cp ${shell.escapeShellArg (sourceArg from)} ${shell.escapeShellArg (sourceArg to)}\n";

  cxxExtensions = kinds.cxx;

  /**
    Whether a source is C++ compiled by the stdenv's compiler (by its extension).

    # Examples

    ```nix
    map isCxx [ "b.c++" "b.c" "b.cpp" "b.h" ]
    => [ true false true false ]
    ```
  */
  isCxx = isKind "cxx";

  /**
    Rules for C and C++ sources compiled by the stdenv's compiler (`$CXX`, `$CC`), whose
    family (`families`) is the toolchain's `cxxFamily`: GCC on Linux, clang on darwin.

    # Inputs

    `cxxFamily`
    : the family of the stdenv's compiler

    `flags`
    : extra flags after the family's (defines, dependency includes, include dirs,
      the kernel's `cxx-flags` last so they win)
  */
  cxxRules = cxxFamily: flags: [
    {
      extensions = cxxExtensions;
      compiler = cxxFamily;
      command = "$CXX ${prefixMap} ${esc ((family cxxFamily).cxx ++ flags)}";
    }
    {
      extensions = kinds.c;
      compiler = cxxFamily;
      command = "$CC ${prefixMap} ${esc ((family cxxFamily).c ++ flags)}";
    }
  ];

  /**
    Build plan of a `cpp-cpu` kernel. `cxxFamily` (every plan function takes it) is the
    family of the toolchain's `$CXX` (`toolchains.<backend>.cxxFamily`, default GCC).

    # Type

    ```
    cppCpu :: { name, sources, includes, cxxFlags, depFlags, cxxFamily ? String } -> Plan
    ```
  */
  cppCpu =
    {
      name,
      sources,
      includes,
      cxxFlags,
      depFlags ? [ ],
      cxxFamily ? "gcc",
    }:
    plan {
      inherit name sources;
      rules = cxxRules cxxFamily (backendDefines.cpu ++ depFlags ++ includeFlags includes ++ cxxFlags);
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
    Build plan of a `cpp-cuda` kernel: `.cu` with nvcc for each capability, C++ with the
    host compiler.

    # Inputs

    `capabilities`
    : the capabilities to compile for (already intersected with the toolkit's)

    `cudaFlags`
    : the kernel's `cuda-flags`, after nixgen's own nvcc flags

    `frameworkFlags`
    : what the framework gives every compile: `nvcc` flags after nixgen's own, `cxx`
      flags after the backend's defines (a torch variant's come from torch's CMake config,
      `toolchains.cuda.torchFlags`)

    nvcc's host compiler is the stdenv's (`$CXX`, family `cxxFamily`): it gets that
    family's `codegen` flags through `-Xcompiler`.
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
      cxxFamily ? "gcc",
      frameworkFlags ? {
        nvcc = [ ];
        cxx = [ ];
      },
    }:
    let
      defines = backendDefines.cuda;
      hostFlags = "-Xcompiler=${concatStringsSep "," ((family cxxFamily).codegen ++ [ prefixMap ])}";
      targets = cuda.targetCount capabilities;
    in
    plan {
      inherit name sources;
      rules = [
        {
          extensions = kinds.cuda;
          compiler = "nvcc";
          # With several gencode targets, nvcc compiles them side by side on
          # `--threads` threads (how many: `nvccThreads`, at build time). The host compiler
          # is the stdenv's, by full path: nixpkgs' nvcc wrapper puts its own backend
          # compiler first on nvcc's PATH, where a bare `-ccbin g++` would find it.
          command = "nvcc -ccbin \"$(command -v \"$CXX\")\" ${hostFlags}${
            if targets > 1 then " --threads=\"\${NIXGEN_NVCC_THREADS:-1}\"" else ""
          } ${
            esc (
              families.nvcc.cxx
              ++ frameworkFlags.nvcc
              ++ defines
              ++ cuda.gencodeFlags capabilities
              ++ map nvccFlag depFlags
              ++ includeFlags includes
              ++ cudaFlags
            )
          }";
        }
      ]
      ++ cxxRules cxxFamily (defines ++ frameworkFlags.cxx ++ depFlags ++ includeFlags includes ++ cxxFlags);
    }
    // {
      nvccTargets = targets;
    };

  /**
    Shell text exporting `NIXGEN_NVCC_THREADS`: the build's cores shared out among the
    `.cu` sources, at least 1 and at most the number of gencode targets (what nvcc can
    compile side by side).

    # Type

    ```
    nvccThreads :: { targets :: Int, sources :: Int } -> String
    ```
  */
  nvccThreads =
    { targets, sources }:
    if targets < 2 || sources == 0 then
      ""
    else
      ''
        NIXGEN_NVCC_THREADS=$(( (NIX_BUILD_CORES + ${toString sources} - 1) / ${toString sources} ))
        if [ "$NIXGEN_NVCC_THREADS" -gt ${toString targets} ]; then NIXGEN_NVCC_THREADS=${toString targets}; fi
        export NIXGEN_NVCC_THREADS
      '';

  /**
    Build plan of a `cpp-rocm` kernel: HIP sources (`.cu`, `.hip`) with hipcc (ROCm's
    clang) for each `--offload-arch`, C++ with the host compiler.
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
      cxxFamily ? "gcc",
    }:
    let
      defines = backendDefines.rocm;
    in
    plan {
      inherit name sources;
      rules = [
        {
          extensions = kinds.hip;
          compiler = "hipcc";
          command = "hipcc ${prefixMap} ${
            esc (
              families.hipcc.cxx
              ++ defines
              ++ map (arch: "--offload-arch=${arch}") archs
              ++ depFlags
              ++ includeFlags includes
              ++ hipFlags
            )
          }";
        }
      ]
      ++ cxxRules cxxFamily (defines ++ depFlags ++ includeFlags includes ++ cxxFlags);
    };

  /**
    Build plan of a `cpp-xpu` kernel: SYCL C++ with the oneAPI compiler (`icpx -fsycl`),
    C with `icx`, both Intel's clang (`families.icpx`; `cxxFamily` is not used: no source
    is compiled by `$CXX`). The kernel's `sycl-flags` (`-fsycl-targets=…`) come last, and
    the extension's link passes them to `icpx -fsycl` again (`syclLinkFlags`), which is
    where device code for ahead-of-time targets is built.
  */
  cppXpu =
    {
      name,
      sources,
      includes,
      cxxFlags,
      syclFlags,
      depFlags ? [ ],
      cxxFamily ? null,
    }:
    plan {
      inherit name sources;
      rules = [
        {
          extensions = cxxExtensions;
          compiler = "icpx";
          command = "icpx ${prefixMap} ${
            esc (families.icpx.cxx ++ backendDefines.xpu ++ depFlags ++ includeFlags includes ++ cxxFlags ++ syclFlags)
          }";
        }
        {
          extensions = kinds.c;
          compiler = "icpx";
          command = "icx ${prefixMap} ${
            esc (families.icpx.c ++ backendDefines.xpu ++ depFlags ++ includeFlags includes ++ cxxFlags)
          }";
        }
      ];
    }
    // {
      syclLinkFlags = syclFlags;
    };

  /**
    Build plan of a `cpp-metal` kernel: Metal shaders (`.metal`) are compiled first into
    `<name>.metallib`, which is embedded in the generated header `<name>_metallib.h`
    (`nix/support/metal/metallib-header.py`; the sources reach it through the definitions
    `EMBEDDED_METALLIB_HEADER` and `EMBEDDED_METALLIB_NAMESPACE = <name>_metal`, as in the
    anchor's Metal build); then Objective-C++ (`.mm`) and C++ compile with the darwin
    stdenv's clang (`cxxFamily`).
    `installMetalPhase` installs the archive and the metallib.
  */
  cppMetal =
    {
      name,
      sources,
      includes,
      cxxFlags,
      depFlags ? [ ],
      cxxFamily ? "clang",
    }:
    let
      shaders = filter (isKind "metal") sources;
      air = src: "nixgen-obj/${replaceStrings [ "%" "/" ] [ "%25" "%2F" ] src}.air";
      header = "nixgen-metal/${name}_metallib.h";
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
    plan {
      inherit name sources;
      rules = [
        {
          extensions = kinds.objcxx;
          compiler = cxxFamily;
          command = "$CXX -x objective-c++ -fobjc-arc ${esc ((family cxxFamily).cxx ++ flags)}";
        }
      ]
      ++ cxxRules cxxFamily flags;
    }
    // (
      if shaders == [ ] then
        { }
      else
        {
          objectInputs = [ header ];
          extraEdges =
            map (src: {
              outputs = [ (air src) ];
              inputs = [ src ];
              command = metal src;
            }) shaders
            ++ [
              {
                outputs = [ "${name}.metallib" ];
                inputs = map air shaders;
                command = "xcrun -sdk macosx metallib ${esc (map air shaders)} -o ${shell.escapeShellArg "${name}.metallib"}";
              }
              {
                outputs = [ header ];
                inputs = [ "${name}.metallib" ];
                command = "mkdir -p nixgen-metal && python3 ${./support/metal/metallib-header.py} ${shell.escapeShellArg "${name}.metallib"} ${shell.escapeShellArg header} ${shell.escapeShellArg name}";
              }
            ];
        }
    );

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
        if any (isKind "metal") sources then
          ''install -Dm644 ${shell.escapeShellArg "${name}.metallib"} "$out/lib/"${shell.escapeShellArg "${name}.metallib"}''
        else
          ""
      }
      runHook postInstall
    '';
}
