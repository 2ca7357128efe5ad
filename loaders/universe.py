"""Which SEC files make up a universe of companies, and which companies are asked for.

The SEC serves its EDGAR JSON one company at a time (``CIK##########.json``) and in
bulk: ``companyfacts.zip`` (one companyfacts file per company) and ``submissions.zip``
(one submissions file per company, plus the paged files of filers with more than about
1,000 filings, ``CIK##########-submissions-001.json`` ...). :func:`discover` takes any
mix of such archives, folders of such files, and single files, and groups them by CIK
into :class:`Company` entries. Nothing is unpacked: a ZIP member is a
:class:`Document` that opens a stream on the archive, a file on disk is a Document that
opens the file. Memory stays flat in the archives' size (see :class:`Universe`).

What a file is. A name that says ``submissions`` (the file's, or its archive's:
``submissions.zip``) is a submissions file, one that says ``companyfacts`` a
companyfacts file; any other JSON file is told by its first top-level keys
(``entityName`` or ``facts``: companyfacts; ``filings``, ``accessionNumber``,
``entityType``, ``name`` or ``tickers``: submissions). The CIK comes from the name
(``CIK0000320193``, or the digits after ``CIK``); a file whose name has none is read
for its top-level ``cik``. A submissions page is told from a main file by its content
(columns at the top level, no ``filings``), when it is read.

Unreadable inputs. A folder's or an archive's member that cannot be told — not valid
JSON, neither kind of EDGAR JSON, no CIK, a second companyfacts file for a CIK, a member
whose data is corrupt — is left out and listed in :attr:`Universe.skipped` with its
reason, every one of them, and the rest is found all the same (the load names them in
its report, and its exit code says that something was skipped). An archive in a folder
that cannot be read as one, or holds no EDGAR JSON, is such a member: named, and left
out whole. A folder or an archive with no EDGAR JSON at all is an error naming it, and
so is a file or an archive named on its own that cannot be read as EDGAR JSON or as an
archive. The SEC's
``company_tickers.json`` in a folder or an archive is not a company's file: it is left
out without a word (``--company-tickers`` reads it).

Selection (:func:`select`): all companies, a list of CIKs, or tickers through the
SEC's ``company_tickers.json`` (``{"0": {"cik_str": 320193, "ticker": "AAPL",
"title": "Apple Inc."}, ...}``). A CIK asked for but absent from the inputs is kept
as a company without files, so the load reports it as missing instead of dropping it.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import ijson
from pydantic import BaseModel, ConfigDict

from graphmem.errors import InputError

from .longnumbers import ShortNumbers
from .ziparchive import Archive, ArchiveError, Member

_CIK_IN_NAME = re.compile(r"CIK0*(\d{1,10})", re.IGNORECASE)
#: Top-level keys that tell a companyfacts file from a submissions file or page.
_FACTS_KEYS = frozenset({"entityName", "facts"})
_SUBMISSIONS_KEYS = frozenset({"filings", "accessionNumber", "entityType", "name", "tickers"})
_TICKERS_FILE = re.compile(r"^company_tickers[^/]*\.json$", re.IGNORECASE)  # the SEC's, not a company's
_SHOWN = 3  # unreadable members named in the error of a folder or archive with nothing to load


class Skipped(BaseModel):
    """A file or archive member left out of a universe: ``file`` names it, ``reason`` says why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    reason: str


@dataclass(frozen=True, slots=True)
class Document:
    """One JSON document: a file on disk or a member of a ZIP archive, opened as a stream.

    ``name`` names it in every message (``companyfacts.zip:CIK0000320193.json`` for a
    member). ``fingerprint`` identifies its content without reading it: a member's CRC-32
    and size as its archive records them, a file's size and modification time.
    """

    name: str
    fingerprint: str
    path: Path | None = field(default=None, repr=False, compare=False)
    archive: Archive | None = field(default=None, repr=False, compare=False)
    entry: Member | None = field(default=None, repr=False, compare=False)

    @classmethod
    def file(cls, path: str | Path) -> Document:
        path = Path(path)
        try:
            stat = path.stat()
        except FileNotFoundError:
            raise InputError(str(path), "file not found") from None
        return cls(str(path), f"stat:{stat.st_size}:{stat.st_mtime_ns}", path=path)

    @classmethod
    def member(cls, archive: Archive, entry: Member) -> Document:
        return cls(f"{archive.path}:{entry.name}", f"crc32:{entry.crc:08x}:{entry.size}", archive=archive,
                   entry=entry)

    def open(self) -> IO[bytes]:
        """A stream of the JSON to parse: the bytes as stored, but for numbers too long for
        a parser to hold or convert, written short (:mod:`.longnumbers`)."""
        try:
            if self.archive is not None and self.entry is not None:
                return ShortNumbers(self.archive.open(self.entry))
            assert self.path is not None
            return ShortNumbers(self.path.open("rb"))
        except FileNotFoundError:
            raise InputError(self.name, "file not found") from None
        except ArchiveError as exc:
            raise InputError(exc.where, exc.reason) from None
        except OSError as exc:
            raise InputError(self.name, f"cannot be read: {exc}") from None


@dataclass
class Company:
    """The files of one company: its companyfacts (or None) and its submissions files
    (the main file and its pages, in name order; told apart when read)."""

    cik: int
    facts: Document | None = None
    submissions: list[Document] = field(default_factory=list)


class Universe:
    """Companies by CIK, from archives, folders and files (see the module docstring).

    Keep it open while its companies are read (a context manager): its ZIP archives stay
    open so that members can be streamed.

    Memory. A ZIP archive's directory is read entry by entry (:mod:`.ziparchive`), never
    held. A companyfacts member is kept as one integer (its archive and directory entry)
    until its company is asked for. Submissions members are not kept at all:
    ``submissions.zip`` holds one for every filer, most of which have no company facts,
    so :meth:`companies` reads the archive's directory again for the companies asked for
    (one pass for all of them). What the universe holds grows with its companies that
    have company facts, not with the size of its archives.
    """

    def __init__(self) -> None:
        self.skipped: list[Skipped] = []  # members of folders and archives that cannot be read
        self._found = 0  # EDGAR JSON files and members found so far
        self._facts: dict[int, Document | int] = {}  # an int: an archive member (_ref)
        self._submissions: dict[int, list[Document]] = {}  # files, and members told by content
        self._archives: list[Archive] = []
        self._lazy: list[tuple[Archive, str | None]] = []  # archives with submissions members, and their hint

    def __enter__(self) -> Universe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for archive in self._archives:
            archive.close()
        self._archives.clear()
        self._lazy.clear()

    def company(self, cik: int) -> Company:
        """The files found for ``cik`` (none: a Company without files). Reads the directory
        of each archive with submissions members: for many CIKs, :meth:`companies`."""
        return self.companies([cik])[0]

    def companies(self, ciks: Iterable[int]) -> list[Company]:
        """The files found for each of ``ciks``, in that order: one pass over the directory
        of each archive that holds submissions members, whatever the number of CIKs."""
        wanted = list(ciks)
        found: dict[int, list[Document]] = {cik: list(self._submissions.get(cik, ())) for cik in wanted}
        for archive, hint in self._lazy:
            for entry in archive.members():
                kind, cik = _member_kind(entry, hint)
                if kind == "submissions" and cik in found:
                    found[cik].append(Document.member(archive, entry))
        return [Company(cik, self._facts_of(cik), sorted(found[cik], key=lambda d: d.name)) for cik in wanted]

    def _facts_of(self, cik: int) -> Document | None:
        ref = self._facts.get(cik)
        if isinstance(ref, int):
            archive = self._archives[ref >> 64]
            return Document.member(archive, archive.member_at(ref & _ENTRY_MASK))
        return ref

    @property
    def ciks(self) -> list[int]:
        """Every CIK with a file, in order (reads the directory of every archive with
        submissions members)."""
        found = self._facts.keys() | self._submissions.keys()
        for archive, hint in self._lazy:
            found |= {cik for kind, cik in (_member_kind(entry, hint) for entry in archive.members())
                      if kind == "submissions" and cik is not None}
        return sorted(found)

    @property
    def with_facts(self) -> list[int]:
        """The CIKs with a companyfacts file, in order."""
        return sorted(self._facts)

    def add(self, path: str | Path) -> None:
        """Add an archive, a folder (its JSON files and archives, not recursively) or a file.

        A file named here that is not EDGAR JSON is an error; a member of a folder or an
        archive that is not is listed in ``skipped`` (see the module docstring)."""
        path = Path(path)
        if path.is_dir():
            self._contents(path, self._add_folder)
            return
        if not path.exists():
            raise InputError(str(path), "file not found")
        if _is_archive(path):
            self._contents(path, self._add_archive)
            return
        self._add(Document.file(path), path.name)

    def _contents(self, path: Path, add: Callable[[Path], None]) -> None:
        """``add(path)`` for a folder or an archive, which is an error when nothing in it is
        EDGAR JSON (naming the first members it skipped, and why)."""
        found, skipped = self._found, len(self.skipped)
        add(path)
        if self._found == found:
            bad = self.skipped[skipped:]
            named = "; ".join(f"{s.file}: {s.reason}" for s in bad[:_SHOWN]) + ("; ..." if len(bad) > _SHOWN else "")
            raise InputError(str(path), "nothing to load: no companyfacts or submissions JSON in it"
                             + (f" ({len(bad)} unreadable: {named})" if bad else ""))

    def _add_folder(self, path: Path) -> None:
        for child in sorted(path.iterdir()):
            if not child.is_file() or child.suffix.lower() not in (".json", ".zip"):
                continue
            if _is_archive(child):
                self._member(lambda child=child: self._whole_archive(child))
            elif not _TICKERS_FILE.match(child.name):
                self._member(lambda child=child: self._add(Document.file(child), child.name))

    def _whole_archive(self, path: Path) -> None:
        """Add an archive of a folder whole, or not at all: one that cannot be read (cut
        short half way through its directory) or holds nothing to load is one unreadable
        member of the folder, and what it had added before it failed is taken back."""
        facts, found, skipped = set(self._facts), self._found, len(self.skipped)
        submissions = {cik: len(docs) for cik, docs in self._submissions.items()}
        archives, lazy = len(self._archives), len(self._lazy)
        try:
            self.add(path)
        except InputError:
            for cik in self._facts.keys() - facts:
                del self._facts[cik]
            for cik in self._submissions.keys() - submissions.keys():
                del self._submissions[cik]
            for cik, count in submissions.items():
                del self._submissions[cik][count:]
            for archive in self._archives[archives:]:
                archive.close()
            del self._archives[archives:], self._lazy[lazy:], self.skipped[skipped:]
            self._found = found
            raise

    def _member(self, add: Callable[[], None]) -> None:
        """Run ``add()`` for one member of a folder or archive: what it refuses is skipped."""
        try:
            add()
        except InputError as exc:
            self.skipped.append(Skipped(file=exc.where, reason=exc.reason))

    def _add_archive(self, path: Path) -> None:
        """Index an archive in one pass over its directory: companyfacts members by CIK,
        submissions members named by CIK left in the archive (see the class docstring),
        any other JSON member told by its content."""
        try:
            archive = Archive(path)
        except ArchiveError as exc:
            raise InputError(exc.where, f"not a readable ZIP archive: {exc.reason}") from None
        except OSError as exc:
            raise InputError(str(path), f"cannot be read: {exc}") from None
        self._archives.append(archive)
        index = len(self._archives) - 1
        hint = _kind_from_name(path.name)
        holds_submissions = False
        try:
            for entry in archive.members():
                kind, cik = _member_kind(entry, hint)
                if kind == "submissions" and cik is not None:
                    holds_submissions = True
                    self._found += 1
                elif kind == "companyfacts" and cik is not None:
                    self._member(lambda e=entry, c=cik: self._add_facts(
                        c, index << 64 | e.entry, lambda: Document.member(archive, e)))
                elif kind != "" and not _TICKERS_FILE.match(entry.name.rpartition("/")[2]):
                    self._member(lambda e=entry: self._add(Document.member(archive, e), e.name.rpartition("/")[2],
                                                           hint))
        except ArchiveError as exc:
            raise InputError(exc.where, f"not a readable ZIP archive: {exc.reason}") from None
        if holds_submissions:
            self._lazy.append((archive, hint))

    def _add(self, doc: Document, name: str, hint: str | None = None) -> None:
        kind = _kind_from_name(name) or hint
        cik = _cik_from_name(name)
        if kind is None or cik is None:
            sniffed_kind, sniffed_cik = _sniff(doc)
            kind, cik = kind or sniffed_kind, cik or sniffed_cik
        if kind is None:
            raise InputError(doc.name, "neither companyfacts nor submissions JSON (no entityName, facts "
                                       "or filings at the top level)")
        if cik is None:
            raise InputError(doc.name, "no CIK in its name (CIK##########) or at its top level")
        if kind == "submissions":
            self._submissions.setdefault(cik, []).append(doc)
            self._found += 1
        else:
            self._add_facts(cik, doc, lambda: doc)

    def _add_facts(self, cik: int, ref: Document | int, document: Callable[[], Document]) -> None:
        """Keep a company's companyfacts file (``document()`` names it in an error)."""
        if cik in self._facts:
            first = self._facts_of(cik)
            assert first is not None
            raise InputError(document().name, f"a second companyfacts file for CIK {cik} (the first: {first.name})")
        self._facts[cik] = ref
        self._found += 1


_ENTRY_MASK = (1 << 64) - 1  # an archive member's ref: archive index << 64 | directory entry offset


def _member_kind(entry: Member, hint: str | None) -> tuple[str | None, int | None]:
    """The kind and CIK of an archive member by its name (``""``: not a JSON file)."""
    name = entry.name.rpartition("/")[2]
    if entry.is_dir or not name.lower().endswith(".json"):
        return "", None
    return _kind_from_name(name) or hint, _cik_from_name(name)


def _is_archive(path: Path) -> bool:
    """A ZIP archive by its end record, or by its name (one cut short has no end record,
    and is an error, not a JSON file)."""
    return path.suffix.lower() == ".zip" or zipfile.is_zipfile(path)


def _kind_from_name(name: str) -> str | None:
    lowered = name.lower()
    if "submissions" in lowered:
        return "submissions"
    if "companyfacts" in lowered:
        return "companyfacts"
    return None


def _cik_from_name(name: str) -> int | None:
    match = _CIK_IN_NAME.search(name)
    return int(match[1]) if match and int(match[1]) > 0 else None


def _sniff(doc: Document) -> tuple[str | None, int | None]:
    """The kind and CIK of a document from its first top-level keys (stops reading as soon
    as both are known, or at the first large value)."""
    kind: str | None = None
    cik: int | None = None
    try:
        with doc.open() as handle:
            for prefix, event, value in ijson.parse(handle, use_float=False):
                if prefix == "" and event != "map_key":
                    if event != "start_map":
                        break
                    continue
                if prefix == "" and event == "map_key":
                    if value in _FACTS_KEYS:
                        kind = kind or "companyfacts"
                    elif value in _SUBMISSIONS_KEYS:
                        kind = kind or "submissions"
                    if value in ("facts", "filings", "accessionNumber"):
                        break  # the big value: nothing decisive follows it cheaply
                elif prefix == "cik" and event in ("number", "string"):
                    cik = _cik_value(value)
                if kind and cik:
                    break
    except InputError:  # a member that cannot be opened (its compression, its header): its own reason
        raise
    except ArchiveError as exc:
        raise InputError(exc.where, exc.reason) from None
    except (ijson.JSONError, UnicodeDecodeError, ValueError):
        raise InputError(doc.name, "not valid JSON") from None
    return kind, cik


def _cik_value(value: Any) -> int | None:
    text = str(value)
    return int(text) if text.isdigit() and int(text) > 0 else None


def discover(paths: Iterable[str | Path]) -> Universe:
    """A :class:`Universe` of every company found in ``paths``."""
    universe = Universe()
    try:
        for path in paths:
            universe.add(path)
    except BaseException:
        universe.close()
        raise
    return universe


# ------------------------------------------------------------------ selection


def ticker_map(path: str | Path) -> dict[str, int]:
    """Tickers (upper case) to CIKs from the SEC's ``company_tickers.json``."""
    file = str(path)
    try:
        data = json.loads(Path(path).read_bytes())
    except FileNotFoundError:
        raise InputError(file, "file not found") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(file, f"not valid JSON: {exc}") from None
    rows = data.values() if isinstance(data, dict) else data if isinstance(data, list) else None
    if rows is None:
        raise InputError(file, "expected the SEC's company_tickers.json: an object of "
                               '{"cik_str": ..., "ticker": ...} entries')
    out: dict[str, int] = {}
    for n, row in enumerate(rows):
        if not isinstance(row, dict) or "ticker" not in row or "cik_str" not in row:
            raise InputError(f"{file}: entry {n}", "needs cik_str and ticker")
        cik = _cik_value(row["cik_str"])
        if cik is None or not isinstance(row["ticker"], str) or not row["ticker"]:
            raise InputError(f"{file}: entry {n}", f"bad cik_str or ticker: {row!r}")
        out.setdefault(row["ticker"].upper(), cik)
    return out


def parse_ciks(items: Iterable[str], where: str) -> list[int]:
    """CIKs from text (``320193``, ``0000320193``, ``CIK0000320193``), refusing anything else."""
    out = []
    for item in items:
        text = item.strip()
        if not text:
            continue
        digits = text[3:] if text.upper().startswith("CIK") else text
        cik = _cik_value(digits)
        if cik is None or len(digits) > 10:
            raise InputError(where, f"not a CIK: {item!r}")
        out.append(cik)
    return out


def select(universe: Universe, ciks: Iterable[int] | None = None,
           tickers: Iterable[str] | None = None, tickers_file: str | Path | None = None) -> list[Company]:
    """The companies asked for, in CIK order: when neither ``ciks`` nor ``tickers`` is
    given, every company with a companyfacts file (``submissions.zip`` also holds the
    filers that report no XBRL facts: individuals, funds ...; they have nothing to load);
    else those CIKs and the CIKs of those tickers (a CIK with no companyfacts file comes
    back without one, and its load reports it missing). A ticker not in
    ``tickers_file`` is an error naming it."""
    wanted: set[int] | None = None
    if ciks is not None:
        wanted = set(ciks)
    if tickers is not None:
        tickers = [t.strip().upper() for t in tickers if t.strip()]
        if tickers_file is None:
            raise InputError("--tickers", "selecting by ticker needs the SEC's company_tickers.json "
                                          "(--company-tickers FILE)")
        known = ticker_map(tickers_file)
        unknown = [t for t in tickers if t not in known]
        if unknown:
            raise InputError(str(tickers_file), f"no such ticker(s): {', '.join(unknown)}")
        wanted = (wanted or set()) | {known[t] for t in tickers}
    return universe.companies(universe.with_facts if wanted is None else sorted(wanted))
