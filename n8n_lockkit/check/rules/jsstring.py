"""The value of a JavaScript string literal's body: what `$("…")` in n8n code really names.

n8n's own generated code (and n8nlock's wrapped output) writes node names such as
`When clicking ‘Test workflow’` as `$("When clicking \\u2018Test workflow\\u2019")`; a rule
that compares the raw text with node names would report a reference that works.
"""

from __future__ import annotations

import re

_ESCAPE = re.compile(
    r"""\\(?:
        u\{(?P<braced>[0-9A-Fa-f]+)\}
      | u(?P<unicode>[0-9A-Fa-f]{4})
      | x(?P<hex>[0-9A-Fa-f]{2})
      | (?P<continuation>\r\n|[\n\r\u2028\u2029])
      | (?P<char>[\s\S])
    )""",
    re.VERBOSE,
)
# ECMAScript SingleEscapeCharacter; `\0` (not before a digit) is NUL.
_SINGLE = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "0": "\0"}


def _unescape(match: re.Match[str]) -> str:
    for group in ("braced", "unicode", "hex"):
        digits = match.group(group)
        if digits is not None:
            code = int(digits, 16)
            return chr(code) if code <= 0x10FFFF else match.group(0)
    if match.group("continuation") is not None:
        return ""
    char = match.group("char")
    if char == "0" and match.end() < len(match.string) and match.string[match.end()].isdigit():
        return char  # a legacy octal escape; not valid in strict code, so never a real name
    return _SINGLE.get(char, char)


def decode_js_string(body: str) -> str:
    """Decode the escapes of a string literal's body (the text between its quotes)."""
    decoded = _ESCAPE.sub(_unescape, body)
    # `\uD83D\uDE00` is one character written as two UTF-16 code units: join the pairs.
    return decoded.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
