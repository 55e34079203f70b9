"""Whether every page of a Parquet part carries its checksum (a CRC-32 in its page header).

pyarrow checks a page's CRC when it is there (``page_checksum_verification=True``) and reads
a page without one as it is: a part rewritten without page checksums reads in full, and a
changed value in it cannot be seen.  A store's parts are all written with them (format
version 3), so :meth:`~attntopo.corpus.StoreReader.verify` reads every page header of a part
without a recorded SHA-256 and names the first page without one, and every read walks the
page headers of each part once per state of its file (:func:`pages_all_checked`, the fast
walk) and refuses a part that fails it.  pyarrow does not expose
page headers: they are Thrift structures in the compact protocol, read here as far as
needed (``PageHeader``: 1 type, 2 uncompressed size, 3 compressed size, 4 crc, then the
page kind's own header, skipped).  Not with a library's Thrift reader: this reads parts
that may be damaged, and fastparquet's (``cencoding.from_buffer``), tried on random bytes,
printed to standard output and crashed the process within 20,000 inputs; this walk is bounded
(every read checked against the chunk's end, nesting at most 32 deep) and names what it
cannot read (tests/unit/corpus/test_corpus_pages.py feeds it damaged chunks).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["footer_chunks", "page_without_checksum", "pages_all_checked"]

_MAX_DEPTH = 32
#: An i32 in the compact protocol: a zigzag varint of at most 5 bytes.
_I32 = rb"[\x80-\xff]{0,4}[\x00-\x7f]"
#: The page header a store writes for most pages (one per feature column): a data page (v1)
#: with its CRC and no statistics (``PageHeader``: fields 1-4 i32, then the
#: ``DataPageHeader`` struct of 4 i32 fields and an empty statistics struct; stop, stop).
#: Compact-protocol parsing is prefix-deterministic, so bytes matching this are exactly
#: such a header; group 1 is the page's compressed size.  Other headers are parsed in full.
_PLAIN = re.compile(
    rb"\x15I\x15I\x15(I)\x15I\x1c\x15I\x15I\x15I\x15I(?:\x1c\x00)?\x00\x00".replace(b"I", _I32)
)
#: Decoded compressed sizes by their varint bytes (a part's pages repeat a few sizes).
_SIZES: dict[bytes, int] = {}


class _Bad(ValueError):
    """A part whose page headers or footer cannot be read (a damaged part), in words."""


class _Thrift(ValueError):
    """Compact-protocol bytes that cannot be read: ``args`` are a key of :data:`_THRIFT`
    and its values.  The reader does not know what it reads (a page header, the footer):
    :func:`_words` names it as its caller says."""


#: What :class:`_Thrift` says, after the name of what was read.
_THRIFT = {
    "past": "runs past {end}",
    "deep": "nests too deep",
    "unknown": "holds a value of unknown type {}",
    "unexpected": "holds a value of type {} where it has none",
}


def _words(e: _Thrift, what: str, end: str) -> str:
    """``e`` in words: ``what`` was read (``"a page header"``), ``end`` bounds it."""
    return f"{what} " + _THRIFT[e.args[0]].format(*e.args[1:], end=end)


def _varint(b: Any, i: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        if i >= len(b) or shift > 63:
            raise _Thrift("past")
        byte = b[i]
        i += 1
        out |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return out, i
        shift += 7


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _skip(b: Any, i: int, kind: int, depth: int, *, in_list: bool = False) -> int:
    """The position after a value of compact type ``kind`` at ``i``."""
    if depth > _MAX_DEPTH:
        raise _Thrift("deep")
    if kind in (1, 2):  # a bool: in the field header's type, one byte in a list
        return i + 1 if in_list else i
    if kind == 3:
        return i + 1
    if kind in (4, 5, 6):
        return _varint(b, i)[1]
    if kind == 7:
        return i + 8
    if kind == 8:
        n, i = _varint(b, i)
        return i + n
    if kind in (9, 10):  # list, set: size and element type in one byte (size 15: a varint)
        size, elem, i = _list_head(b, i)
        for _ in range(size):
            i = _skip(b, i, elem, depth + 1, in_list=True)
            if i > len(b):
                raise _Thrift("past")
        return i
    if kind == 11:  # map: a varint size, then key and value types in one byte
        size, i = _varint(b, i)
        if size:
            if i >= len(b):
                raise _Thrift("past")
            key, value = b[i] >> 4, b[i] & 0x0F
            i += 1
            for _ in range(size):
                i = _skip(b, i, key, depth + 1, in_list=True)
                i = _skip(b, i, value, depth + 1, in_list=True)
                if i > len(b):
                    raise _Thrift("past")
        return i
    if kind == 12:
        return _fields(b, i, depth + 1, _NONE)[1]
    raise _Thrift("unknown", kind)


def _list_head(b: Any, i: int) -> tuple[int, int, int]:
    """A list's (or set's) size, element type and the position of its first element."""
    if i >= len(b):
        raise _Thrift("past")
    size, elem = b[i] >> 4, b[i] & 0x0F
    i += 1
    if size == 15:
        size, i = _varint(b, i)
    return size, elem, i


#: A struct of which no field is wanted (skipped).
_NONE: dict = {}
#: The fields of a page header (Thrift ``PageHeader``) that the walks read: 1 type,
#: 2 uncompressed size, 3 compressed size, 4 crc (i32 each); the page kind's own header and
#: every other field are skipped.
_PAGE_HEADER = {1: True, 2: True, 3: True, 4: True}


def _header(b: Any, i: int) -> tuple[int | None, int, int]:
    """``(crc, compressed size, position of the page's body)`` of the page header at ``i``:
    the CRC None where the header has none (nor an i32 there), the size -1 where it has no
    i32 size."""
    fields, body = _fields(b, i, 0, _PAGE_HEADER)
    crc, size = fields.get(4), fields.get(3)
    return (
        crc if type(crc) is int else None,
        size if type(size) is int and size >= 0 else -1,
        body,
    )


def page_without_checksum(data: bytes, chunks: Any) -> str | None:
    """The first page of the part ``data`` whose header holds no CRC, or whose headers do not
    fill its column chunk, in words; None when every page has its CRC.  ``chunks``: its
    column chunks (:func:`footer_chunks`, their offsets checked against the file's bytes
    before: ``_layout_error``), or its :class:`pyarrow.parquet.FileMetaData`."""
    if not isinstance(chunks, list):
        chunks = _chunks_of(chunks)
    view = memoryview(data)
    for path, start, size, _ in chunks:
        end = start + size
        chunk, pos, n = view[:end], start, 0  # a view: no copy
        try:
            while pos < end:
                crc, size, body = _header(chunk, pos)
                if crc is None:
                    return f"column {path!r}, page {n}: it has no CRC"
                if size < 0:
                    return f"column {path!r}, page {n}: a page header has no size"
                pos, n = body + size, n + 1
        except _Thrift as e:
            return f"column {path!r}, page {n}: {_words(e, 'a page header', 'its column chunk')}"
        if pos != end:
            return f"column {path!r}: its pages run past its column chunk"
    return None


def _chunks_of(md: Any) -> list[tuple[str, int, int, int]]:
    """:func:`footer_chunks`'s chunks from pyarrow's metadata of an intact file."""
    out = []
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for c in range(rg.num_columns):
            col = rg.column(c)
            start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
            out.append((col.path_in_schema, start, col.total_compressed_size, -1))
    return out


def _zigzag_bytes(b: bytes) -> int:
    z = 0
    for i, byte in enumerate(b):
        z |= (byte & 0x7F) << (7 * i)
    return _zigzag(z)


def pages_all_checked(data: bytes) -> bool:
    """Whether every page of the part ``data`` carries its CRC, its pages following each
    other from byte 4 up to its footer, as every part a store writes (a sequential walk of
    the page headers, no footer parsed: ~1 ms for a part of 2,100 columns, against ~10 ms
    for :func:`page_without_checksum`).  False says nothing of where: ask
    :func:`page_without_checksum` then."""
    if len(data) < 12:  # the leading magic is not checked: pyarrow reads a part without it
        return False
    end = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    pos, view, match = 4, None, _PLAIN.match
    try:
        while pos < end:
            m = match(data, pos, end)
            if m is not None:
                b = m.group(1)
                size = _SIZES.get(b)
                if size is None:
                    size = _zigzag_bytes(b)
                    if len(_SIZES) < 4096:
                        _SIZES[b] = size
                if size < 0:
                    return False
                pos = m.end() + size
                continue
            if view is None:
                view = memoryview(data)[:end]
            crc, size, body = _header(view, pos)
            if crc is None or size < 0:
                return False
            pos = body + size
    except _Thrift:
        return False
    return pos == end


#: The codecs of Parquet's ``CompressionCodec`` by number (a part's are all SNAPPY).
CODECS = {0: "UNCOMPRESSED", 1: "SNAPPY", 2: "GZIP", 3: "LZO", 4: "BROTLI", 5: "LZ4", 6: "ZSTD"}
#: The fields of the footer (Thrift ``FileMetaData``) that :func:`footer_chunks` reads:
#: 3 num_rows, 4 row_groups (``RowGroup``: 1 columns, 3 num_rows; ``ColumnChunk``: 3
#: meta_data; ``ColumnMetaData``: 3 path_in_schema, 4 codec, 7 total_compressed_size,
#: 9 data_page_offset, 11 dictionary_page_offset); every other field is skipped.
_FOOTER = {3: True, 4: {1: {3: {3: True, 4: True, 7: True, 9: True, 11: True}}, 3: True}}


def _value(b: Any, i: int, kind: int, depth: int, spec: Any) -> tuple[Any, int]:
    """The value of compact type ``kind`` at ``i`` (an integer, bytes, a list, or a struct's
    fields by id as ``spec`` names them) and the position after it."""
    if depth > _MAX_DEPTH:
        raise _Thrift("deep")
    if kind in (4, 5, 6):
        z, i = _varint(b, i)
        return _zigzag(z), i
    if kind == 8:
        n, i = _varint(b, i)
        if i + n > len(b):
            raise _Thrift("past")
        return bytes(b[i : i + n]), i + n
    if kind == 12:
        if not isinstance(spec, dict):  # a struct where the footer has another type
            return None, _skip(b, i, kind, depth)
        return _fields(b, i, depth + 1, spec)
    if kind == 9:
        size, elem, i = _list_head(b, i)
        out = []
        for _ in range(size):
            v, i = _value(b, i, elem, depth + 1, spec)
            out.append(v)
        return out, i
    raise _Thrift("unexpected", kind)


def _fields(b: Any, i: int, depth: int, spec: dict) -> tuple[dict, int]:
    """The fields of the struct at ``i`` that ``spec`` names (``{field id: value}``; the
    others skipped) and the position after it."""
    out: dict[int, Any] = {}
    fid = 0
    while True:
        if i >= len(b):
            raise _Thrift("past")
        head = b[i]
        i += 1
        if head == 0:
            return out, i
        kind, delta = head & 0x0F, head >> 4
        if delta:
            fid += delta
        else:
            z, i = _varint(b, i)
            fid = _zigzag(z)
        if fid in spec:
            out[fid], i = _value(b, i, kind, depth, spec[fid])
        else:
            i = _skip(b, i, kind, depth)


def footer_chunks(data: bytes) -> tuple[list[tuple[str, int, int, int]], int, int]:
    """``(chunks, group_rows, num_rows)`` of the Parquet file ``data`` as its footer says:
    each column chunk's ``(path, first byte, size, codec)`` in the footer's order, the rows
    of its row groups, and its own row count.  Read here, not from pyarrow's metadata
    objects: asked for a column chunk, pyarrow aborts the process (no exception) when a
    flipped bit made an enumeration of its footer (a repetition type, a codec) a value it
    does not know.  Raises ``ValueError`` naming what cannot be read."""
    if len(data) < 12:
        raise _Bad("it is too short to hold a footer")
    end = len(data) - 8
    start = end - int.from_bytes(data[-8:-4], "little")
    if not 4 <= start < end:
        raise _Bad("its footer length points outside it")
    try:
        doc, _ = _fields(memoryview(data)[start:end], 0, 0, _FOOTER)
    except _Thrift as e:
        raise _Bad(_words(e, "the footer", "its end")) from None
    chunks, rows = [], 0
    for group in _as(doc.get(4, []), list, "its row groups"):
        group = _as(group, dict, "a row group")
        rows += _as(group.get(3, 0), int, "a row group's row count")
        for chunk in _as(group.get(1, []), list, "a row group's column chunks"):
            meta = _as(_as(chunk, dict, "a column chunk").get(3, {}), dict, "a chunk's metadata")
            if not all(k in meta for k in (3, 4, 7, 9)):
                raise _Bad("a column chunk's metadata is incomplete")
            names = _as(meta[3], list, "a column's path")
            path = ".".join(
                _as(p, bytes, "a column's name").decode("utf-8", "replace") for p in names
            )
            first, size, codec, dictionary = (
                _as(meta.get(k, 0), int, "a column chunk's offset, size or codec")
                for k in (9, 7, 4, 11)
            )
            chunks.append((path, dictionary if dictionary > 0 else first, size, codec))
    return chunks, rows, _as(doc.get(3, -1), int, "its row count")


def _as(value: Any, kind: type, what: str) -> Any:
    """``value`` if it is a ``kind``; else the footer is damaged (``what``: in words)."""
    if not isinstance(value, kind):
        raise _Bad(f"{what} in its footer is not what Parquet writes there")
    return value
