"""Long numbers in a JSON byte stream, rewritten as short ones of the same value before
the parser sees them.

Why. The JSON readers of the loaders (``ijson``'s C backend, and ``json`` for
submissions files) take a number token whole:

* a whole-integer token goes through Python's ``int()``, which refuses more than
  ``sys.get_int_max_str_digits()`` digits (4,300 by default): ijson 3.6's C backend then
  fails with ``SystemError`` or crashes the process (SIGSEGV);
* an exponent of 19 digits or more is refused by ``Decimal`` (``InvalidOperation``),
  which ends the parse of the whole file;
* the token is held in memory while it is read: a 100 MB digit run is 100 MB.

No in-bounds value needs such a token, but a file may hold one (a corrupt or hostile
file), and one row must not fail or crash the load of the others.

What. :class:`ShortNumbers` wraps a byte stream and passes it through unchanged except
for *long* numbers: a number with a run of more than :data:`RUN_DIGITS` digits in its
integer part or fraction, or :data:`EXPONENT_DIGITS` or more in its exponent. Such a
number is read as it streams past (whatever its length, keeping at most
:data:`KEPT_DIGITS` + 1 of its digits) and written again as its significant digits and
one exponent (``1.5000…000`` is ``15e-1``, ``-00…`` is ``0``):

* a value with at most :data:`KEPT_DIGITS` significant digits and an exponent of fewer
  than 17 digits keeps its exact value, so the loader's bounds decide about it as about
  any other number (``1`` followed by 5,000 zeros and ``e-5000`` is 1);
* any other non-zero value is far outside graphmem's bounds (64 significant digits,
  magnitude 10^±308) and is written as a stand-in that is as well: its first
  :data:`KEPT_DIGITS` digits and a ``1`` (more significant digits than any bound), or an
  exponent of ±10^17. :func:`describe` says what the original was;
* a token that is not a JSON number at all (``0123``, ``1.2.3``) is written as ``--``,
  which the parser refuses as it would have refused the original.

Every number left alone has runs of at most :data:`RUN_DIGITS` digits, so its integer
conversion works under any ``int()`` limit Python allows (640 at the least), and every
token the parser holds is short. Strings are never changed: a digit run inside a string
is text (a concept name of 3,000 digits stays 3,000 characters long, and out of bounds).

How. Each chunk is searched for a run that makes a number long (one regular expression);
the stream's position inside or outside strings is kept by counting the quotes that are
not escaped (``bytes.count``, and for a chunk with backslashes a substitution that drops
escape pairs), so a run is known to be in a string or a number where it is found. A
number that reaches the end of a chunk is held back and read on with the next one.
Normal files have no long number: their cost is the search and the count, at C speed.
"""

from __future__ import annotations

import io
import re
from decimal import Decimal
from typing import IO

from graphmem import limits

RUN_DIGITS = 600
"""The longest run of digits a number keeps as written. Above the 372 digits of the
longest in-bounds decimal written without needless zeros (307 leading zeros and 64
digits of a fraction near 10^-308), below 640, the lowest ``int()`` digit limit Python
can be set to."""

EXPONENT_DIGITS = 10
"""An exponent of this many digits or more is rewritten (``Decimal`` refuses 19)."""

KEPT_DIGITS = RUN_DIGITS
"""Significant digits a rewritten number keeps exactly."""

HUGE_EXPONENT = 10**17
"""The exponent of a stand-in for a number whose exponent has 17 digits or more (the
exponent of a value kept exactly stays below 10^16 plus the length of the stream)."""

CHUNK = 64 * 1024
BOM = b"\xef\xbb\xbf"
"""UTF-8's byte-order mark: not JSON, but an editor's way of saving UTF-8 that JSON
readers may ignore (RFC 8259, section 8.1), as ``json`` does for a submissions file and
the KPI loader for its table. ``ijson`` does not, so the stream drops it."""

_NUMBER_BYTES = frozenset(b"0123456789+-.eE")
_LONGEST_PREFIX = 2 * RUN_DIGITS + 16  # what can precede a trigger inside one valid number
_TRIGGER = re.compile(rb"(?<![0-9])[0-9]{%d,}|[eE][+-]?[0-9]{%d,}" % (RUN_DIGITS + 1, EXPONENT_DIGITS))
# The trigger is found with bytes.find in a copy of the chunk where every digit is 0 and
# every exponent sign +: several times faster than the regular expression over the chunk.
_SHADOW = bytes.maketrans(b"123456789E-", b"000000000e+")
_NEEDLES = (b"0" * (RUN_DIGITS + 1), b"e" + b"0" * EXPONENT_DIGITS, b"e+" + b"0" * EXPONENT_DIGITS)
_NUMBER_SPAN = re.compile(rb"[0-9+\-.eE]*")
_PIECES = re.compile(rb"[0-9]+|.", re.DOTALL)
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_NOT_A_NUMBER = b"--"


class _Strings:
    """Whether the stream is inside a string, from the bytes seen so far."""

    __slots__ = ("inside", "escaped")

    def __init__(self) -> None:
        self.inside = False
        self.escaped = False  # the last byte seen was a backslash that escapes the next one

    def advance(self, piece: bytes) -> None:
        if not piece:
            return
        if self.escaped:
            piece, self.escaped = piece[1:], False
        if b"\\" in piece:  # drop escape pairs; a backslash left over is the last byte
            piece = _ESCAPE.sub(b"", piece)
            self.escaped = piece.endswith(b"\\")
        if piece.count(b'"') & 1:
            self.inside = not self.inside


class _Number:
    """One number token read as it streams past: its sign, where its first significant
    digit stands, its significant digits (at most KEPT_DIGITS + 1 kept) and its exponent
    (at most 17 significant digits kept)."""

    __slots__ = ("state", "negative", "int_digits", "int_zero", "frac_digits", "first", "first_in_int", "kept",
                 "count", "last", "exp_negative", "exp", "exp_digits")

    def __init__(self) -> None:
        self.state = "start"  # start, minus, int, dot, frac, e, e-sign, exp; "bad" once invalid
        self.negative = False
        self.int_digits = 0  # digits of the integer part
        self.int_zero = False  # the integer part starts with 0 (then it is that 0 alone)
        self.frac_digits = 0  # digits of the fraction
        self.first: int | None = None  # index of the first non-zero digit in its part
        self.first_in_int = False
        self.kept = bytearray()  # significant digits from the first non-zero one
        self.count = 0  # digits from the first non-zero one
        self.last = 0  # self.count at the last non-zero digit: the significant digits
        self.exp_negative = False
        self.exp = bytearray()  # the exponent's digits from its first non-zero one (up to 17)
        self.exp_digits = 0  # how many of those there are

    def feed(self, text: bytes) -> None:
        for match in _PIECES.finditer(text):
            piece = match[0]
            if piece[0] in b"0123456789":
                self._digits(piece)
            else:
                self._sign(piece)

    def _sign(self, char: bytes) -> None:
        state = self.state
        if char == b"-" and state == "start":
            self.state, self.negative = "minus", True
        elif char == b"." and state == "int":
            self.state = "dot"
        elif char in b"eE" and state in ("int", "frac"):
            self.state = "e"
        elif char in b"+-" and state == "e":
            self.state, self.exp_negative = "e-sign", char == b"-"
        else:
            self.state = "bad"

    def _digits(self, run: bytes) -> None:
        state = self.state
        if state in ("start", "minus", "int"):
            if state != "int":
                self.state, self.int_zero = "int", run[0] == 0x30
            if self.int_zero and self.int_digits + len(run) > 1:
                self.state = "bad"  # JSON allows no leading zero
                return
            self._mantissa(run, self.int_digits, in_int=True)
            self.int_digits += len(run)
        elif state in ("dot", "frac"):
            self.state = "frac"
            self._mantissa(run, self.frac_digits, in_int=False)
            self.frac_digits += len(run)
        elif state in ("e", "e-sign", "exp"):
            self.state = "exp"
            if not self.exp:
                run = run.lstrip(b"0")
            self.exp += run[:17 - len(self.exp)]
            self.exp_digits += len(run)
        else:
            self.state = "bad"

    def _mantissa(self, run: bytes, offset: int, *, in_int: bool) -> None:
        """Digits of the integer part or the fraction, ``offset`` digits into that part."""
        if self.first is None:
            significant = run.lstrip(b"0")
            if not significant:
                return
            self.first, self.first_in_int = offset + len(run) - len(significant), in_int
            run = significant
        before = self.count
        self.kept += run[:KEPT_DIGITS + 1 - len(self.kept)]
        self.count += len(run)
        nonzero = len(run.rstrip(b"0"))
        if nonzero:
            self.last = before + nonzero

    def token(self) -> bytes:
        """The number written again: the same value, or a stand-in as far out of bounds."""
        if self.state not in ("int", "frac", "exp"):
            return _NOT_A_NUMBER
        if self.first is None:
            return b"0"
        sign = b"-" if self.negative else b""
        digits = bytes(self.kept[:self.last])
        if self.last > KEPT_DIGITS:
            digits = digits[:KEPT_DIGITS] + b"1"
        if self.exp_digits >= 17:
            return b"%se%s%d" % (sign + digits, b"-" if self.exp_negative else b"", HUGE_EXPONENT)
        exponent = int(self.exp or b"0") * (-1 if self.exp_negative else 1)
        leading = self.int_digits - 1 - self.first if self.first_in_int else -(self.first + 1)
        return b"%se%d" % (sign + digits, leading + exponent - (len(digits) - 1))


class ShortNumbers(io.RawIOBase):
    """``raw`` (a binary stream of JSON) with its long numbers rewritten (see the module
    docstring); closing it closes ``raw``."""

    def __init__(self, raw: IO[bytes], chunk: int = CHUNK):
        super().__init__()
        self._raw = raw
        self._chunk = chunk
        self._out = bytearray()  # bytes ready to be read
        self._carry = b""  # the end of the last chunk: a number that may go on in the next one
        self._number: _Number | None = None  # a long number that goes on in the next chunk
        self._strings = _Strings()
        self._eof = False
        self._started = False  # the first bytes (and a byte-order mark) read

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        while not self._out and not self._eof:
            self._fill()
        size = min(len(buffer), len(self._out))
        buffer[:size] = self._out[:size]
        del self._out[:size]
        return size

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()

    def _emit(self, piece: bytes) -> None:
        self._out += piece
        self._strings.advance(piece)

    def _first(self) -> bytes:
        """The stream's first bytes without a byte-order mark (see :data:`BOM`); a raw
        stream may return fewer bytes than a mark has, so it is read on until it cannot
        be one."""
        self._started = True
        data = b""
        while len(data) < len(BOM) and BOM.startswith(data):
            more = self._raw.read(self._chunk)
            if not more:
                break
            data += more
        if not data.startswith(BOM):
            return data
        return data[len(BOM):] or self._raw.read(self._chunk)  # empty only at the end

    def _fill(self) -> None:
        data = self._raw.read(self._chunk) if self._started else self._first()
        if not data:
            self._eof = True
            if self._number is not None:
                self._out += self._number.token()
                self._number = None
            self._emit(self._carry)
            self._carry = b""
            return
        text, self._carry = self._carry + data, b""
        pos = 0
        if self._number is not None:  # a long number goes on from the last chunk
            pos = _NUMBER_SPAN.match(text).end()
            self._number.feed(text[:pos])
            if pos == len(text):
                return
            self._out += self._number.token()
            self._number = None
        triggers = _Triggers(text)
        while match := triggers.search(pos):
            start = _span_start(text, match.start(), pos)
            self._emit(text[pos:start])
            if self._strings.inside:  # digits in a string: text, left as they are
                self._emit(text[start:match.end()])
                pos = match.end()
                continue
            end = _NUMBER_SPAN.match(text, match.end()).end()
            number = _Number()
            number.feed(text[start:end])
            pos = end
            if end == len(text):
                self._number = number
                return
            self._out += number.token()
        tail = _span_start(text, len(text), pos)
        self._emit(text[pos:tail])
        if self._strings.inside or len(text) - tail >= _LONGEST_PREFIX:
            self._emit(text[tail:])  # in a string, or no number: nothing to hold back
        else:
            self._carry = text[tail:]


class _Triggers:
    """The runs of one chunk that make a number long, in order (see _SHADOW)."""

    def __init__(self, text: bytes):
        self._text = text
        self._shadow = text.translate(_SHADOW)
        self._next = [self._shadow.find(needle) for needle in _NEEDLES]

    def search(self, pos: int) -> re.Match[bytes] | None:
        """The first trigger at or after ``pos``."""
        for i, needle in enumerate(_NEEDLES):
            if 0 <= self._next[i] < pos:
                self._next[i] = self._shadow.find(needle, pos)
        found = [at for at in self._next if at >= 0]
        return _TRIGGER.match(self._text, min(found)) if found else None


def _span_start(text: bytes, end: int, floor: int) -> int:
    """Where the run of number characters that ends at ``end`` starts (not before
    ``floor``, nor more than _LONGEST_PREFIX back: a longer run is not one JSON number)."""
    start, stop = end, max(floor, end - _LONGEST_PREFIX)
    while start > stop and text[start - 1] in _NUMBER_BYTES:
        start -= 1
    return start


def describe(value: Decimal) -> str | None:
    """What a number out of bounds was, when ``value`` is a stand-in :class:`ShortNumbers`
    wrote for it (None for any other value: its own digits and exponent say it)."""
    if len(value.as_tuple().digits) > KEPT_DIGITS:
        return f"more than {KEPT_DIGITS:,} significant digits; at most {limits.DECIMAL_DIGITS}"
    if abs(value.adjusted()) >= HUGE_EXPONENT - KEPT_DIGITS:
        return (f"an exponent of 17 digits or more: magnitude far outside 10^-{limits.DECIMAL_EXPONENT} .. "
                f"1.8 x 10^{limits.DECIMAL_EXPONENT}")
    return None
