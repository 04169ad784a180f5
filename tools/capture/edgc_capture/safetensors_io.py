"""Minimal safetensors writer and reader (standard library + numpy only).

Why not the `safetensors` package: the capture side must run on a stock Debian machine (Debian's
python3-torch and python3-numpy, no pip), and the trace format only needs four dtypes.  The reader is
also the independent reference the cross-language tests compare the C++ reader against, so it validates
the file as strictly as FORMAT.md demands instead of trusting the writer.

bf16 has no numpy dtype: the writer takes its raw 16-bit patterns (e.g. `t.view(torch.int16).numpy()`),
and the reader widens them to float32 exactly by placing the 16 bits in the high half of a uint32.
"""

import json
import os
import tempfile

import numpy as np

# safetensors dtype name -> numpy dtype used for the raw bytes (little-endian).
_RAW = {
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"),
}
# numpy dtypes that map to a safetensors dtype without help; bf16 must be named explicitly.
_FROM_NUMPY = {np.dtype("float32"): "F32", np.dtype("float16"): "F16", np.dtype("int64"): "I64"}

MAX_HEADER_BYTES = 100 * 1024 * 1024


class SafetensorsError(ValueError):
    """A file that is not a well-formed safetensors file (or a request that cannot be written as one)."""


def element_size(dtype):
    if dtype not in _RAW:
        raise SafetensorsError(f"unsupported safetensors dtype {dtype!r} (expected one of {sorted(_RAW)})")
    return _RAW[dtype].itemsize


def atomic_write_bytes(path, data):
    """Replace `path` with `data` so that readers never observe a half-written file.

    The temporary file lives in the destination directory because os.replace is only atomic within one
    file system; it is fsynced first so that a crash cannot leave a renamed but empty file behind.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in data if isinstance(data, (list, tuple)) else (data,):
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _normalize_entry(name, value):
    """Turn `array` or `(dtype, array)` into (dtype, shape, contiguous little-endian raw array)."""
    if isinstance(value, tuple):
        if len(value) != 2:
            raise SafetensorsError(f"entry {name!r}: expected (dtype, array), got a {len(value)}-tuple")
        dtype, array = value
        array = np.asarray(array)
        element_size(dtype)
        raw = _RAW[dtype]
        if dtype == "BF16":
            if array.dtype.itemsize != 2 or array.dtype.kind not in "iu":
                raise SafetensorsError(f"entry {name!r}: BF16 data must be given as 16-bit integer patterns, "
                                       f"got {array.dtype}")
            array = array.astype(array.dtype.newbyteorder("="), copy=False).view(np.uint16).astype(raw)
        else:
            if array.dtype.kind != raw.kind or array.dtype.itemsize != raw.itemsize:
                raise SafetensorsError(f"entry {name!r}: array dtype {array.dtype} does not match {dtype}")
            array = array.astype(raw, copy=False)
    else:
        array = np.asarray(value)
        dtype = _FROM_NUMPY.get(array.dtype.newbyteorder("="))
        if dtype is None:
            raise SafetensorsError(f"entry {name!r}: cannot store numpy dtype {array.dtype} "
                                   "(use float32/float16/int64, or ('BF16', int16 bits))")
        array = array.astype(_RAW[dtype], copy=False)
    return dtype, [int(d) for d in array.shape], np.ascontiguousarray(array)


def encode(entries, metadata=None):
    """Serialize entries to a list of byte chunks: [length prefix + header, data...].

    Entries are laid out contiguously (the format forbids holes), widest element size first so that every
    region starts at a multiple of its element size, which lets memory-mapping readers use it in place.
    """
    prepared = []
    for order, (name, value) in enumerate(entries.items()):
        if not isinstance(name, str) or not name or name == "__metadata__":
            raise SafetensorsError(f"invalid entry name {name!r}")
        dtype, shape, array = _normalize_entry(name, value)
        prepared.append((-_RAW[dtype].itemsize, order, name, dtype, shape, array))
    prepared.sort(key=lambda item: (item[0], item[1]))

    header = {}
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise SafetensorsError("__metadata__ must map strings to strings")
        header["__metadata__"] = dict(metadata)
    chunks, offset = [], 0
    for _, _, name, dtype, shape, array in prepared:
        nbytes = array.nbytes
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        chunks.append(array.tobytes())
        offset += nbytes

    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((-(8 + len(text))) % 8)  # data buffer starts 8-byte aligned
    return [len(text).to_bytes(8, "little") + text] + chunks


def save(path, entries, metadata=None):
    """Write a safetensors file atomically.

    `entries` maps names to numpy arrays (float32 -> F32, float16 -> F16, int64 -> I64) or to
    `(dtype, array)` pairs; bf16 must be `("BF16", int16_or_uint16_bit_patterns)`.
    """
    atomic_write_bytes(path, encode(entries, metadata))


class Entry:
    """One tensor read back: `array` (BF16 widened to float32), the stored `dtype`, and its `shape`."""

    __slots__ = ("array", "dtype", "shape")

    def __init__(self, array, dtype, shape):
        self.array, self.dtype, self.shape = array, dtype, shape

    def __repr__(self):
        return f"Entry(dtype={self.dtype!r}, shape={self.shape!r})"


def bf16_bits_to_f32(bits):
    """Widen bf16 bit patterns to float32 exactly (bf16 is the top half of an IEEE float32)."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def _check_int(value, what):
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise SafetensorsError(f"{what} must be a non-negative integer, got {value!r}")
    return value


def decode(blob):
    """Parse a whole file's bytes into ({name: Entry}, metadata dict), validating every region."""
    if len(blob) < 8:
        raise SafetensorsError(f"file too short ({len(blob)} bytes) for the 8-byte header length")
    n = int.from_bytes(blob[:8], "little")
    if n > MAX_HEADER_BYTES or 8 + n > len(blob):
        raise SafetensorsError(f"header length {n} exceeds the file size {len(blob)}")
    try:
        header = json.loads(bytes(blob[8:8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsError(f"header is not UTF-8 JSON: {e}") from None
    if not isinstance(header, dict):
        raise SafetensorsError("header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafetensorsError("__metadata__ must be an object of strings")

    data = memoryview(blob)[8 + n:]
    entries, regions = {}, []
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise SafetensorsError(f"entry {name!r}: expected exactly dtype, shape, data_offsets")
        dtype = info["dtype"]
        if dtype not in _RAW:
            raise SafetensorsError(f"entry {name!r}: unsupported dtype {dtype!r}")
        shape, offsets = info["shape"], info["data_offsets"]
        if not isinstance(shape, list):
            raise SafetensorsError(f"entry {name!r}: shape must be a list")
        shape = [_check_int(d, f"entry {name!r} shape") for d in shape]
        if not isinstance(offsets, list) or len(offsets) != 2:
            raise SafetensorsError(f"entry {name!r}: data_offsets must be [begin, end]")
        begin, end = (_check_int(o, f"entry {name!r} data_offsets") for o in offsets)
        if begin > end or end > len(data):
            raise SafetensorsError(f"entry {name!r}: region [{begin}, {end}) outside the {len(data)}-byte buffer")
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if (end - begin) != count * _RAW[dtype].itemsize:
            raise SafetensorsError(f"entry {name!r}: {end - begin} bytes for shape {shape} of {dtype}")
        regions.append((begin, end, name))
        raw = np.frombuffer(data[begin:end], dtype=_RAW[dtype]).reshape(shape)
        array = bf16_bits_to_f32(raw) if dtype == "BF16" else raw.astype(_RAW[dtype].newbyteorder("="))
        entries[name] = Entry(array, dtype, shape)
    regions.sort()
    for (b0, e0, n0), (b1, _, n1) in zip(regions, regions[1:]):
        if b1 < e0:
            raise SafetensorsError(f"entries {n0!r} and {n1!r} overlap")
    return entries, metadata


def load(path):
    """Read a safetensors file: returns ({name: Entry}, metadata)."""
    with open(path, "rb") as f:
        blob = f.read()
    return decode(blob)
