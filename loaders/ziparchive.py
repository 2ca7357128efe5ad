"""ZIP archives read without holding their directory: the central directory streamed entry
by entry, a member opened from its local header.

Why not :mod:`zipfile`. ``zipfile.ZipFile`` reads the whole central directory into one
``ZipInfo`` per member when it opens an archive, about 600 bytes each: 180 MB for a
300,000-member ``submissions.zip``, about three times that for the SEC's real one, of
which a load uses the members of the few thousand companies that have company facts.
Here an archive keeps its end record and an open file; :meth:`Archive.members` reads the
directory in large blocks and yields one small :class:`Member` at a time, which the
caller keeps or drops, and :meth:`Archive.open` streams one member from its offset.

What is read: the end of central directory record (and its zip64 record when counts,
sizes or offsets overflow 32 bits), central directory entries (with their zip64 extra
field), local headers, and member data stored or deflated, checked against the CRC-32
and size of the directory as ``zipfile`` checks them. Bytes before the archive (a
self-extracting stub) are allowed, as ``zipfile`` allows them. Refused, naming the
archive or member: a multi-disk archive, an encrypted member, any other compression
method, a local header that does not match its directory entry, data cut short, a bad
CRC-32. Errors are :class:`ArchiveError`, a :class:`zipfile.BadZipFile` that names the
archive or the member (``where``) apart from the reason, so that a loader can report it
as it reports a file.
"""

from __future__ import annotations

import io
import os
import struct
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zipfile import BadZipFile

_END = struct.Struct("<4sHHHHLLH")  # end of central directory record
_END_SIGNATURE = b"PK\x05\x06"
_LOCATOR = struct.Struct("<4sLQL")  # zip64 end of central directory locator
_LOCATOR_SIGNATURE = b"PK\x06\x07"
_END64 = struct.Struct("<4sQHHLLQQQQ")  # zip64 end of central directory record
_END64_SIGNATURE = b"PK\x06\x06"
_ENTRY = struct.Struct("<4sHHHHHHLLLHHHHHLL")  # central directory entry
_ENTRY_SIGNATURE = b"PK\x01\x02"
_LOCAL = struct.Struct("<4sHHHHHLLLHH")  # local file header
_LOCAL_SIGNATURE = b"PK\x03\x04"
_ZIP64_EXTRA = 0x0001
_MAX_COMMENT = 0xFFFF
_STORED, _DEFLATED = 0, 8
_ENCRYPTED, _UTF8 = 0x1, 0x800
_BLOCK = 1 << 20  # bytes of directory read at once
_CHUNK = 1 << 16  # compressed bytes read at once


class ArchiveError(BadZipFile):
    """An archive or member that cannot be read: ``where`` names it (``archive.zip`` or
    ``archive.zip:member``), ``reason`` says why."""

    def __init__(self, where: str, reason: str):
        super().__init__(f"{where}: {reason}")
        self.where, self.reason = where, reason


@dataclass(frozen=True, slots=True)
class Member:
    """One member as its directory entry describes it (``entry``: where that entry is, for
    :meth:`Archive.member_at`; ``offset``: its local header)."""

    name: str
    entry: int
    offset: int
    compressed: int
    size: int
    crc: int
    method: int
    flags: int

    @property
    def is_dir(self) -> bool:
        return self.name.endswith("/")


class Archive:
    """One ZIP archive, open for reading (a context manager; :meth:`close` closes its file)."""

    def __init__(self, path: str | Path):
        self.path = str(path)
        self._file = open(path, "rb")  # noqa: SIM115 - held until close()
        self._lock = threading.Lock()  # the file's position is shared by the open members
        try:
            self.count, self._directory, self._directory_size, self._shift = self._end_record()
        except BaseException:
            self._file.close()
            raise

    def __reduce__(self) -> tuple[Any, tuple[str, tuple[int, int, int]]]:
        """Pickled as its path and file identity: a process that unpickles it opens the
        archive itself, once (a universe's companies built in processes of their own,
        .bootstrap), and refuses a file replaced meanwhile."""
        return _opened, (self.path, _identity(self._file.fileno()))

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._file.close()

    def read_at(self, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes at ``offset`` (fewer at the end of the file)."""
        with self._lock:
            self._file.seek(offset)
            return self._file.read(size)

    def _end_record(self) -> tuple[int, int, int, int]:
        """Members, where the directory starts and its size, and how far every offset is
        shifted by bytes before the archive."""
        self._file.seek(0, io.SEEK_END)
        length = self._file.tell()
        tail_start = max(0, length - _END.size - _MAX_COMMENT)
        tail = self.read_at(tail_start, length - tail_start)
        at = _end_record_at(tail)
        if at < 0:
            raise ArchiveError(self.path, "no end of central directory record (not a ZIP archive, or cut short)")
        _, disk, start_disk, _, count, size, offset, _ = _END.unpack_from(tail, at)
        end = tail_start + at
        locator = self.read_at(end - _LOCATOR.size, _LOCATOR.size) if end >= _LOCATOR.size else b""
        if locator[:4] == _LOCATOR_SIGNATURE:
            record = self.read_at(end - _LOCATOR.size - _END64.size, _END64.size)
            if record[:4] != _END64_SIGNATURE:
                raise ArchiveError(self.path, "zip64 end of central directory record not found")
            _, _, _, _, disk, start_disk, _, count, size, offset = _END64.unpack(record)
            end -= _LOCATOR.size + _END64.size
        if disk or start_disk:
            raise ArchiveError(self.path, "multi-disk archives are not supported")
        shift = end - size - offset  # bytes before the archive
        if shift < 0:
            raise ArchiveError(self.path, "the central directory runs past its end record (cut short?)")
        return count, offset + shift, size, shift

    def members(self) -> Iterator[Member]:
        """Every member, in directory order, read from the central directory in blocks."""
        position = self._directory  # where the next block starts in the file
        block, at = b"", 0  # the block read last, and where the next entry starts in it
        for _ in range(self.count):
            entry = position - len(block) + at
            whole = _entry_length(block, at)
            if whole is None or len(block) - at < whole:  # the entry runs past the block
                data = self.read_at(position, _BLOCK)
                block, at, position = block[at:] + data, 0, position + len(data)
                whole = _entry_length(block, at) or 0
            yield self._member(block, at, entry)
            at += whole

    def member_at(self, entry: int) -> Member:
        """The member whose central directory entry is at ``entry`` (from :attr:`Member.entry`)."""
        head = self.read_at(entry, _ENTRY.size)
        whole = _entry_length(head, 0) or _ENTRY.size
        return self._member(head + self.read_at(entry + _ENTRY.size, whole - _ENTRY.size), 0, entry)

    def _member(self, block: bytes, at: int, entry: int) -> Member:
        """The Member of the directory entry at ``block[at:]`` (``entry``: its place in the file)."""
        if len(block) - at < _ENTRY.size:
            raise ArchiveError(self.path, "central directory cut short")
        (signature, _, _, flags, method, _, _, crc, compressed, size, name_length, extra_length,
         comment_length, _, _, _, offset) = _ENTRY.unpack_from(block, at)
        if signature != _ENTRY_SIGNATURE:
            raise ArchiveError(self.path, f"bad central directory entry at byte {entry}")
        start = at + _ENTRY.size
        if len(block) < start + name_length + extra_length + comment_length:
            raise ArchiveError(self.path, "central directory cut short")
        name = _name(block[start:start + name_length], flags)
        if 0xFFFFFFFF in (compressed, size, offset):
            extra = block[start + name_length:start + name_length + extra_length]
            size, compressed, offset = _zip64(extra, size, compressed, offset, self.path)
        return Member(name, entry, offset + self._shift, compressed, size, crc, method, flags)

    def open(self, member: Member) -> io.RawIOBase:
        """A stream of the member's content (checked against its CRC-32 and size at its end)."""
        where = f"{self.path}:{member.name}"
        if member.flags & _ENCRYPTED:
            raise ArchiveError(where, "encrypted members are not supported")
        if member.method not in (_STORED, _DEFLATED):
            raise ArchiveError(where, f"compression method {member.method} is not supported (stored and deflate are)")
        header = self.read_at(member.offset, _LOCAL.size)
        if len(header) < _LOCAL.size or header[:4] != _LOCAL_SIGNATURE:
            raise ArchiveError(where, "bad local file header")
        *_, name_length, extra_length = _LOCAL.unpack(header)
        name = self.read_at(member.offset + _LOCAL.size, name_length)
        if name.decode("utf-8" if member.flags & _UTF8 else "cp437", "replace") != member.name:
            raise ArchiveError(where, f"the local header names {name!r}")
        return _MemberStream(self, member, member.offset + _LOCAL.size + name_length + extra_length, where)


def _end_record_at(tail: bytes) -> int:
    """Where the end record starts in the archive's last bytes (-1: none). The last
    signature whose comment ends the file; failing that, as ``zipfile`` reads it, the last
    one whose record fits (bytes appended after the archive)."""
    fits = -1
    at = tail.rfind(_END_SIGNATURE)
    while at >= 0:
        if at + _END.size <= len(tail):
            end = at + _END.size + _END.unpack_from(tail, at)[7]
            if end == len(tail):
                return at
            if fits < 0 and end <= len(tail):
                fits = at
        at = tail.rfind(_END_SIGNATURE, 0, at)  # a signature inside the comment
    return fits


def _name(raw: bytes, flags: int) -> str:
    """A member's name. One flagged UTF-8 that is not (a tool that wrote another encoding)
    is read with its bad bytes replaced, as :meth:`Archive.open` reads its local header:
    one such name is no reason to refuse every other member, and the member itself is
    still named and read (or skipped, with its reason, by whoever reads it)."""
    return raw.decode("utf-8" if flags & _UTF8 else "cp437", "replace")


def _entry_length(block: bytes, at: int) -> int | None:
    """The length of the directory entry at ``block[at:]`` with its name, extra field and
    comment (None when its fixed part is not all in the block)."""
    if len(block) - at < _ENTRY.size:
        return None
    return _ENTRY.size + sum(struct.unpack_from("<HHH", block, at + 28))


def _zip64(extra: bytes, size: int, compressed: int, offset: int, path: str) -> tuple[int, int, int]:
    """The 64-bit size, compressed size and offset of a zip64 extra field, for the fields
    the entry marks 0xFFFFFFFF (in that order)."""
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<HH", extra, at)
        if kind == _ZIP64_EXTRA:
            values = list(struct.unpack_from(f"<{min(length, len(extra) - at - 4) // 8}Q", extra, at + 4))
            try:
                if size == 0xFFFFFFFF:
                    size = values.pop(0)
                if compressed == 0xFFFFFFFF:
                    compressed = values.pop(0)
                if offset == 0xFFFFFFFF:
                    offset = values.pop(0)
            except IndexError:
                raise ArchiveError(path, "zip64 extra field too short") from None
            return size, compressed, offset
        at += 4 + length
    raise ArchiveError(path, "a 32-bit field overflows but there is no zip64 extra field")


class _MemberStream(io.RawIOBase):
    """One member's content, inflated as it is read (at most one read's worth at a time),
    and checked against its CRC-32 and size when its end is read."""

    def __init__(self, archive: Archive, member: Member, start: int, where: str):
        super().__init__()
        self._archive, self._member, self._where = archive, member, where
        self._position, self._left = start, member.compressed  # compressed bytes not read yet
        self._inflate = zlib.decompressobj(-zlib.MAX_WBITS) if member.method == _DEFLATED else None
        self._tail = b""  # compressed bytes read but not inflated yet
        self._crc = self._size = 0
        self._done = self._checked = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        while len(buffer) and not self._done:
            data = self._next(len(buffer))
            if data:
                self._crc = zlib.crc32(data, self._crc)
                self._size += len(data)
                buffer[:len(data)] = data
                return len(data)
        if self._done and not self._checked:
            self._checked = True
            if self._size != self._member.size or self._crc != self._member.crc:
                raise ArchiveError(self._where, "bad CRC-32 or size (the member is corrupt)")
        return 0

    def _next(self, wanted: int) -> bytes:
        """Up to ``wanted`` bytes of content (possibly none: then more input is needed)."""
        if self._inflate is None:
            data = self._read(min(wanted, self._left))
            self._done = not self._left
            return data
        if not self._tail and self._left:
            self._tail = self._read(min(_CHUNK, self._left))
        try:
            data = self._inflate.decompress(self._tail, wanted)  # what the state holds comes out too
        except zlib.error as exc:
            raise ArchiveError(self._where, f"corrupt deflate data ({exc})") from None
        self._tail = self._inflate.unconsumed_tail
        if self._inflate.eof:
            self._done = True
        elif not data and not self._tail and not self._left:
            raise ArchiveError(self._where, "compressed data cut short")
        return data

    def _read(self, size: int) -> bytes:
        data = self._archive.read_at(self._position, size)
        if len(data) < size:
            raise ArchiveError(self._where, "member data cut short")
        self._position += size
        self._left -= size
        return data


_OPENED: dict[str, Archive] = {}  # this process's archives opened by unpickling, by path


def _identity(fd: int) -> tuple[int, int, int]:
    stat = os.fstat(fd)
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _opened(path: str, identity: tuple[int, int, int]) -> Archive:
    found = _OPENED.get(path)
    if found is None:
        found = _OPENED[path] = Archive(path)
    if _identity(found._file.fileno()) != tuple(identity):
        raise ArchiveError(path, "was replaced while it was being read")
    return found
