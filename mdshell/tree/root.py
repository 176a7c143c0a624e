"""The root of the tree: ``/image`` (Kafka's layout) and mdshell's own ``/local``."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

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
    warnings: list[str] = field(default_factory=list)
    at_offset: int | None = None
    extra: dict[str, Callable[[], Node]] = field(default_factory=dict)


def local_node(info: RootInfo) -> Node:
    return StaticDir({
        "version": lambda: Value(__version__),
        "source": lambda: Value(info.source),
        "sourceKind": lambda: Value(info.source_kind),
        "filesRead": lambda: StaticDir({os.path.basename(f): partial(Value, f)
                                        for f in info.files}),
        "warnings": lambda: StaticDir({str(i): partial(Value, w)
                                       for i, w in enumerate(info.warnings, 1)}),
        "atOffset": lambda: Value("latest" if info.at_offset is None else str(info.at_offset),
                                  info.at_offset),
    })


def root_node(image: Image, info: RootInfo, layout: str = "3.7") -> Node:
    makers: dict[str, Callable[[], Node]] = {
        "image": lambda: image_node(image, layout),
        "local": lambda: local_node(info),
    }
    makers.update(info.extra)
    return StaticDir(makers)
