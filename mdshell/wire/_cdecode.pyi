from collections.abc import Callable
from typing import Any

class Decoder:
    fallback: Callable[[bytes, int, int], tuple[dict[str, Any], int]] | None
    def __init__(self, spec: tuple[Any, ...],
                 fallback: Callable[[bytes, int, int], tuple[dict[str, Any], int]] | None,
                 unknown_key: str) -> None: ...
    def __call__(self, buf: bytes, pos: int, end: int) -> tuple[dict[str, Any], int]: ...
