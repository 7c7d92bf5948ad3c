"""The generated model dirs load with transformers and carry what Dynamo and sglang read."""

from __future__ import annotations

from typing import Any

from discovery_harness_workers import torchvision_shim
from discovery_harness_workers.tiny_models import write_text_model, write_vision_language_model


def _transformers() -> Any:
    torchvision_shim.apply()  # transformers imports torchvision, which needs it beside a CPU torch
    import transformers

    return transformers


def test_text_model_has_a_chat_template_and_tokenizer(tmp_path):
    hf = _transformers()
    model = write_text_model(tmp_path / "text")
    tokenizer = hf.AutoTokenizer.from_pretrained(model)
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert prompt.endswith("<|im_start|>assistant\n")
    assert hf.AutoConfig.from_pretrained(model).vocab_size == len(tokenizer)


def test_vision_language_model_has_image_tokens(tmp_path):
    hf = _transformers()
    model = write_vision_language_model(tmp_path / "vl")
    config = hf.AutoConfig.from_pretrained(model)
    tokenizer = hf.AutoTokenizer.from_pretrained(model)
    assert config.architectures == ["Qwen3VLForConditionalGeneration"]
    assert tokenizer.convert_tokens_to_ids("<|image_pad|>") == config.image_token_id
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": [{"type": "image_url"}, {"type": "text", "text": "what?"}]}],
        tokenize=False,
    )
    assert "<|vision_start|><|image_pad|><|vision_end|>" in text
