"""Checkpoints that leave some linear layers unquantized: the importer reads the exclusion lists, the
catalogue records them (Model.unquantized_roles / unquantized_layers) and the weights count them at the
activation dtype."""

import json
from pathlib import Path

import pytest

import gpusizer
from gpusizer import architecture, catalog, hf, precision
from gpusizer.hf.quantization import unquantized_parts
from gpusizer.units import GiB

ROOT = Path(__file__).resolve().parents[1]


def test_meta_fp8_405b_keeps_attention_and_the_outer_layers_in_bf16():
    # arXiv:2407.21783 section 6.2: no FP8 in self-attention, nor in the first and last layers
    config = json.loads((ROOT / "data" / "model-configs" / "llama-3.1-405b-fp8.json").read_text())["config"]
    model = hf.from_hf_config(config, id="x")
    assert model.weights == "fp8"
    assert model.unquantized_roles == ("attention",)
    assert model.unquantized_layers == (0, 125)
    assert catalog.model("llama-3.1-405b-fp8").unquantized_layers == (0, 125)


def test_unquantized_linears_counted_by_hand():
    # per layer: attention 2 x 16384^2 + 2 x 16384 x 1024 = 570,425,344; FFN 3 x 16384 x 53248 = 2,617,245,696
    counts = architecture.parameter_counts(catalog.model("llama-3.1-405b-fp8"))
    assert counts.unquantized == 126 * 570_425_344 + 2 * 2_617_245_696
    assert architecture.parameter_counts(catalog.model("llama-3.1-405b")).unquantized == 0


def test_vllm_log_of_the_fp8_405b_per_rank():
    # vllm#6746 (vLLM 0.5.3, 8 x H100, TP8): "Loading model weights took 57.7520 GB" (GiB); by hand:
    # (71.87e9 x 2 B attention + 5.23e9 x 2 B outer FFNs + 324.5e9 x 1 B FFNs + 4.2e9 x 2 B embedding
    # and head) / 8 = 60.9e9 B = 56.7 GiB per rank
    weights = gpusizer.estimate("llama-3.1-405b-fp8", "h100-sxm", gpus=8).memory.weights_bytes / GiB
    assert weights == pytest.approx(56.7, abs=0.1)
    assert abs(weights / 57.752 - 1) < 0.03


def test_stored_bytes_move_only_the_unquantized_part():
    fp8 = catalog.model("llama-3.1-405b-fp8")
    counts = architecture.parameter_counts(fp8)
    everything = precision.stored_weight_bytes(counts._replace(unquantized=0), "fp8")
    kept = precision.stored_weight_bytes(counts, "fp8")
    fp8_bpe, bf16_bpe = precision.bytes_per_element("fp8"), precision.bytes_per_element("bf16")
    assert kept - everything == pytest.approx(counts.unquantized * (bf16_bpe - fp8_bpe))


@pytest.mark.parametrize(("patterns", "expected"), [
    ([], ((), ())),
    (["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"],  # gpt-oss
     (("attention",), ())),
    (["lm_head", "re:.*mlp.gate$"], ((), ())),  # compressed-tensors ignore: router and head only
    (["re:.*self_attn.*", "model.layers.1.mlp"], (("attention",), (1,))),
    (["model.layers.2.mlp.down_proj"], ((), (2,))),
])
def test_exclusion_patterns(patterns, expected):
    assert unquantized_parts(patterns, 3) == expected


def _llama8b(**changes):
    config = json.loads((ROOT / "data" / "model-configs" / "llama-3.1-8b.json").read_text())["config"]
    return {**config, **changes}


def test_importer_reads_each_methods_exclusion_list(tmp_path):
    ct = {"quant_method": "compressed-tensors", "ignore": ["lm_head", "re:.*self_attn.*"],
          "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float"}}}}
    model = hf.from_hf_config(_llama8b(quantization_config=ct), id="x")
    assert (model.weights, model.unquantized_roles, model.unquantized_layers) == ("fp8", ("attention",), ())
    awq = {"quant_method": "awq", "bits": 4, "modules_to_not_convert": ["model.layers.31.mlp"]}
    model = hf.from_hf_config(_llama8b(quantization_config=awq), id="x")
    assert (model.weights, model.unquantized_roles, model.unquantized_layers) == ("int4", (), (31,))
    # ModelOpt's hf_quant_config.json: exclude_modules under "quantization"
    (tmp_path / "config.json").write_text(json.dumps(_llama8b()))
    hf_quant = {"quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head", "model.layers.0*"]}}
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(hf_quant))
    model = hf.from_hf_config(tmp_path)
    assert (model.weights, model.unquantized_roles, model.unquantized_layers) == ("nvfp4", (), (0,))
    # an experts-only format (gpt-oss MXFP4) records nothing: attention is already at the checkpoint dtype
    gpt_oss = json.loads((ROOT / "data" / "model-configs" / "gpt-oss-20b.json").read_text())["config"]
    assert hf.from_hf_config(gpt_oss, id="x").unquantized_roles == ()


def test_excluded_layers_cost_their_bf16_bytes():
    # Llama-3.1-8B in int4 with layer 31's MLP left in BF16: 3 x 4096 x 14336 params more at 2 B - 0.52 B
    base = catalog.model("llama-3.1-8b").model_copy(update={"weights": "int4"})
    kept = base.model_copy(update={"unquantized_layers": (31,)})
    extra = (gpusizer.estimate(kept, "h100-sxm").memory.weights_bytes
             - gpusizer.estimate(base, "h100-sxm").memory.weights_bytes)
    attention = 2 * 4096 * 4096 + 2 * 4096 * 1024
    assert extra == pytest.approx((attention + 3 * 4096 * 14336) * (2 - precision.bytes_per_element("int4")))
