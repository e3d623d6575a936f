# Build tools as stand-ins for their nixpkgs packages: each is a derivation whose bin/ holds
# the host executables (symlinks, or exec wrappers for programs that locate their data from
# their own path, like cmake). cmake and ninja carry setup hooks with the behaviour of the
# real ones (hooks/cmake-setup-hook.sh, hooks/ninja-setup-hook.sh). A tool this machine
# lacks still evaluates; building it fails with a message naming the tool.
{
  lib,
  final,
  host,
  ...
}:
let
  mkHostTool =
    {
      pname,
      bins,
      wrap ? [ ],
      setupHook ? null,
      meta ? { },
      passthru ? { },
    }:
    final.stdenvNoCC.mkDerivation {
      inherit pname passthru;
      version = host.versions.${pname} or "host";
      meta = {
        description = "stub-nixpkgs stand-in for ${pname} (host executables)";
        mainProgram = builtins.head bins;
      }
      // meta;
      env = {
        hostPath = final.__stub.hostPathString;
        toolBins = toString bins;
        wrapBins = toString wrap;
        wrapperShell = final.runtimeShell;
      };
      ${if setupHook != null then "setupHook" else null} = setupHook;
      buildCommand = ''
        mkdir -p $out/bin
        IFS=: read -r -a dirs <<<"$hostPath"
        for t in $toolBins; do
          found=
          for d in "''${dirs[@]}"; do
            if [ -x "$d/$t" ] && [ ! -d "$d/$t" ]; then found="$d/$t"; break; fi
          done
          if [ -z "$found" ]; then
            echo "stub-nixpkgs: ${pname}: '$t' was not found on this machine (host PATH: $hostPath)" >&2
            exit 1
          fi
          if [[ " $wrapBins " == *" $t "* ]]; then
            printf '#!%s\nexec %q "$@"\n' "$wrapperShell" "$found" >"$out/bin/$t"
            chmod +x "$out/bin/$t"
          else
            ln -s "$found" "$out/bin/$t"
          fi
        done
        if [ -n "''${setupHook:-}" ]; then
          mkdir -p $out/nix-support
          cp "$setupHook" $out/nix-support/setup-hook
        fi
      '';
    };
in
{
  cmake = mkHostTool {
    pname = "cmake";
    bins = [
      "cmake"
      "ctest"
      "cpack"
    ];
    wrap = [
      "cmake"
      "ctest"
      "cpack"
    ];
    setupHook = ./hooks/cmake-setup-hook.sh;
  };
  ninja = mkHostTool {
    pname = "ninja";
    bins = [ "ninja" ];
    setupHook = ./hooks/ninja-setup-hook.sh;
  };
  gnumake = mkHostTool {
    pname = "gnumake";
    bins = [ "make" ];
  };
  pkg-config = mkHostTool {
    pname = "pkg-config";
    bins = [ "pkg-config" ];
    setupHook = builtins.toFile "pkg-config-setup-hook.sh" ''
      addPkgConfigPath() {
          addToSearchPath PKG_CONFIG_PATH "$1/lib/pkgconfig"
          addToSearchPath PKG_CONFIG_PATH "$1/share/pkgconfig"
          export PKG_CONFIG_PATH
      }
      addEnvHooks "$targetOffset" addPkgConfigPath
    '';
  };
  patchelf = mkHostTool {
    pname = "patchelf";
    bins = [ "patchelf" ];
  };
  which = mkHostTool {
    pname = "which";
    bins = [ "which" ];
  };
  file = mkHostTool {
    pname = "file";
    bins = [ "file" ];
  };
  git = mkHostTool {
    pname = "git";
    bins = [ "git" ];
  };
  bash = mkHostTool {
    pname = "bash";
    bins = [
      "bash"
      "sh"
    ];
  };
  # all-packages.nix at the pin: `bashInteractive = bash;` ("used by nix-shell so it
  # shouldn't be removed/renamed"). `nix develop` looks it up in the flake's nixpkgs
  # (`legacyPackages.<system>.bashInteractive`) for the shell it starts.
  bashInteractive = final.bash;
  coreutils = mkHostTool {
    pname = "coreutils";
    bins = [
      "cat" "cp" "mv" "rm" "ln" "ls" "mkdir" "chmod" "touch" "echo" "head" "tail" "sort"
      "uniq" "wc" "cut" "tr" "basename" "dirname" "readlink" "realpath" "env" "install"
      "mktemp" "printf" "test" "true" "false" "sha256sum" "stat" "date" "tee" "nproc"
    ];
  };
  findutils = mkHostTool {
    pname = "findutils";
    bins = [
      "find"
      "xargs"
    ];
  };
  diffutils = mkHostTool {
    pname = "diffutils";
    bins = [
      "diff"
      "cmp"
    ];
  };
  gnused = mkHostTool {
    pname = "gnused";
    bins = [ "sed" ];
  };
  gnugrep = mkHostTool {
    pname = "gnugrep";
    bins = [ "grep" ];
  };
  gawk = mkHostTool {
    pname = "gawk";
    bins = [ "awk" ];
  };
  gnutar = mkHostTool {
    pname = "gnutar";
    bins = [ "tar" ];
  };
  gzip = mkHostTool {
    pname = "gzip";
    bins = [ "gzip" ];
  };
  xz = mkHostTool {
    pname = "xz";
    bins = [ "xz" ];
  };
  jq = mkHostTool {
    pname = "jq";
    bins = [ "jq" ];
  };
}
