"""Shell completion for PowerShell and elvish, the two shells of kernel-builder's
`completions` that click lacks (it has bash, zsh and fish).

Each is a click `ShellComplete`: a script the shell loads once (`source`), which calls
`nixgen` with ``_NIXGEN_COMPLETE=<shell>_complete`` on every Tab and turns its answer into
the shell's candidates, and the answer itself (`complete`): one candidate a line,
``TYPE<tab>VALUE<tab>HELP`` (TYPE is click's: ``plain``, or ``file``/``dir`` for a path,
which the script completes with the shell's own path completion).

What the shell passes in:

* PowerShell (`Register-ArgumentCompleter -Native`): the command line up to the cursor in
  ``COMP_WORDS`` and the word being completed in ``COMP_CWORD``, as click's fish script does;
  the line is split by POSIX rules (`click.parser.split_arg_string`), which read
  PowerShell's plain words and single-quoted strings alike.
* elvish (`edit:completion:arg-completer`): its words, already split, as a JSON list in
  ``COMP_WORDS`` (`to-json`), the last one being the word completed (empty after a space).

`register` makes them known to click; `nixgen completion` and `LazyGroup.main` (when the
completion variable is set) call it, so an ordinary run never loads this module.
"""

from __future__ import annotations

import json
import os
from typing import Any

from click.shell_completion import CompletionItem, ShellComplete, add_completion_class

#: The shells of kernel-builder's `completions`, in its order; click ships bash, fish, zsh.
SHELLS = ("bash", "elvish", "fish", "powershell", "zsh")


def _line(item: CompletionItem) -> str:
    """``TYPE<tab>VALUE<tab>HELP`` on one line: tabs and line breaks in the value or the
    help would split it, so they become spaces."""

    def flat(text: Any) -> str:
        return " ".join(str(text or "").split()) if text else ""

    value = str(item.value).replace("\t", " ").replace("\n", " ").replace("\r", " ")
    return f"{item.type}\t{value}\t{flat(item.help)}"


class PowerShellComplete(ShellComplete):
    """PowerShell 5.1 and 7 (`pwsh`)."""

    name = "powershell"
    source_template = r"""# %(prog_name)s completion for PowerShell. Load it in $PROFILE:
#   %(prog_name)s completion powershell | Out-String | Invoke-Expression
Register-ArgumentCompleter -Native -CommandName '%(prog_name)s' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)
    $line = $commandAst.Extent.Text
    $upTo = $cursorPosition - $commandAst.Extent.StartOffset
    $upTo = [Math]::Max(0, [Math]::Min($line.Length, $upTo))
    $saved = @{}
    foreach ($name in @('%(complete_var)s', 'COMP_WORDS', 'COMP_CWORD')) {
        $saved[$name] = [Environment]::GetEnvironmentVariable($name)
    }
    try {
        $env:COMP_WORDS = $line.Substring(0, $upTo)
        $env:COMP_CWORD = $wordToComplete
        $env:%(complete_var)s = 'powershell_complete'
        $answer = @(& '%(prog_name)s' 2>$null)
    } finally {
        foreach ($name in $saved.Keys) {
            [Environment]::SetEnvironmentVariable($name, $saved[$name])
        }
    }
    foreach ($entry in $answer) {
        $kind, $value, $help = "$entry" -split "`t", 3
        if ($kind -eq 'file' -or $kind -eq 'dir') {
            [System.Management.Automation.CompletionCompleters]::CompleteFilename($wordToComplete)
            continue
        }
        $text = $value
        if ($value -match '[\s''"`$;,(){}@#|&<>]') {
            $text = "'" + ($value -replace "'", "''") + "'"
        }
        if (-not $help) { $help = $value }
        [System.Management.Automation.CompletionResult]::new(
            $text, $value, 'ParameterValue', $help)
    }
}
"""

    def get_completion_args(self) -> tuple[list[str], str]:
        from click.shell_completion import split_arg_string

        words = split_arg_string(os.environ.get("COMP_WORDS", ""))
        incomplete = os.environ.get("COMP_CWORD", "")
        args = words[1:]
        if incomplete and args and args[-1] == incomplete:
            args.pop()
        return args, incomplete

    def format_completion(self, item: CompletionItem) -> str:
        return _line(item)


class ElvishComplete(ShellComplete):
    """elvish 0.18 and later (`tmp`, `to-json`, `edit:complex-candidate`)."""

    name = "elvish"
    source_template = r"""# %(prog_name)s completion for elvish. Load it in ~/.config/elvish/rc.elv:
#   eval (%(prog_name)s completion elvish | slurp)
use str
set edit:completion:arg-completer[%(prog_name)s] = {|@words|
  var answer = []
  try {
    tmp E:%(complete_var)s = elvish_complete
    tmp E:COMP_WORDS = (put $words | to-json)
    set answer = [(e:%(prog_name)s)]
  } catch {
    return
  }
  for entry $answer {
    var kind value help = (str:split "\t" $entry)
    if (or (eq $kind file) (eq $kind dir)) {
      edit:complete-filename $words[-1]
    } elif (eq $help '') {
      edit:complex-candidate $value
    } else {
      edit:complex-candidate $value &display=$value' ('$help')'
    }
  }
}
"""

    def get_completion_args(self) -> tuple[list[str], str]:
        try:
            words = json.loads(os.environ.get("COMP_WORDS", ""))
        except ValueError:
            words = None
        if not isinstance(words, list) or not words:
            raise _NoWords
        words = [str(w) for w in words]
        return words[1:-1], words[-1]

    def complete(self) -> str:
        try:
            return super().complete()
        except _NoWords:  # not what the script sends: nothing to offer
            return ""

    def format_completion(self, item: CompletionItem) -> str:
        return _line(item)


class _NoWords(Exception):
    """The completion request carries no words (not from nixgen's script)."""


def register() -> None:
    """Make PowerShell and elvish known to click's completion (idempotent)."""
    add_completion_class(PowerShellComplete)
    add_completion_class(ElvishComplete)
