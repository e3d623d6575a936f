"""The command line: argv and printing; the verbs in commands/. May import: core to building."""
