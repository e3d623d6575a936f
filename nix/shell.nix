/**
  Shell quoting for the build phases the library writes.

  Every value that comes from a build.toml (paths, flags) reaches a shell command only
  through `escapeShellArg`, so a flag such as `-DX="a b"; rm -rf /` stays one argument.
*/
let
  inherit (builtins) concatStringsSep match replaceStrings;
in
rec {
  /**
    Quote one argument for a POSIX shell (single quotes; a `'` becomes `'\''`).
    Arguments made only of safe characters are left bare, for readable build logs.

    # Type

    ```
    escapeShellArg :: String -> String
    ```

    # Examples

    ```nix
    escapeShellArg "it's"
    => "'it'\\''s'"
    ```
  */
  escapeShellArg =
    arg:
    let
      s = toString arg;
    in
    if match "[[:alnum:],._+:@%/=-]+" s != null then s else "'${replaceStrings [ "'" ] [ "'\\''" ] s}'";

  /**
    Quote a list of arguments and join them with spaces.

    # Type

    ```
    escapeShellArgs :: [ String ] -> String
    ```

    # Examples

    ```nix
    escapeShellArgs [ "-O2" "a b" ]
    => "-O2 'a b'"
    ```
  */
  escapeShellArgs = args: concatStringsSep " " (map escapeShellArg args);
}
