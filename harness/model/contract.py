"""The registration contract of a worker, as data: what its model card must say."""

from __future__ import annotations

from dataclasses import dataclass

# Model types as Dynamo 1.6.1 writes them in the card's `model_type` field.
CHAT_COMPLETIONS = "Chat | Completions"
EMPTY = "Empty"
EMBEDDING = "Embedding"
RERANK = "Rerank"
# The image-diffusion worker registers the "image" output modality, which is Chat | Images.
CHAT_IMAGES = "Chat | Images"
VIDEOS = "Videos"


@dataclass(frozen=True, kw_only=True)
class ExpectedCard:
    model_type: str
    model_input: str | None  # None: not part of this contract
    worker_type: str
    needs: tuple[tuple[str, ...], ...] = ()
    public: bool = True  # the frontend must list this worker's model to clients
    # Keys the card's runtime data must carry (e.g. a gateway child's engine and siblings).
    runtime_keys: tuple[str, ...] = ()

    def describe(self) -> str:
        needs = " | ".join("+".join(group) for group in self.needs) or "-"
        scope = "public" if self.public else "internal"
        return (
            f"type {self.model_type!r}, input {self.model_input}, "
            f"worker_type {self.worker_type}, needs {needs}, {scope}"
        )
