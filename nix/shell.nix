/**
  Shell quoting for the build phases the library writes: nixpkgs' own
  (`lib.strings.escapeShellArg` and `escapeShellArgs`, real nixpkgs lib/strings.nix).

  Every value that comes from a build.toml (paths, flags) reaches a shell command only
  through `escapeShellArg`, so a flag such as `-DX="a b"; rm -rf /` stays one argument:
  an argument made only of safe characters (`[[:alnum:],._+:@%/-]`) stays bare, any
  other is single-quoted with each `'` written `'\''`. tests/test_nixlib.py passes
  hostile strings through a real `sh -c`.
*/
{ lib }:
{
  /**
    Quote one argument for a POSIX shell.

    # Type

    ```
    escapeShellArg :: String -> String
    ```
  */
  inherit (lib.strings) escapeShellArg;

  /**
    Quote a list of arguments and join them with spaces.

    # Type

    ```
    escapeShellArgs :: [ String ] -> String
    ```
  */
  inherit (lib.strings) escapeShellArgs;
}
