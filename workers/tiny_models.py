"""Tiny model directories generated locally, so the CPU tier never downloads anything.

The CPU engine never runs the weights, but Dynamo reads the config, tokenizer and chat
template (it builds the model card from them and tokenizes in the frontend), so those must be
real and self-consistent: a byte-level BPE tokenizer trained on a few sentences, with the
special tokens each model family's template and processor look for.
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
_CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Dynamo discovers workers through etcd and routes requests to them.",
    "A picture of a red square on a white background.",
    "Hello! How are you today? I am fine, thank you.",
    "0123456789 user assistant system image video",
]
_CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image_url' or part['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _train_tokenizer() -> Tokenizer:
    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_CORPUS, trainer=trainer)
    return tokenizer


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2))


def _write_tokenizer(model_dir: Path) -> dict[str, int]:
    tokenizer = _train_tokenizer()
    tokenizer.save(str(model_dir / "tokenizer.json"))
    ids = {tok: tokenizer.token_to_id(tok) for tok in SPECIAL_TOKENS}
    _write_json(
        model_dir / "tokenizer_config.json",
        {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": "<|endoftext|>",
            "eos_token": "<|im_end|>",
            "pad_token": "<|endoftext|>",
            "unk_token": None,
            "model_max_length": 4096,
            "chat_template": _CHATML_TEMPLATE,
            "added_tokens_decoder": {
                str(i): {
                    "content": tok,
                    "special": True,
                    "lstrip": False,
                    "rstrip": False,
                    "normalized": False,
                    "single_word": False,
                }
                for tok, i in ids.items()
            },
        },
    )
    _write_json(
        model_dir / "special_tokens_map.json",
        {"bos_token": "<|endoftext|>", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    )
    return {"vocab_size": tokenizer.get_vocab_size(), **ids}


def _generation_config(ids: dict[str, int]) -> dict:
    return {"bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"]}


def write_text_model(model_dir: Path) -> Path:
    """A Qwen3-shaped decoder, the architecture of the GPU tier's text and embedding models
    (Qwen3-0.6B, Qwen3-Embedding-0.6B): aggregated, prefill/decode and embedding workers."""
    model_dir.mkdir(parents=True, exist_ok=True)
    ids = _write_tokenizer(model_dir)
    _write_json(
        model_dir / "config.json",
        {
            "architectures": ["Qwen3ForCausalLM"],
            "model_type": "qwen3",
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 1,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "head_dim": 16,
            "max_position_embeddings": 4096,
            "rms_norm_eps": 1e-6,
            "rope_theta": 1000000.0,
            "tie_word_embeddings": True,
            "vocab_size": ids["vocab_size"],
            "torch_dtype": "float32",
            **_generation_config(ids),
        },
    )
    _write_json(model_dir / "generation_config.json", _generation_config(ids))
    return model_dir


def write_vision_language_model(model_dir: Path) -> Path:
    """A Qwen3-VL-shaped model, the architecture of the GPU tier's Qwen3-VL-2B-Instruct (text
    and vision configs nested, interleaved mrope, deepstack vision tower)."""
    model_dir.mkdir(parents=True, exist_ok=True)
    ids = _write_tokenizer(model_dir)
    _write_json(
        model_dir / "config.json",
        {
            "architectures": ["Qwen3VLForConditionalGeneration"],
            "model_type": "qwen3_vl",
            "text_config": {
                "model_type": "qwen3_vl_text",
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_hidden_layers": 1,
                "num_attention_heads": 4,
                "num_key_value_heads": 4,
                "head_dim": 16,
                "hidden_act": "silu",
                "max_position_embeddings": 4096,
                "rms_norm_eps": 1e-6,
                "rope_theta": 5000000,
                "rope_scaling": {
                    "rope_type": "default",
                    "mrope_interleaved": True,
                    "mrope_section": [2, 3, 3],
                },
                "tie_word_embeddings": True,
                "vocab_size": ids["vocab_size"],
                "torch_dtype": "float32",
                **_generation_config(ids),
            },
            "vision_config": {
                "model_type": "qwen3_vl",
                "depth": 2,
                "hidden_size": 32,
                "intermediate_size": 64,
                "hidden_act": "gelu_pytorch_tanh",
                "num_heads": 2,
                "in_channels": 3,
                "patch_size": 16,
                "spatial_merge_size": 2,
                "temporal_patch_size": 2,
                "out_hidden_size": 64,
                "num_position_embeddings": 64,
                "deepstack_visual_indexes": [0],
            },
            "tie_word_embeddings": True,
            "torch_dtype": "float32",
            "image_token_id": ids["<|image_pad|>"],
            "video_token_id": ids["<|video_pad|>"],
            "vision_start_token_id": ids["<|vision_start|>"],
            "vision_end_token_id": ids["<|vision_end|>"],
        },
    )
    _write_json(model_dir / "generation_config.json", _generation_config(ids))
    processor = {
        "image_processor_type": "Qwen2VLImageProcessorFast",
        "processor_class": "Qwen3VLProcessor",
        "do_resize": True,
        "do_normalize": True,
        "do_rescale": True,
        "do_convert_rgb": True,
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
        "size": {"shortest_edge": 4096, "longest_edge": 16384},
        "patch_size": 16,
        "merge_size": 2,
        "temporal_patch_size": 2,
        "rescale_factor": 0.00392156862745098,
    }
    _write_json(model_dir / "preprocessor_config.json", processor)
    _write_json(
        model_dir / "video_preprocessor_config.json",
        {
            **processor,
            "video_processor_type": "Qwen3VLVideoProcessor",
            "fps": 2,
            "min_frames": 2,
            "max_frames": 8,
        },
    )
    _write_json(model_dir / "chat_template.json", {"chat_template": _CHATML_TEMPLATE})
    return model_dir


def write_cross_encoder_model(model_dir: Path) -> Path:
    """An XLM-RoBERTa-shaped sequence classifier: Dynamo's rerank path takes cross-encoders."""
    model_dir.mkdir(parents=True, exist_ok=True)
    ids = _write_tokenizer(model_dir)
    _write_json(
        model_dir / "config.json",
        {
            "architectures": ["XLMRobertaForSequenceClassification"],
            "model_type": "xlm-roberta",
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 1,
            "num_attention_heads": 4,
            "max_position_embeddings": 514,
            "type_vocab_size": 1,
            "vocab_size": ids["vocab_size"],
            "num_labels": 1,
            "id2label": {"0": "LABEL_0"},
            "label2id": {"LABEL_0": 0},
            "pad_token_id": ids["<|endoftext|>"],
            "bos_token_id": ids["<|endoftext|>"],
            "eos_token_id": ids["<|im_end|>"],
            "torch_dtype": "float32",
        },
    )
    return model_dir


def write_diffusion_model(model_dir: Path, pipeline: str) -> Path:
    """A diffusers-style pipeline index naming the GPU tier model's pipeline class
    (ZImagePipeline, WanPipeline): the stand-in generator reads nothing else."""
    model_dir.mkdir(parents=True, exist_ok=True)
    _write_json(
        model_dir / "model_index.json",
        {"_class_name": pipeline, "_diffusers_version": "0.35.0"},
    )
    return model_dir


def write_lora_adapter(adapter_dir: Path, base_model: Path) -> Path:
    """A PEFT LoRA adapter shaped for `base_model`'s config (rank 4 on the q/v projections,
    zero weights, so it changes nothing): what Dynamo's LoRA loader fetches from a file:// URI
    and hands to sglang. Written for the tiny text model, or for a GPU model from its cache."""
    import torch
    from safetensors.torch import save_file

    adapter_dir.mkdir(parents=True, exist_ok=True)
    config = json.loads((base_model / "config.json").read_text())
    hidden, rank = config["hidden_size"], 4
    head_dim = config.get("head_dim") or hidden // config["num_attention_heads"]
    out = {
        "q_proj": config["num_attention_heads"] * head_dim,
        "v_proj": config.get("num_key_value_heads", config["num_attention_heads"]) * head_dim,
    }
    _write_json(
        adapter_dir / "adapter_config.json",
        {
            "peft_type": "LORA",
            "task_type": "CAUSAL_LM",
            "base_model_name_or_path": str(base_model),
            "r": rank,
            "lora_alpha": 8,
            "lora_dropout": 0.0,
            "bias": "none",
            "target_modules": ["q_proj", "v_proj"],
        },
    )
    tensors = {}
    for layer in range(config["num_hidden_layers"]):
        for proj in ("q_proj", "v_proj"):
            prefix = f"base_model.model.model.layers.{layer}.self_attn.{proj}"
            tensors[f"{prefix}.lora_A.weight"] = torch.zeros(rank, hidden)
            tensors[f"{prefix}.lora_B.weight"] = torch.zeros(out[proj], rank)
    save_file(tensors, str(adapter_dir / "adapter_model.safetensors"))
    return adapter_dir


# The configuration class of a tiny LLaDA2-MoE-shaped diffusion LLM (local remote code: the
# real model ships its own, and transformers has none built in).
_LLADA2_CONFIG_CODE = '''"""Configuration of a tiny LLaDA2-MoE-shaped diffusion LLM."""

from transformers import PretrainedConfig


class LLaDA2MoeConfig(PretrainedConfig):
    model_type = "llada2_moe"

    def __init__(self, vocab_size=400, hidden_size=64, intermediate_size=128,
                 num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=4,
                 head_dim=16, max_position_embeddings=4096, rms_norm_eps=1e-6,
                 rope_theta=10000.0, num_experts=4, num_experts_per_tok=2,
                 moe_intermediate_size=32, num_shared_experts=1, first_k_dense_replace=0,
                 **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.num_key_value_heads = num_key_value_heads
        self.head_dim = head_dim
        self.max_position_embeddings = max_position_embeddings
        self.rms_norm_eps = rms_norm_eps
        self.rope_theta = rope_theta
        self.num_experts = num_experts
        self.num_experts_per_tok = num_experts_per_tok
        self.moe_intermediate_size = moe_intermediate_size
        self.num_shared_experts = num_shared_experts
        self.first_k_dense_replace = first_k_dense_replace
        super().__init__(**kwargs)
'''


def write_diffusion_llm_model(model_dir: Path) -> Path:
    """A LLaDA2-MoE-shaped diffusion LLM (the GPU tier's inclusionAI/LLaDA2.0-mini): its
    configuration class ships with it, as the real model's does (--trust-remote-code)."""
    model_dir.mkdir(parents=True, exist_ok=True)
    ids = _write_tokenizer(model_dir)
    (model_dir / "configuration_llada2_moe.py").write_text(_LLADA2_CONFIG_CODE)
    _write_json(
        model_dir / "config.json",
        {
            "architectures": ["LLaDA2MoeModelLM"],
            "model_type": "llada2_moe",
            "auto_map": {"AutoConfig": "configuration_llada2_moe.LLaDA2MoeConfig"},
            "vocab_size": ids["vocab_size"],
            "torch_dtype": "float32",
            **_generation_config(ids),
        },
    )
    _write_json(model_dir / "generation_config.json", _generation_config(ids))
    return model_dir
