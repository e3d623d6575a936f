# Tests of `shell.nix`, nixpkgs' quoting. The round trip through a real `sh -c` is in
# tests/test_nixlib.py; these pin the exact quoting the build phases get.
let
  # With the stand-in's copy of nixpkgs `lib` (lib/strings.nix).
  shell = import ../shell.nix { lib = import ../../tests/nixpkgs/lib; };
in
{
  testSafeArgumentsStayBare = {
    expr = map shell.escapeShellArg [ "-O2" "a/b.cpp" "-Wl,--as-needed" "user@host:x" "50%" "c++" ];
    expected = [ "-O2" "a/b.cpp" "-Wl,--as-needed" "user@host:x" "50%" "c++" ];
  };

  # nixpkgs' safe set has no `=`: a define is quoted (the shell passes it unchanged).
  testAnEqualsSignIsQuotedAsNixpkgsQuotesIt = {
    expr = map shell.escapeShellArg [ "-DX=1" "-std=c++20" ];
    expected = [ "'-DX=1'" "'-std=c++20'" ];
  };

  testEverythingElseIsSingleQuoted = {
    expr = map shell.escapeShellArg [
      "a b"
      "$HOME"
      "\${x}"
      "`id`"
      "a\"b"
      "a\\b"
      "*"
      "~"
      "x;y"
      "line\nbreak"
    ];
    expected = [
      "'a b'"
      "'$HOME'"
      "'\${x}'"
      "'`id`'"
      "'a\"b'"
      "'a\\b'"
      "'*'"
      "'~'"
      "'x;y'"
      "'line\nbreak'"
    ];
  };

  testSingleQuoteIsClosedEscapedReopened = {
    expr = shell.escapeShellArg "it's";
    expected = "'it'\\''s'";
  };

  testEmptyStringIsAnEmptyArgument = {
    expr = shell.escapeShellArg "";
    expected = "''";
  };

  testEscapeShellArgsJoinsWithSpaces = {
    expr = shell.escapeShellArgs [ "-O2" "a b" "" "it's" ];
    expected = "-O2 'a b' '' 'it'\\''s'";
  };

  testEscapeShellArgsOfNothingIsEmpty = {
    expr = shell.escapeShellArgs [ ];
    expected = "";
  };
}
