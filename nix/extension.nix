/**
  The framework extension (Torch or TVM FFI) of one variant, in two derivations: the
  binding's objects (its sources compiled, `bindingObjects`) and the extension (those
  objects linked with the kernel archives into one Python extension module, then the
  variant directory the PyPI `kernels` client loads):

  ```
  $out/__init__.py …          the kernel's Python package (torch-ext/<module>/)
  $out/_ops.py                 op namespace helpers (support/torch/_ops.py.in)
  $out/_<module>_<backend>_<id>.abi3.so
  $out/metadata.json
  ```

  A generated `extension.nix` is one call of `mkExtension`, with the framework's name and
  the framework table of build.toml as data.
*/
{
  lib,
  compile,
  kernel,
  sources,
  torch,
  tvmFfi,
  # What makes a variant trusted (digest, load check, symbols.json); a default, so callers
  # that give the modules this one uses keep working.
  trust ? import ./trust.nix,
}:
let
  inherit (builtins)
    attrNames
    attrValues
    concatStringsSep
    elem
    filter
    hashString
    map
    substring
    toFile
    toJSON
    ;
  # nixpkgs' quoting (lib/strings.nix): every build.toml value reaches a shell through it.
  esc = lib.escapeShellArgs;
  # The kernel languages: one table, read by nixgen too (`data/languages.json`).
  languages = (builtins.fromJSON (builtins.readFile ./data/languages.json)).languages;
in
rec {
  /**
    The op namespace of one variant: `_<module>_<backend>_<id>`, where the id hashes what
    identifies the build: `sources` (store paths; any string), the project `version` and
    the names of the linked kernels (`kernelNames`). It is also the extension module's
    name and `metadata.json`'s `id`, and the binding is compiled with it
    (`-DTORCH_EXTENSION_NAME`).

    What `mkExtension` hashes is what the binding's compile sees: the binding's source
    tree (its sources and the project's headers), the project version and the kernel
    names, not the kernels' sources. So editing a kernel relinks the extension without
    recompiling the binding (see docs/build-performance.md). The trade-off: two builds that
    differ only in kernel code share the name, and (like any two builds with one name)
    cannot be loaded into one process at once; the second registration of the torch ops
    fails. A new project version, binding or header, or a kernel added or removed, gives a
    new name, so two releases load side by side. The anchor (kernel-builder's
    `ops_identifier.rs`) names the ops after the git tree id, so there any committed
    change renames them, and every uncommitted one gives the same `<tree>_dirty` name.
    Without binding sources (a Rust crate is the binding) nothing is compiled with the
    name, and `mkExtension` hashes the kernels' sources instead.

    Identical inputs give the same name (reproducible). With neither `version` nor
    `kernelNames`, the id hashes the sources alone (a pure-Python variant: its package).

    # Type

    ```
    opsName :: { moduleName :: String, backend :: String, sources :: [ Path ], version ? Any, kernelNames ? [ String ] } -> String
    ```
  */
  opsName =
    {
      moduleName,
      backend,
      sources,
      version ? null,
      kernelNames ? [ ],
    }:
    let
      identity =
        map toString sources
        ++ (if version == null then [ ] else [ "version=${toString version}" ])
        ++ map (name: "kernel=${name}") kernelNames;
    in
    "_${moduleName}_${backend}_${substring 0 10 (hashString "sha256" (concatStringsSep ":" identity))}";

  /**
    The `metadata.json` of one variant (keys as the `kernels` client reads them).

    `archs` are the GPU targets compiled for; a pure-Python (`[torch-noarch]`) project
    records the ones it lists for the backend instead (`project.noarchArchs`), as written.

    # Type

    ```
    metadata :: { project, variant, opsName, archs :: [ String ] } -> AttrSet
    ```
  */
  metadata =
    {
      project,
      variant,
      opsName,
      archs ? project.noarchArchs.${variant.backend},
    }:
    let
      optional = lib.optionalAttrs;
      pythonDepends = project.pythonDepends.${variant.backend};
      kernelDepends = project.kernelDepends.${variant.backend};
    in
    {
      name = project.name;
      id = opsName;
      version = project.version;
      license = project.license;
      "python-depends" = pythonDepends;
      backend = {
        type = variant.backend;
      }
      // optional (archs != [ ]) { inherit archs; };
    }
    // optional (project.upstream != null) { upstream = project.upstream; }
    // optional (project.source != null) { source = project.source; }
    // optional (kernelDepends != [ ]) { "kernel-depends" = kernelDepends; }
    // {
      # The oldest client that loads the variant, as nixgen planned it (never by hand).
      "kernels-minver" = project.kernelsMinver.${variant.backend};
      "build-layout" = project.buildLayout;
    };

  /**
    The `metadata.json` file of one variant, as a store path (`metadataFileOf` of what
    `metadata` gives).
  */
  metadataFile = args: metadataFileOf (metadata args);

  /**
    A `metadata.json` file holding `attrs` (one line of JSON, keys sorted), as a store path.
  */
  metadataFileOf = attrs: toFile "metadata.json" (toJSON attrs + "\n");

  /**
    Build plan of a framework binding: its sources compiled for one backend, one step
    each, into `nixgen-obj/` (no archive, no link). `bindingObjects` builds it in a
    derivation of its own.

    # Inputs

    `opsName`
    : the op namespace (`-DTORCH_EXTENSION_NAME`)

    `framework`
    : `{ flags, libs }` of the framework (`nixgen.torch.framework`, `nixgen.tvmFfi.framework`)

    `bindingSources`
    : the framework table's `src` (headers are inputs only)

    `cxxFlags`, `includes`
    : the framework table's `cxx-flags` (after the framework's defines) and `include`

    `cxxFamily`
    : the compiler family of the toolchain's `$CXX` (`compile.families`)
  */
  bindingPlan =
    {
      opsName,
      backend,
      framework,
      bindingSources,
      cxxFlags ? [ ],
      includes ? [ ],
      cxxFamily ? "gcc",
    }:
    let
      rule = builtins.head (
        compile.cxxRules cxxFamily (
          compile.backendDefines.${backend}
          ++ [
            "-DTORCH_EXTENSION_NAME=${opsName}"
            "-DPy_LIMITED_API=0x03090000"
            "-I${./support/torch}"
          ]
          ++ framework.flags
          ++ compile.includeFlags includes
          ++ cxxFlags
        )
      );
    in
    compile.plan {
      name = opsName;
      sources = bindingSources;
      rules = [ rule ];
    }
    // {
      archive = null;
    };

  /**
    How each linker family links an extension module, as data (flags belong to the linker
    that reads them; STYLE rule 17):

    - `gnu`: GNU ld and its kin (Linux): a shared object; kernel archives linked whole
      (`--whole-archive`, so static registrations survive), their symbols kept inside the
      module (`--exclude-libs`), a non-executable stack and a build id
    - `ld64`: Apple's linker (darwin): a Mach-O bundle, as Python extension modules are;
      archives linked whole with `-force_load`; the Python C API is undefined at link time
      and found in the interpreter when the module is loaded (`-undefined dynamic_lookup`).
      Nothing is hidden: ld64 has no `--exclude-libs`, and a two-level namespace already
      binds each module's references to itself

    Each entry has `output` (the flags saying what is made), `whole` (archives → flags),
    `hide` (`{ exported, hidden }` → flags: `exported` whether some archives export the
    module's functions, `hidden` the base names of the others), `flags`, and `rustLibs`
    (what `cargo rustc -- --print native-static-libs` lists for a staticlib there; the
    darwin list is not checked on a Mac here).

    # Examples

    ```nix
    linkers.ld64.whole [ "/k/libk.a" ]
    => [ "-Wl,-force_load,/k/libk.a" ]
    ```
  */
  linkers = {
    gnu = {
      output = [ "-shared" ];
      whole = archives: if archives == [ ] then [ ] else [ "-Wl,--whole-archive" ] ++ archives ++ [ "-Wl,--no-whole-archive" ];
      hide =
        { exported, hidden }:
        if !exported then
          [ "-Wl,--exclude-libs,ALL" ]
        else if hidden == [ ] then
          [ ]
        else
          [ "-Wl,--exclude-libs,${concatStringsSep ":" hidden}" ];
      flags = [
        "-Wl,-z,noexecstack"
        "-Wl,-O1"
        "-Wl,--build-id=sha1"
      ];
      rustLibs = [ "-lgcc_s" "-lutil" "-lrt" "-lpthread" "-lm" "-ldl" "-lc" ];
    };
    ld64 = {
      output = [ "-bundle" ];
      whole = map (archive: "-Wl,-force_load,${archive}");
      hide = _: [ ];
      flags = [ "-Wl,-undefined,dynamic_lookup" ];
      rustLibs = [ "-liconv" "-lSystem" "-lc" "-lm" ];
    };
  };

  /**
    Build plan of a framework extension: `bindingPlan`'s compile steps and the link of
    their objects with the kernels' archives into `<opsName>.abi3.so` (its own step).
    `configurePhase` writes it as a `build.ninja`.

    # Inputs

    `bindingPlan`'s, and:

    `prebuiltObjects`
    : a directory holding the binding's objects, already compiled (`bindingObjects`): the
      plan then only links. `null` (default): the plan compiles them too

    `wholeArchives`
    : C++ kernel archives, linked whole (static registrations must survive)

    `plainArchives`
    : Rust static libraries (only the referenced members are needed)

    `exportedArchives`
    : static libraries that ARE the binding (a Rust crate exporting tvm-ffi functions): linked
      whole and left out of `--exclude-libs`, so every function they export stays visible

    `linkFlags`
    : the backend's runtime libraries (`-lcudart`) and flags

    `linker`, `linkDriver`
    : the toolchain's linker family (`linkers`) and the driver that links (shell text:
      `$CXX`, or `icpx -fsycl` for XPU)
  */
  plan =
    args@{
      opsName,
      framework,
      prebuiltObjects ? null,
      wholeArchives ? [ ],
      plainArchives ? [ ],
      exportedArchives ? [ ],
      linkFlags ? [ ],
      linker ? "gnu",
      linkDriver ? "$CXX",
      # `bindingPlan`'s other inputs (it rejects an unknown one).
      ...
    }:
    let
      binding = bindingPlan (
        removeAttrs args [
          "prebuiltObjects"
          "wholeArchives"
          "plainArchives"
          "exportedArchives"
          "linkFlags"
          "linker"
          "linkDriver"
        ]
      );
      ld =
        linkers.${linker}
          or (throw "nixgen: no linker family `${toString linker}` (known: ${concatStringsSep ", " (attrNames linkers)})");
      # Objects built by `bindingObjects` are read from the store (`compile.edges`).
      objects =
        if prebuiltObjects == null then
          binding.objects
        else
          map (o: o // { prebuilt = "${prebuiltObjects}/${compile.objectName o.source}"; }) binding.objects;
      paths = map (o: o.prebuilt or o.object) objects;
      library = "${opsName}.abi3.so";
      whole = ld.whole wholeArchives;
      exported = ld.whole exportedArchives;
      # Symbols of the linked archives stay inside the module, except the exported ones'.
      hide = ld.hide {
        exported = exportedArchives != [ ];
        hidden = map baseNameOf (wholeArchives ++ plainArchives);
      };
      rustLibs = if plainArchives == [ ] && exportedArchives == [ ] then [ ] else ld.rustLibs;
    in
    binding
    // {
      inherit objects;
      extraEdges = [
        {
          outputs = [ library ];
          # The archives are store paths: fixed for this derivation, nothing to track.
          inputs = paths;
          # No rpath: the framework's libraries are already loaded (by soname) when the
          # kernel's Python package imports this module after importing the framework.
          command = "${linkDriver} ${esc ld.output} -o ${lib.escapeShellArg library} ${esc paths} ${esc whole} ${esc exported} ${esc plainArchives} ${esc hide} ${esc ld.flags} ${
            esc (framework.libs ++ linkFlags ++ rustLibs)
          }";
        }
      ];
    };

  /**
    Configure phase of a framework extension: writes `plan`'s `build.ninja`, which
    ninja's setup hook builds on `$NIX_BUILD_CORES` cores.
  */
  configurePhase = args: compile.configurePhase (plan args);

  /**
    Install phase of a variant: the Python package, `_ops.py`, the extension module (if
    any) and `metadata.json`.

    # Inputs

    `packageDir`
    : the Python package directory in the source (`torch-ext/<module>`)

    `opsName`
    : the op namespace (also the extension module's name)

    `compiled`
    : whether an extension module was built

    `framework`
    : `"torch"`, `"tvm-ffi"` or `"mlx"`: which `_ops.py` the package gets (a tvm-ffi one
      loads the library with `tvm_ffi.load_module`; an MLX package gets none)

    `layout`, `python`
    : `"files"`, or `"zip"`: the package then moves into `<opsName>.zip` (the extension
      module stays beside it), with `python` (a Python 3 interpreter) running
      `support/layout/zip_layout.py`

    `_ops.py` is its template (support/) without the one-line header a vendored copy of the
    library carries (`@generated by nixgen <version> (a copy of its static library)`), so a
    variant's files are the same whichever way, and whichever nixgen version's, the library
    is taken: the ops name does not cover the template, and the `kernels` client refuses to
    load a second build under an id already loaded whose files differ from the first's.
  */
  installPhase =
    {
      packageDir,
      opsName,
      metadataFile,
      compiled ? true,
      framework ? "torch",
      layout ? "files",
      python ? null,
    }:
    ''
      runHook preInstall
      mkdir -p "$out"
      if [ -d ${lib.escapeShellArg packageDir} ]; then
        cp -r ${lib.escapeShellArg packageDir}/. "$out/"
      fi
      chmod -R u+w "$out"
      ${
        if framework == "mlx" then
          ""
        else
          ''
            sed -e '1{/^# @generated by nixgen .* (a copy of its static library); do not edit\.$/d;}' \
              -e 's/@OPS_NAME@/${opsName}/g' ${
              if framework == "tvm-ffi" then
                ./support/tvm-ffi/_ops.py.in
              else if compiled then
                ./support/torch/_ops.py.in
              else
                ./support/torch/_ops_noarch.py.in
            } > "$out/_ops.py"
          ''
      }
      ${if compiled then ''install -m755 ${lib.escapeShellArg "${opsName}.abi3.so"} "$out/"'' else ""}
      ${
        if layout == "zip" then
          ''${python}/bin/python3 ${./support/layout/zip_layout.py} "$out" ${lib.escapeShellArg opsName}''
        else
          ""
      }
      cp ${metadataFile} "$out/metadata.json"
      chmod 644 "$out/metadata.json"
      runHook postInstall
    '';

  /**
    What a variant's GPU code was compiled for: the union of its kernels' CUDA
    capabilities (`9.0+PTX` as planned) or ROCm targets, sorted as strings
    (`backend.archs` in metadata.json, as the anchor's `add_build_metadata.py` writes it:
    `sorted(set(...))`).

    # Type

    ```
    archsOf :: AttrSet -> [ String ]
    ```
  */
  archsOf =
    kernels:
    builtins.sort builtins.lessThan (
      lib.unique (
        builtins.concatMap (
          kernel: kernel.passthru.nixgen.targets
        ) (attrValues kernels)
      )
    );

  /**
    Archives of built kernels: C++ archives to link whole, Rust archives to link plain,
    and the link flags the kernels ask for (`passthru.nixgen.linkFlags`, first-seen order).

    # Type

    ```
    archives :: AttrSet -> { whole :: [ String ], plain :: [ String ], linkFlags :: [ String ] }
    ```
  */
  archives =
    kernels:
    let
      all = attrValues kernels;
      path = k: "${k}/lib/lib${k.passthru.nixgen.library}.a";
      isRust = k: languages.${k.passthru.nixgen.language}.builder == "rust";
    in
    {
      whole = map path (builtins.filter (k: !isRust k) all);
      plain = map path (builtins.filter isRust all);
      # What the kernels need at link time (`-fopenmp`: the compiler's OpenMP runtime).
      linkFlags = lib.unique (builtins.concatMap (k: k.passthru.nixgen.linkFlags) all);
    };

  /**
    What an extension takes from its framework, by the framework table's name (`torch`,
    `tvm-ffi`). Each entry reads the generated file's arguments (`deps`, what `callPackage`
    injected; see `mkExtension`):

    `package`
    : the framework's package (a build input of the binding and of the link)

    `flags`
    : the framework's compile and link flags (`nixgen.torch.framework`,
      `nixgen.tvmFfi.framework`), and the derivations the compile reads (`inputs`, if any:
      what torch's CMake config gives, `toolchains.<backend>.torchFlags`)

    `defines`
    : a function of the variant: the defines that go before the table's `cxx-flags`
      (`-DTORCH_TARGET_VERSION` for a variant built against the torch stable ABI)

    `stableAbi`
    : a function of the variant: the torch stable ABI version it is built against, or null
      (the ABI check's `--torch-stable-abi`)

    `cratesCanBeBinding`
    : whether the Rust crates can be the binding themselves: a table without `src` then
      links their archives whole and exports every function they define
      (`exportedArchives`)

    A torch extension file declares the `torch` argument (the variant's torch); a TVM FFI
    one takes `python3.pkgs.tvm-ffi` from `python3`.
  */
  frameworks = {
    torch = {
      package =
        deps:
        deps.torch
          or (throw "nixgen: a torch extension file must declare the `torch` argument (the variant's torch)");
      flags =
        deps:
        torch.framework {
          torch = frameworks.torch.package deps;
          inherit (deps.variant) backend;
          python = deps.python3;
          compileFlags = deps.toolchain.torchFlags (frameworks.torch.package deps);
        };
      defines = torch.abiDefines;
      stableAbi = variant: variant.stableAbi;
      cratesCanBeBinding = false;
    };
    tvm-ffi = {
      package = deps: deps.python3.pkgs.tvm-ffi;
      flags =
        deps:
        tvmFfi.framework {
          tvmFfi = frameworks.tvm-ffi.package deps;
          python = deps.python3;
        };
      defines = variant: [ ];
      stableAbi = variant: null;
      cratesCanBeBinding = true;
    };
  };

  /**
    The derivation holding a binding's compiled objects, one file per compiled source
    (`$out/<compile.objectName source>`), from `bindingPlan`. Its inputs are only what the
    compile sees (`src`: the binding's sources and the project's headers, the framework,
    the flags), never a kernel, so a kernel edit does not rebuild it.

    # Type

    ```
    bindingObjects :: { toolchain, ninja, pname :: String, version :: String, src :: Path, buildInputs :: [ Derivation ], plan :: Plan } -> Derivation
    ```
  */
  bindingObjects =
    {
      toolchain,
      ninja,
      pname,
      version,
      src,
      buildInputs,
      plan,
    }:
    toolchain.stdenv.mkDerivation {
      inherit
        pname
        version
        src
        buildInputs
        ;
      nativeBuildInputs = toolchain.nativeBuildInputs ++ [ ninja ];
      configurePhase = compile.configurePhase plan;
      installPhase = ''
        runHook preInstall
        mkdir -p "$out"
      ''
      + concatStringsSep "" (
        map (
          o: "install -m644 ${lib.escapeShellArg o.object} \"$out/\"${lib.escapeShellArg (compile.objectName o.source)}\n"
        ) plan.objects
      )
      + ''
        runHook postInstall
      '';
      passthru.nixgen = { inherit plan; };
    };

  /**
    The framework extension of one variant, what a generated `extension.nix` returns.
    Two derivations: `bindingObjects` compiles the binding (when it has C++ sources), and
    the extension links those objects with the kernels' archives (`plan` with
    `prebuiltObjects`), then installs the Python package, `_ops.py`, the module and
    `metadata.json` (`installPhase`). Three setup hooks check it: the torch ops registration
    check (`toolchain.opsCheck`) after the unpack, the ABI check (`toolchain.abiCheck`)
    at installCheck, and last the variant check (`toolchain.variantCheck`, `nixgen.trust`:
    the digest in `metadata.json`, the load by the `kernels` client where the build machine
    can load the variant, `symbols.json`). What differs between frameworks comes
    from `frameworks`.

    # Inputs

    `deps`
    : the generated file's arguments, as `callPackage` injected them (`nixgen.project.callWith`):
      `lib`, `python3`, `ninja`, `root`, `headers` (every header the project lists),
      `kernels` (the variant's built kernels), `variant`, `projectData` (project.nix),
      `toolchain` (`nixgen.toolchains`), and what the framework needs (`torch`)

    `framework`
    : the framework table's name: `"torch"` or `"tvm-ffi"`

    `pname`, `bindingPname`
    : the names (without the version) of the extension's derivation and of its binding's
      objects, as nixgen planned them (`planning.plan.extension_pnames`)

    `moduleDir`
    : the kernel's Python package directory (`torch-ext/<module>`)

    `pyext`
    : the extensions of the package's files (the table's `pyext`)

    `bindingSources`, `cxxFlags`, `includes`
    : the framework table's `src`, `cxx-flags` and `include`

    The derivation's `passthru.nixgen` holds `variant`, `opsName`, `archs` (the GPU targets
    compiled for), `kernels` (one kernel of a variant can be built alone:
    `<variant>.nixgen.kernels.<name>`) and `binding` (the objects' derivation, or null).

    # Type

    ```
    mkExtension :: AttrSet -> { framework, pname, bindingPname, moduleDir, pyext, bindingSources, cxxFlags ? [ String ], includes ? [ String ] } -> Derivation
    ```
  */
  mkExtension =
    deps@{
      lib,
      python3,
      ninja,
      root,
      headers,
      kernels,
      variant,
      projectData,
      toolchain,
      ...
    }:
    {
      framework,
      pname,
      bindingPname,
      moduleDir,
      pyext,
      bindingSources,
      cxxFlags ? [ ],
      includes ? [ ],
    }:
    let
      fw =
        frameworks.${framework}
          or (throw "nixgen: no framework `${framework}` (known: ${concatStringsSep ", " (attrNames frameworks)})");
      project = projectData;
      package = fw.package deps;
      stableAbi = fw.stableAbi variant;
      # Whether there is a binding to compile (C++ sources; headers are inputs only).
      compiles = builtins.any compile.isCxx bindingSources;
      # What the binding's compile sees: its sources and every header the project lists.
      bindingSrc = sources.select lib root (
        bindingSources ++ filter (h: !elem h bindingSources) headers
      );
      version = toString project.version;
      # The framework as a C++ consumer takes it (torch with its `cxxdev` output).
      frameworkInputs = kernel.cxxInputs [ package ];
      # No binding sources: the Rust crates are the binding; every function they export stays.
      crateIsBinding = fw.cratesCanBeBinding && bindingSources == [ ];
    in
    # A fixed point: what is linked follows the derivation's `passthru.nixgen.kernels`, so
    # an `overrideAttrs` that puts an overridden kernel there links that one (a change of
    # the kernels' names renames the ops too).
    toolchain.stdenv.mkDerivation (
      finalAttrs:
      let
        kernels' = finalAttrs.passthru.nixgen.kernels;
        built = attrValues kernels';
        name = opsName {
          moduleName = project.moduleName;
          inherit (variant) backend;
          # Nothing compiled with the name: the kernels (a crate that is the binding) are hashed.
          sources = if compiles then [ bindingSrc ] else map (kernel: kernel.src) built;
          inherit (project) version;
          kernelNames = attrNames kernels';
        };
        archived = archives kernels';
        archs = archsOf kernels';
        variantMetadata = metadata {
          project = projectData;
          inherit variant archs;
          opsName = name;
        };
        planArgs = {
          opsName = name;
          inherit (variant) backend;
          framework = fw.flags deps;
          inherit bindingSources includes;
          cxxFlags = fw.defines variant ++ cxxFlags;
          inherit (toolchain) cxxFamily;
        };
        binding =
          if compiles then
            bindingObjects {
              inherit toolchain ninja version;
              pname = bindingPname;
              src = bindingSrc;
              buildInputs = frameworkInputs ++ [ python3 ] ++ toolchain.buildInputs ++ planArgs.framework.inputs or [ ];
              plan = bindingPlan planArgs;
            }
          else
            null;
      in
      {
        inherit pname version;
        # The Python package only: the binding's sources reach the link as `binding`'s objects.
        src = sources.selectWithPackage lib root [ ] moduleDir pyext;
        nativeBuildInputs = toolchain.nativeBuildInputs ++ [
          ninja
          toolchain.opsCheck
          toolchain.abiCheck
          # Last: the digest, the load by the client and symbols.json (`nixgen.trust`).
          (toolchain.variantCheck (
            trust.checkPython {
              inherit python3 variant project;
              packages = _: [ package ];
            }
          ))
        ];
        # The ABI check (toolchain.abiCheck) runs at installCheck, as the kernels toolchain's
        # does, switched on by the variables its torch extensions set
        # (nix-builder/lib/extension/torch/arch.nix: `doAbiCheck`, and `torchStableAbiVersion`
        # for a variant built against the torch stable ABI).
        doInstallCheck = true;
        # The torch ops check (toolchain.opsCheck) runs after the unpack, on the package
        # directory this attribute names, as the kernels toolchain's torch-ops-check does
        # (`env.dontCheckPythonOps = "1";` skips it): it fails the build on torch ops
        # registered without `add_op_namespace_prefix`.
        env = {
          doAbiCheck = "1";
          torchOpsCheckDir = moduleDir;
        }
        // (if stableAbi == null then { } else { torchStableAbiVersion = stableAbi; })
        // trust.env { inherit variant project; };
        buildInputs = frameworkInputs ++ [ python3 ] ++ toolchain.buildInputs ++ built;
        configurePhase = configurePhase (
          planArgs
          // {
            prebuiltObjects = binding;
            wholeArchives = archived.whole;
            linkFlags = toolchain.linkFlags ++ archived.linkFlags;
            inherit (toolchain) linker linkDriver;
          }
          // (if crateIsBinding then { exportedArchives = archived.plain; } else { plainArchives = archived.plain; })
        );
        installPhase = installPhase {
          packageDir = moduleDir;
          opsName = name;
          inherit framework;
          metadataFile = metadataFileOf variantMetadata;
          layout = projectData.buildLayout;
          python = python3;
        };
        passthru.nixgen = {
          inherit
            variant
            archs
            kernels
            binding
            ;
          opsName = name;
          # What `metadata.json` holds (`nixgen.provenance.stamp` adds the build's provenance).
          metadata = variantMetadata;
        };
      }
    );
}
