"""The root of the tree: ``/image`` (Kafka's layout) and mdshell's own ``/local``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .. import __version__
from ..image.model import Image
from .image_tree import image_node
from .node import Node, StaticDir, Value


@dataclass
class RootInfo:
    """What the root needs besides the image: where it came from."""

    source: str
    source_kind: str
    files: list[str] = field(default_factory=list)
    extra: dict[str, Callable[[], Node]] = field(default_factory=dict)


def local_node(info: RootInfo) -> Node:
    return StaticDir({
        "version": lambda: Value(__version__),
        "source": lambda: Value(info.source),
        "sourceKind": lambda: Value(info.source_kind),
        "filesRead": lambda: Value("\n".join(info.files), list(info.files)),
    })


def root_node(image: Image, info: RootInfo) -> Node:
    makers: dict[str, Callable[[], Node]] = {
        "image": lambda: image_node(image),
        "local": lambda: local_node(info),
    }
    makers.update(info.extra)
    return StaticDir(makers)
