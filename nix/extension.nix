/**
  The framework extension (Torch or TVM FFI): compile the binding, link the kernel
  archives into one Python extension module, and lay out the variant directory the PyPI
  `kernels` client loads:

  ```
  $out/__init__.py …          the kernel's Python package (torch-ext/<module>/)
  $out/_ops.py                 op namespace helpers (support/torch/_ops.py.in)
  $out/_<module>_<backend>_<id>.abi3.so
  $out/metadata.json
  ```
*/
{ shell, compile }:
let
  inherit (builtins)
    attrValues
    concatStringsSep
    hashString
    map
    substring
    toFile
    toJSON
    ;
  esc = shell.escapeShellArgs;
in
rec {
  /**
    The op namespace of one variant: `_<module>_<backend>_<id>`, where the id hashes the
    store paths of every source that goes into the variant. Identical sources give the
    same name (reproducible); any change gives a new one, so two builds can be loaded
    side by side.

    # Type

    ```
    opsName :: { moduleName :: String, backend :: String, sources :: [ Path ] } -> String
    ```
  */
  opsName =
    {
      moduleName,
      backend,
      sources,
    }:
    "_${moduleName}_${backend}_${substring 0 10 (hashString "sha256" (concatStringsSep ":" (map toString sources)))}";

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
      archs ? project.noarchArchs.${variant.backend} or [ ],
    }:
    let
      optional = cond: attrs: if cond then attrs else { };
      pythonDepends = project.pythonDepends.general ++ (project.pythonDepends.${variant.backend} or [ ]);
      kernelDepends = project.kernelDepends.general ++ (project.kernelDepends.${variant.backend} or [ ]);
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
    // optional (project.minver != null) { "kernels-minver" = project.minver; };

  /**
    The `metadata.json` file of one variant, as a store path.
  */
  metadataFile = args: toFile "metadata.json" (toJSON (metadata args) + "\n");

  /**
    Build plan of a framework extension: compile the binding sources for one backend
    (one step each) and link them with the kernels' archives into `<opsName>.abi3.so`
    (its own step). `configurePhase` writes it as a `build.ninja`.

    # Inputs

    `framework`
    : `{ flags, libs }` of the framework (`nixgen.torch.framework`, `nixgen.tvmFfi.framework`)

    `bindingSources`
    : the framework table's `src` (headers are inputs only)

    `cxxFlags`, `includes`
    : the framework table's `cxx-flags` and `include`

    `wholeArchives`
    : C++ kernel archives, linked whole (static registrations must survive)

    `plainArchives`
    : Rust static libraries (only the referenced members are needed)

    `exportedArchives`
    : static libraries that ARE the binding (a Rust crate exporting tvm-ffi functions): linked
      whole and left out of `--exclude-libs`, so every function they export stays visible

    `linkFlags`
    : the backend's runtime libraries (`-lcudart`) and flags
  */
  plan =
    {
      opsName,
      backend,
      framework,
      bindingSources,
      cxxFlags ? [ ],
      includes ? [ ],
      wholeArchives ? [ ],
      plainArchives ? [ ],
      exportedArchives ? [ ],
      linkFlags ? [ ],
    }:
    let
      rule = builtins.head (
        compile.cxxRules (
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
      binding = compile.plan {
        name = opsName;
        sources = bindingSources;
        rules = [ rule ];
      };
      objects = map (o: o.object) binding.objects;
      library = "${opsName}.abi3.so";
      whole =
        if wholeArchives == [ ] then [ ] else [ "-Wl,--whole-archive" ] ++ wholeArchives ++ [ "-Wl,--no-whole-archive" ];
      exported =
        if exportedArchives == [ ] then [ ] else [ "-Wl,--whole-archive" ] ++ exportedArchives ++ [ "-Wl,--no-whole-archive" ];
      # Symbols of the linked archives stay inside the module, except the exported ones'.
      hidden = map baseNameOf (wholeArchives ++ plainArchives);
      hide =
        if exportedArchives == [ ] then
          [ "-Wl,--exclude-libs,ALL" ]
        else if hidden == [ ] then
          [ ]
        else
          [ "-Wl,--exclude-libs,${concatStringsSep ":" hidden}" ];
      # What `cargo rustc -- --print native-static-libs` lists for Linux staticlibs.
      rustLibs =
        if plainArchives == [ ] && exportedArchives == [ ] then [ ] else [ "-lgcc_s" "-lutil" "-lrt" "-lpthread" "-lm" "-ldl" "-lc" ];
    in
    binding
    // {
      archive = null;
      extraEdges = [
        {
          outputs = [ library ];
          # The archives are store paths: fixed for this derivation, nothing to track.
          inputs = objects;
          # No rpath: the framework's libraries are already loaded (by soname) when the
          # kernel's Python package imports this module after importing the framework.
          command = "$CXX -shared -o ${shell.escapeShellArg library} ${esc objects} ${esc whole} ${esc exported} ${esc plainArchives} ${esc hide} -Wl,-z,noexecstack -Wl,-O1 -Wl,--build-id=sha1 ${
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
    Shell text failing the build when the Python package registers torch ops under a
    literal name instead of `add_op_namespace_prefix(...)` (support/torch/ops_check.py,
    the rule of the anchor's torch-ops-check).

    # Type

    ```
    opsCheck :: Derivation -> String -> String
    ```
  */
  opsCheck =
    python: packageDir:
    "if [ -d ${shell.escapeShellArg packageDir} ]; then ${python.interpreter} ${./support/torch/ops_check.py} ${shell.escapeShellArg packageDir}; fi";

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

    `python`
    : an interpreter to run the op-registration check with (`opsCheck`); none: no check

    `framework`
    : `"torch"` or `"tvm-ffi"`: which `_ops.py` the package gets (a tvm-ffi one loads the
      library with `tvm_ffi.load_module`)
  */
  installPhase =
    {
      packageDir,
      opsName,
      metadataFile,
      compiled ? true,
      python ? null,
      framework ? "torch",
    }:
    ''
      runHook preInstall
      ${if python == null then "" else opsCheck python packageDir}
      mkdir -p "$out"
      if [ -d ${shell.escapeShellArg packageDir} ]; then
        cp -r ${shell.escapeShellArg packageDir}/. "$out/"
      fi
      chmod -R u+w "$out"
      sed 's/@OPS_NAME@/${opsName}/g' ${
        if framework == "tvm-ffi" then
          ./support/tvm-ffi/_ops.py.in
        else if compiled then
          ./support/torch/_ops.py.in
        else
          ./support/torch/_ops_noarch.py.in
      } > "$out/_ops.py"
      ${if compiled then ''install -m755 ${shell.escapeShellArg "${opsName}.abi3.so"} "$out/"'' else ""}
      cp ${metadataFile} "$out/metadata.json"
      chmod 644 "$out/metadata.json"
      runHook postInstall
    '';

  /**
    What a variant's GPU code was compiled for: the union of its kernels' CUDA
    capabilities or ROCm targets, in first-seen order (`backend.archs` in metadata.json).

    # Type

    ```
    archsOf :: AttrSet -> [ String ]
    ```
  */
  archsOf =
    kernels:
    builtins.foldl' (acc: arch: if builtins.elem arch acc then acc else acc ++ [ arch ]) [ ] (
      builtins.concatMap (
        kernel: kernel.passthru.nixgen.capabilities or kernel.passthru.nixgen.archs or [ ]
      ) (attrValues kernels)
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
      isRust = k: substring 0 5 k.passthru.nixgen.language == "rust-";
    in
    {
      whole = map path (builtins.filter (k: !isRust k) all);
      plain = map path (builtins.filter isRust all);
      # What the kernels need at link time (`-fopenmp`: the compiler's OpenMP runtime).
      linkFlags = builtins.foldl' (acc: flag: if builtins.elem flag acc then acc else acc ++ [ flag ]) [ ] (
        builtins.concatMap (k: k.passthru.nixgen.linkFlags or [ ]) all
      );
    };
}
