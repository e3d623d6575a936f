"""The one sanitiser of text nixgen did not write: Hub answers, file and variant names,
flake values, Nix's logs, environment values.

- `Outside` wraps such a value where it enters (`nixgen.app.hub` wraps every string the
  Hub answers): formatting it (``f"{name}"``, ``str(name)``) gives `shown(name.raw)`, so
  the value cannot reach a message unsanitised; `raw` is the value itself, for sending
  and comparing, and never goes into an f-string (a test of the code holds that).
- `shown` escapes every invisible or line-breaking character (``\\x1b``, ``\\n``,
  ``\\u202e``) so a value can neither forge output lines nor drive the terminal; with
  ``lines=True`` (a log) escape sequences are dropped and line breaks kept.
- Credentials are never shown: the user and password of any URL (``https://u:TOKEN@h``
  becomes ``https://***@h``) and every value registered with `keep_secret` (the Hub token)
  are replaced by ``***``, in values and in whole messages alike.
- `at_sink` is what `nixgen.core.console` applies to everything it writes: the same
  redaction, and every control character escaped except tab, newline and the colour codes
  the console itself adds. So even text that skipped `Outside` cannot restyle, retitle or
  rewrite the terminal through the console.

Stdlib only, and below `errors` and `console`, which both use it.
"""

from __future__ import annotations

import re

#: What a terminal would act on in text another program wrote (a build log): ECMA-48
#: escape sequences (CSI `ESC [`, the string ones OSC `ESC ]`, DCS `ESC P`, SOS, PM and APC
#: up to their terminator, two-character ones), their 8-bit C1 forms, and every other
#: control character but tab and newline. Compiled on first use (`re`'s own cache): most
#: commands never print text nixgen did not write.
_TERMINAL_CONTROL = (
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x1b[P\]X^_].*?(?:\x07|\x1b\\|\x9c|\Z)"
    r"|\x1b[ -/]*[0-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]?"
    r"|[\x90\x98\x9d\x9e\x9f].*?(?:\x07|\x1b\\|\x9c|\Z)"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)

#: The colour codes nixgen writes itself (SGR reset, bold, dim, red, green, yellow: those
#: of `nixgen.core.console.style` and of `nixgen watch`'s click.style): the only escape
#: sequences `at_sink` lets through.
_OWN_SGR = r"\x1b\[(?:0|1|2|3[123])m"
#: What `at_sink` escapes: any other escape or control character (tab and newline are
#: kept), and the bidirectional overrides that reorder what a line shows.
_SINK = rf"({_OWN_SGR})|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"

#: The user and password part of a URL (``scheme://user:password@``).
_USERINFO = r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s\"\\]*@"

_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

#: Values never shown (`keep_secret`): replaced by ``***`` wherever they appear.
_secrets: set[str] = set()


def keep_secret(value: str | None) -> None:
    """Never show `value` (a token, a password) from now on, in this process. Values under
    eight characters are not registered: too short to be a credential, and replacing them
    would garble ordinary text."""
    if value and len(value) >= 8:
        _secrets.add(value)


def redact(text: str) -> str:
    """`text` with the credentials of every URL and every registered secret replaced."""
    if "@" in text:
        text = re.sub(_USERINFO, r"\1***@", text)
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "***")
    return text


def _escape_char(c: str) -> str:
    if c in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[c]
    if ord(c) <= 0xFF:
        return f"\\x{ord(c):02x}"
    if ord(c) <= 0xFFFF:
        return f"\\u{ord(c):04x}"
    return f"\\U{ord(c):08x}"


def escape(text: str, *, keep: str = "") -> str:
    """`text` with every invisible or line-breaking character (but those in `keep`)
    written as an escape (``\\n``, ``\\x1b``, ``\\u202e``); credentials redacted."""
    text = redact(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " or c in keep else _escape_char(c) for c in text)


def strip_controls(text: str) -> str:
    """`text` (a build log, Nix's messages) with every escape sequence and control
    character but tab and newline removed: printing it can neither restyle, retitle nor
    rewrite the terminal."""
    return re.sub(_TERMINAL_CONTROL, "", text, flags=re.DOTALL)


def shown(text: str, *, lines: bool = False) -> str:
    """`text` as nixgen shows a value it did not write: credentials redacted, every
    invisible character escaped; with `lines` (a log), escape sequences dropped and line
    breaks and tabs kept."""
    if lines:
        return escape(strip_controls(text), keep="\n\t")
    return escape(text)


def at_sink(text: str) -> str:
    """What the console writes of `text`: credentials redacted, and every control
    character and escape sequence escaped except tab, newline and the console's own
    colour codes."""
    text = redact(text)
    if text.isascii() and text.isprintable():
        return text
    return re.sub(_SINK, lambda m: m.group(1) or _escape_char(m.group()), text)


class Outside:
    """A string nixgen did not write. Formatting it gives the sanitised text (`shown`);
    `raw` is the value itself, for sending and comparing only."""

    __slots__ = ("lines", "raw")

    def __init__(self, raw: str, *, lines: bool = False) -> None:
        self.raw = raw
        #: Multi-line text (a log): line breaks kept, escape sequences dropped.
        self.lines = lines

    def __str__(self) -> str:
        return shown(self.raw, lines=self.lines)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __repr__(self) -> str:
        return "Outside(" + repr(str(self)) + ")"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Outside) and other.raw == self.raw

    def __hash__(self) -> int:
        return hash(self.raw)
