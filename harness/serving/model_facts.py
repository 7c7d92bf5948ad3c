"""What the served model itself says an answer must be: its hidden size (an embedding's
dimension), its context length, and how many tokens a prompt is under its own tokenizer and
chat template.

Read from the model's own files, on both tiers (the CPU tier's tiny models have them too):
config.json as JSON (no model code runs), tokenizer.json with `tokenizers` (the library the
fast Hugging Face tokenizers and Dynamo's frontend both run), the chat template (from
tokenizer_config.json, chat_template.jinja or chat_template.json) with Jinja2's sandbox, set up
as chat templates are written for (trimmed blocks, loop controls, `tojson`,
`raise_exception`). Not transformers: importing it (torch with it) costs seconds of CPU in
every pytest process, and a prompt's count needs none of it.
"""

from __future__ import annotations

import datetime
import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from discovery_harness.common.argv import int_flag

CONTEXT_LENGTH_FLAG = "--context-length"
TOKENIZER_FILE = "tokenizer.json"


@dataclass(frozen=True)
class ModelFacts:
    """One model directory's facts; every field None where the directory does not say (a
    diffusion pipeline has no config.json, a remote name no local files)."""

    model_dir: Path | None = None
    hidden_size: int | None = None
    context_length: int | None = None  # what the workers serve: the flag, else the config's
    context_source: str = ""  # where context_length comes from, for messages

    @property
    def tokenizer_local(self) -> bool:
        return self.model_dir is not None and (self.model_dir / TOKENIZER_FILE).is_file()

    def warm(self) -> None:
        """Load the tokenizer now (a large vocabulary takes a fraction of a second)."""
        if self.tokenizer_local:
            _tokenizer(str(self.model_dir))

    def prompt_tokens(self, text: str) -> int | None:
        """`text`'s length as the engine tokenizes a plain prompt (special tokens included)."""
        if not self.tokenizer_local:
            return None
        return len(_tokenizer(str(self.model_dir)).encode(text, add_special_tokens=True).ids)

    def chat_prompt_tokens(self, messages: Sequence[dict[str, Any]]) -> int | None:
        """The length of `messages` rendered by the model's chat template (the assistant's turn
        opened) and tokenized as rendered (the template writes its special tokens itself):
        each image part counts as the placeholder tokens the template writes for it."""
        if not self.tokenizer_local:
            return None
        template = _chat_template(str(self.model_dir))
        if template is None:
            return None
        rendered = template.render(messages=list(messages), add_generation_prompt=True)
        tokenizer = _tokenizer(str(self.model_dir))
        return len(tokenizer.encode(rendered, add_special_tokens=False).ids)


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

    flag = int_flag(dynamo_argv, CONTEXT_LENGTH_FLAG)
    context: int | None
    if flag is not None:
        context, source = flag, f"{CONTEXT_LENGTH_FLAG} {flag}"
    else:
        context = field("max_position_embeddings")
        source = f"config.json max_position_embeddings {context}"
    return ModelFacts(model_dir, field("hidden_size"), context, source)



@functools.lru_cache(maxsize=8)
def _tokenizer(model_dir: str) -> Any:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(Path(model_dir) / TOKENIZER_FILE))


@functools.lru_cache(maxsize=8)
def _chat_template(model_dir: str) -> Any:
    """The model's chat template, compiled, with its special tokens bound; None: it has none."""
    directory = Path(model_dir)
    config_file = directory / "tokenizer_config.json"
    config = json.loads(config_file.read_text()) if config_file.is_file() else {}
    source = config.get("chat_template")
    if isinstance(source, list):  # named templates: the default one
        source = next((t.get("template") for t in source if t.get("name") == "default"), None)
    if source is None and (directory / "chat_template.jinja").is_file():
        source = (directory / "chat_template.jinja").read_text()
    if source is None and (directory / "chat_template.json").is_file():
        source = json.loads((directory / "chat_template.json").read_text()).get("chat_template")
    if not isinstance(source, str):
        return None
    return _environment().from_string(source, globals=_special_tokens(directory, config))


def _special_tokens(directory: Path, config: dict[str, Any]) -> dict[str, str]:
    """bos_token, eos_token, ...: the names a template writes special tokens by."""
    found: dict[str, Any] = {}
    special_map = directory / "special_tokens_map.json"
    if special_map.is_file():
        found.update(json.loads(special_map.read_text()))
    found.update({k: v for k, v in config.items() if k.endswith("_token") and v is not None})
    named = {k: v.get("content") if isinstance(v, dict) else v for k, v in found.items()}
    return {k: v for k, v in named.items() if isinstance(v, str)}


@functools.cache
def _environment() -> Any:
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        from jinja2.exceptions import TemplateError

        raise TemplateError(message)

    def tojson(value: Any, indent: int | None = None, **_: Any) -> str:
        return json.dumps(value, ensure_ascii=False, indent=indent)

    def strftime_now(format: str) -> str:
        return datetime.datetime.now().strftime(format)

    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
    )
    environment.filters["tojson"] = tojson
    environment.globals.update(raise_exception=raise_exception, strftime_now=strftime_now)
    return environment
