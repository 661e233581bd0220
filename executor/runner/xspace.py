"""The older runtimes' profiles, read with the standard library alone.

JAX 0.12's profiler stops into jaxlib's ``ProfileData``; on 0.4 and 0.6 XLA's
``ProfilerSession.stop()`` gives only the serialized ``XSpace`` protobuf
(tsl/profiler/protobuf/xplane.proto) and no schema to read it with. ``parse_xspace`` decodes
those bytes into objects with ProfileData's attributes and meanings, so runner/profile.py reads
every runtime's profile alike:

    Space   .planes, .find_plane_with_name(name); .errors, .warnings, .hostnames
    Plane   .name, .stats, .lines; .id, .event_metadata {id: EventMetadata}
    Line    .name, .events; .id, .display_name, .timestamp_ns, .duration_ps
    Event   .name, .start_ns, .duration_ns, .end_ns, .stats; .metadata_id, .metadata_stats

As ProfileData does: an event's name is its metadata's, its start the line's ``timestamp_ns``
plus ``offset_ps`` // 1000 and its duration ``duration_ps`` // 1000 (C++'s integer division,
as floats), and its stats are its own only (its metadata's are ``metadata_stats``). A stat is
(its metadata's name, its value): a ref_value is the name of the stat metadata it points at
(XPlane's interned strings; "" if none), a stat whose metadata is missing or that has no value
is (None, None). Where this reader differs: an event whose metadata has only a
``display_name`` is named by it (ProfileData: ""), a bytes_value stays bytes (ProfileData makes
it str, and raises if it is not UTF-8), a str_value that is not UTF-8 is read with U+FFFD
(ProfileData refuses the whole XSpace), and a group (wire types 3 and 4, which proto3 and so
XPlane never write) is refused where protobuf would skip it.

A trace can hold 200,000 events, so a line's events are decoded when first read, and an event's
stats when first read; the hot loops read varints inline. Malformed bytes raise ValueError (at
parse time for the framing of planes, lines and events, when read for what is inside an event).
"""

from __future__ import annotations

import struct

__all__ = ["Event", "EventMetadata", "Line", "Plane", "Space", "parse_xspace"]

_DOUBLE = struct.Struct("<d").unpack_from
_INT64_MAX = (1 << 63) - 1
_WRAP = 1 << 64
_MASK64 = _WRAP - 1
_ENDS_INSIDE = "xspace: the buffer ends inside a message"

# Tags (field number << 3 | wire type), compared with a message's next byte in the hot loops.
_LINE_EVENTS = 4 << 3 | 2
_LINE_INTS = {1: "id", 3: "timestamp_ns", 9: "duration_ps", 10: "display_id"}
_EVENT_METADATA_ID, _EVENT_OFFSET, _EVENT_DURATION, _EVENT_STATS, _EVENT_OCCURRENCES = 0x08, 0x10, 0x18, 0x22, 0x28
_STAT_ID, _STAT_DOUBLE, _STAT_UINT, _STAT_INT, _STAT_STR, _STAT_BYTES, _STAT_REF = (
    0x08, 0x11, 0x18, 0x20, 0x2A, 0x32, 0x38)


def _varint_tail(buf: bytes, pos: int, first: int) -> tuple[int, int]:
    """The varint whose first byte (``first``, >= 0x80) is already read, pos being past it; and
    the position after it. Unrolled for the usual lengths (an offset in ps takes 5 or 6 bytes)."""
    b = buf[pos]
    v = (first & 0x7F) | (b & 0x7F) << 7
    if b < 0x80:
        return v, pos + 1
    b = buf[pos + 1]
    v |= (b & 0x7F) << 14
    if b < 0x80:
        return v, pos + 2
    b = buf[pos + 2]
    v |= (b & 0x7F) << 21
    if b < 0x80:
        return v, pos + 3
    pos += 3
    shift = 28
    while True:
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v & _MASK64, pos  # a 10th byte's bits past 64 are dropped, as protobuf does
        shift += 7
        if shift >= 70:
            raise ValueError(f"xspace: a varint longer than 10 bytes at {pos}")


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    return _varint_tail(buf, pos + 1, b)


def _signed(v: int) -> int:
    return v - _WRAP if v > _INT64_MAX else v


def _field(buf: bytes, pos: int, end: int) -> tuple[int, int, object, int]:
    """(field number, wire type, value, the position after it) of the field at pos: the value is
    an int for a varint, the (start, stop) of a length-delimited field, the raw bytes of a fixed
    one."""
    key, pos = _varint(buf, pos)
    field, wire = key >> 3, key & 7
    if field == 0 or field >= 1 << 29:
        raise ValueError(f"xspace: no field number is {field} (at {pos})")
    if wire == 0:
        value, pos = _varint(buf, pos)
    elif wire == 2:
        size, pos = _varint(buf, pos)
        value = (pos, pos + size)
        pos += size
    elif wire == 1 or wire == 5:
        size = 8 if wire == 1 else 4
        value = buf[pos:pos + size]
        pos += size
    else:  # groups (3, 4) are not in XPlane's schema; 6 and 7 are no wire type
        raise ValueError(f"xspace: wire type {wire} at {pos}")
    if pos > end:
        raise ValueError(f"xspace: a field runs past its message's end ({pos} > {end})")
    return field, wire, value, pos


def _fields(buf: bytes, pos: int, end: int):
    """(field number, wire type, value) of each field of the message in buf[pos:end]."""
    while pos < end:
        field, wire, value, pos = _field(buf, pos, end)
        yield field, wire, value


def _skip(buf: bytes, pos: int, end: int) -> int:
    """The position after the field at pos (one the caller does not read)."""
    return _field(buf, pos, end)[3]


def _text(buf: bytes, span: tuple[int, int]) -> str:
    return buf[span[0]:span[1]].decode("utf-8", "replace")


def _stat(buf: bytes, pos: int, stop: int, names: dict[int, str]) -> tuple:
    """One XStat in buf[pos:stop] as (name, value). Read inline when it is as protobuf writes
    it (metadata_id, then one value); by _stat_any otherwise."""
    start = pos
    mid = 0
    if pos < stop and buf[pos] == _STAT_ID:
        mid = buf[pos + 1]
        pos += 2
        if mid > 0x7F:
            mid, pos = _varint_tail(buf, pos, mid)
    if pos >= stop:
        return _stat_any(buf, start, stop, names)
    tag = buf[pos]
    if tag == _STAT_STR or tag == _STAT_BYTES:
        size, pos = _varint(buf, pos + 1)
        value = buf[pos:pos + size]
        pos += size
    elif tag == _STAT_INT or tag == _STAT_UINT or tag == _STAT_REF:
        value, pos = _varint(buf, pos + 1)
    elif tag == _STAT_DOUBLE:
        value = _DOUBLE(buf, pos + 1)[0] if pos + 9 <= stop else None
        pos += 9
    else:
        return _stat_any(buf, start, stop, names)
    if pos != stop:  # more fields (or a value past the end, which _stat_any says)
        return _stat_any(buf, start, stop, names)
    return _named(names, mid, tag, value)


def _stat_any(buf: bytes, pos: int, stop: int, names: dict[int, str]) -> tuple:
    """An XStat in any field order, a later value replacing an earlier one (a oneof)."""
    mid, tag, value = 0, None, None
    for field, wire, v in _fields(buf, pos, stop):
        key = field << 3 | wire
        if key == _STAT_ID:
            mid = v
        elif key in (_STAT_INT, _STAT_UINT, _STAT_REF):
            tag, value = key, v
        elif key in (_STAT_STR, _STAT_BYTES):
            tag, value = key, buf[v[0]:v[1]]
        elif key == _STAT_DOUBLE:
            tag, value = key, _DOUBLE(v)[0]
    return _named(names, mid, tag, value)


def _named(names: dict[int, str], mid: int, tag: int | None, value) -> tuple:
    """(name, value) of a stat, as ProfileData gives it: (None, None) for one whose metadata is
    missing or that has no value."""
    name = names.get(_signed(mid))
    if name is None or tag is None:
        return (None, None)
    if tag == _STAT_INT:
        return (name, _signed(value))
    if tag == _STAT_STR:
        return (name, value.decode("utf-8", "replace"))
    if tag == _STAT_REF:
        return (name, names.get(value, ""))
    return (name, value)


def _stats(buf: bytes, pos: int, end: int, field_tag: int, names: dict[int, str]) -> list[tuple]:
    """The stats (the fields tagged ``field_tag``) of the message in buf[pos:end]."""
    out = []
    while pos < end:
        if buf[pos] != field_tag:
            pos = _skip(buf, pos, end)
            continue
        size, pos = _varint(buf, pos + 1)
        stop = pos + size
        if stop > end:
            raise ValueError(f"xspace: a stat runs past its message's end ({stop} > {end})")
        out.append(_stat(buf, pos, stop, names))
        pos = stop
    return out


def _checked(fn, *args):
    """fn(*args), its IndexError (a read past the buffer's end) said as ValueError."""
    try:
        return fn(*args)
    except IndexError:
        raise ValueError(_ENDS_INSIDE) from None


class Space:
    """A profile: its planes (one per host or device, and the profiler's own)."""

    __slots__ = ("planes", "errors", "warnings", "hostnames")

    def __init__(self, planes, errors, warnings, hostnames):
        self.planes: list[Plane] = planes
        self.errors: list[str] = errors
        self.warnings: list[str] = warnings
        self.hostnames: list[str] = hostnames

    def find_plane_with_name(self, name: str) -> Plane | None:
        for plane in self.planes:
            if plane.name == name:
                return plane
        return None


class EventMetadata:
    """What the events of one name share: the name, and stats of their own."""

    __slots__ = ("id", "name", "display_name", "stats")

    def __init__(self, id, name, display_name, stats):
        self.id, self.name, self.display_name, self.stats = id, name, display_name, stats


class _Context:
    """What a plane's lines and events read their own from: the bytes, the names of the stat and
    event metadata. It refers to no line or event, so a Space has no reference cycle and goes as
    soon as it is dropped."""

    __slots__ = ("buf", "stat_names", "event_metadata", "event_names")

    def __init__(self, buf: bytes, stat_names: dict[int, str], event_metadata: dict[int, EventMetadata]):
        self.buf, self.stat_names, self.event_metadata = buf, stat_names, event_metadata
        self.event_names = {mid: m.name or m.display_name for mid, m in event_metadata.items()}


class Plane:
    """One host's or device's part of the profile (``/host:CPU``, ``/device:GPU:0``...)."""

    __slots__ = ("id", "name", "lines", "stats", "event_metadata")

    def __init__(self, buf: bytes, pos: int, end: int):
        self.id, self.name = 0, ""
        spans: dict[int, list] = {3: [], 4: [], 5: [], 6: []}  # lines, event and stat metadata, stats
        for field, wire, value in _fields(buf, pos, end):
            if wire == 2 and field in spans:
                spans[field].append(value)
            elif field == 1 and wire == 0:
                self.id = _signed(value)
            elif field == 2 and wire == 2:
                self.name = _text(buf, value)
        # Stats, the plane's and its event metadata's, are named by the stat metadata wherever
        # that comes in the plane.
        stat_names = dict(_stat_metadata(buf, span) for span in spans[5])
        self.stats = [_stat(buf, a, b, stat_names) for a, b in spans[6]]
        self.event_metadata = dict(_event_metadata(buf, span, stat_names) for span in spans[4])
        context = _Context(buf, stat_names, self.event_metadata)
        self.lines = [Line(context, a, b) for a, b in spans[3]]

    def __repr__(self):
        return f"<Plane {self.name!r}: {len(self.lines)} lines>"


def _map_entry(buf: bytes, span: tuple[int, int]) -> tuple[int, tuple[int, int] | None]:
    """(key, the value's span) of a map<int64, message> entry."""
    key, value = 0, None
    for field, wire, v in _fields(buf, *span):
        if field == 1 and wire == 0:
            key = _signed(v)
        elif field == 2 and wire == 2:
            value = v
    return key, value


def _stat_metadata(buf: bytes, span: tuple[int, int]) -> tuple[int, str]:
    key, value = _map_entry(buf, span)
    name = ""
    if value is not None:
        for field, wire, v in _fields(buf, *value):
            if field == 2 and wire == 2:
                name = _text(buf, v)
    return key, name


def _event_metadata(buf: bytes, span: tuple[int, int], stat_names: dict[int, str]) -> tuple[int, EventMetadata]:
    key, value = _map_entry(buf, span)
    mid, name, display_name, stat_spans = 0, "", "", []
    if value is not None:
        for field, wire, v in _fields(buf, *value):
            if wire == 2 and field in (2, 4):
                if field == 2:
                    name = _text(buf, v)
                else:
                    display_name = _text(buf, v)
            elif field == 5 and wire == 2:
                stat_spans.append(v)
            elif field == 1 and wire == 0:
                mid = _signed(v)
    return key, EventMetadata(mid, name, display_name, [_stat(buf, a, b, stat_names) for a, b in stat_spans])


class Line:
    """One timeline of a plane (a host thread, a device's stream). Its events are decoded when
    first read."""

    __slots__ = ("id", "display_id", "name", "display_name", "timestamp_ns", "duration_ps", "_context", "_pos",
                 "_end", "_events")

    def __init__(self, context: _Context, pos: int, end: int):
        buf = context.buf
        self._context, self._pos, self._end, self._events = context, pos, end, None
        self.id = self.display_id = self.timestamp_ns = self.duration_ps = 0
        self.name = self.display_name = ""
        while pos < end:
            if buf[pos] == _LINE_EVENTS:  # only checked here to lie inside the line
                size, pos = _varint(buf, pos + 1)
                pos += size
                if pos > end:
                    raise ValueError(f"xspace: an event runs past its line's end ({pos} > {end})")
                continue
            field, wire, value, pos = _field(buf, pos, end)
            if wire == 2 and field in (2, 11):
                if field == 2:
                    self.name = _text(buf, value)
                else:
                    self.display_name = _text(buf, value)
            elif wire == 0 and field in _LINE_INTS:
                setattr(self, _LINE_INTS[field], _signed(value))

    @property
    def events(self) -> list[Event]:
        if self._events is None:
            self._events = _checked(_decode_events, self)
        return self._events

    def __repr__(self):
        return f"<Line {self.name!r}>"


def _decode_events(line: Line) -> list[Event]:
    """A line's events, in the order stored: the hot loop. Protobuf writes an event's fields in
    their numbers' order (metadata_id, offset_ps, duration_ps, stats), so those are read in
    that order, inline; anything else (stats, num_occurrences, unknown fields, another order) is
    _event_rest's. An event's stats are left for Event.stats."""
    context = line._context
    buf, pos, end, ts, names = context.buf, line._pos, line._end, line.timestamp_ns, context.event_names
    events: list[Event] = []
    append = events.append
    new, tail, rest = Event, _varint_tail, _event_rest
    while pos < end:
        if buf[pos] != _LINE_EVENTS:
            pos = _skip(buf, pos, end)
            continue
        size = buf[pos + 1]
        pos += 2
        if size > 0x7F:
            size, pos = tail(buf, pos, size)
        stop = pos + size
        mid = offset = duration = 0
        # (pos < stop first: the byte at stop is the next field's, or past the buffer.)
        if pos < stop and buf[pos] == _EVENT_METADATA_ID:
            mid = buf[pos + 1]
            pos += 2
            if mid > 0x7F:
                mid, pos = tail(buf, pos, mid)
        if pos < stop and buf[pos] == _EVENT_OFFSET:
            offset = buf[pos + 1]
            pos += 2
            if offset > 0x7F:
                offset, pos = tail(buf, pos, offset)
        if pos < stop and buf[pos] == _EVENT_DURATION:
            duration = buf[pos + 1]
            pos += 2
            if duration > 0x7F:
                duration, pos = tail(buf, pos, duration)
        stats = pos if pos < stop else -1  # where Event.stats starts reading, if anywhere
        while pos < stop and buf[pos] == _EVENT_STATS:  # the stats, skipped
            size = buf[pos + 1]
            pos += 2
            if size > 0x7F:
                size, pos = tail(buf, pos, size)
            pos += size
        if pos != stop:
            if pos > stop:
                raise ValueError(f"xspace: an event runs past its end ({pos} > {stop})")
            mid, offset, duration = rest(buf, pos, stop, mid, offset, duration)
        pos = stop
        if (mid | offset | duration) > _INT64_MAX:  # a negative int64 (10 bytes, read unsigned)
            mid, offset, duration = _signed(mid), _signed(offset), _signed(duration)
            # C++'s int64 division truncates toward zero; Python's floors, alike but for negatives.
            offset = offset // 1000 * 1000 if offset >= 0 else -(-offset // 1000 * 1000)
            duration = duration // 1000 * 1000 if duration >= 0 else -(-duration // 1000 * 1000)
        append(new(names.get(mid, ""), float(ts + offset // 1000), float(duration // 1000), mid, context, stats, stop))
    return events


def _event_rest(buf: bytes, pos: int, stop: int, mid: int, offset: int, duration: int) -> tuple[int, int, int]:
    """(metadata_id, offset_ps, duration_ps) of an event whose fields from pos on are not in the
    usual order: a later field overrides an earlier one, as protobuf's do."""
    while pos < stop:
        t = buf[pos]
        if t == _EVENT_OFFSET or t == _EVENT_DURATION or t == _EVENT_METADATA_ID or t == _EVENT_OCCURRENCES:
            v, pos = _varint(buf, pos + 1)
            if t == _EVENT_OFFSET:
                offset = v
            elif t == _EVENT_DURATION:
                duration = v
            elif t == _EVENT_METADATA_ID:
                mid = v
            else:  # num_occurrences shares a oneof with offset_ps
                offset = 0
        else:
            pos = _skip(buf, pos, stop)
    if pos != stop:
        raise ValueError(f"xspace: an event runs past its end ({pos} > {stop})")
    return mid, offset, duration


class Event:
    """One event of a line. ``stats`` is decoded when first read."""

    __slots__ = ("name", "start_ns", "duration_ns", "metadata_id", "_context", "_pos", "_stop", "_stats")

    def __init__(self, name, start_ns, duration_ns, metadata_id, context, pos, stop):
        self.name = name
        self.start_ns = start_ns
        self.duration_ns = duration_ns
        self.metadata_id = metadata_id
        self._context = context
        self._pos = pos
        self._stop = stop
        self._stats = None

    @property
    def end_ns(self) -> float:
        return self.start_ns + self.duration_ns

    @property
    def stats(self) -> list[tuple]:
        stats = self._stats
        if stats is None:
            if self._pos < 0:
                stats = []
            else:
                context = self._context
                try:
                    stats = _stats(context.buf, self._pos, self._stop, _EVENT_STATS, context.stat_names)
                except IndexError:
                    raise ValueError(_ENDS_INSIDE) from None
            self._stats = stats
        return stats

    @property
    def metadata_stats(self) -> list[tuple]:
        """The stats of the event's metadata (shared by every event of that name)."""
        metadata = self._context.event_metadata.get(self.metadata_id)
        return metadata.stats if metadata is not None else []

    def __repr__(self):
        return f"<Event {self.name!r} {self.start_ns:.0f}+{self.duration_ns:.0f}ns>"


def parse_xspace(data: bytes) -> Space:
    """The profile in serialized XSpace bytes (what XLA's ``ProfilerSession.stop()`` returns).
    Raises ValueError for bytes that are not one."""
    buf = bytes(data)
    return _checked(_parse_space, buf)


def _parse_space(buf: bytes) -> Space:
    planes, lists = [], ([], [], [])
    for field, wire, value in _fields(buf, 0, len(buf)):
        if wire != 2:
            continue
        if field == 1:
            planes.append(Plane(buf, *value))
        elif field in (2, 3, 4):
            lists[field - 2].append(_text(buf, value))
    return Space(planes, *lists)
