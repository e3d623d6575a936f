# stdenv for the stub nixpkgs.
#
# Mirrors pkgs/stdenv/generic/make-derivation.nix (mkDerivation with attrs or
# `finalAttrs: { … }`, overrideAttrs, finalPackage, env checks, dependency checks, name from
# pname + version, meta/passthru handling) and pkgs/stdenv/generic/check-meta.nix (unfree,
# broken and platform refusals with the real message). It is deliberately stricter than the
# real one in one way: argument names are checked against an allow-list (a superset of
# the documented parameters) instead of silently becoming environment variables.
#
# Stand-ins: the compiler is the host's g++ (stdenv.cc wraps it, see hooks/cc-wrapper.sh),
# the initial PATH is a set of symlinks to host tools, and the builder is ./builder.sh.
{
  lib,
  final,
  host,
  config,
  hostPlatform,
}:
let
  inherit (lib)
    attrNames
    concatStringsSep
    concatMapStrings
    filter
    isAttrs
    isList
    isString
    isBool
    isInt
    isDerivation
    optionalAttrs
    optional
    elem
    ;

  # Machine paths come only from host.nix (written by make_host.py at test time).
  missingHost = "host.nix-is-missing--run-tests/nixpkgs/make_host.py";
  shell = if host.shell or null != null then host.shell else missingHost;
  hostPathString = concatStringsSep ":" (host.path or [ ]);

  # -- stdenv's initial PATH: host tools as symlinks ---------------------------------------
  initialTools = [
    # coreutils
    "[" "basename" "cat" "chgrp" "chmod" "chown" "cksum" "comm" "cp" "csplit" "cut" "date"
    "dd" "df" "dirname" "du" "echo" "env" "expand" "expr" "factor" "false" "fmt" "fold"
    "head" "hostname" "id" "install" "join" "link" "ln" "logname" "ls" "md5sum" "mkdir"
    "mkfifo" "mknod" "mktemp" "mv" "nice" "nl" "nohup" "nproc" "numfmt" "od" "paste"
    "pathchk" "pr" "printenv" "printf" "ptx" "pwd" "readlink" "realpath" "rm" "rmdir"
    "seq" "sha1sum" "sha256sum" "sha512sum" "shred" "shuf" "sleep" "sort" "split" "stat"
    "stdbuf" "stty" "sum" "sync" "tac" "tail" "tee" "test" "timeout" "touch" "tr" "true"
    "truncate" "tsort" "tty" "uname" "unexpand" "uniq" "unlink" "wc" "who" "whoami" "yes"
    # shells, findutils, diffutils, sed, grep, awk, archivers, make, patch, file
    "bash" "sh" "find" "xargs" "diff" "cmp" "diff3" "sdiff" "sed" "grep" "egrep" "fgrep"
    "awk" "gawk" "tar" "gzip" "gunzip" "zcat" "bzip2" "bunzip2" "xz" "unxz" "zstd" "make"
    "patch" "file" "patchelf"
  ];

  hostTools = derivation {
    name = "stub-host-tools";
    inherit (hostPlatform) system;
    builder = shell;
    args = [
      "-e"
      ./hooks/host-tools.sh
    ];
    PATH = hostPathString;
    tools = initialTools;
  };

  # $stdenv/setup (./setup.sh), as in nixpkgs where custom builders `source $stdenv/setup`.
  mkSetup =
    name:
    derivation {
      inherit name;
      inherit (hostPlatform) system;
      builder = shell;
      args = [
        "-e"
        ./hooks/install-setup.sh
      ];
      inherit hostTools;
      setupScript = ./setup.sh;
    };

  binutils = [
    "ar" "ranlib" "nm" "ld" "ld.bfd" "ld.gold" "as" "strip" "objcopy" "objdump" "readelf"
    "size" "strings" "c++filt" "addr2line" "elfedit"
  ];

  # -- stdenv.cc -----------------------------------------------------------------------------
  hostCC = host.cc or null;
  gccWrapper =
    derivation {
      name = "gcc-wrapper-${hostCC.version or "0"}";
      inherit (hostPlatform) system;
      builder = shell;
      args = [
        "-e"
        ./hooks/make-cc-wrapper.sh
      ];
      PATH = "${hostTools}/bin";
      inherit shell;
      hostPath = hostPathString;
      realCC = hostCC.gcc or "";
      realCXX = hostCC.gxx or "";
      realCPP = hostCC.cpp or "";
      inherit binutils;
      wrapperTemplate = ./hooks/cc-wrapper.sh;
      setupHookTemplate = ./hooks/cc-setup-hook.sh;
    }
    // {
      pname = "gcc-wrapper";
      version = hostCC.version or "0";
      isGNU = true;
      isClang = false;
      isCcache = false;
      targetPrefix = "";
      nativeTools = false;
      nativeLibc = false;
      hasCC = true;
      cc = {
        pname = "gcc";
        version = hostCC.version or "0";
        isGNU = true;
      };
      libc = null;
      bintools = gccWrapper;
      meta = {
        description = "stub-nixpkgs stand-in for the gcc wrapper (wraps the host g++)";
        platforms = lib.platforms.linux;
      };
    };

  # A compiler that this machine does not have (clang for Darwin, icpx, hipcc, …): it
  # evaluates like a cc-wrapper and its build fails with a clear message.
  mkUnavailableCC =
    {
      name,
      version,
      reason,
      isClang ? true,
      platforms ? lib.platforms.all,
    }:
    derivation {
      inherit name;
      inherit (hostPlatform) system;
      builder = shell;
      args = [
        "-c"
        ''echo "stub-nixpkgs: ${name} is not available on this machine: ${reason}" >&2; exit 1''
      ];
    }
    // {
      inherit version isClang;
      pname = lib.getName name;
      isGNU = !isClang;
      targetPrefix = "";
      hasCC = true;
      cc = {
        inherit version;
        pname = lib.getName name;
      };
      meta = {
        description = "stub-nixpkgs stand-in: ${reason}";
        inherit platforms;
      };
    };

  darwinClang = mkUnavailableCC {
    name = "clang-wrapper-19.1.7";
    version = "19.1.7";
    reason = "Darwin builds need Apple's toolchain; evaluation only here";
    platforms = lib.platforms.darwin;
  };

  # -- check-meta.nix --------------------------------------------------------------------------
  allowUnfree = config.allowUnfree or false || builtins.getEnv "NIXPKGS_ALLOW_UNFREE" == "1";
  allowBroken = config.allowBroken or false || builtins.getEnv "NIXPKGS_ALLOW_BROKEN" == "1";
  allowUnsupportedSystem =
    config.allowUnsupportedSystem or false || builtins.getEnv "NIXPKGS_ALLOW_UNSUPPORTED_SYSTEM" == "1";

  isUnfree =
    licenses:
    if isAttrs licenses then
      !(licenses.free or true)
    else if isString licenses then
      false
    else
      builtins.any (l: !(l.free or false)) licenses;
  hasUnfreeLicense = attrs: attrs ? meta.license && isUnfree attrs.meta.license;
  hasDeniedUnfreeLicense =
    attrs:
    !allowUnfree
    && hasUnfreeLicense attrs
    && !(builtins.isFunction (config.allowUnfreePredicate or null) && config.allowUnfreePredicate attrs)
    && !(elem (lib.getName attrs) (config.allowUnfreePackages or [ ]));
  showLicense =
    value: toString (map (v: v.shortName or v.fullName or "unknown") (lib.toList value));
  hasUnsupportedPlatform =
    attrs:
    !allowUnsupportedSystem
    && (
      (attrs ? meta.platforms && !(builtins.any (lib.meta.platformMatch hostPlatform) attrs.meta.platforms))
      || (attrs ? meta.badPlatforms && builtins.any (lib.meta.platformMatch hostPlatform) attrs.meta.badPlatforms)
    );
  getNameWithVersion =
    attrs: attrs.name or "${attrs.pname or "«name-missing»"}-${attrs.version or "«version-missing»"}";

  unfreeRemediation = attrs: ''
    a) To temporarily allow unfree packages, you can use an environment variable
       for a single invocation of the nix tools.

         $ export NIXPKGS_ALLOW_UNFREE=1

       Note: When using `nix shell`, `nix build`, `nix develop`, etc with a flake,
             then pass `--impure` in order to allow use of environment variables.

    b) For `nixos-rebuild` you can set
      { nixpkgs.config.allowUnfree = true; }
    in configuration.nix to override this.

    Alternatively you can configure a predicate to allow specific packages:
      { nixpkgs.config.allowUnfreePredicate = pkg: builtins.elem (lib.getName pkg) [
          "${lib.getName attrs}"
        ];
      }

    c) For `nix-env`, `nix-build`, `nix-shell` or any other Nix command you can add
      { allowUnfree = true; }
    to ~/.config/nixpkgs/config.nix.
  '';

  checkValidity =
    attrs:
    if !attrs ? meta then
      null
    else if hasDeniedUnfreeLicense attrs then
      {
        msg = "has an unfree license (‘${showLicense attrs.meta.license}’)";
        remediation = unfreeRemediation attrs;
      }
    else if !allowBroken && attrs.meta.broken or false then
      {
        msg = "is marked as broken";
        remediation = "";
      }
    else if hasUnsupportedPlatform attrs then
      {
        msg = ''
          is not available on the requested hostPlatform:
            hostPlatform.system = "${hostPlatform.system}"
            package.meta.platforms = ${lib.toPretty { } (attrs.meta.platforms or [ ])}
            package.meta.badPlatforms = ${lib.toPretty { } (attrs.meta.badPlatforms or [ ])}
        '';
        remediation = "";
      }
    else
      null;

  assertValidity =
    { attrs, pos }:
    let
      invalid = checkValidity attrs;
    in
    if invalid == null then
      true
    else
      throw (
        "Refusing to evaluate package '${getNameWithVersion attrs}' in ${pos} because it ${invalid.msg}"
        + lib.optionalString (invalid.remediation != "") "\n${invalid.remediation}"
      );

  # -- argument names ------------------------------------------------------------------------
  # Superset of the parameters documented for stdenv.mkDerivation, the derivation builtin and
  # the setup hooks of the stdenv, cmake, ninja, meson, autoPatchelf and cuda packages.
  knownArgNames = [
    # identity
    "name" "pname" "version" "src" "srcs" "sourceRoot" "setSourceRoot" "unpackCmd" "pos"
    "meta" "passthru" "env" "outputs" "__structuredAttrs" "strictDeps" "__ignoreNulls"
    # dependencies
    "depsBuildBuild" "depsBuildBuildPropagated" "nativeBuildInputs" "propagatedNativeBuildInputs"
    "depsBuildTarget" "depsBuildTargetPropagated" "depsHostHost" "depsHostHostPropagated"
    "buildInputs" "propagatedBuildInputs" "depsTargetTarget" "depsTargetTargetPropagated"
    "checkInputs" "installCheckInputs" "nativeCheckInputs" "nativeInstallCheckInputs"
    "propagatedUserEnvPkgs" "setupHook" "setupHooks"
    # phases and hooks
    "phases" "prePhases" "preConfigurePhases" "preBuildPhases" "preInstallPhases"
    "preFixupPhases" "preDistPhases" "postPhases" "buildCommand"
    "unpackPhase" "preUnpack" "postUnpack" "dontUnpack" "dontMakeSourcesWritable"
    "patchPhase" "prePatch" "postPatch" "dontPatch" "patches" "patchFlags"
    "configurePhase" "preConfigure" "postConfigure" "dontConfigure" "configureFlags"
    "configureScript" "configurePlatforms" "dontAddPrefix" "prefix" "prefixKey"
    "dontAddStaticConfigureFlags" "dontDisableStatic" "dontFixLibtool" "dontAddDisableDepTrack"
    "buildPhase" "preBuild" "postBuild" "dontBuild" "makeFlags" "buildFlags" "makefile"
    "enableParallelBuilding" "enableParallelChecking" "enableParallelInstalling"
    "checkPhase" "preCheck" "postCheck" "doCheck" "checkTarget" "checkFlags"
    "installPhase" "preInstall" "postInstall" "dontInstall" "installFlags" "installTargets"
    "fixupPhase" "preFixup" "postFixup" "dontFixup" "dontStrip" "dontStripHost"
    "dontStripTarget" "stripAllList" "stripAllFlags" "stripDebugList" "stripDebugFlags"
    "stripExclude" "dontPatchELF" "dontPatchShebangs" "dontPruneLibtoolFiles" "dontMoveSbin"
    "dontMoveLib64" "forceShare" "dontGzipMan" "noAuditTmpdir" "separateDebugInfo"
    "dontCheckForBrokenSymlinks" "installCheckPhase" "preInstallCheck" "postInstallCheck"
    "doInstallCheck" "installCheckTarget" "installCheckFlags" "distPhase" "preDist" "postDist"
    "doDist" "dontDist" "tarballs" "shellHook" "userHook"
    # multiple outputs
    "outputDev" "outputBin" "outputLib" "outputDoc" "outputDevdoc" "outputMan" "outputDevman"
    "outputInfo" "outputInclude" "setOutputFlags" "propagatedBuildOutputs" "moveToDev"
    # hardening and compiler environment
    "hardeningEnable" "hardeningDisable" "NIX_CFLAGS_COMPILE" "NIX_CFLAGS_LINK" "NIX_LDFLAGS"
    # derivation builtin
    "builder" "realBuilder" "args" "system" "allowedReferences" "allowedRequisites"
    "disallowedReferences" "disallowedRequisites" "outputChecks" "unsafeDiscardReferences"
    "outputHash" "outputHashAlgo" "outputHashMode" "preferLocalBuild" "allowSubstitutes"
    "requiredSystemFeatures" "impureEnvVars" "passAsFile" "exportReferencesGraph"
    "__noChroot" "__impure" "__contentAddressed" "__darwinAllowLocalNetworking"
    "__impureHostDeps" "__propagatedImpureHostDeps" "sandboxProfile" "propagatedSandboxProfile"
    # cmake, ninja, meson hooks
    "cmakeFlags" "cmakeBuildType" "cmakeDir" "cmakeBuildDir" "dontUseCmakeConfigure"
    "dontUseCmakeBuildDir" "dontFixCmake" "ninjaFlags" "dontUseNinjaBuild" "dontUseNinjaCheck"
    "dontUseNinjaInstall" "mesonFlags" "mesonBuildType" "mesonCheckFlags" "mesonInstallFlags"
    "dontUseMesonConfigure"
    # autoPatchelfHook, makeWrapper users, CUDA hooks
    "autoPatchelfIgnoreMissingDeps" "appendRunpaths" "runtimeDependencies" "dontAutoPatchelf"
    "dontWrapPythonPrograms" "dontSetupCUDAToolkitCompilers" "dontCompressCudaFatbin"
    "dontFixupCudaLinks" "cudaAutoAddDriverRunpath"
  ];

  mkSuggestion =
    candidates: bad:
    let
      close = lib.take 3 (
        lib.sortOn (lib.levenshtein bad) (filter (lib.levenshteinAtMost 2 bad) candidates)
      );
    in
    if close == [ ] then
      ""
    else
      ", did you mean ${concatStringsSep " or " (map (c: "'${c}'") close)}?";

  checkArgNames =
    fnName: allowed: attrs:
    let
      unknown = filter (n: !(elem n allowed)) (attrNames attrs);
      first = builtins.head unknown;
    in
    if unknown == [ ] then
      true
    else
      throw (
        "${fnName} called with unexpected argument '${first}'${mkSuggestion allowed first}"
        + lib.optionalString (builtins.length unknown > 1) " (unexpected arguments: ${concatStringsSep ", " unknown})"
        + "\n(stub nixpkgs checks argument names; real nixpkgs would silently turn it into an environment variable of the build. Put custom environment variables in `env`.)"
      );

  # make-derivation.nix: checkDependencyList (same message).
  checkDependencyList' =
    positions: who: name: deps:
    if !isList deps then
      throw "stub-nixpkgs: `${name}` of ${who} must be a list, but it is a ${builtins.typeOf deps} (real nixpkgs fails with: cannot coerce/concatenate)"
    else
      lib.imap1 (
        index: dep:
        if isDerivation dep || dep == null || isString dep || builtins.isPath dep then
          dep
        else if isList dep then
          checkDependencyList' ([ index ] ++ positions) who name dep
        else
          throw "Dependency is not of a valid type: ${
            concatMapStrings (ix: "element ${toString ix} of ") ([ index ] ++ positions)
          }${name} for ${who}"
      ) deps;
  checkDependencyList = checkDependencyList' [ ];

  depAttrNames = [
    "depsBuildBuild"
    "depsBuildBuildPropagated"
    "nativeBuildInputs"
    "propagatedNativeBuildInputs"
    "depsBuildTarget"
    "depsBuildTargetPropagated"
    "depsHostHost"
    "depsHostHostPropagated"
    "buildInputs"
    "propagatedBuildInputs"
    "depsTargetTarget"
    "depsTargetTargetPropagated"
    "checkInputs"
    "installCheckInputs"
    "nativeCheckInputs"
    "nativeInstallCheckInputs"
  ];

  listArgNames = [
    "configureFlags"
    "cmakeFlags"
    "mesonFlags"
    "patches"
    "outputs"
    "hardeningEnable"
    "hardeningDisable"
  ];

  knownHardeningFlags = [
    "bindnow"
    "format"
    "fortify"
    "fortify3"
    "pic"
    "pie"
    "relro"
    "stackprotector"
    "stackclashprotection"
    "strictoverflow"
    "trivialautovarinit"
    "zerocallusedregs"
    "shadowstack"
    "pacret"
    "nostrictaliasing"
    "libcxxhardeningfast"
    "libcxxhardeningextensive"
    "glibcxxassertions"
  ];

  prettyPrint = lib.toPretty { };

  # -- mkDerivation --------------------------------------------------------------------------
  makeMkDerivation =
    stdenv:
    let
      mkDerivation =
        fnOrAttrs:
        if builtins.isFunction fnOrAttrs then
          makeDerivationExtensible fnOrAttrs
        else
          makeDerivationExtensible (_: fnOrAttrs);

      makeDerivationExtensible =
        rattrs:
        let
          args = rattrs (args // { inherit finalPackage overrideAttrs; });
          overrideAttrs =
            f0:
            let
              f =
                self: super:
                let
                  x = f0 super;
                in
                if builtins.isFunction x then f0 self super else x;
            in
            makeDerivationExtensible (
              self:
              let
                super = rattrs self;
              in
              super // (if builtins.isFunction f0 || f0 ? __functor then f self super else f0)
            );
          finalPackage = mkDerivationSimple overrideAttrs args;
        in
        finalPackage;

      mkDerivationSimple =
        overrideAttrs: attrs0:
        let
          stub = attrs0.__stub or { };
          fnName = stub.function or "stdenv.mkDerivation";
          attrs = removeAttrs attrs0 [ "__stub" ];
          who = attrs.name or attrs.pname or "«name-missing»";

          # With structured attrs, real nixpkgs hands every argument to the builder as data
          # (`.attrs.json`, and bash variables and arrays in `.attrs.sh`), not as environment
          # variables: a string or list of strings there is the builder's data (a kernel's
          # `cxxFlags`). Other unknown names are still refused (a typo such as
          # `nativeBuildInput = [ pkg ]` lists derivations).
          isData = v: isString v || (isList v && builtins.all isString v);
          dataArgs =
            if attrs.__structuredAttrs or false then
              filter (n: !(elem n knownArgNames) && isData attrs.${n}) (attrNames attrs)
            else
              [ ];
          argsOk = checkArgNames fnName (knownArgNames ++ (stub.extraArgNames or [ ]) ++ dataArgs) attrs;

          nameOk =
            if attrs ? name then
              true
            else if attrs ? pname then
              if attrs ? version then
                lib.assertMsg (attrs.version != null) "The ‘version’ attribute cannot be null."
              else
                throw "${fnName}: `pname` is set but `version` is missing; real nixpkgs then has no `name` and `derivation` fails with: attribute 'name' missing"
            else
              throw "${fnName}: neither `name` nor `pname` + `version` is set; real nixpkgs then fails with: attribute 'name' missing";

          listsOk = builtins.all (
            n:
            !(attrs ? ${n})
            || isList attrs.${n}
            || throw "stub-nixpkgs: `${n}` of ${who} must be a list, but it is a ${builtins.typeOf attrs.${n}} (real nixpkgs fails with: value is a ${builtins.typeOf attrs.${n}} while a list was expected)"
          ) listArgNames;

          hardeningOk =
            let
              bad = lib.subtractLists (knownHardeningFlags ++ [ "all" ]) (
                attrs.hardeningEnable or [ ] ++ attrs.hardeningDisable or [ ]
              );
            in
            bad == [ ]
            || abort "mkDerivation was called with unsupported hardening flags: ${prettyPrint bad}";

          __structuredAttrs = attrs.__structuredAttrs or (config.structuredAttrsByDefault or false);
          strictDeps = attrs.strictDeps or (config.strictDepsByDefault or false);
          doCheck = attrs.doCheck or (config.doCheckByDefault or false);
          doInstallCheck = attrs.doInstallCheck or (config.doCheckByDefault or false);
          outputs = attrs.outputs or [ "out" ];
          env = attrs.env or { };
          envIsExportable = isAttrs env && !isDerivation env;

          deps = lib.genAttrs (filter (n: attrs ? ${n}) depAttrNames) (
            n: map (d: if isDerivation d then lib.getDev d else d) (lib.flatten (checkDependencyList who n attrs.${n}))
          );

          derivationArg =
            assert argsOk;
            assert nameOk;
            assert listsOk;
            assert hardeningOk;
            removeAttrs attrs (
              [
                "meta"
                "passthru"
                "pos"
              ]
              ++ optional (__structuredAttrs || envIsExportable) "env"
            )
            // optionalAttrs __structuredAttrs { env = checkedEnv; }
            // deps
            // {
              name = lib.sanitizeDerivationName (
                if attrs ? name then attrs.name else "${attrs.pname}-${attrs.version}"
              );
              builder = attrs.realBuilder or stdenv.shell;
              args = attrs.args or [
                "-e"
                (attrs.builder or ./builder.sh)
              ];
              inherit (stdenv.buildPlatform) system;
              inherit
                __structuredAttrs
                strictDeps
                doCheck
                doInstallCheck
                outputs
                ;
              __ignoreNulls = true;
              inherit stdenv;
              stubInitialPath = stdenv.initialPath;
              stubCC = if stdenv.hasCC then stdenv.cc else null;
              cmakeFlags = attrs.cmakeFlags or [ ];
              mesonFlags = attrs.mesonFlags or [ ];
            };

          checkedEnv =
            let
              overlappingNames = attrNames (builtins.intersectAttrs env derivationArg);
              makeError =
                name:
                "  - ${name}: in `env`: ${prettyPrint env.${name}}; in derivation arguments: ${prettyPrint derivationArg.${name}}";
              errors = lib.concatMapStringsSep "\n" makeError overlappingNames;
            in
            assert lib.assertMsg envIsExportable "When using structured attributes, `env` must be an attribute set of environment variables.";
            assert lib.assertMsg (overlappingNames == [ ]) "The `env` attribute set cannot contain any attributes passed to derivation. The following attributes are overlapping:\n${errors}";
            builtins.mapAttrs (
              n: v:
              assert lib.assertMsg (isString v || isBool v || isInt v || isDerivation v) "The `env` attribute set can only contain derivation, string, boolean or integer attributes. The `${n}` attribute is of type ${builtins.typeOf v}.";
              v
            ) env;

          pos =
            if attrs.pos or null != null then
              attrs.pos
            else if attrs.meta.description or null != null then
              builtins.unsafeGetAttrPos "description" attrs.meta
            else if attrs.version or null != null then
              builtins.unsafeGetAttrPos "version" attrs
            else
              builtins.unsafeGetAttrPos "name" attrs;
          posStr = if pos == null then "«unknown-file»" else "${pos.file}:${toString pos.line}";

          validity = assertValidity {
            inherit attrs;
            pos = posStr;
          };

          meta = {
            name = attrs.name or "${attrs.pname}-${attrs.version}";
            outputsToInstall = [ (if elem "bin" outputs then "bin" else builtins.head outputs) ];
            available = checkValidity attrs == null;
            unfree = hasUnfreeLicense attrs;
            broken = attrs.meta.broken or false;
            unsupported = hasUnsupportedPlatform attrs;
          }
          // attrs.meta or { }
          // optionalAttrs (pos != null) { position = posStr; };

          drv = derivation (derivationArg // optionalAttrs envIsExportable checkedEnv);
        in
        lib.extendDerivation validity (
          {
            passthru = attrs.passthru or { };
            inherit overrideAttrs meta;
          }
          // attrs.passthru or { }
        ) drv;
    in
    mkDerivation;

  # -- stdenvs ------------------------------------------------------------------------------
  mkStdenv =
    {
      name ? "stdenv-${if hostPlatform.isDarwin then "darwin" else "linux"}",
      cc,
      extraAttrs ? { },
    }:
    let
      setup = mkSetup name;
      stdenv = {
        inherit name cc shell;
        # Like the real stdenv, a derivation whose output holds `setup`.
        type = "derivation";
        inherit (setup) outPath drvPath;
        outputs = [ "out" ];
        outputName = "out";
        hasCC = cc != null;
        inherit hostPlatform;
        buildPlatform = hostPlatform;
        targetPlatform = hostPlatform;
        inherit (hostPlatform) system isLinux isDarwin;
        isx86_64 = hostPlatform.isx86_64;
        isAarch64 = hostPlatform.isAarch64;
        initialPath = [ hostTools ];
        mkDerivation = makeMkDerivation stdenv;
        passthru = { };
        meta = { };
      }
      // extraAttrs;
    in
    stdenv;

  defaultCC = if hostPlatform.isDarwin then darwinClang else gccWrapper;
in
{
  stdenv = mkStdenv { cc = defaultCC; };
  stdenvNoCC = mkStdenv {
    name = "stdenv-no-cc";
    cc = null;
  };
  gccStdenv = final.stdenv;
  clangStdenv = mkStdenv {
    cc = mkUnavailableCC {
      name = "clang-wrapper-19.1.7";
      version = "19.1.7";
      reason = "there is no clang on this machine";
    };
  };
  # pkgs/stdenv/adapters.nix
  overrideCC =
    stdenv: cc:
    mkStdenv {
      inherit cc;
      name = stdenv.name;
    };
  stdenvAdapters = {
    overrideCC = final.overrideCC;
    useLibsFrom = modelStdenv: targetStdenv: targetStdenv;
  };

  # Internals other parts of the stub use (not nixpkgs attributes).
  __stub = {
    # A package this machine cannot provide (ROCm, oneAPI, …): evaluates like the real one
    # (name, version, meta with license/platforms, passthru) and fails to build with `reason`.
    mkUnavailable =
      {
        pname,
        version,
        reason,
        meta ? { },
        passthru ? { },
      }:
      final.stdenvNoCC.mkDerivation {
        inherit pname version passthru;
        meta = {
          description = "stub-nixpkgs stand-in for ${pname} (${reason})";
        }
        // meta;
        buildCommand = ''
          echo "stub-nixpkgs: ${pname}-${version} is not available on this machine: ${reason}" >&2
          exit 1
        '';
      };

    # A fixed-output fetch: same drv shape as the real fetchers, but there is no network.
    mkNetworkFetch =
      {
        name,
        what,
        hash,
        recursive ? false,
      }:
      derivation (
        {
          inherit name;
          inherit (hostPlatform) system;
          builder = shell;
          args = [
            "-c"
            "echo 'stub-nixpkgs: ${what} needs the network, which this machine does not have' >&2; exit 1"
          ];
          outputHash = if hash == null || hash == "" || hash == "sha256:" then lib.fakeHash else hash;
          outputHashMode = if recursive then "recursive" else "flat";
        }
        # A bare hex/base32 hash (e.g. a Cargo.lock checksum) is a sha256, as in fetchurl.
        // lib.optionalAttrs (
          hash != null && hash != "" && builtins.match "(sha[0-9]+-|[a-z0-9]+:).*" hash == null
        ) { outputHashAlgo = "sha256"; }
      );

    inherit
      mkStdenv
      mkUnavailableCC
      checkArgNames
      knownArgNames
      hostTools
      shell
      hostPathString
      ;
  };
}
