"""`nixgen completion`: the shell completion script of nixgen, for kernel-builder's five
shells: click's own bash, zsh and fish scripts, and nixgen's PowerShell and elvish ones
(`nixgen.cmdline.completion_shells`)."""

from __future__ import annotations

import click

from nixgen.cmdline.completion_shells import SHELLS


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the completion script for SHELL (bash, elvish, fish, powershell or zsh).

    \b
    bash:        eval "$(nixgen completion bash)"                 (in ~/.bashrc)
    zsh:         eval "$(nixgen completion zsh)"                  (in ~/.zshrc)
    fish:        nixgen completion fish > ~/.config/fish/completions/nixgen.fish
    powershell:  nixgen completion powershell | Out-String | Invoke-Expression   (in $PROFILE)
    elvish:      eval (nixgen completion elvish | slurp)          (in ~/.config/elvish/rc.elv)

    Verbs, options, choices (--language) and the variants of the project in the current
    directory (--variant) complete; variants come from Python, without evaluating Nix.
    """
    from click.shell_completion import get_completion_class

    from nixgen.cmdline import completion_shells
    from nixgen.cmdline.cli import main

    completion_shells.register()
    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - every shell of SHELLS is registered above
        raise click.UsageError(f"no completion for {shell}")
    script = cls(main, {}, "nixgen", "_NIXGEN_COMPLETE").source()
    click.echo(script.rstrip("\n"))


command = completion
