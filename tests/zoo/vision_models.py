"""The seed tutorials' vision models, from torchvision and timm with random weights (no
downloads), and how their users call them: ``model(images)`` under ``torch.no_grad()`` in eval,
a cross-entropy loss and ``loss.backward()`` in a training step.

Training runs in float64: BatchNorm over a batch of two images whose last feature maps are 2x2
makes float32 gradients ill-conditioned (eager's own float32 gradients of mobilenet_v2 differ from
float64's by up to 10%, more than any kernel difference), so float32 could not tell a compiler's
error from rounding."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch
import torch.nn.functional as F

BATCH, CLASSES = 2, 10


@dataclasses.dataclass(frozen=True)
class VisionModel:
    name: str
    library: str  # "torchvision" or "timm"
    arch: str  # torchvision.models.<arch> or timm.create_model(<arch>)
    size: int = 64  # the images' height and width
    options: tuple[tuple[str, Any], ...] = ()

    def build(self) -> torch.nn.Module:
        if self.library == "timm":
            import timm

            return _no_dropout(timm.create_model(self.arch, pretrained=False, num_classes=CLASSES,
                                                 **dict(self.options)))
        import torchvision

        return _no_dropout(getattr(torchvision.models, self.arch)(weights=None, num_classes=CLASSES,
                                                                  **dict(self.options)))


def _no_dropout(model: torch.nn.Module) -> torch.nn.Module:
    """Every dropout and drop-path probability set to 0 (``nn.Dropout.p``, torchvision's
    ``StochasticDepth.p``, timm's ``DropPath.drop_prob``), as the transformers zoo's configs: a
    training step is deterministic, so compiled and eager runs can be compared (the inductor draws
    its own random numbers: mobilenet_v2's dropout made its loss differ by 2% on CUDA)."""
    for module in model.modules():
        name = type(module).__name__
        if "Drop" in name or name == "StochasticDepth":
            for attr in ("p", "drop_prob"):
                if isinstance(getattr(module, attr, None), float):
                    setattr(module, attr, 0.0)
    return model


VISION_ZOO: list[VisionModel] = [
    VisionModel("resnet18", "torchvision", "resnet18"),
    VisionModel("resnet50", "torchvision", "resnet50"),
    VisionModel("densenet121", "torchvision", "densenet121"),
    VisionModel("mobilenet_v2", "torchvision", "mobilenet_v2"),
    VisionModel("mobilenet_v3", "torchvision", "mobilenet_v3_small"),
    VisionModel("efficientnet_b0", "torchvision", "efficientnet_b0"),
    VisionModel("convnext_tiny", "torchvision", "convnext_tiny"),
    VisionModel("swin_t", "torchvision", "swin_t"),
    VisionModel("resnext26ts", "timm", "resnext26ts"),
    VisionModel("deit_tiny", "timm", "deit_tiny_patch16_224", options=(("img_size", 64),)),
]

VISION_BY_NAME = {m.name: m for m in VISION_ZOO}


def run_eval(model: torch.nn.Module, images: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(images)


def run_train(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    logits = model(images)
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    return loss


def prepare(zoo: VisionModel, mode: str, device: str = "cpu") -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """The model in ``mode`` ("eval" or "train") and the user function's tensor arguments:
    images, and labels in train."""
    dtype = torch.float64 if mode == "train" else torch.float32
    torch.manual_seed(0)
    model = zoo.build().to(device, dtype)
    model.train(mode == "train")
    g = torch.Generator().manual_seed(1)
    images = torch.randn(BATCH, 3, zoo.size, zoo.size, generator=g).to(device, dtype)
    return model, ((images,) if mode == "eval" else (images, torch.tensor([1, 7], device=device)))


def vision_call(zoo: VisionModel, mode: str, wrap: Callable[[Callable], Callable] | None,
                device: str = "cpu") -> tuple[torch.Tensor, dict[str, torch.Tensor | None]]:
    """The user's call for ``mode`` through ``wrap`` (a compiler, or None for eager): its output
    and, in train, the parameters' gradients by name."""
    model, args = prepare(zoo, mode, device)
    out = (wrap or (lambda fn: fn))(run_eval if mode == "eval" else run_train)(model, *args)
    grads = {name: p.grad for name, p in model.named_parameters()} if mode == "train" else {}
    return out.detach(), grads
