"""Little-endian fields over a bytearray, so unknown bytes of a structure survive a rewrite."""

import struct


class Field:
    """A descriptor for one little-endian field at a fixed offset of `self.raw`."""

    def __init__(self, offset: int, fmt: str):
        self.st = struct.Struct("<" + fmt)
        self.offset = offset

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return self.st.unpack_from(obj.raw, self.offset)[0]

    def __set__(self, obj, value):
        self.st.pack_into(obj.raw, self.offset, value)


class Bytes:
    """A fixed-length byte-string field."""

    def __init__(self, offset: int, length: int):
        self.offset, self.length = offset, length

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return bytes(obj.raw[self.offset:self.offset + self.length])

    def __set__(self, obj, value: bytes):
        value = bytes(value)[: self.length].ljust(self.length, b"\0")
        obj.raw[self.offset:self.offset + self.length] = value
