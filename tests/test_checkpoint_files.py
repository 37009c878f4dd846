"""Issue 21, items 1 and 2: models in the Hugging Face cache (offline) and safetensors headers.

Every file here is written in a temporary folder: tensors with ``safetensors.numpy.save_file`` (the
library itself), caches in the layout huggingface_hub documents (refs, snapshots, blobs, relative
symlinks). Byte counts are derived by hand in the comments.
"""

from __future__ import annotations

import json
import math
import os
import struct
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file

from gpusizer import hf
from gpusizer.cli import main
from gpusizer.commands import common, model_argument

COMMIT = "0123456789abcdef0123456789abcdef01234567"

#: A Llama-shaped model small enough to write: hidden 64, 2 layers, 4 heads of 16, 2 KV heads, FFN 128.
TINY = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 4096,
        "tie_word_embeddings": False, "torch_dtype": "float16"}

# Its parameters: embedding 256 x 64 = 16,384; per layer q 64x64 = 4,096, k and v 32x64 = 2,048 each,
# o 4,096, gate/up/down 128x64 = 8,192 each, two norms of 64: 36,992; x 2 layers = 73,984; final norm 64;
# LM head 16,384. Total 106,816 parameters, 213,632 bytes in F16.
TINY_BYTES = 213_632


def tiny_tensors(hidden: int = 64, kv: int = 32, ffn: int = 128, vocab: int = 256) -> dict[str, tuple[int, ...]]:
    """Tensor name -> shape of the tiny Llama, as transformers names them."""
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (vocab, hidden), "model.norm.weight": (hidden,),
                                          "lm_head.weight": (vocab, hidden)}
    for i in range(2):
        p = f"model.layers.{i}."
        shapes |= {p + "self_attn.q_proj.weight": (hidden, hidden), p + "self_attn.k_proj.weight": (kv, hidden),
                   p + "self_attn.v_proj.weight": (kv, hidden), p + "self_attn.o_proj.weight": (hidden, hidden),
                   p + "mlp.gate_proj.weight": (ffn, hidden), p + "mlp.up_proj.weight": (ffn, hidden),
                   p + "mlp.down_proj.weight": (hidden, ffn), p + "input_layernorm.weight": (hidden,),
                   p + "post_attention_layernorm.weight": (hidden,)}
    return shapes


def write_tiny(folder: Path, extra: dict[str, np.ndarray] | None = None) -> Path:
    """A checkpoint folder: config.json and one model.safetensors of the tiny Llama in F16."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(TINY))
    arrays = {name: np.zeros(shape, np.float16) for name, shape in tiny_tensors().items()}
    save_file(arrays | (extra or {}), str(folder / "model.safetensors"))
    return folder


def write_cache(root: Path, repo: str = "tiny-org/Tiny-Llama", commit: str = COMMIT, refs: tuple[str, ...] = ("main",),
                files: dict[str, bytes] | None = None) -> Path:
    """A Hugging Face hub cache holding ``repo`` at ``commit``: blobs, snapshot symlinks into them, refs."""
    folder = root / ("models--" + repo.replace("/", "--"))
    (folder / "blobs").mkdir(parents=True, exist_ok=True)
    (folder / "refs").mkdir(exist_ok=True)
    snapshot = folder / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    if files is None:
        source = write_tiny(root.parent / "source")
        files = {name: (source / name).read_bytes() for name in ("config.json", "model.safetensors")}
    for i, (name, data) in enumerate(files.items()):
        (folder / "blobs" / f"blob{i}").write_bytes(data)
        os.symlink(f"../../blobs/blob{i}", snapshot / name)
    for ref in refs:
        (folder / "refs" / ref).write_text(commit)
    return snapshot


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# --- safetensors headers ------------------------------------------------------------------------------


def test_a_file_written_by_the_library_is_read_tensor_by_tensor(tmp_path: Path) -> None:
    folder = write_tiny(tmp_path / "ckpt")
    tensors = hf.read_header(folder / "model.safetensors")
    assert len(tensors) == 21  # embedding, final norm, head, and 9 per layer x 2
    q = {t.name: t for t in tensors}["model.layers.1.self_attn.k_proj.weight"]
    assert (q.dtype, q.shape, q.bytes, q.file) == ("F16", (32, 64), 32 * 64 * 2, "model.safetensors")
    found = hf.read_checkpoint(folder)
    assert found is not None and (found.source, found.files, found.total_bytes) == ("headers", 1, TINY_BYTES)
    assert found.bytes_by_dtype == {"F16": TINY_BYTES} and not found.quantised and hf.kept_16bit(found) == {}
    assert hf.checkpoint_bytes(folder) == TINY_BYTES == (folder / "model.safetensors").stat().st_size - 8 - \
        struct.unpack("<Q", (folder / "model.safetensors").read_bytes()[:8])[0]
    computed, difference = hf.cross_check(hf.from_hf_config(folder), found)
    assert (computed, difference) == (TINY_BYTES, 0.0)  # the architecture counts every stored byte


def write_awq(folder: Path) -> Path:
    """A tiny AWQ (4-bit, group 128) Llama: hidden 128, 4 heads of 32, 2 KV heads, FFN 256, vocab 512."""
    folder.mkdir(parents=True, exist_ok=True)
    config = TINY | {"hidden_size": 128, "intermediate_size": 256, "vocab_size": 512,
                     "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}}
    (folder / "config.json").write_text(json.dumps(config))
    arrays = {}
    for name, shape in tiny_tensors(hidden=128, kv=64, ffn=256, vocab=512).items():
        if len(shape) == 1 or not name.startswith("model.layers."):
            arrays[name] = np.zeros(shape, np.float16)  # norms, embedding and head stay F16
            continue
        out, inp = shape  # AutoAWQ's GEMM layout: qweight [in, out/8] int32, qzeros [in/128, out/8], scales
        stem = name.removesuffix(".weight")
        arrays |= {stem + ".qweight": np.zeros((inp, out // 8), np.int32),
                   stem + ".qzeros": np.zeros((inp // 128, out // 8), np.int32),
                   stem + ".scales": np.zeros((inp // 128, out), np.float16)}
    save_file(arrays, str(folder / "model.safetensors"))
    return folder


def test_a_quantised_checkpoint_is_counted_as_stored_with_its_16_bit_tensors_named(tmp_path: Path) -> None:
    found = hf.read_checkpoint(write_awq(tmp_path / "awq"))
    assert found is not None and found.quantised
    # Linear weights per layer: q 128x128 + k, v 64x128 + o 128x128 + gate, up, down 256x128 = 147,456; x 2 =
    # 294,912. A linear of I x O stores qweight I*O/2 + qzeros I*O/256 (int32) + scales I*O/64 (F16) bytes =
    # I*O*133/256: 294,912 * 133 / 256 = 153,216 bytes, of which scales 294,912 / 64 = 4,608 (F16) and the
    # int32 rest 148,608. F16 besides: embedding and head 2 x 512 x 128 x 2 = 262,144 and norms 5 x 128 x 2 = 1,280.
    assert found.bytes_by_dtype == {"I32": 148_608, "F16": 4_608 + 262_144 + 1_280}
    assert found.total_bytes == 153_216 + 262_144 + 1_280 == 416_640
    assert hf.kept_16bit(found) == {"lm_head.weight": (1, 131_072), "model.embed_tokens.weight": (1, 131_072)}
    record = hf.from_hf_config(tmp_path / "awq")
    computed, difference = hf.cross_check(record, found)  # int4 with an F16 scale and a 4-bit zero per 128
    assert record.weights == "int4" and computed == pytest.approx(416_640) and abs(difference) < 1e-12


def test_shards_named_by_the_index_are_read_and_a_missing_shard_falls_back_to_the_index(tmp_path: Path) -> None:
    shapes = tiny_tensors()
    names = sorted(shapes)
    first, second = names[:10], names[10:]
    save_file({n: np.zeros(shapes[n], np.float16) for n in first}, str(tmp_path / "model-00001-of-00002.safetensors"))
    save_file({n: np.zeros(shapes[n], np.float16) for n in second}, str(tmp_path / "model-00002-of-00002.safetensors"))
    weight_map = {n: "model-00001-of-00002.safetensors" for n in first} | {
        n: "model-00002-of-00002.safetensors" for n in second}
    index = {"metadata": {"total_size": TINY_BYTES}, "weight_map": weight_map}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    found = hf.read_checkpoint(tmp_path)
    assert found is not None and (found.source, found.files, len(found.tensors)) == ("headers", 2, 21)
    assert found.total_bytes == TINY_BYTES
    (tmp_path / "model-00002-of-00002.safetensors").unlink()  # only part downloaded: the index's total
    found = hf.read_checkpoint(tmp_path)
    assert found is not None and (found.source, found.files, found.total_bytes) == ("index", 0, TINY_BYTES)


def test_an_index_placing_a_tensor_in_a_file_that_lacks_it_is_refused(tmp_path: Path) -> None:
    save_file({"a.weight": np.zeros((2, 2), np.float16)}, str(tmp_path / "s1.safetensors"))
    index = {"metadata": {"total_size": 8}, "weight_map": {"a.weight": "s1.safetensors", "b.weight": "s1.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match=r"s1\.safetensors: lacks 1 tensor\(s\) .* 'b\.weight'"):
        hf.read_checkpoint(tmp_path)
    index["weight_map"] = {"a.weight": "../elsewhere.safetensors"}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match=r"must name a \.safetensors file in the same folder"):
        hf.read_checkpoint(tmp_path)


def header_file(path: Path, header: object, data: bytes = b"", length: int | None = None) -> Path:
    """A safetensors file written byte by byte, to state what the library would refuse to write."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + data)
    return path


HOSTILE = [
    ("truncated header", {"w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4, 10_000,
     "truncated: declares a 10,000-byte header"),
    ("header length 2**63", {}, b"", 2**63, "declares a 9,223,372,036,854,775,808-byte header, more than the "
     "safetensors limit of 100,000,000 bytes"),
    ("offsets past the end", {"w": {"dtype": "F16", "shape": [2, 6], "data_offsets": [0, 24]}}, b"\0" * 12, None,
     "truncated: the header declares 24 bytes of tensors"),
    ("overlapping offsets", {"a": {"dtype": "F16", "shape": [6], "data_offsets": [0, 12]},
                             "b": {"dtype": "F16", "shape": [6], "data_offsets": [6, 18]}}, b"\0" * 18, None,
     "tensor 'b' data_offsets [6, 18] overlap or leave a gap (the previous tensor ends at 12)"),
    ("offsets disagreeing with the shape", {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 12]}},
     b"\0" * 12, None, "spans 12 bytes, but shape [2, 3] in F32 needs 24"),
    ("unknown dtype", {"w": {"dtype": "F128", "shape": [1], "data_offsets": [0, 16]}}, b"\0" * 16, None,
     "tensor 'w' has unknown dtype str 'F128'"),
    ("negative dimension", {"w": {"dtype": "F16", "shape": [-1], "data_offsets": [0, 0]}}, b"", None,
     "shape must be a list of at most 64 non-negative integers"),
    ("a size past 2**64", {"w": {"dtype": "F64", "shape": [2**40, 2**40], "data_offsets": [0, 8]}}, b"\0" * 8,
     None, "is not a whole number of bytes below 2**64"),
    ("half a byte of F4", {"w": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, b"\0" * 2, None,
     "is not a whole number of bytes"),
    ("non-JSON header", b"{not json", b"", None, "header is not valid JSON"),
    ("a JSON list", [1, 2], b"", None, "header must be a JSON object"),
    ("metadata of numbers", {"__metadata__": {"format": 1}}, b"", None, "__metadata__ must be an object of strings"),
    ("bytes past the tensors", {"w": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}}, b"\0" * 5, None,
     "has bytes past its last tensor"),
]


@pytest.mark.parametrize(("header", "data", "length", "message"), [case[1:] for case in HOSTILE],
                         ids=[case[0] for case in HOSTILE])
def test_hostile_headers_get_a_clear_error_naming_the_file(tmp_path: Path, header: object, data: bytes,
                                                           length: int | None, message: str) -> None:
    path = header_file(tmp_path / "model.safetensors", header, data, length)
    with pytest.raises(ValueError) as error:
        hf.read_header(path)
    assert str(error.value).startswith(f"{path}: ") and message in str(error.value)


@pytest.mark.parametrize(("header", "data", "length", "message"), [case[1:] for case in HOSTILE],
                         ids=[case[0] for case in HOSTILE])
def test_fit_on_a_hostile_checkpoint_is_one_line_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        header: object, data: bytes, length: int | None,
                                                        message: str) -> None:
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    path = header_file(tmp_path / "model.safetensors", header, data, length)
    status, out, err = run(capsys, "fit", str(tmp_path), "h100")
    assert status == 1 and out == "" and err.count("\n") == 1
    assert err.startswith(f"gpusizer: error: MODEL: {path}: ") and message in err


def test_a_git_lfs_pointer_and_a_short_file_are_named(tmp_path: Path) -> None:
    pointer = tmp_path / "model.safetensors"
    pointer.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 16060522752\n")
    with pytest.raises(ValueError, match=r"model\.safetensors: is a git-LFS pointer file, not the tensors"):
        hf.read_header(pointer)
    pointer.write_bytes(b"\x10\x00")
    with pytest.raises(ValueError, match="truncated: 2 bytes, fewer than the 8-byte header length"):
        hf.read_header(pointer)


def test_sub_byte_and_fp8_dtypes_are_counted_in_bits(tmp_path: Path) -> None:
    # F4 [4, 8]: 32 x 4 bits = 16 bytes; F8_E4M3 [3, 5]: 15 bytes; F6_E2M3 [4]: 24 bits = 3 bytes.
    header = {"a": {"dtype": "F4", "shape": [4, 8], "data_offsets": [0, 16]},
              "b": {"dtype": "F8_E4M3", "shape": [3, 5], "data_offsets": [16, 31]},
              "c": {"dtype": "F6_E2M3", "shape": [4], "data_offsets": [31, 34]},
              "__metadata__": {"format": "pt"}}
    tensors = hf.read_header(header_file(tmp_path / "x.safetensors", header, b"\0" * 34))
    assert [(t.name, t.bytes) for t in tensors] == [("a", 16), ("b", 15), ("c", 3)]


NUMPY_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "U64": np.uint64,
                "I32": np.int32, "U32": np.uint32, "I16": np.int16, "U16": np.uint16, "I8": np.int8,
                "U8": np.uint8, "BOOL": np.bool_}


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text("abcdefghij._0123456789", min_size=1, max_size=12),
                       st.tuples(st.sampled_from(sorted(NUMPY_DTYPES)), st.lists(st.integers(0, 6), max_size=4)),
                       min_size=1, max_size=8))
def test_whatever_the_library_writes_is_read_back_exactly(tensors: dict[str, tuple[str, list[int]]]) -> None:
    arrays = {name: np.zeros(shape, NUMPY_DTYPES[dtype]) for name, (dtype, shape) in tensors.items()}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.safetensors"
        save_file(arrays, str(path))
        read = {t.name: t for t in hf.read_header(path)}
        header = struct.unpack("<Q", path.read_bytes()[:8])[0]
        assert sum(t.bytes for t in read.values()) == path.stat().st_size - 8 - header  # every byte accounted for
    assert set(read) == set(arrays)
    for name, (dtype, shape) in tensors.items():
        assert (read[name].dtype, read[name].shape, read[name].bytes) == (dtype, tuple(shape), arrays[name].nbytes)
        assert read[name].bytes == math.prod(shape) * np.dtype(NUMPY_DTYPES[dtype]).itemsize


# --- the Hugging Face cache ---------------------------------------------------------------------------


def test_the_cache_folder_follows_the_environment_as_huggingface_hub_does(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert hf.cache_folder() == tmp_path / ".cache" / "huggingface" / "hub"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hf.cache_folder() == tmp_path / "xdg" / "huggingface" / "hub"
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hf.cache_folder() == tmp_path / "home" / "hub"
    monkeypatch.setenv("HUGGINGFACE_HUB_CACHE", str(tmp_path / "old"))
    assert hf.cache_folder() == tmp_path / "old"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "new"))
    assert hf.cache_folder() == tmp_path / "new"


def test_a_repo_id_resolves_through_refs_to_its_snapshot(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    snapshot = write_cache(cache, refs=("main", "v1.0"))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    assert hf.snapshot_folder("tiny-org/Tiny-Llama") == snapshot
    assert hf.snapshot_folder("tiny-org/Tiny-Llama", "v1.0") == snapshot
    assert hf.snapshot_folder("tiny-org/Tiny-Llama", COMMIT) == snapshot  # a commit hash names itself
    for revision in ("v2", "0" * 40):
        with pytest.raises(hf.NotCachedError, match=f"revision '{revision}' of tiny-org/Tiny-Llama is not"):
            hf.snapshot_folder("tiny-org/Tiny-Llama", revision)
    record, read = model_argument.resolve_model("tiny-org/Tiny-Llama@v1.0")
    assert read is not None and read.folder == snapshot and record.id == "tiny-llama" and record.num_kv_heads == 2


def test_fit_sizes_a_cached_repo_and_reports_its_stored_bytes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(write_cache(tmp_path / "hub").parents[2]))
    status, out, err = run(capsys, "fit", "tiny-org/Tiny-Llama", "h100", "--json")
    data = json.loads(out)
    assert status == 0 and err == "" and data["model"] == "tiny-llama"
    assert data["checkpoint"] == {"source": "headers", "files": 1, "tensors": 21, "stored_bytes": TINY_BYTES,
                                  "computed_bytes": TINY_BYTES, "difference": 0.0, "not_loaded_bytes": 0,
                                  "kept_16bit": [], "undeclared_16bit": {"roles": [], "layers": []}}
    # the bytes by part are stored_weights' (one place): the tiny Llama's F16 tensors, as the comment on TINY_BYTES
    # counts them: embedding and head 16,384 x 2 B each, layers 73,984 + 64 parameters x 2 B, of which the
    # 5 norms of 64 are replicated (640 B)
    assert data["stored_weights"] == {
        "total_bytes": TINY_BYTES, "layers_bytes": 148_096, "experts_bytes": 0, "embedding_bytes": 32_768,
        "head_bytes": 32_768, "replicated_bytes": 640, "bytes_by_type": {"F16": TINY_BYTES}, "used": True,
        "source": "safetensors headers: 1 file beside the config"}
    status, out, _ = run(capsys, "fit", "tiny-org/Tiny-Llama", "h100")
    assert status == 0 and "checkpoint: 213,632 bytes stored (21 tensors in 1 safetensors file); the config " \
                           "implies 213,632 bytes (+0.0%)" in out
    status, out, _ = run(capsys, "fit", "llama-3.1-8b", "h100", "--json")
    assert status == 0 and "checkpoint" not in json.loads(out)  # a catalogue id has no checkpoint files


def test_a_quantised_checkpoint_names_its_16_bit_weights_in_fit(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_awq(tmp_path / "awq")
    status, out, _ = run(capsys, "fit", str(folder), "h100")
    assert status == 0 and "stored weights  416,640 B = 0.42 MB (sized as stored): F16 0.27 MB (64.3%), " \
                           "I32 0.15 MB (35.7%)" in out
    assert "kept in 16-bit (262,144 bytes): lm_head.weight, model.embed_tokens.weight" in out


def test_stored_bytes_far_from_the_config_warn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_tiny(tmp_path / "extra", {"model.extra.weight": np.zeros((64, 64), np.float16)})
    found = hf.read_checkpoint(folder)
    assert found is not None and found.total_bytes == TINY_BYTES + 8_192  # 64 x 64 x 2 more
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, difference = hf.cross_check(hf.from_hf_config(folder), found)
    assert difference == pytest.approx(8_192 / TINY_BYTES)  # +3.83 %
    assert [w.category for w in caught] == [hf.StoredBytesWarning]
    status, _, err = run(capsys, "fit", str(folder), "h100")
    assert status == 0 and "gpusizer: warning: extra: the checkpoint stores 221,824 bytes of tensors (headers), " \
                           "+3.8% from the 213,632 bytes its config implies" in err


def test_a_repo_that_is_not_cached_is_one_line_naming_the_cache_and_the_hub_command(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    status, out, err = run(capsys, "fit", "meta-llama/Llama-3.1-8B-Instruct", "h100")
    assert status == common.ENVIRONMENT == 1 and out == ""
    line = err.strip()
    assert "\n" not in line and line.startswith("gpusizer: error: MODEL: meta-llama/Llama-3.1-8B-Instruct is not "
                                                f"in the Hugging Face cache {tmp_path / 'empty'}")
    assert "gpusizer never downloads" in line
    assert "`hf download meta-llama/Llama-3.1-8B-Instruct config.json model.safetensors.index.json`" in line
    assert line.endswith("or a catalogue id: llama-3.1-8b, llama-3.1-70b, llama-3.1-405b")
    status, _, err = run(capsys, "fit", "tiny-org/Tiny-Llama@v2", "h100")  # a cached repo, an absent revision
    assert status == 1 and len(err.strip().splitlines()) == 1
    monkeypatch.setenv("HF_HUB_CACHE", str(write_cache(tmp_path / "hub").parents[2]))
    status, _, err = run(capsys, "fit", "tiny-org/Tiny-Llama@v2", "h100")
    assert status == 1 and len(err.strip().splitlines()) == 1
    assert f"revision 'v2' of tiny-org/Tiny-Llama is not in the Hugging Face cache {tmp_path / 'hub'}" in err
    assert "`hf download tiny-org/Tiny-Llama config.json model.safetensors.index.json --revision v2`" in err
    status, _, err = run(capsys, "fit", "not-a-model", "h100")  # not a repo id: the catalogue's error, as before
    assert status == common.USAGE and "unknown model 'not-a-model'" in err


def test_a_snapshot_symlink_escaping_the_cache_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "hub"
    snapshot = write_cache(cache)
    outside = write_tiny(tmp_path / "outside")
    (snapshot / "config.json").unlink()
    os.symlink(outside / "config.json", snapshot / "config.json")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    with pytest.raises(ValueError, match=r"config\.json links to .*/outside/config\.json, outside the cache folder"):
        hf.snapshot_folder("tiny-org/Tiny-Llama")
    (snapshot / "config.json").unlink()  # a relative link climbing out of models--tiny-org--Tiny-Llama
    os.symlink("../../../../outside/config.json", snapshot / "config.json")
    with pytest.raises(ValueError, match="outside the cache folder"):
        hf.snapshot_folder("tiny-org/Tiny-Llama")
    status, _, err = run(capsys, "fit", "tiny-org/Tiny-Llama", "h100")
    assert status == 1 and len(err.strip().splitlines()) == 1 and "outside the cache folder" in err


def test_a_hostile_shard_in_the_cache_is_one_line_exit_1(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    lfs = b"version https://git-lfs.github.com/spec/v1\nsize 12\n"
    cache = tmp_path / "hub"
    write_cache(cache, files={"config.json": json.dumps(TINY).encode(), "model.safetensors": lfs})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    status, out, err = run(capsys, "fit", "tiny-org/Tiny-Llama", "h100")
    assert status == 1 and out == "" and len(err.strip().splitlines()) == 1
    assert "model.safetensors: is a git-LFS pointer file" in err


def test_an_index_only_snapshot_gives_the_index_total(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    index = {"metadata": {"total_size": TINY_BYTES}, "weight_map": {"lm_head.weight": "model-00001.safetensors"}}
    cache = tmp_path / "hub"
    write_cache(cache, files={"config.json": json.dumps(TINY).encode(),
                              "model.safetensors.index.json": json.dumps(index).encode()})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    status, out, _ = run(capsys, "fit", "tiny-org/Tiny-Llama", "h100", "--json")
    assert status == 0 and json.loads(out)["checkpoint"] | {"difference": 0.0} == {
        "source": "index", "files": 0, "tensors": 0, "stored_bytes": TINY_BYTES, "computed_bytes": TINY_BYTES,
        "difference": 0.0, "not_loaded_bytes": 0, "kept_16bit": [], "undeclared_16bit": {"roles": [], "layers": []}}
    assert "stored_weights" not in json.loads(out)  # no header read: the weights are the config's count


def test_repo_ids_are_parsed_strictly() -> None:
    assert hf.parse_repo_id("Qwen/Qwen3-8B@" + COMMIT) == ("Qwen/Qwen3-8B", COMMIT)
    for name in ("llama-3.1-8b", "a/b/c", "/abs/path", "a/b@../../x", "a/b@", "../b", "a/.b"):
        assert hf.parse_repo_id(name) is None, name
    with pytest.raises(ValueError, match="repo_id must be ORG/NAME"):
        hf.snapshot_folder("a/b@main")


def test_from_cmd_finds_a_repo_the_catalogue_lacks_in_the_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(write_cache(tmp_path / "hub").parents[2]))
    status, out, err = run(capsys, "from-cmd", "--gpu", "h100", "--json", "--", "vllm", "serve", "tiny-org/Tiny-Llama")
    assert status == 0 and json.loads(out)["model"] == "tiny-llama", err
    status, out, _ = run(capsys, "from-cmd", "--gpu", "h100", "--json", "--", "vllm", "serve",
                         "meta-llama/Llama-3.1-8B-Instruct")  # the catalogue's hf_repo still comes first
    assert status == 0 and json.loads(out)["model"] == "llama-3.1-8b"
