"""A minimal GGUF v3 writer and the ggml Q4_0 block layout, written from the format description
(llama.cpp's docs/gguf.md and ggml's block_q4_0), for tools/synth_gguf.py, plus read_layout()
(metadata and tensor table, no data) for bench/vs_llamacpp.py and the tests. F32, F16 and Q4_0
only.

File layout (all integers little-endian):
  header    "GGUF", uint32 version (3), uint64 tensor_count, uint64 metadata_kv_count
  metadata  per key: string key, uint32 value type, value
            string = uint64 byte length + UTF-8 bytes (no NUL); array = uint32 element type,
            uint64 count, elements
  tensors   per tensor: string name, uint32 n_dims, uint64 ne[n_dims] (ne[0] = the contiguous
            dimension: a [rows, cols] row-major matrix is ne = [cols, rows]), uint32 ggml type,
            uint64 offset (from the start of the data section; a multiple of the alignment)
  padding   to general.alignment (default 32)
  data      tensor bytes, each tensor starting at an aligned offset (zero padding between)
llama.cpp mmaps the data section, so the alignment is what lets it use the file in place.

Q4_0 (ggml type 2): blocks of 32 values along ne[0], 18 bytes each: fp16 d, then 16 bytes qs with
qs[j] = q[j] | q[j + 16] << 4 (q in 0..15); value[i] = (q[i] - 8) * d.
"""

import struct

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
DEFAULT_ALIGNMENT = 32

# metadata value types
T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY, \
    T_UINT64, T_INT64, T_FLOAT64 = range(13)

# ggml tensor types used here, and their (block size in values, bytes per block)
GGML_F32, GGML_F16, GGML_Q4_0 = 0, 1, 2
TYPE_LAYOUT = {GGML_F32: (1, 4), GGML_F16: (1, 2), GGML_Q4_0: (32, 18)}
TYPE_NAMES = {GGML_F32: "F32", GGML_F16: "F16", GGML_Q4_0: "Q4_0"}
Q4_0_BLOCK = 32


def tensor_nbytes(ne, ggml_type):
    """Bytes of a tensor of shape ne (ne[0] contiguous) stored as ggml_type."""
    blk, size = TYPE_LAYOUT[ggml_type]
    if ne[0] % blk:
        raise ValueError(f"ne[0]={ne[0]} is not a multiple of the {TYPE_NAMES[ggml_type]} block {blk}")
    n = 1
    for d in ne:
        n *= int(d)
    return n // blk * size


def q4_0_blocks(q, d):
    """q: uint8 [rows, nblocks, 32] with values 0..15 (stored value q - 8); d: [rows, nblocks] scales
    (must be exactly representable as fp16: the block stores fp16). Returns the Q4_0 bytes of the
    rows, [rows, nblocks * 18] uint8."""
    rows, nb, blk = q.shape
    assert blk == Q4_0_BLOCK and q.dtype == np.uint8 and int(q.max(initial=0)) <= 15
    d16 = np.asarray(d, dtype=np.float32).astype(np.float16)
    if not np.array_equal(d16.astype(np.float32), np.asarray(d, dtype=np.float32)):
        raise ValueError("Q4_0 scales must be fp16-representable (round them before quantizing)")
    out = np.empty((rows, nb, 18), dtype=np.uint8)
    out[:, :, 0:2] = d16.astype("<f2").view(np.uint8).reshape(rows, nb, 2)
    out[:, :, 2:18] = q[:, :, :16] | (q[:, :, 16:] << 4)
    return out.reshape(rows, nb * 18)


class Tensor:
    """A tensor to write: ne (ne[0] contiguous), ggml type, and produce() -> iterable of byte
    chunks (numpy arrays or bytes) totalling tensor_nbytes(ne, type), called once at write time,
    so large tensors can be streamed."""

    def __init__(self, name, ne, ggml_type, produce):
        self.name, self.ne, self.type, self.produce = name, [int(x) for x in ne], ggml_type, produce
        self.nbytes = tensor_nbytes(self.ne, ggml_type)


def _string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


_SCALAR = {T_UINT8: "<B", T_INT8: "<b", T_UINT16: "<H", T_INT16: "<h", T_UINT32: "<I", T_INT32: "<i",
           T_FLOAT32: "<f", T_BOOL: "<?", T_UINT64: "<Q", T_INT64: "<q", T_FLOAT64: "<d"}


def _value(vtype, value, elem_type=None):
    if vtype == T_STRING:
        return _string(value)
    if vtype == T_ARRAY:
        body = b"".join(_value(elem_type, v) for v in value)
        return struct.pack("<IQ", elem_type, len(value)) + body
    return struct.pack(_SCALAR[vtype], value)


def write_gguf(path, metadata, tensors, alignment=DEFAULT_ALIGNMENT):
    """metadata: list of (key, type, value) or (key, T_ARRAY, values, element type), written in
    order; tensors: list of Tensor, laid out in order. general.alignment is added when it is not
    the default. Returns the file size."""
    meta = list(metadata)
    if alignment != DEFAULT_ALIGNMENT:
        meta.append(("general.alignment", T_UINT32, alignment))
    head = bytearray(GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(tensors), len(meta)))
    for kv in meta:
        head += _string(kv[0]) + struct.pack("<I", kv[1]) + _value(*kv[1:])
    offset = 0
    offsets = []
    for t in tensors:
        offset += (-offset) % alignment
        offsets.append(offset)
        head += _string(t.name) + struct.pack("<I", len(t.ne)) + struct.pack(f"<{len(t.ne)}Q", *t.ne)
        head += struct.pack("<IQ", t.type, offset)
        offset += t.nbytes
    head += b"\0" * ((-len(head)) % alignment)
    with open(path, "wb") as f:
        f.write(head)
        data_start = len(head)
        for t, off in zip(tensors, offsets):
            pos = f.tell() - data_start
            f.write(b"\0" * (off - pos))
            n = 0
            for chunk in t.produce():
                b = chunk.tobytes() if isinstance(chunk, np.ndarray) else bytes(chunk)
                f.write(b)
                n += len(b)
            if n != t.nbytes:
                raise AssertionError(f"{t.name}: wrote {n} bytes, expected {t.nbytes}")
        return f.tell()


def _read_string(f):
    (n,) = struct.unpack("<Q", f.read(8))
    return f.read(n).decode("utf-8")


def _read_value(f, vtype):
    if vtype == T_STRING:
        return _read_string(f)
    if vtype == T_ARRAY:
        etype, n = struct.unpack("<IQ", f.read(12))
        return [_read_value(f, etype) for _ in range(n)]
    fmt = _SCALAR[vtype]
    return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]


def read_layout(path):
    """The metadata and tensor table of a GGUF v3 file (no tensor data): returns (metadata dict,
    list of dicts {name, ne, type, offset (absolute, in the file), nbytes})."""
    with open(path, "rb") as f:
        if f.read(4) != GGUF_MAGIC:
            raise ValueError(f"{path}: not a GGUF file")
        version, n_tensors, n_kv = struct.unpack("<IQQ", f.read(20))
        if version != GGUF_VERSION:
            raise ValueError(f"{path}: GGUF version {version}, expected {GGUF_VERSION}")
        meta = {}
        for _ in range(n_kv):
            key = _read_string(f)
            (vtype,) = struct.unpack("<I", f.read(4))
            meta[key] = _read_value(f, vtype)
        infos = []
        for _ in range(n_tensors):
            name = _read_string(f)
            (nd,) = struct.unpack("<I", f.read(4))
            ne = list(struct.unpack(f"<{nd}Q", f.read(8 * nd)))
            ttype, off = struct.unpack("<IQ", f.read(12))
            infos.append({"name": name, "ne": ne, "type": ttype, "offset": off,
                          "nbytes": tensor_nbytes(ne, ttype) if ttype in TYPE_LAYOUT else None})
        align = meta.get("general.alignment", DEFAULT_ALIGNMENT)
        data_start = f.tell() + (-f.tell()) % align
    for t in infos:
        t["offset"] += data_start
    return meta, infos
