"""Model asset keys, and the tiny local model directories the CPU tier generates for them."""

from __future__ import annotations

from pathlib import Path

ASSET_KEYS = (
    "text",
    "embedding",
    "rerank",
    "vision-language",
    "image",
    "video",
    "diffusion-llm",
    "lora",  # a LoRA adapter of the text model, loaded at runtime
)


def cpu_assets(root: Path) -> dict[str, Path]:
    """Tiny local model dirs of each GPU-tier model's architecture: no download, generated in
    well under a second."""
    from discovery_harness_workers.tiny_models import (
        write_cross_encoder_model,
        write_diffusion_llm_model,
        write_diffusion_model,
        write_lora_adapter,
        write_text_model,
        write_vision_language_model,
    )

    text = write_text_model(root / "text")
    return {
        "text": text,
        "embedding": write_text_model(root / "embedding"),
        "rerank": write_cross_encoder_model(root / "rerank"),
        "vision-language": write_vision_language_model(root / "vision-language"),
        "image": write_diffusion_model(root / "image", "ZImagePipeline"),
        "video": write_diffusion_model(root / "video", "WanPipeline"),
        "diffusion-llm": write_diffusion_llm_model(root / "diffusion-llm"),
        "lora": write_lora_adapter(root / "lora", text),
    }
