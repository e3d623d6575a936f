# Trivial builders, after pkgs/build-support/trivial-builders/default.nix (runCommand*,
# write*, symlinkJoin, linkFarm, makeSetupHook), mkShell (./mkshell.nix) and network fetchers that evaluate like the
# real ones but fail to build here (no network).
{ lib, final, ... }:
let
  inherit (final) stdenvNoCC;
  inherit (final.__stub) checkArgNames;
  inherit (lib) escapeShellArg;

  runCommandWith =
    {
      stdenv ? final.stdenv,
      runLocal ? false,
      derivationArgs ? { },
      name,
    }:
    buildCommand:
    stdenv.mkDerivation (
      {
        enableParallelBuilding = true;
        inherit buildCommand name;
        passAsFile = [ "buildCommand" ] ++ (derivationArgs.passAsFile or [ ]);
        # runCommand's extra attributes are documented as environment variables.
        __stub = {
          function = "runCommand";
          extraArgNames = builtins.attrNames derivationArgs;
        };
      }
      // lib.optionalAttrs runLocal {
        preferLocalBuild = true;
        allowSubstitutes = false;
      }
      // builtins.removeAttrs derivationArgs [ "passAsFile" ]
    );

  runCommand =
    name: env:
    runCommandWith {
      stdenv = stdenvNoCC;
      runLocal = false;
      inherit name;
      derivationArgs = env;
    };

  writeTextFile =
    {
      name,
      text,
      executable ? false,
      destination ? "",
      checkPhase ? "",
      meta ? { },
      passthru ? { },
      allowSubstitutes ? false,
      preferLocalBuild ? true,
      derivationArgs ? { },
    }:
    assert lib.assertMsg (destination != "" -> (lib.hasPrefix "/" destination && destination != "/")) ''
      destination must be an absolute path, relative to the derivation's out path,
      got '${destination}' instead.

      Ensure that the path starts with a / and specifies at least the filename.
    '';
    runCommandWith {
      inherit name;
      stdenv = stdenvNoCC;
      derivationArgs = {
        inherit
          text
          executable
          checkPhase
          allowSubstitutes
          preferLocalBuild
          meta
          passthru
          ;
        passAsFile = [ "text" ];
      }
      // derivationArgs;
    } ''
      target=$out${escapeShellArg destination}
      mkdir -p "$(dirname "$target")"
      if [ -e "$textPath" ]; then
        mv "$textPath" "$target"
      else
        echo -n "$text" > "$target"
      fi
      if [ -n "$executable" ]; then
        chmod +x "$target"
      fi
      eval "$checkPhase"
    '';

  symlinkJoinArgs = [
    "name"
    "pname"
    "version"
    "paths"
    "stripPrefix"
    "preferLocalBuild"
    "allowSubstitutes"
    "postBuild"
    "failOnMissing"
    "meta"
    "passthru"
    "nativeBuildInputs"
    "buildInputs"
    "__structuredAttrs"
  ];
in
{
  inherit runCommandWith runCommand writeTextFile;

  mkShell = final.callPackage ./mkshell.nix { };

  runCommandLocal =
    name: env:
    runCommandWith {
      stdenv = stdenvNoCC;
      runLocal = true;
      inherit name;
      derivationArgs = env;
    };
  runCommandCC =
    name: env:
    runCommandWith {
      stdenv = final.stdenv;
      runLocal = false;
      inherit name;
      derivationArgs = env;
    };

  writeText =
    name: text:
    assert lib.assertMsg (lib.strings.isStringLike text) "pkgs.writeText ${lib.strings.escapeNixString name}: The second argument should be a string, but it's a ${builtins.typeOf text} instead.";
    writeTextFile { inherit name text; };
  writeTextDir =
    path: text:
    writeTextFile {
      inherit text;
      name = builtins.baseNameOf path;
      destination = "/${path}";
    };
  writeScript =
    name: text:
    writeTextFile {
      inherit name text;
      executable = true;
    };
  writeScriptBin =
    name: text:
    writeTextFile {
      inherit name text;
      executable = true;
      destination = "/bin/${name}";
      meta.mainProgram = name;
    };
  writeShellScript =
    name: text:
    writeTextFile {
      inherit name;
      executable = true;
      text = ''
        #!${final.runtimeShell}
        ${text}
      '';
    };
  writeShellScriptBin =
    name: text:
    writeTextFile {
      inherit name;
      executable = true;
      destination = "/bin/${name}";
      text = ''
        #!${final.runtimeShell}
        ${text}
      '';
      meta.mainProgram = name;
    };
  runtimeShell = final.__stub.shell;

  # pkgs/build-support/trivial-builders: symlinkJoin (strict argument names here).
  symlinkJoin =
    args_:
    assert checkArgNames "symlinkJoin" symlinkJoinArgs args_;
    let
      args =
        removeAttrs args_ [
          "name"
          "pname"
          "version"
          "postBuild"
          "stripPrefix"
          "paths"
          "failOnMissing"
        ]
        // {
          # Same semantics as real: the first path wins when two provide the same file.
          paths = map toString args_.paths;
          stripPrefix = args_.stripPrefix or "";
          failOnMissing = args_.failOnMissing or ((args_.stripPrefix or "") == "");
          preferLocalBuild = args_.preferLocalBuild or true;
          allowSubstitutes = args_.allowSubstitutes or false;
          passAsFile = [ "paths" ];
        };
      name =
        if args_ ? pname && args_ ? version then
          "${args_.pname}-${args_.version}"
        else
          args_.name
            or (throw "symlinkJoin requires either a `name` OR `pname` and `version`");
    in
    runCommand name args ''
      mkdir -p $out
      for i in $(cat $pathsPath); do
        src="$i$stripPrefix"
        if [ ! -e "$src" ]; then
          if [ -n "$failOnMissing" ]; then
            echo "symlinkJoin: error: path $src does not exist" >&2
            exit 1
          fi
          continue
        fi
        (cd "$src" && find . -mindepth 1 \( -type f -o -type l \) -print) | while read -r f; do
          mkdir -p "$out/$(dirname "$f")"
          [ -e "$out/$f" ] || [ -L "$out/$f" ] || ln -s "$src/$f" "$out/$f"
        done
      done
      ${args_.postBuild or ""}
    '';

  # pkgs/build-support/trivial-builders: linkFarm (list of { name; path; } or attrset).
  linkFarm =
    name: entries:
    let
      entries' =
        if lib.isAttrs entries then
          lib.mapAttrsToList (name: path: { inherit name path; }) entries
        else if lib.isList entries then
          map (
            e:
            if lib.isAttrs e && builtins.attrNames e == [ "name" "path" ] then
              e
            else
              throw "linkFarm ${name}: each list element must be an attribute set with exactly `name` and `path`, got ${lib.toPretty { } (if lib.isAttrs e then builtins.attrNames e else e)}"
          ) entries
        else
          throw "linkFarm ${name}: entries must be a list or an attribute set, got a ${builtins.typeOf entries}";
      linkCommands = lib.concatMapStrings (
        { name, path }:
        ''
          mkdir -p -- "$(dirname -- ${escapeShellArg "${name}"})"
          ln -s -- ${escapeShellArg "${path}"} ${escapeShellArg "${name}"}
        ''
      ) entries';
    in
    runCommand name
      {
        preferLocalBuild = true;
        allowSubstitutes = false;
        passthru.entries = entries';
      }
      ''
        mkdir -p $out
        cd $out
        ${linkCommands}
      '';
  linkFarmFromDrvs =
    name: drvs:
    final.linkFarm name (
      map (drv: {
        name = drv.name;
        path = drv;
      }) drvs
    );

  # pkgs/build-support/trivial-builders: makeSetupHook.
  makeSetupHook =
    {
      name ? lib.warn "calling makeSetupHook without passing a name is deprecated." "hook",
      deps ? [ ],
      propagatedBuildInputs ? [ ],
      depsTargetTargetPropagated ? [ ],
      meta ? { },
      passthru ? { },
      substitutions ? { },
    }:
    script:
    runCommand name
      (
        {
          inherit meta;
          propagatedBuildInputs = propagatedBuildInputs ++ lib.toList deps;
          inherit depsTargetTargetPropagated;
          passthru = passthru // {
            provides = [ ];
          };
          hookText = builtins.replaceStrings (map (n: "@${n}@") (builtins.attrNames substitutions)) (
            map toString (builtins.attrValues substitutions)
          ) (builtins.readFile script);
          passAsFile = [ "hookText" ];
        }
      )
      ''
        mkdir -p $out/nix-support
        cp "$hookTextPath" $out/nix-support/setup-hook
        ${lib.optionalString (propagatedBuildInputs != [ ] || deps != [ ]) ''
          printf '%s ' ${toString (propagatedBuildInputs ++ lib.toList deps)} > $out/nix-support/propagated-build-inputs
        ''}
      '';

  emptyFile = final.writeText "empty-file" "";
  emptyDirectory = runCommand "empty-directory" { } "mkdir -p $out";

  # Fetchers: fixed-output derivations that evaluate like the real ones but need the network,
  # which this machine does not have; building one fails with a clear message.
  fetchurl =
    {
      url ? builtins.head urls,
      urls ? [ ],
      hash ? null,
      sha256 ? null,
      name ? baseNameOf (toString url),
      ...
    }:
    final.__stub.mkNetworkFetch {
      inherit name;
      what = "fetchurl ${url}";
      hash = if hash != null then hash else "sha256:${sha256}";
    };
  fetchzip =
    {
      url ? builtins.head urls,
      urls ? [ ],
      hash ? null,
      sha256 ? null,
      name ? "source",
      ...
    }:
    final.__stub.mkNetworkFetch {
      inherit name;
      what = "fetchzip ${url}";
      hash = if hash != null then hash else "sha256:${sha256}";
      recursive = true;
    };
  fetchFromGitHub =
    {
      owner,
      repo,
      rev ? null,
      tag ? null,
      hash ? null,
      sha256 ? null,
      name ? "source",
      ...
    }:
    final.__stub.mkNetworkFetch {
      inherit name;
      what = "fetchFromGitHub ${owner}/${repo}@${if tag != null then tag else toString rev}";
      hash = if hash != null then hash else "sha256:${sha256}";
      recursive = true;
    };
  fetchgit =
    {
      url,
      rev ? "HEAD",
      hash ? null,
      sha256 ? null,
      name ? "source",
      ...
    }:
    final.__stub.mkNetworkFetch {
      inherit name;
      what = "fetchgit ${url}@${rev}";
      hash = if hash != null then hash else "sha256:${sha256}";
      recursive = true;
    };
}
