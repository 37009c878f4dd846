"""The ggml tensor types a GGUF file may hold: block size and bytes per block, and the bytes of a tensor.

``GGML_TYPES`` maps the type id stored in a tensor info to its name, the elements of one block and the
bytes one block takes (scales included). The table is ggml's ``type_traits`` (``blck_size``,
``type_size``) as gguf-py publishes it (``GGML_QUANT_SIZES``); ``tests/test_gguf.py`` checks it equals
the installed ``gguf`` package's. Ids that ggml retired (4, 5: Q4_2/Q4_3; 31-33 and 36-38: the
repacked Q4_0_4_4 ... IQ4_NL_8_8 layouts, which llama.cpp now repacks at load and never stores) are
absent, so a file naming them is refused.

References: ggml-org/llama.cpp:ggml/src/ggml.c ``type_traits`` and ggml/include/ggml.h ``enum ggml_type``;
ggml-org/llama.cpp:gguf-py/gguf/constants.py ``GGML_QUANT_SIZES`` (gguf 0.19.0 on PyPI, checked 2026-12-05).
"""

from __future__ import annotations

import math
from typing import NamedTuple

__all__ = ["GGML_TYPES", "GgmlType", "ggml_type", "tensor_bytes"]


class GgmlType(NamedTuple):
    """One ggml storage type."""

    name: str
    block_size: int
    """Elements per block. [-]"""
    type_size: int
    """Bytes per block, scales included. [B]"""


#: Every ggml type a GGUF file may store, by its id (``enum ggml_type``).
GGML_TYPES: dict[int, GgmlType] = {
    0: GgmlType("F32", 1, 4),
    1: GgmlType("F16", 1, 2),
    2: GgmlType("Q4_0", 32, 18),  # 32 x 4 bit + fp16 scale
    3: GgmlType("Q4_1", 32, 20),  # + fp16 min
    6: GgmlType("Q5_0", 32, 22),
    7: GgmlType("Q5_1", 32, 24),
    8: GgmlType("Q8_0", 32, 34),  # 32 int8 + fp16 scale
    9: GgmlType("Q8_1", 32, 40),
    10: GgmlType("Q2_K", 256, 84),
    11: GgmlType("Q3_K", 256, 110),
    12: GgmlType("Q4_K", 256, 144),
    13: GgmlType("Q5_K", 256, 176),
    14: GgmlType("Q6_K", 256, 210),
    15: GgmlType("Q8_K", 256, 292),
    16: GgmlType("IQ2_XXS", 256, 66),
    17: GgmlType("IQ2_XS", 256, 74),
    18: GgmlType("IQ3_XXS", 256, 98),
    19: GgmlType("IQ1_S", 256, 50),
    20: GgmlType("IQ4_NL", 32, 18),
    21: GgmlType("IQ3_S", 256, 110),
    22: GgmlType("IQ2_S", 256, 82),
    23: GgmlType("IQ4_XS", 256, 136),
    24: GgmlType("I8", 1, 1),
    25: GgmlType("I16", 1, 2),
    26: GgmlType("I32", 1, 4),
    27: GgmlType("I64", 1, 8),
    28: GgmlType("F64", 1, 8),
    29: GgmlType("IQ1_M", 256, 56),
    30: GgmlType("BF16", 1, 2),
    34: GgmlType("TQ1_0", 256, 54),
    35: GgmlType("TQ2_0", 256, 66),
    39: GgmlType("MXFP4", 32, 17),  # 32 x E2M1 + one E8M0 scale
    40: GgmlType("NVFP4", 64, 36),
    41: GgmlType("Q1_0", 128, 18),
}


def ggml_type(type_id: int) -> GgmlType:
    """The ggml type of an id; ``ValueError`` naming the id and the known ones when it is not one.

    >>> ggml_type(12)
    GgmlType(name='Q4_K', block_size=256, type_size=144)
    """
    if type_id not in GGML_TYPES:
        known = ", ".join(f"{i} {t.name}" for i, t in GGML_TYPES.items())
        raise ValueError(f"unknown ggml type {type_id}; known: {known}")
    return GGML_TYPES[type_id]


def tensor_bytes(type_id: int, dims: tuple[int, ...]) -> int:
    r"""Bytes a tensor of ggml type ``type_id`` and shape ``dims`` takes in a GGUF file.

    Parameters
    ----------
    type_id : int
        ggml type id (``GGML_TYPES``).
    dims : tuple of int
        Elements along each dimension, innermost first (``ne[0]`` is the row). [-]

    Returns
    -------
    int
        :math:`(n_0 / B)\,S \prod_{i>0} n_i` with :math:`B` the block size and :math:`S` the bytes per
        block (ggml ``ggml_row_size`` times the rows, ggml-org/llama.cpp:ggml/src/ggml.c). [B]

    Raises
    ------
    ValueError
        An unknown type, or a row ``ne[0]`` that is not a whole number of blocks.

    Examples
    --------
    A 4096 x 4096 Q4_K matrix: 16 blocks of 256 per row, 144 B each, 4096 rows: 9,437,184 B.

    >>> tensor_bytes(12, (4096, 4096))
    9437184
    """
    kind = ggml_type(type_id)
    if not dims or dims[0] % kind.block_size:
        raise ValueError(f"a {kind.name} row must be a multiple of {kind.block_size} elements, got shape {dims}")
    return dims[0] // kind.block_size * kind.type_size * math.prod(dims[1:])
