"""GGUF files: the ggml type table, the bounded header reader, metadata to a ``Model``, split parts, the bytes
``fit`` sizes, and hostile headers.

The files are real GGUF files written by llama.cpp's ``gguf`` package (``GGUFWriter``) into ``tmp_path``; the
quantised tensors are raw bytes of the size their type takes. Hostile variants are written byte by byte from
the GGUF specification (ggml-org/ggml:docs/gguf.md).
"""

import json
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

gguf = pytest.importorskip("gguf")  # a test dependency (pyproject.toml: test, dev)

from gguf import GGMLQuantizationType as T  # noqa: E402

from gpusizer import estimate, layouts, parallel, precision, unpack  # noqa: E402
from gpusizer.cli import main  # noqa: E402
from gpusizer.gguf import GGML_TYPES, LIMITS, from_gguf, read_header, read_parts, tensor_bytes  # noqa: E402
from gpusizer.gguf.header import KEEP_ARRAY, KEEP_TOTAL, Skipped  # noqa: E402
from gpusizer.offload import Offload  # noqa: E402
from gpusizer.shortlister import screen  # noqa: E402


def test_type_table_equals_gguf_py():
    """Every ggml type of the installed gguf package, same id, name, block size and bytes per block."""
    theirs = {t.value: (t.name, *gguf.GGML_QUANT_SIZES[t]) for t in gguf.GGML_QUANT_SIZES}
    ours = {i: tuple(t) for i, t in GGML_TYPES.items()}
    assert ours == theirs


def test_tensor_bytes_by_hand():
    # Q8_0: 34 B per 32; a 4096 x 11008 matrix: 4096 / 32 * 34 * 11008 = 47,906,816 B
    assert tensor_bytes(8, (4096, 11008)) == 47_906_816
    # MXFP4 experts (gpt-oss-20b): 2880 / 32 * 17 * 5760 rows * 32 experts = 282,009,600 B
    assert tensor_bytes(39, (2880, 5760, 32)) == 282_009_600
    with pytest.raises(ValueError, match="multiple of 256"):
        tensor_bytes(12, (100, 4))


def _quant(writer, name, shape, kind):
    """A raw quantised tensor of ``shape`` (numpy order: rows, row length) in ggml type ``kind``."""
    block, size = gguf.GGML_QUANT_SIZES[kind]
    writer.add_tensor(name, np.zeros((*shape[:-1], shape[-1] // block * size), dtype=np.uint8), raw_dtype=kind)


def _finish(writer):
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def write_llama(path, *, split_max_tensors=0, tied=False, vocab=300):
    """A 2-layer Llama: hidden 256, 4 heads of 64, 2 KV heads, FFN 512, a Q4_K_M-like mix."""
    w = gguf.GGUFWriter(str(path), "llama", split_max_tensors=split_max_tensors)
    w.add_name("Tiny Llama")
    w.add_context_length(4096)
    w.add_block_count(2)
    w.add_embedding_length(256)
    w.add_feed_forward_length(512)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_file_type(15)  # MOSTLY_Q4_K_M
    w.add_token_list([f"t{i}" for i in range(vocab)])
    _quant(w, "token_embd.weight", (vocab, 256), T.Q4_K)
    for b in range(2):
        _quant(w, f"blk.{b}.attn_q.weight", (256, 256), T.Q4_K)
        _quant(w, f"blk.{b}.attn_k.weight", (128, 256), T.Q8_0)
        _quant(w, f"blk.{b}.attn_v.weight", (128, 256), T.Q6_K)
        _quant(w, f"blk.{b}.attn_output.weight", (256, 256), T.Q4_K)
        _quant(w, f"blk.{b}.ffn_gate.weight", (512, 256), T.Q4_K)
        _quant(w, f"blk.{b}.ffn_up.weight", (512, 256), T.Q4_K)
        _quant(w, f"blk.{b}.ffn_down.weight", (256, 512), T.Q6_K)
        w.add_tensor(f"blk.{b}.attn_norm.weight", np.ones(256, dtype=np.float32))
        w.add_tensor(f"blk.{b}.ffn_norm.weight", np.ones(256, dtype=np.float32))
    w.add_tensor("output_norm.weight", np.ones(256, dtype=np.float32))
    if not tied:
        _quant(w, "output.weight", (vocab, 256), T.Q6_K)
    _finish(w)


# Bytes of write_llama, by hand (Q4_K 144 B per 256, Q6_K 210 B per 256, Q8_0 34 B per 32, F32 4 B):
#   per layer: q 256 rows x 144 = 36,864; k 128 x 8 x 34 = 34,816; v 128 x 210 = 26,880; o 36,864;
#   gate and up 512 x 144 = 73,728 each; down 256 rows x 2 x 210 = 107,520; two norms 2 x 1,024:
#   392,448; two layers plus output_norm (1,024): 785,920.
#   token_embd 300 x 144 = 43,200; output 300 x 210 = 63,000. Total 892,120.
LAYERS, EMBEDDING, HEAD = 785_920, 43_200, 63_000
TOTAL = LAYERS + EMBEDDING + HEAD
# By type: Q4_K 2 x (36,864 x 2 + 73,728 x 2) + 43,200 = 485,568; Q6_K 2 x (26,880 + 107,520) + 63,000 =
# 331,800; Q8_0 2 x 34,816 = 69,632; F32 5 x 1,024 = 5,120.
BY_TYPE = (("Q4_K", 485_568), ("Q6_K", 331_800), ("Q8_0", 69_632), ("F32", 5_120))


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.gguf"
    write_llama(path)
    return path


def test_header(tiny):
    header = read_header(tiny)
    assert header.version == 3 and header.alignment == 32 and len(header.tensors) == 21
    assert header.metadata["llama.block_count"] == 2 and header.metadata["general.architecture"] == "llama"
    assert header.metadata["tokenizer.ggml.tokens"] == [f"t{i}" for i in range(300)]  # short: kept
    embd = next(t for t in header.tensors if t.name == "token_embd.weight")
    assert embd.dims == (256, 300) and embd.type_name == "Q4_K" and embd.nbytes == 43_200
    assert header.data_offset % 32 == 0
    assert sum(t.nbytes for t in header.tensors) == TOTAL


def test_model_from_gguf(tiny):
    m = from_gguf(tiny)
    assert (m.id, m.name, m.family) == ("tiny", "Tiny Llama", "llama")
    assert (m.hidden_size, m.num_layers, m.num_heads, m.num_kv_heads, m.head_dim) == (256, 2, 4, 2, 64)
    assert (m.intermediate_size, m.vocab_size, m.max_context, m.tie_embeddings) == (512, 300, 4096, False)
    assert (m.weights, m.activation_dtype) == ("q4_k_m", "fp16")
    s = m.stored_weights
    assert (s.layers, s.experts, s.embedding, s.head, s.replicated) == (LAYERS, 0, EMBEDDING, HEAD, 5_120)
    assert s.by_type == BY_TYPE


def test_stored_bytes_reach_the_numbers(tiny):
    """At the file's precision the weights are the file's bytes; another --weights is counted as before."""
    m = from_gguf(tiny)
    f = unpack.model_numbers(m, "q4_k_m", None, "fp16")
    assert (f.stored_bytes, f.layer_bytes, f.dense_bytes, f.streamed_head_bytes) == (TOTAL, LAYERS, LAYERS, HEAD)
    assert precision.stored_applies(m, "q4_k_m") and not precision.stored_applies(m, "q8_0")
    counted = parallel.weight_parts(m, "q8_0")
    assert counted.embedding == 300 * 256 * 34 / 32  # q8_0 covers the embedding: 81,600 B
    e = estimate(m, "rtx-4090", engine="llama.cpp", context=4096)
    assert e.memory.weights_bytes == LAYERS + HEAD  # token_embd stays in host memory (test_llama_cpp_keeps_...)
    assert estimate(m, "rtx-4090", engine="vllm", context=4096).memory.weights_bytes == TOTAL


def test_tied_embedding_is_streamed_as_the_head(tmp_path):
    path = tmp_path / "tied.gguf"
    write_llama(path, tied=True)
    m = from_gguf(path)
    assert m.tie_embeddings and m.stored_weights.head == 0
    f = unpack.model_numbers(m, "q4_k_m", None, "fp16")
    assert f.stored_bytes == LAYERS + EMBEDDING and f.streamed_head_bytes == EMBEDDING


def test_llama_cpp_keeps_the_token_embedding_in_host_memory(tiny, tmp_path):
    """llama.cpp's input layer is the CPU's whatever -ngl says (dev_input; engines.vocabulary_on_gpu); the
    output layer is on the GPU from -ngl 1 on, a tied embedding as its duplicate. vLLM holds both on the GPU."""
    m = from_gguf(tiny)
    options = dict(engine="llama.cpp", context=4096)
    # -ngl 99 (every slot): the GPU holds the 2 layers and the head, 785,920 + 63,000 = 848,920 B; the host
    # the embedding, 43,200 B; together the file's 892,120 B
    o = estimate(m, "rtx-4090", **options, offload=Offload(gpu_layers=99)).offload
    assert (o.gpu_weight_bytes, o.host_weight_bytes, o.total_weight_bytes) == (848_920, 43_200, TOTAL)
    # -ngl 2: the head and 1 of 2 layers on the GPU, 785,920 / 2 + 63,000 = 455,960 B; the host the other
    # layer and the embedding, 392,960 + 43,200 = 436,160 B
    o = estimate(m, "rtx-4090", **options, offload=Offload(gpu_layers=2)).offload
    assert (o.gpu_weight_bytes, o.host_weight_bytes) == (455_960, 436_160)
    # -ngl 0: nothing on the GPU, the whole file on the host
    o = estimate(m, "rtx-4090", **options, offload=Offload(gpu_layers=0)).offload
    assert (o.gpu_weight_bytes, o.host_weight_bytes) == (0, TOTAL)
    # tied: no output.weight; llama.cpp duplicates token_embd into the output layer on the GPU,
    # 785,920 + 43,200 = 829,120 B, and keeps the original on the host
    path = tmp_path / "tied.gguf"
    write_llama(path, tied=True)
    tied = from_gguf(path)
    assert estimate(tied, "rtx-4090", **options).memory.weights_bytes == 829_120
    o = estimate(tied, "rtx-4090", **options, offload=Offload()).offload
    assert (o.gpu_weight_bytes, o.host_weight_bytes) == (829_120, 43_200)
    # vLLM and SGLang load the embedding on the GPU as before
    for engine in ("vllm", "sglang"):
        assert estimate(m, "rtx-4090", engine=engine, context=4096).memory.weights_bytes == TOTAL
        o = estimate(m, "rtx-4090", engine=engine, context=4096, offload=Offload(cpu_offload_bytes=0.0)).offload
        assert (o.gpu_weight_bytes, o.host_weight_bytes) == (TOTAL, 0)


def test_shortlist_and_layouts_size_the_stored_bytes(tiny):
    """The shortlist's memory screen and llama.cpp's uneven layer split read the weights through
    parallel.weight_parts, as estimate does: the file's bytes at its precision, counted at another."""
    m = from_gguf(tiny)
    assert screen._weight_bytes(m, None) == TOTAL
    counted = parallel.weight_parts(m, "q8_0")
    assert screen._weight_bytes(m, "q8_0") == counted.layers + counted.embedding + counted.head != TOTAL
    # two GPUs, one layer each: the first holds 785,920 / 2 = 392,960 B (token_embd is the host's), the last
    # its layer and the head, 392,960 + 63,000 = 455,960 B
    split = layouts.uneven_layer_split(m, ["rtx-4090", "rtx-3090"], context=4096)
    assert split.layers == (1, 1) and split.weights_bytes == (392_960, 455_960)


def test_split_parts_are_summed(tmp_path):
    write_llama(tmp_path / "tiny.gguf", split_max_tensors=12)
    first, second = tmp_path / "tiny-00001-of-00002.gguf", tmp_path / "tiny-00002-of-00002.gguf"
    headers = read_parts(second)  # any part finds the others
    assert [len(h.tensors) for h in headers] == [12, 9]
    for part in (first, second):
        m = from_gguf(part)
        assert m.id == "tiny" and m.num_layers == 2 and not m.tie_embeddings  # output.weight is in part 2
        assert m.stored_weights.layers + m.stored_weights.embedding + m.stored_weights.head == TOTAL
    second.unlink()
    with pytest.raises(ValueError, match=r"missing: .*tiny-00002-of-00002\.gguf"):
        from_gguf(first)


def test_long_arrays_are_skipped_by_length(tmp_path):
    path = tmp_path / "vocab.gguf"
    write_llama(path, vocab=KEEP_ARRAY + 4)
    tokens = read_header(path).metadata["tokenizer.ggml.tokens"]
    assert tokens == Skipped(8, KEEP_ARRAY + 4)  # 8: string
    assert from_gguf(path).vocab_size == KEEP_ARRAY + 4


def write_qwen3moe(path):
    """One Qwen3-MoE layer: hidden 256, 4 heads of 64, 2 KV heads, 4 experts of width 256, 2 per token."""
    w = gguf.GGUFWriter(str(path), "qwen3moe")
    w.add_file_type(7)  # MOSTLY_Q8_0
    for key, value in (("context_length", 32768), ("block_count", 1), ("embedding_length", 256),
                       ("attention.head_count", 4), ("attention.head_count_kv", 2), ("attention.key_length", 64),
                       ("attention.value_length", 64), ("expert_count", 4), ("expert_used_count", 2),
                       ("expert_feed_forward_length", 256)):
        w.add_uint32(f"qwen3moe.{key}", value)
    w.add_tensor("token_embd.weight", np.zeros((300, 256), dtype=np.float16))
    for name, rows in (("attn_q", 256), ("attn_k", 128), ("attn_v", 128), ("attn_output", 256)):
        _quant(w, f"blk.0.{name}.weight", (rows, 256), T.Q8_0)
    for name, width in (("attn_q_norm", 64), ("attn_k_norm", 64), ("attn_norm", 256), ("ffn_norm", 256)):
        w.add_tensor(f"blk.0.{name}.weight", np.ones(width, dtype=np.float32))
    w.add_tensor("blk.0.ffn_gate_inp.weight", np.zeros((4, 256), dtype=np.float32))
    for name in ("ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"):
        _quant(w, f"blk.0.{name}.weight", (4, 256, 256), T.Q4_K)
    w.add_tensor("output_norm.weight", np.ones(256, dtype=np.float32))
    _quant(w, "output.weight", (300, 256), T.Q6_K)
    _finish(w)


def test_moe_experts_apart(tmp_path):
    path = tmp_path / "moe.gguf"
    write_qwen3moe(path)
    m = from_gguf(path)
    assert m.family == "qwen3_moe" and m.moe.num_experts == 4 and m.moe.experts_per_token == 2
    assert m.moe.expert_intermediate_size == 256 and m.head_dim == 64
    s = m.stored_weights
    # experts: 3 tensors x 4 experts x 256 rows x 144 B (Q4_K) = 442,368
    assert s.experts == 442_368
    # layers: Q8_0 q and o 256 x 272 = 69,632 each, k and v 128 x 272 = 34,816 each; F32 norms 64 x 4 x 2 +
    # 1,024 x 2; router 4 x 256 x 4 = 4,096; output_norm 1,024: 216,576
    assert s.layers == 216_576
    assert (s.embedding, s.head) == (300 * 256 * 2, 300 * 210)  # F16 embedding 153,600; Q6_K head 63,000
    f = unpack.model_numbers(m, m.weights, None, "fp16")
    assert f.expert_bytes == 442_368 and f.num_experts == 4


def test_unknown_architecture(tmp_path):
    path = tmp_path / "odd.gguf"
    w = gguf.GGUFWriter(str(path), "rwkv7")
    w.add_tensor("x", np.ones(8, dtype=np.float32))
    _finish(w)
    with pytest.raises(ValueError, match=r"GGUF architecture 'rwkv7' is not one gpusizer reads; known: .*llama"):
        from_gguf(path)


def run(argv, capsys):
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_fit_json(tiny, capsys):
    status, out, err = run(["fit", str(tiny), "rtx-4090", "--engine", "llama.cpp", "--json"], capsys)
    assert status == 0, err
    data = json.loads(out)
    assert data["model"] == "tiny" and data["weights"] == "q4_k_m" and data["context"] == 4096  # the model max
    assert data["memory"]["weights_bytes"] == LAYERS + HEAD == 848_920  # the CUDA0 model buffer: no token_embd
    assert data["engine_memory"]["model_buffer_bytes"] == 848_920
    # KV: 2 layers x 2 (K, V) x 2 heads x 64 x 2 B (f16) x 4,096 tokens = 4,194,304 B
    assert data["memory"]["kv_cache_bytes"] == 4_194_304
    stored = data["stored_weights"]
    assert stored["total_bytes"] == TOTAL and stored["used"] is True
    assert (stored["layers_bytes"], stored["embedding_bytes"], stored["head_bytes"]) == (LAYERS, EMBEDDING, HEAD)
    assert stored["bytes_by_type"] == dict(BY_TYPE)
    # decode streams the layers and the head once per step: 785,920 + 63,000
    assert data["decode"]["weight_bytes"] == LAYERS + HEAD
    status, out, err = run(["fit", str(tiny), "rtx-4090", "--engine", "llama.cpp"], capsys)
    assert status == 0 and "stored weights  892,120 B" in out and "Q4_K 0.49 MB (54.4%)" in out


# --- hostile headers, written byte by byte --------------------------------------------------------------


def _s(text):
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _kv_str(key, value):
    return _s(key) + struct.pack("<I", 8) + _s(value)


def _tensor(name, dims, type_id=0, offset=0, n_dims=None):
    n = len(dims) if n_dims is None else n_dims
    return _s(name) + struct.pack("<I", n) + struct.pack(f"<{len(dims)}Q", *dims) + struct.pack("<IQ", type_id, offset)


def _file(kvs=None, tensors=None, *, magic=b"GGUF", version=3, n_tensors=None, n_kv=None, data=32):
    kvs = [_kv_str("general.architecture", "llama")] if kvs is None else kvs
    tensors = [_tensor("x", (8,))] if tensors is None else tensors
    head = magic + struct.pack("<IQQ", version, len(tensors) if n_tensors is None else n_tensors,
                               len(kvs) if n_kv is None else n_kv) + b"".join(kvs) + b"".join(tensors)
    return head + b"\0" * (-len(head) % 32) + b"\0" * data


HOSTILE = {
    "bad magic": (_file(magic=b"GGUG"), "not a GGUF file"),
    "version 1": (_file(version=1), "GGUF version 1 is not read"),
    "big-endian": (_file(version=3 << 24), "big-endian GGUF is not read"),
    "truncated header": (_file()[:30], "truncated"),
    "truncated data": (_file(data=16), "ends past the end of the file"),
    "tensor_count 2**60": (_file(n_tensors=2**60), f"tensor_count 1,152,921,504,606,846,976 is more than "
                                                   f"{LIMITS['tensors']:,}"),
    "string length 2**62": (_file(kvs=[struct.pack("<Q", 2**62) + b"key"]), "more than 65,536"),
    "value length 2**62": (_file(kvs=[_s("k") + struct.pack("<IQ", 8, 2**62)]), "more than 1,048,576"),
    "array length huge": (_file(kvs=[_s("a") + struct.pack("<IIQ", 9, 0, 2**40)]), "more than 4,194,304"),
    "array past the end": (_file(kvs=[_s("a") + struct.pack("<IIQ", 9, 6, 2**21)]), "truncated"),
    "string array past the end": (_file(kvs=[_s("a") + struct.pack("<IIQ", 9, 8, 2**21)]), "truncated"),
    "n_dims 1000": (_file(tensors=[_tensor("x", (8,), n_dims=1000)]), "n_dims 1000; GGUF allows 1 to 4"),
    "offset beyond file": (_file(tensors=[_tensor("x", (8,), offset=2**40)]), "ends past the end of the file"),
    "misaligned offset": (_file(tensors=[_tensor("x", (8,), offset=3)]), "not a multiple of 32"),
    "unknown type": (_file(tensors=[_tensor("x", (8,), type_id=99)]), "unknown ggml type 99"),
    "zero dimension": (_file(tensors=[_tensor("x", (0,))]), "each must be 1 to 2\\*\\*50"),
    "overlap": (_file(tensors=[_tensor("x", (8,)), _tensor("y", (8,))]), "overlap"),
    "unknown value type": (_file(kvs=[_s("k") + struct.pack("<I", 77)]), "unknown value type 77"),
    "bad alignment": (_file(kvs=[_kv_str("general.architecture", "llama"),
                                 _s("general.alignment") + struct.pack("<II", 4, 48)]), "power of two"),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_headers(case, tmp_path, capsys):
    content, message = HOSTILE[case]
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message) as error:
        read_header(path)
    assert str(path) in str(error.value)
    status, out, err = run(["fit", str(path), "rtx-4090", "--engine", "llama.cpp"], capsys)
    assert status == 1 and out == "" and err.count("\n") == 1 and err.startswith("gpusizer: error: MODEL: ")


def test_kept_array_elements_are_bounded_in_all(tmp_path):
    """Arrays each short enough to keep are skipped once KEEP_TOTAL elements are kept (memory stays bounded)."""
    n = KEEP_TOTAL // KEEP_ARRAY + 1
    array = struct.pack("<IIQ", 9, 0, KEEP_ARRAY) + bytes(KEEP_ARRAY)  # KEEP_ARRAY uint8
    path = tmp_path / "arrays.gguf"
    path.write_bytes(_file(kvs=[_s(f"a{i}") + array for i in range(n)]))
    meta = read_header(path).metadata
    assert meta["a0"] == [0] * KEEP_ARRAY and meta[f"a{n - 2}"] == [0] * KEEP_ARRAY
    assert meta[f"a{n - 1}"] == Skipped(0, KEEP_ARRAY)


def test_not_a_regular_file(tmp_path, capsys):
    (tmp_path / "dir.gguf").mkdir()
    (tmp_path / "zero.gguf").symlink_to("/dev/zero")
    for name in ("dir.gguf", "zero.gguf"):
        status, out, err = run(["fit", str(tmp_path / name), "rtx-4090", "--engine", "llama.cpp"], capsys)
        assert status == 1 and err.startswith("gpusizer: error: MODEL: ") and "not a regular file" in err
    status, out, err = run(["fit", str(tmp_path / "gone.gguf"), "rtx-4090"], capsys)
    assert status == 2 and out == "" and "unknown model" in err.lower()  # a missing path is a catalogue id


def test_minimal_hand_written_file_reads(tmp_path):
    """The byte-by-byte writer makes a valid file, so each hostile variant differs by its one defect."""
    path = tmp_path / "ok.gguf"
    path.write_bytes(_file())
    header = read_header(path)
    assert header.tensors[0].nbytes == 32 and header.data_offset + 32 == header.file_size
    path.write_bytes(VALID)  # the fuzzed file below: a kept uint32 array, an F32 and a Q8_0 tensor (2 x 34 B)
    header = read_header(path)
    assert header.metadata["n"] == [1, 2, 3] and [t.nbytes for t in header.tensors] == [32, 68]


# --- the architectures read, from metadata as llama.cpp's converter writes it -------------------------------

COMMON = {"context_length": 8192, "block_count": 12, "embedding_length": 64, "feed_forward_length": 128,
          "attention.head_count": 4, "attention.head_count_kv": 2, "attention.key_length": 32,
          "attention.value_length": 32}
MLA = {"expert_count": 8, "expert_used_count": 2, "expert_feed_forward_length": 32, "expert_shared_count": 1,
       "leading_dense_block_count": 1, "attention.kv_lora_rank": 32, "rope.dimension_count": 16}


def write_arch(path, arch, keys, tensors=()):
    w = gguf.GGUFWriter(str(path), arch)
    for key, value in {**COMMON, **keys}.items():
        w.add_uint32(f"{arch}.{key}", value)
    w.add_file_type(1)  # MOSTLY_F16
    w.add_tensor("token_embd.weight", np.zeros((300, 64), dtype=np.float16))
    for name, shape, kind in tensors:
        _quant(w, name, shape, kind)
    _finish(w)
    return path


ARCHS = {
    # gemma3: five sliding layers then a global one (llama.cpp set_swa_pattern(6), transformers' default)
    "gemma3": ({"attention.sliding_window": 512}, lambda m: (m.family, m.layer_types[-2:], m.sliding_window),
               ("gemma3_text", ("sliding", "full"), 512)),
    "gemma2": ({"attention.sliding_window": 4096}, lambda m: (m.family, m.layer_types, m.sliding_window),
               ("gemma2", ("sliding", "full"), 4096)),
    "qwen3": ({}, lambda m: (m.family, m.head_dim, m.num_kv_heads, m.qk_norm), ("qwen3", 32, 2, True)),
    # Mixtral is llama with experts; its expert width is feed_forward_length
    "llama": ({"expert_count": 8, "expert_used_count": 2},
              lambda m: (m.family, m.moe.num_experts, m.moe.experts_per_token, m.moe.expert_intermediate_size),
              ("mixtral", 8, 2, 128)),
    "gpt-oss": ({"attention.sliding_window": 128, "expert_count": 8, "expert_used_count": 2,
                 "expert_feed_forward_length": 64},
                lambda m: (m.family, m.layer_types, m.sliding_window, m.moe.expert_intermediate_size,
                           m.attention_sinks),
                ("gpt_oss", ("sliding", "full"), 128, 64, True)),
    # DeepSeek-V3 (sigmoid gating, expert_gating_func 2) with the plain MLA widths: key_length 48 = 32 + 16
    "deepseek2": ({**MLA, "attention.q_lora_rank": 48, "attention.key_length": 48, "expert_gating_func": 2},
                  lambda m: (m.family, m.mla.q_lora_rank, m.mla.qk_nope_head_dim, m.mla.v_head_dim,
                             m.first_dense_layers, m.moe.num_shared_experts),
                  ("deepseek_v3", 48, 32, 32, 1, 1)),
}


@pytest.mark.parametrize("arch", ARCHS)
def test_architectures(arch, tmp_path):
    keys, read, expected = ARCHS[arch]
    m = from_gguf(write_arch(tmp_path / f"{arch}.gguf", arch, keys))
    assert read(m) == expected
    assert (m.hidden_size, m.num_layers, m.max_context, m.weights) == (64, 12, 8192, "fp16")


def test_deepseek_v2_lite_absorbed_widths(tmp_path):
    """Newer converters store the absorbed MLA widths as key_length/value_length (kv_lora_rank + rope, and
    kv_lora_rank) and the per-head ones as *_mla; q_lora_rank 0 is V2-Lite's uncompressed query; softmax gating
    (expert_gating_func 1) is DeepSeek-V2."""
    keys = {**MLA, "attention.q_lora_rank": 0, "attention.key_length": 48, "attention.value_length": 32,
            "attention.key_length_mla": 48, "attention.value_length_mla": 32, "attention.head_count_kv": 1,
            "expert_gating_func": 1}
    m = from_gguf(write_arch(tmp_path / "lite.gguf", "deepseek2", keys))
    assert (m.family, m.mla.q_lora_rank, m.mla.kv_lora_rank, m.mla.qk_nope_head_dim, m.mla.qk_rope_head_dim,
            m.mla.v_head_dim) == ("deepseek_v2", None, 32, 32, 16, 32)


def test_mxfp4_experts_and_a_labelled_file_type(tmp_path):
    """gpt-oss: MXFP4 experts (17 B per 32) are expert_weights mxfp4; general.file_type 38 (MOSTLY_MXFP4_MOE) has
    no catalogue precision, so the rest is labelled by its bits per weight, with a warning."""
    keys = {"attention.sliding_window": 128, "expert_count": 8, "expert_used_count": 2,
            "expert_feed_forward_length": 64}
    path = tmp_path / "oss.gguf"
    w = gguf.GGUFWriter(str(path), "gpt-oss")
    for key, value in {**COMMON, **keys}.items():
        w.add_uint32(f"gpt-oss.{key}", value)
    w.add_file_type(38)
    _quant(w, "token_embd.weight", (300, 64), T.Q8_0)
    _quant(w, "blk.0.attn_q.weight", (64, 64), T.Q4_0)
    _quant(w, "blk.0.ffn_up_exps.weight", (8, 64, 64), T.MXFP4)
    _finish(w)
    # outside the experts: 300 x 64 at 8.5 bits and 64 x 64 at 4.5: (163,200 + 18,432) / 23,296 = 7.80 bits,
    # nearest q8_0 (8.5; q6_k is 6.56)
    with pytest.warns(UserWarning, match="file_type 38: labelled q8_0, the catalogue precision nearest its 7.80 "):
        m = from_gguf(path)
    assert (m.weights, m.expert_weights) == ("q8_0", "mxfp4")
    # experts: 8 x 64 rows x 2 blocks x 17 B = 17,408; embedding 300 x 2 x 34 = 20,400
    assert (m.stored_weights.experts, m.stored_weights.embedding) == (17_408, 20_400)
    assert precision.stored_applies(m, "q8_0", "mxfp4")


VALID = _file(kvs=[_kv_str("general.architecture", "llama"), _s("general.alignment") + struct.pack("<II", 4, 32),
                   _s("n") + struct.pack("<IIQ", 9, 4, 3) + struct.pack("<3I", 1, 2, 3)],
              tensors=[_tensor("x", (8,)), _tensor("y", (32, 2), type_id=8, offset=32)], data=32 + 68 + 28)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), max_size=6),
       cut=st.integers(0, len(VALID)))
def test_corrupted_headers_raise_only_value_error(edits, cut, tmp_path):
    """Any bytes changed and any truncation: a header, or a ValueError naming the file, never anything else."""
    content = bytearray(VALID)
    for position, value in edits:
        content[position] = value
    path = tmp_path / "fuzz.gguf"
    path.write_bytes(bytes(content[:cut]))
    try:
        header = read_header(path)
    except ValueError as error:
        assert str(path) in str(error)
    else:
        assert all(header.data_offset + t.offset + t.nbytes <= header.file_size for t in header.tensors)
