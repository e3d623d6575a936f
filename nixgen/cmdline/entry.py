"""The `nixgen` executable's entry point: standard streams and Ctrl-C
(`nixgen.cmdline.streams`), then the click application (`nixgen.cmdline.cli`), the one
parser of nixgen's command line.

Standard output is flushed before the process ends, so a full disk is said on stderr with a
non-zero status instead of Python's "Exception ignored" at shutdown.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

from nixgen.cmdline import streams


def main() -> None:
    # Until a command takes over (its own handler turns Ctrl-C into a clean exit after
    # cleaning up), Ctrl-C during start-up ends nixgen without a traceback from an import.
    signal.signal(signal.SIGINT, streams.interrupted_early)
    sys.unraisablehook = streams.unraisable
    try:
        streams.standard_streams()
        # Imported here, under the quiet Ctrl-C handler: an interrupt during the import
        # of click and the verbs ends nixgen without a traceback.
        from nixgen.cmdline.cli import main as cli

        cli(prog_name="nixgen")
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    except streams.StdoutError as exc:  # --help, -V, completion: printed before any command runs
        streams.cannot_write_stdout(exc)
        code = 2
    except KeyboardInterrupt:
        with contextlib.suppress(OSError):
            os.write(2, b"interrupted\n")
        code = 130
    sys.exit(streams.exit_status(code))
