"""Read a GGUF file (llama.cpp's model format) into a :class:`~gpusizer.catalog.Model` record, its weights
as the file stores them.

``from_gguf(path)`` reads the header of a ``.gguf`` file (and of the other parts of a split model
beside it), never the tensor data: the metadata becomes the architecture (through
``hf.from_hf_config``), and every tensor's ggml type and shape give its exact bytes
(``ggml.tensor_bytes``), summed by part into ``Model.stored_weights``, which ``parallel.weight_parts``
and ``unpack.model_numbers`` use at the file's own precision.

Why a reader of our own rather than the ``gguf`` package at run time: the header of a file from the
internet is hostile input, and ``gguf.GGUFReader`` maps the whole file and builds every array
(the tokenizer's hundreds of thousands of strings) without limits on declared counts and lengths;
ours streams the header with every count checked against ``header.LIMITS`` and the bytes left, and
adds no dependency. The ``gguf`` package is a test dependency: the tests write real files with
``GGUFWriter`` and check ``ggml.GGML_TYPES`` against its ``GGML_QUANT_SIZES``.

Package layout: ``ggml`` (the type table), ``header`` (the bounded reader), ``files`` (split parts,
bytes by part), ``model`` (metadata to a config and a ``Model``). Only ``ValueError`` (or
``FileNotFoundError``) leaves it.

References: the GGUF specification, ggml-org/ggml:docs/gguf.md (checked 2026-12-05).
"""

from gpusizer.gguf.files import read_parts, stored_weights
from gpusizer.gguf.ggml import GGML_TYPES, tensor_bytes
from gpusizer.gguf.header import LIMITS, read_header
from gpusizer.gguf.model import ARCHITECTURES, from_gguf

__all__ = ["ARCHITECTURES", "GGML_TYPES", "LIMITS", "from_gguf", "read_header", "read_parts", "stored_weights",
           "tensor_bytes"]
