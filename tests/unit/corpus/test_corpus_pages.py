"""The page-header walk of ``attntopo.corpus._pages`` on damaged bytes: whatever the bytes of
a part, it answers in words (or None) and never raises, loops or recurses without bound.

The walk is written here, not taken from a library, because of what it reads: parts that may
be damaged.  pyarrow does not expose page headers, and fastparquet's Thrift reader
(``cencoding.from_buffer``, 2026.9.0), tried on random bytes, printed to standard output and
crashed the process (a segmentation fault) within 20,000 inputs of up to 64 bytes."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import example, given, settings
from hypothesis import strategies as st

from attntopo.corpus._pages import page_without_checksum, pages_all_checked


def _part(crc: bool) -> tuple[bytes, pq.FileMetaData]:
    n = 3_000
    t = pa.table({"x": np.arange(n, dtype=np.float64), "s": [f"v{i % 5}" for i in range(n)]})
    out = io.BytesIO()
    pq.write_table(t, out, data_page_size=2048, write_page_checksum=crc, use_dictionary=["s"])
    data = out.getvalue()
    return data, pq.ParquetFile(pa.BufferReader(data)).metadata


GOOD, GOOD_MD = _part(True)
BARE, BARE_MD = _part(False)


def _chunk(md: pq.FileMetaData, c: int) -> tuple[int, int]:
    col = md.row_group(0).column(c)
    start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
    return start, start + col.total_compressed_size


def test_the_parts_are_what_the_fuzz_starts_from():
    assert page_without_checksum(GOOD, GOOD_MD) is None
    assert page_without_checksum(BARE, BARE_MD) == "column 'x', page 0: it has no CRC"
    assert pages_all_checked(GOOD) and not pages_all_checked(BARE)


@settings(max_examples=300)
@given(
    column=st.sampled_from([0, 1]),
    edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), max_size=8),
)
@example(column=0, edits=[(0.0, 0x1C)])  # a struct field where the type byte was
@example(column=1, edits=[(0.0, 0x19), (0.001, 0xFF)])  # a list of size 15: a varint size
def test_damaged_page_headers_are_named_never_raised(column, edits):
    """Bytes changed inside a column chunk (headers and pages alike): the walk ends with a
    page named in words or None (a changed byte in a page's body, which its CRC will find on
    reading), and reads nothing past the chunk."""
    start, end = _chunk(GOOD_MD, column)
    data = bytearray(GOOD)
    for where, byte in edits:
        data[start + int(where * (end - start))] = byte
    got = page_without_checksum(bytes(data), GOOD_MD)
    assert got is None or (isinstance(got, str) and got.startswith("column "))
    assert pages_all_checked(bytes(data)) in (True, False)  # the reads' walk: never raises


@settings(max_examples=300)
@given(noise=st.binary(min_size=0, max_size=200), column=st.sampled_from([0, 1]))
@example(noise=b"\x1c" * 5000, column=0)  # structs in structs past Python's recursion limit
@example(noise=b"\x19\xf0" + b"\xff" * 12, column=0)  # a varint longer than 64 bits
def test_random_bytes_in_place_of_a_chunk_are_named(noise, column):
    """A column chunk's first bytes replaced by anything: one line naming the column."""
    start, end = _chunk(GOOD_MD, column)
    data = bytearray(GOOD)
    noise = noise[: end - start]
    data[start : start + len(noise)] = noise
    got = page_without_checksum(bytes(data), GOOD_MD)
    assert got is None or got.startswith("column ")
    assert pages_all_checked(bytes(data)) in (True, False)


def test_the_footer_read_here_is_pyarrows():
    """footer_chunks reads each column chunk's first byte, size and codec as pyarrow does."""
    from attntopo.corpus._pages import CODECS, footer_chunks

    chunks, group_rows, rows = footer_chunks(GOOD)
    want = [
        (col.path_in_schema, *_chunk(GOOD_MD, c), col.compression)
        for c, col in ((c, GOOD_MD.row_group(0).column(c)) for c in range(GOOD_MD.num_columns))
    ]
    got = [(path, start, start + size, CODECS[codec]) for path, start, size, codec in chunks]
    assert (got, group_rows, rows) == (want, GOOD_MD.num_rows, GOOD_MD.num_rows)


@settings(max_examples=300)
@given(
    where=st.floats(0, 1, exclude_max=True),
    noise=st.binary(min_size=1, max_size=16),
)
def test_a_damaged_footer_is_named_never_raised_otherwise(where, noise):
    """Bytes changed anywhere in a footer: footer_chunks answers, or raises ValueError
    naming what it cannot read; nothing else (pyarrow's metadata objects abort the process
    on some such bytes, so the footer is read here)."""
    from attntopo.corpus._pages import footer_chunks

    data = bytearray(GOOD)
    start = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    at = start + int(where * (len(data) - 8 - start))
    data[at : at + len(noise)] = noise[: len(data) - 8 - at]
    try:
        chunks, _, _ = footer_chunks(bytes(data))
    except ValueError as e:
        assert str(e) and "page header" not in str(e)  # a footer's damage is named as such
    else:
        assert all(isinstance(x, int) for c in chunks for x in c[1:])


def test_a_cut_footer_is_named_as_the_footer_wherever_it_is_cut():
    """The Thrift reader is shared by the page headers and the footer and names neither
    itself: a footer cut anywhere (its length fixed to match) is "the footer runs past its
    end", also where the cut falls inside a field the footer's reader skips (it had said "a
    page header runs past its column chunk" there)."""
    from attntopo.corpus._pages import footer_chunks

    n = int.from_bytes(GOOD[-8:-4], "little")
    start = len(GOOD) - 8 - n
    said = set()
    for cut in range(1, n):
        data = GOOD[: start + cut] + cut.to_bytes(4, "little") + b"PAR1"
        try:
            footer_chunks(data)
        except ValueError as e:
            said.add(str(e))
    assert said == {"the footer runs past its end"}
