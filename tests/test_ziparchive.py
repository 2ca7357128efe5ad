"""ZIP archives read from a streamed central directory (loaders/ziparchive.py), held
against zipfile's reading of the same archives: every member, its directory data and its
content, for stored and deflated members, UTF-8 and cp437 names, zip64 records and extra
fields, bytes before the archive; the real fixture files read back from an archive as
from disk; corrupt and truncated archives refused naming the archive or the member, by
the reader, the universe and the command line; and a universe found in a large
submissions.zip stays small in memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from graphmem.loaders import edgar, sec, universe
from graphmem.loaders.spool import Spool
from graphmem.loaders.ziparchive import Archive, ArchiveError, Member
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures"
LPA = FIXTURES / "companyfacts-CIK0001997711-lpa.json"
TSMC = FIXTURES / "companyfacts-CIK0001046179-tsmc.json"


@contextmanager
def zip64_everywhere() -> Iterator[None]:
    """zipfile writes zip64 extra fields and records once sizes or offsets pass its limit:
    lowered, every member past the first bytes gets them (as in CPython's own tests)."""
    limit, count = zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT
    zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = 64, 2
    try:
        yield
    finally:
        zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = limit, count


def assert_reads_as_zipfile_does(path: Path, piece: int = 1 << 16) -> list[Member]:
    with Archive(path) as archive, zipfile.ZipFile(path) as reference:
        members = list(archive.members())
        infos = reference.infolist()
        assert [m.name for m in members] == [i.filename for i in infos]
        for member, info in zip(members, infos, strict=True):
            assert (member.size, member.compressed, member.crc, member.is_dir) == (
                info.file_size, info.compress_size, info.CRC, info.is_dir())
            assert archive.member_at(member.entry) == member
            if member.is_dir:
                continue
            with archive.open(member) as stream:
                parts = []
                while part := stream.read(piece):
                    parts.append(part)
            assert b"".join(parts) == reference.read(info)
        return members


contents = st.one_of(st.binary(max_size=3000), st.text(max_size=2000).map(str.encode),
                     st.integers(0, 50_000).map(lambda n: b'{"val": 1}' * n))


@settings(max_examples=60, deadline=None)
@given(files=st.lists(st.tuples(st.text(min_size=1, max_size=12).filter(lambda n: "/" not in n and "\x00" not in n),
                                contents, st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])),
                      min_size=1, max_size=6, unique_by=lambda f: f[0]),
       zip64=st.booleans(), prefix=st.binary(max_size=300), piece=st.integers(1, 70_000))
def test_members_and_content_are_what_zipfile_reads(tmp_path_factory, files, zip64, prefix, piece):
    path = tmp_path_factory.mktemp("zip") / "archive.zip"
    with (zip64_everywhere() if zip64 else _nothing()), zipfile.ZipFile(path, "w") as archive:
        for name, content, method in files:
            archive.writestr(zipfile.ZipInfo(name), content, compress_type=method)
        archive.writestr("folder/", b"")
    if prefix:  # a self-extracting stub before the archive
        path.write_bytes(prefix + path.read_bytes())
    assert_reads_as_zipfile_does(path, piece)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def test_an_archive_of_70000_members_has_a_zip64_end_record(tmp_path):
    path = tmp_path / "submissions.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for cik in range(70_000):
            archive.writestr(f"CIK{cik:010d}.json", b"{}")
    assert path.read_bytes().rfind(b"PK\x06\x06") > 0  # zipfile wrote the zip64 record
    with Archive(path) as archive:
        assert archive.count == 70_000
        members = list(archive.members())
        assert members[-1].name == "CIK0000069999.json"
        with archive.open(members[-1]) as stream:
            assert stream.read() == b"{}"


def _corrupt(tmp_path: Path, change) -> Path:
    path = tmp_path / "archive.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("CIK0000000001.json", b'{"cik": 1, "filings": {}}' * 50, compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("CIK0000000002.json", b'{"cik": 2}', compress_type=zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    change(data)
    path.write_bytes(bytes(data))
    return path


def _read_all(path: Path) -> None:
    with Archive(path) as archive:
        for member in archive.members():
            with archive.open(member) as stream:
                stream.read()


@pytest.mark.parametrize(("change", "member", "message"), [
    (lambda d: d.__setitem__(d.find(b'{"cik": 2}') + 2, ord("C")), "CIK0000000002.json", "bad CRC-32 or size"),
    (lambda d: d.__setitem__(slice(d.rfind(b"PK\x05\x06"), None), b""), None,
     "no end of central directory record"),
    (lambda d: d.__setitem__(slice(len(d) // 2, None), b""), None, "no end of central directory record"),
    (lambda d: d.__setitem__(slice(d.find(b"CIK0000000002.json"), d.find(b"CIK0000000002.json") + 3), b"XYZ"),
     "CIK0000000002.json", "the local header names"),
    (lambda d: d.__setitem__(slice(d.rfind(b"PK\x01\x02") + 8, d.rfind(b"PK\x01\x02") + 9), b"\x01"),
     "CIK0000000002.json", "encrypted members are not supported"),
    (lambda d: d.__setitem__(slice(d.find(b"PK\x01\x02") + 10, d.find(b"PK\x01\x02") + 11), b"\x0c"),
     "CIK0000000001.json", "compression method 12 is not supported"),
    (lambda d: d.__setitem__(slice(d.find(b"PK\x01\x02"), d.find(b"PK\x01\x02") + 4), b"PK\x09\x09"), None,
     "bad central directory entry"),
    (lambda d: d.__setitem__(slice(d.find(b"PK\x03\x04") + 30 + 18, d.find(b"PK\x03\x04") + 30 + 22),
                             b"\xff\xff\xff\xff"), "CIK0000000001.json", "corrupt deflate data"),
], ids=["bad crc", "no end record", "cut in half", "local header of another member", "encrypted", "bzip2",
        "bad directory entry", "bad deflate data"])
def test_a_corrupt_archive_is_refused_naming_it(tmp_path, change, member, message):
    path = _corrupt(tmp_path, change)
    with pytest.raises(ArchiveError, match=message) as info:
        _read_all(path)
    assert info.value.where == (f"{path}:{member}" if member else str(path))


def test_member_data_past_the_end_of_the_file_is_an_error(tmp_path):
    """A directory that gives the last member more bytes than the file holds."""
    def grow(data: bytearray) -> None:
        entry = data.rfind(b"PK\x01\x02")
        data[entry + 20:entry + 28] = (0x7FFFFFFF).to_bytes(4, "little") * 2  # compressed, size
    path = _corrupt(tmp_path, grow)
    with Archive(path) as archive, pytest.raises(ArchiveError, match="member data cut short") as info, \
            archive.open(list(archive.members())[-1]) as stream:
        stream.read()
    assert info.value.where == f"{path}:CIK0000000002.json"


def _fixtures_zip(path: Path, method: int, zip64: bool) -> Path:
    """Every real fixture file, under the name the SEC's bulk archives give it."""
    with (zip64_everywhere() if zip64 else _nothing()), zipfile.ZipFile(path, "w", method) as archive:
        for file in sorted(FIXTURES.glob("*-CIK*.json")):
            kind, cik = file.stem.split("-")[:2]
            page = "-submissions-001" if file.stem.endswith("-001") else ""
            archive.write(file, f"{kind}/{cik}{page}.json")
    return path


@pytest.mark.parametrize(("method", "zip64"), [(zipfile.ZIP_DEFLATED, False), (zipfile.ZIP_STORED, True)],
                         ids=["deflated", "stored, zip64"])
def test_the_real_fixture_files_read_back_from_an_archive(tmp_path, method, zip64):
    """Built in the test from the real SEC files: each member's bytes are the file's, and
    the universe found in the archive reads LPA and TSMC as their files on disk read."""
    path = _fixtures_zip(tmp_path / "edgar.zip", method, zip64)
    members = assert_reads_as_zipfile_does(path)
    assert len(members) == len(list(FIXTURES.glob("*-CIK*.json"))) == 9
    with universe.discover([path]) as found:
        companies = {c.cik: c for c in universe.select(found)}
        assert sorted(companies) == [1046179, 1318605, 1835632, 1997711]
        assert [d.name for d in companies[1318605].submissions] == [f"{path}:submissions/CIK0001318605.json"]
        for cik, file in ((1997711, LPA), (1046179, TSMC)):
            with Spool() as spool:
                from_archive = sec.read(companies[cik].facts, spool=spool)
                archived = (from_archive.rows, len(from_archive.accessions), from_archive.quarantined)
            with Spool() as spool:
                plain = sec.read(file, spool=spool)
                assert archived == (plain.rows, len(plain.accessions), plain.quarantined)
            assert from_archive.file == f"{path}:companyfacts/CIK{cik:010d}.json"


def _cut(path: Path, keep: float) -> Path:
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep)])
    return path


def test_a_truncated_archive_is_an_error_alone_and_a_skipped_member_in_a_folder(tmp_path):
    """Cut short (a download stopped half way) and named on its own, also on the command
    line: one line naming the archive, not a traceback. In a folder it is an unreadable
    member like a broken JSON file: named with its reason, and the folder's other files
    load (a folder with nothing else is the error, naming it)."""
    path = _cut(_fixtures_zip(tmp_path / "companyfacts.zip", zipfile.ZIP_DEFLATED, False), 0.5)
    reason = "not a readable ZIP archive: no end of central directory record (not a ZIP archive, or cut short)"
    with pytest.raises(InputError) as info:
        universe.discover([path])
    assert (info.value.where, info.value.reason) == (str(path), reason)
    with pytest.raises(InputError) as info:
        universe.discover([tmp_path])
    assert info.value.where == str(tmp_path) and info.value.reason.endswith(f"(1 unreadable: {path}: {reason})")
    (tmp_path / "CIK0001046179.json").write_bytes(TSMC.read_bytes())
    with universe.discover([tmp_path]) as found:
        assert found.skipped == [universe.Skipped(file=str(path), reason=reason)]
        assert [c.cik for c in universe.select(found)] == [1046179]
    env = {k: v for k, v in os.environ.items() if k != "GRAPHMEM_NEO4J_URI"}
    run = subprocess.run([sys.executable, "-c", "from graphmem.cli import main; main()", "load", "edgar", str(path),
                          "--tenant", "t"], capture_output=True, text=True, timeout=120, env=env, check=False)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        f"graphmem: error: {path}: not a readable ZIP archive: no end of central directory record (not a ZIP "
        "archive, or cut short)"], run.stderr


def test_an_archive_of_a_folder_found_corrupt_half_way_is_left_out_whole(tmp_path):
    """Its first member is indexed before the second directory entry turns out corrupt:
    the archive is skipped, named, and what it had added is taken back, so the same
    company's file beside it is that company's companyfacts file (not a second one)."""
    folder = tmp_path / "universe"
    folder.mkdir()
    path = folder / "a.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.write(LPA, "CIK0001997711.json")
        archive.write(TSMC, "CIK0001046179.json")
    data = bytearray(path.read_bytes())
    second = data.rfind(b"PK\x01\x02")
    data[second:second + 4] = b"XXXX"
    path.write_bytes(bytes(data))
    beside = folder / "companyfacts-CIK0001997711.json"
    beside.write_bytes(LPA.read_bytes())
    with universe.discover([folder]) as found:
        assert found.skipped == [universe.Skipped(
            file=str(path), reason=f"not a readable ZIP archive: bad central directory entry at byte {second}")]
        assert [(c.cik, c.facts.name) for c in universe.select(found)] == [(1997711, str(beside))]


def test_a_corrupt_member_fails_its_company_naming_it_and_the_others_load(mem, scope, tmp_path):
    """A byte of TSMC's stored member changed (its JSON still valid, its CRC-32 not): TSMC
    fails naming the member before anything of it is written; LPA, in the same archive,
    loads whole."""
    path = tmp_path / "companyfacts.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.write(LPA, "CIK0001997711.json")
        archive.write(TSMC, "CIK0001046179.json")
    data = bytearray(path.read_bytes())
    at = data.find(b'"val":', data.find(b"CIK0001046179.json")) + 7
    assert data[at:at + 1].isdigit()
    data[at] = ord("1") if data[at] != ord("1") else ord("2")
    path.write_bytes(bytes(data))
    with universe.discover([path]) as found:
        report = edgar.load(mem, scope, universe.select(found))
    tsmc, lpa = report.companies
    assert (tsmc.cik, tsmc.status, lpa.status, lpa.rows, lpa.assertions) == (1046179, "failed", "loaded", 768, 768)
    assert tsmc.error == f"{path}:CIK0001046179.json: bad CRC-32 or size (the member is corrupt)"
    counts = mem.counts(scope)
    assert (counts["entities"], counts["sources"], counts["evidence"]) == (1, lpa.sources, 768)


_FIND = """
import json, sys
from graphmem.loaders import universe

def status_mb(key):  # VmHWM, not ru_maxrss: a child's ru_maxrss starts at its parent's peak
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(key)) / 1024

base = status_mb("VmRSS:")
with universe.discover(sys.argv[1:]) as found:
    companies = universe.select(found)
    names = [[d.name.rpartition(":")[2] for d in c.submissions] for c in companies]
peak = status_mb("VmHWM:")
print(json.dumps([[c.cik for c in companies], names, peak - base]))
"""


def test_a_universe_in_a_large_submissions_archive_stays_small_in_memory(tmp_path):
    """100,000 submissions members beside three companies with facts: zipfile's directory
    alone would take about 60 MB and graphmem's index as much again (measured on main:
    830 bytes a member); found here, the companies and their files come back in a few MB."""
    facts, subs = tmp_path / "companyfacts.zip", tmp_path / "submissions.zip"
    with zipfile.ZipFile(facts, "w", zipfile.ZIP_DEFLATED) as archive:
        for cik in (7, 50_000, 99_999):
            archive.writestr(f"CIK{cik:010d}.json", LPA.read_bytes() if cik == 7 else b'{"cik": %d}' % cik)
    with zipfile.ZipFile(subs, "w", zipfile.ZIP_DEFLATED) as archive:
        for cik in range(1, 100_001):
            archive.writestr(f"CIK{cik:010d}.json", b'{"cik": %d, "filings": {}}' % cik)
        archive.writestr("CIK0000050000-submissions-001.json", b"{}")
    run = subprocess.run([sys.executable, "-c", _FIND, str(facts), str(subs)], capture_output=True, text=True,
                         check=True, timeout=600)
    ciks, names, above = json.loads(run.stdout)
    assert ciks == [7, 50_000, 99_999]
    assert names == [["CIK0000000007.json"], ["CIK0000050000-submissions-001.json", "CIK0000050000.json"],
                     ["CIK0000099999.json"]]
    assert above < 20, f"{above:.1f} MB above the interpreter for 100,000 members"
    assert os.path.getsize(subs) > 5_000_000


def test_a_member_in_a_compression_not_read_is_skipped_with_that_reason(tmp_path):
    """An archive whose name does not say its kind (``bulk.zip``), re-packed with bzip2: a
    member that must be opened to be told apart is skipped naming its compression method,
    not as "not valid JSON"; the deflated member beside it is found."""
    path = tmp_path / "bulk.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.write(LPA, "CIK0001997711.json", compress_type=zipfile.ZIP_DEFLATED)
        archive.write(TSMC, "CIK0001046179.json", compress_type=zipfile.ZIP_BZIP2)
    with universe.discover([path]) as found:
        assert found.skipped == [universe.Skipped(
            file=f"{path}:CIK0001046179.json",
            reason="compression method 12 is not supported (stored and deflate are)")]
        assert [c.cik for c in universe.select(found)] == [1997711]
