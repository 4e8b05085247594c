"""An `.npz` member checked before NumPy reads it (no TensorFlow here: resuming reads checkpoints early).

NumPy allocates a member's whole array from its header before reading a byte
of it, and a deflated member may expand a thousandfold: a header declaring
2**40 rows, or a member of zeros, would exhaust memory (security review
2026-12, findings 11 and 12). `check_member` compares the header with the
bytes the member holds, and the member's size with what it takes in the file.
"""

from __future__ import annotations

import zipfile

import numpy as np

from netdsl.files import ZIP_ERRORS
from netdsl.limits import MAX_NPZ_MEMBER_BYTES, MAX_NPZ_PLAIN_EXPANSION, MAX_NPZ_RATIO
from netdsl.training.data.signature import shape_text
from netdsl.training.errors import DataError


def check_member(archive: zipfile.ZipFile, key: str, path: str) -> None:
    """Before NumPy allocates a member's array: its header's shape fits the bytes the member holds,
    and the member does not expand out of proportion to what it takes in the file (a deflate bomb)."""
    name = key if key in archive.namelist() else f"{key}.npy"
    try:
        info = archive.getinfo(name)
    except KeyError:
        return  # NumPy says what is missing
    if info.file_size > MAX_NPZ_MEMBER_BYTES or (
        info.file_size > MAX_NPZ_PLAIN_EXPANSION and info.file_size > MAX_NPZ_RATIO * max(info.compress_size, 1)
    ):
        raise DataError(
            f"array '{key}' expands from {info.compress_size:,} to {info.file_size:,} bytes; netdsl "
            f"reads at most {MAX_NPZ_MEMBER_BYTES:,} bytes per array, and above "
            f"{MAX_NPZ_PLAIN_EXPANSION:,} bytes at most {MAX_NPZ_RATIO}x its compressed size",
            file=path,
        )
    try:
        with archive.open(info) as member:
            version = np.lib.format.read_magic(member)
            read_header = (
                np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read_header(member, max_header_size=10_000)
            header = member.tell()
    except (ValueError, SyntaxError, TypeError, *ZIP_ERRORS):
        return  # not an array header: NumPy's own message names what is wrong
    needed = int(np.prod(shape, dtype=object)) * dtype.itemsize if dtype.kind != "O" else 0
    if needed > info.file_size - header:
        raise DataError(
            f"array '{key}' declares shape {shape_text(shape)} of {dtype} ({needed:,} bytes), "
            f"but holds {max(info.file_size - header, 0):,} bytes",
            file=path,
        )
