"""Models for ``edgeprof layers``, built from torch.nn alone (random weights, no download).

    edgeprof layers examples.layers.models:small_cnn --input-shape 3,64,64 --batch-size 8
    edgeprof layers examples.layers.models:vit_encoder --input-shape 3,224,224 --batch-size 8 \
        --factory-arg blocks=4

Each factory returns an ``nn.Module`` whose forward is the chain of its children, so every
granularity but ``leaves`` (the ViT's residual blocks are not a chain of their leaves)
describes the model exactly.
"""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn


def _conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU())


def small_cnn(
    classes: int = 10, channels: int = 16, heavy: int | None = None, repeat: int = 8
) -> nn.Sequential:
    """Stem (conv 3→C), three blocks (conv C→C, 3×3, ReLU), global average pool + flatten,
    linear classifier: six layers at granularity ``children``.

    ``heavy=i`` (1…3) makes block ``i`` a stack of ``repeat`` such convolutions: same input
    and output shapes, ``repeat`` times the work (the tests' deliberately heavier layer).
    """
    blocks: list[tuple[str, nn.Module]] = [("stem", _conv(3, channels))]
    for i in (1, 2, 3):
        n = repeat if heavy == i else 1
        blocks.append((f"block{i}", nn.Sequential(*[_conv(channels, channels) for _ in range(n)])))
    blocks.append(("pool", nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())))
    blocks.append(("classifier", nn.Linear(channels, classes)))
    return nn.Sequential(OrderedDict(blocks))


class PatchEmbed(nn.Module):
    """Image → patch tokens: a strided convolution, a class token, learned positions."""

    def __init__(self, image_size: int, patch: int, dim: int) -> None:
        super().__init__()
        if image_size % patch:
            raise ValueError(f"image size {image_size} is not a multiple of the patch {patch}")
        self.proj = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, (image_size // patch) ** 2 + 1, dim) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.proj(x).flatten(2).transpose(1, 2)  # (B, patches, dim)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1)
        return x + self.pos


class EncoderBlock(nn.Module):
    """Pre-norm transformer encoder block: x + attention(LN(x)), then x + MLP(LN(x))."""

    def __init__(self, dim: int, heads: int, mlp_ratio: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, dim * mlp_ratio), nn.GELU(), nn.Linear(dim * mlp_ratio, dim)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class Head(nn.Module):
    """Final norm, the class token, a linear classifier."""

    def __init__(self, dim: int, classes: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.norm(x)[:, 0])


class ViTEncoder(nn.Module):
    def __init__(
        self,
        blocks: int,
        image_size: int,
        patch: int,
        dim: int,
        heads: int,
        mlp_ratio: int,
        classes: int,
    ) -> None:
        super().__init__()
        self.embed = PatchEmbed(image_size, patch, dim)
        self.blocks = nn.ModuleList(EncoderBlock(dim, heads, mlp_ratio) for _ in range(blocks))
        self.head = Head(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def vit_encoder(
    blocks: int = 4,
    image_size: int = 224,
    patch: int = 16,
    dim: int = 192,
    heads: int = 3,
    mlp_ratio: int = 4,
    classes: int = 1000,
) -> ViTEncoder:
    """A ViT-style encoder (ViT-Tiny's width by default): patch embedding, ``blocks`` encoder
    blocks, head; ``blocks + 2`` layers at granularity ``children`` or ``blocks``."""
    return ViTEncoder(blocks, image_size, patch, dim, heads, mlp_ratio, classes)
