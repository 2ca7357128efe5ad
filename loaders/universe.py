"""Which SEC files make up a universe of companies, and which companies are asked for.

The SEC serves its EDGAR JSON one company at a time (``CIK##########.json``) and in
bulk: ``companyfacts.zip`` (one companyfacts file per company) and ``submissions.zip``
(one submissions file per company, plus the paged files of filers with more than about
1,000 filings, ``CIK##########-submissions-001.json`` ...). :func:`discover` takes any
mix of such archives, folders of such files, and single files, and groups them by CIK
into :class:`Company` entries. Nothing is unpacked: a ZIP member is a
:class:`Document` that opens a stream on the archive (memory stays flat in the
archive's size), a file on disk is a Document that opens the file.

What a file is. A name that says ``submissions`` (the file's, or its archive's:
``submissions.zip``) is a submissions file, one that says ``companyfacts`` a
companyfacts file; any other JSON file is told by its first top-level keys
(``entityName`` or ``facts``: companyfacts; ``filings``, ``accessionNumber``,
``entityType``, ``name`` or ``tickers``: submissions). The CIK comes from the name
(``CIK0000320193``, or the digits after ``CIK``); a file whose name has none is read
for its top-level ``cik``. A submissions page is told from a main file by its content
(columns at the top level, no ``filings``), when it is read.

Selection (:func:`select`): all companies, a list of CIKs, or tickers through the
SEC's ``company_tickers.json`` (``{"0": {"cik_str": 320193, "ticker": "AAPL",
"title": "Apple Inc."}, ...}``). A CIK asked for but absent from the inputs is kept
as a company without files, so the load reports it as missing instead of dropping it.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import ijson

from graphmem.errors import InputError

_CIK_IN_NAME = re.compile(r"CIK0*(\d{1,10})", re.IGNORECASE)
#: Top-level keys that tell a companyfacts file from a submissions file or page.
_FACTS_KEYS = frozenset({"entityName", "facts"})
_SUBMISSIONS_KEYS = frozenset({"filings", "accessionNumber", "entityType", "name", "tickers"})


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
    archive: zipfile.ZipFile | None = field(default=None, repr=False, compare=False)
    info: zipfile.ZipInfo | None = field(default=None, repr=False, compare=False)

    @classmethod
    def file(cls, path: str | Path) -> Document:
        path = Path(path)
        try:
            stat = path.stat()
        except FileNotFoundError:
            raise InputError(str(path), "file not found") from None
        return cls(str(path), f"stat:{stat.st_size}:{stat.st_mtime_ns}", path=path)

    @classmethod
    def member(cls, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Document:
        return cls(f"{archive.filename}:{info.filename}", f"crc32:{info.CRC:08x}:{info.file_size}",
                   archive=archive, info=info)

    def open(self) -> IO[bytes]:
        try:
            if self.archive is not None and self.info is not None:
                return self.archive.open(self.info)
            assert self.path is not None
            return self.path.open("rb")
        except FileNotFoundError:
            raise InputError(self.name, "file not found") from None
        except (OSError, zipfile.BadZipFile) as exc:
            raise InputError(self.name, f"cannot be read: {exc}") from None


@dataclass
class Company:
    """The files of one company: its companyfacts (or None) and its submissions files
    (the main file and its pages, in name order; told apart when read)."""

    cik: int
    facts: Document | None = None
    submissions: list[Document] = field(default_factory=list)


#: A submissions file as the universe keeps it until its company is selected: a Document,
#: or an archive member (a pair costs a fraction of a Document; ``submissions.zip`` holds
#: one for every filer, most of which have no companyfacts to load).
_Ref = Document | tuple[zipfile.ZipFile, zipfile.ZipInfo]


class Universe:
    """Companies by CIK, from archives, folders and files (see the module docstring).

    Keep it open while its companies are read (a context manager): its ZIP archives stay
    open so that members can be streamed.
    """

    def __init__(self) -> None:
        self.skipped: list[str] = []  # files in a folder that are not EDGAR JSON
        self._facts: dict[int, Document] = {}
        self._submissions: dict[int, list[_Ref]] = {}
        self._archives: list[zipfile.ZipFile] = []

    def __enter__(self) -> Universe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for archive in self._archives:
            archive.close()
        self._archives.clear()

    def company(self, cik: int) -> Company:
        """The files found for ``cik`` (none: a Company without files)."""
        refs = self._submissions.get(cik, [])
        docs = [r if isinstance(r, Document) else Document.member(*r) for r in refs]
        return Company(cik, self._facts.get(cik), sorted(docs, key=lambda d: d.name))

    @property
    def ciks(self) -> list[int]:
        """Every CIK with a file, in order."""
        return sorted(self._facts.keys() | self._submissions.keys())

    @property
    def with_facts(self) -> list[int]:
        """The CIKs with a companyfacts file, in order."""
        return sorted(self._facts)

    def add(self, path: str | Path) -> None:
        """Add an archive, a folder (its JSON files and archives, not recursively) or a file.

        A file named here that is not EDGAR JSON is an error; one found in a folder (a
        ``company_tickers.json`` beside the archives) is skipped and listed in
        ``skipped``."""
        path = Path(path)
        if path.is_dir():
            for child in sorted(path.iterdir()):
                if child.is_file() and (child.suffix.lower() in (".json", ".zip")):
                    try:
                        self.add(child)
                    except InputError:
                        if zipfile.is_zipfile(child):
                            raise
                        self.skipped.append(str(child))
            return
        if not path.exists():
            raise InputError(str(path), "file not found")
        if zipfile.is_zipfile(path):
            self._add_archive(path)
            return
        self._add(Document.file(path), path.name)

    def _add_archive(self, path: Path) -> None:
        try:
            archive = zipfile.ZipFile(path)
        except (OSError, zipfile.BadZipFile) as exc:
            raise InputError(str(path), f"not a readable ZIP archive: {exc}") from None
        self._archives.append(archive)
        hint = _kind_from_name(path.name)
        for info in archive.infolist():
            name = info.filename
            if not name.lower().endswith(".json") or info.is_dir():
                continue
            name = name.rpartition("/")[2]
            kind, cik = _kind_from_name(name) or hint, _cik_from_name(name)
            if kind == "submissions" and cik is not None:  # most of submissions.zip: kept as a pair
                self._submissions.setdefault(cik, []).append((archive, info))
            else:
                self._add(Document.member(archive, info), name, hint)

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
        elif cik in self._facts:
            raise InputError(doc.name, f"a second companyfacts file for CIK {cik} (the first: {self._facts[cik].name})")
        else:
            self._facts[cik] = doc


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
    return [universe.company(c) for c in (universe.with_facts if wanted is None else sorted(wanted))]
