"""What the served model itself says an answer must be: its hidden size (an embedding's
dimension), its context length, and how many tokens a prompt is under its own tokenizer and
chat template.

Read from the model's own files (config.json, the tokenizer), on both tiers: the CPU tier's
tiny models have them too. The config is read as JSON (no model code runs); the tokenizer is
transformers' (`AutoTokenizer`, `apply_chat_template`: the reference rendering every serving
stack follows), imported on first use and kept per model directory, so a process pays the
import once.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.common import environment

CONTEXT_LENGTH_FLAG = "--context-length"


@dataclass(frozen=True)
class ModelFacts:
    """One model directory's facts; every field None where the directory does not say (a
    diffusion pipeline has no config.json, a remote name no local files)."""

    model_dir: Path | None = None
    hidden_size: int | None = None
    context_length: int | None = None  # what the workers serve: the flag, else the config's
    context_source: str = ""  # where context_length comes from, for messages
    # The workers run the model's own code (--trust-remote-code): so may its tokenizer here.
    trust_remote_code: bool = False

    @property
    def tokenizer_local(self) -> bool:
        return self.model_dir is not None and any(
            (self.model_dir / name).exists() for name in ("tokenizer.json", "tokenizer_config.json")
        )

    def warm(self) -> None:
        """Load the tokenizer now (the first load imports transformers: seconds, once)."""
        if self.tokenizer_local:
            self._tokenizer()

    def _tokenizer(self) -> Any:
        return _tokenizer(str(self.model_dir), self.trust_remote_code)

    def prompt_tokens(self, text: str) -> int | None:
        """`text`'s length as the engine tokenizes a plain prompt (special tokens included)."""
        if not self.tokenizer_local:
            return None
        return len(self._tokenizer()(text)["input_ids"])

    def chat_prompt_tokens(self, messages: Sequence[dict[str, Any]]) -> int | None:
        """The length of `messages` rendered by the model's chat template (with the assistant's
        turn opened) and tokenized: each image part counts as its placeholder tokens."""
        if not self.tokenizer_local:
            return None
        tokenizer = self._tokenizer()
        rendered = tokenizer.apply_chat_template(
            list(messages), add_generation_prompt=True, tokenize=True
        )
        ids = rendered["input_ids"] if hasattr(rendered, "keys") else rendered
        return len(ids)


NO_FACTS = ModelFacts()


def read(model_dir: Path | None, dynamo_argv: Sequence[str] = ()) -> ModelFacts:
    """The facts of the model in `model_dir` as a worker started with `dynamo_argv` serves it
    (`--context-length` there overrides the config's length)."""
    if model_dir is None or not (model_dir / "config.json").is_file():
        return ModelFacts(model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    text = config.get("text_config") or {}  # a vision-language model's language half

    def field(name: str) -> int | None:
        value = text.get(name, config.get(name))
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    flag = _flag_value(dynamo_argv, CONTEXT_LENGTH_FLAG)
    if flag is not None:
        context, source = flag, f"{CONTEXT_LENGTH_FLAG} {flag}"
    else:
        context = field("max_position_embeddings")
        source = f"config.json max_position_embeddings {context}"
    trusted = "--trust-remote-code" in dynamo_argv
    return ModelFacts(model_dir, field("hidden_size"), context, source, trusted)


def _flag_value(argv: Sequence[str], flag: str) -> int | None:
    """The last value given to `flag` (as argparse keeps it), as an int."""
    value = None
    for index, arg in enumerate(argv):
        if arg == flag and index + 1 < len(argv):
            value = argv[index + 1]
        elif arg.startswith(flag + "="):
            value = arg.split("=", 1)[1]
    return int(value) if value is not None and value.isdigit() else None


def preload() -> None:
    """Import transformers' tokenizer code now (seconds, once a process): a session does it
    while its worker template imports, so no deployment pays for it before its answers."""
    with environment.kept():  # transformers' import sets TORCHINDUCTOR_CACHE_DIR
        from transformers import AutoTokenizer  # noqa: F401


@functools.lru_cache(maxsize=8)
def _tokenizer(model_dir: str, trust_remote_code: bool) -> Any:
    with environment.kept():  # transformers' import sets TORCHINDUCTOR_CACHE_DIR
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(model_dir, trust_remote_code=trust_remote_code)
