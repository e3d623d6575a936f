"""`nixgen completion`: the shell completion script of nixgen, from click."""

from __future__ import annotations

import click

SHELLS = ("bash", "zsh", "fish")


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the completion script for SHELL (bash, zsh or fish).

    \b
    bash:  eval "$(nixgen completion bash)"            (in ~/.bashrc)
    zsh:   eval "$(nixgen completion zsh)"             (in ~/.zshrc)
    fish:  nixgen completion fish > ~/.config/fish/completions/nixgen.fish

    Verbs, options, choices (--language) and the variants of the project in the current
    directory (--variant) complete; variants come from Python, without evaluating Nix.
    """
    from click.shell_completion import get_completion_class

    from nixgen.cmdline.cli import main

    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - click ships all three
        raise click.UsageError(f"click has no completion for {shell}")
    script = cls(main, {}, "nixgen", "_NIXGEN_COMPLETE").source()
    click.echo(script.rstrip("\n"))


command = completion
