# Tests of `shell.nix`. The round trip through a real `sh -c` is in tests/test_nixlib.py;
# these pin the exact quoting.
let
  shell = import ../shell.nix;
in
{
  testSafeArgumentsStayBare = {
    expr = map shell.escapeShellArg [ "-O2" "-DX=1" "a/b.cpp" "-Wl,--as-needed" "user@host:x" "50%" "c++" ];
    expected = [ "-O2" "-DX=1" "a/b.cpp" "-Wl,--as-needed" "user@host:x" "50%" "c++" ];
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
