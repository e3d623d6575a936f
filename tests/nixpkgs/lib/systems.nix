# A subset of nixpkgs lib/systems: `lib.platforms` lists (lib/systems/doubles.nix) and a small
# `lib.systems.elaborate` that yields the platform predicates stdenv exposes as
# `stdenv.hostPlatform` (lib/systems/inspect.nix names).
{ lib }:
let
  known = {
    x86_64-linux = {
      cpu = "x86_64";
      kernel = "linux";
      config = "x86_64-unknown-linux-gnu";
      libc = "glibc";
    };
    aarch64-linux = {
      cpu = "aarch64";
      kernel = "linux";
      config = "aarch64-unknown-linux-gnu";
      libc = "glibc";
    };
    aarch64-darwin = {
      cpu = "aarch64";
      kernel = "darwin";
      config = "arm64-apple-darwin";
      libc = "libSystem";
    };
    x86_64-darwin = {
      cpu = "x86_64";
      kernel = "darwin";
      config = "x86_64-apple-darwin";
      libc = "libSystem";
    };
  };

  elaborate =
    systemOrArgs:
    let
      system = if builtins.isString systemOrArgs then systemOrArgs else systemOrArgs.system;
      info =
        known.${system}
          or (throw "stub-nixpkgs: lib.systems.elaborate: unknown system '${system}' (the stub knows ${builtins.concatStringsSep ", " (builtins.attrNames known)})");
      isLinux = info.kernel == "linux";
      isDarwin = info.kernel == "darwin";
      isx86_64 = info.cpu == "x86_64";
      isAarch64 = info.cpu == "aarch64";
      rustcTarget =
        if isDarwin then
          "${info.cpu}-apple-darwin"
        else
          "${info.cpu}-unknown-linux-gnu";
      self = {
        inherit system isLinux isDarwin isx86_64 isAarch64;
        inherit (info) config libc;
        parsed = {
          cpu.name = info.cpu;
          kernel.name = info.kernel;
        };
        isx86 = isx86_64;
        isAarch = isAarch64;
        isAarch32 = false;
        isi686 = false;
        is64bit = true;
        is32bit = false;
        isUnix = true;
        isMacOS = isDarwin;
        isWindows = false;
        isMinGW = false;
        isCygwin = false;
        isFreeBSD = false;
        isOpenBSD = false;
        isStatic = false;
        isMusl = false;
        isGnu = isLinux;
        isPower = false;
        isPower64 = false;
        isRiscV = false;
        isRiscV64 = false;
        isWasm = false;
        isSunOS = false;
        isBSD = false;
        isAndroid = false;
        isLittleEndian = true;
        isBigEndian = false;
        isEfi = true;
        useLLVM = isDarwin;
        linker = if isDarwin then "cctools" else "bfd";
        uname = {
          system = if isDarwin then "Darwin" else "Linux";
          processor = if isDarwin && isAarch64 then "arm64" else info.cpu;
        };
        linuxArch = if isAarch64 then "arm64" else "x86_64";
        darwinArch = if isAarch64 then "arm64" else "x86_64";
        darwinSdkVersion = "14.4";
        darwinMinVersion = "14.0";
        extensions = {
          sharedLibrary = if isDarwin then ".dylib" else ".so";
          staticLibrary = ".a";
          library = if isDarwin then ".dylib" else ".so";
          executable = "";
        };
        rust = {
          inherit rustcTarget;
          rustcTargetSpec = rustcTarget;
          cargoShortTarget = rustcTarget;
          cargoEnvVarTarget = lib.toUpper (builtins.replaceStrings [ "-" ] [ "_" ] rustcTarget);
          platform = { };
        };
        emulatorAvailable = _: true;
        canExecute = platform: platform.system == system;
        isCompatible = platform: platform.system == system;
      };
    in
    self;

  flakeExposed = [
    "x86_64-linux"
    "aarch64-linux"
    "x86_64-darwin"
    "aarch64-darwin"
  ];
in
{
  systems = {
    inherit elaborate flakeExposed;
    doubles = {
      all = builtins.attrNames known;
      linux = [
        "x86_64-linux"
        "aarch64-linux"
      ];
      darwin = [
        "x86_64-darwin"
        "aarch64-darwin"
      ];
    };
  };

  platforms = rec {
    all = builtins.attrNames known;
    linux = [
      "aarch64-linux"
      "x86_64-linux"
    ];
    darwin = [
      "aarch64-darwin"
      "x86_64-darwin"
    ];
    unix = linux ++ darwin;
    x86_64 = [
      "x86_64-linux"
      "x86_64-darwin"
    ];
    aarch64 = [
      "aarch64-linux"
      "aarch64-darwin"
    ];
    x86 = x86_64;
    none = [ ];
  };
}
