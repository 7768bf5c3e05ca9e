"""The PyTorch twins of the Ember models in nn/interop_test.go.

Keep these in sync with interopModels in nn/interop_test.go.
"""

import torch
from torch import nn


def mlp():
    """Sequential(Linear(4, 8), ReLU, Linear(8, 3))."""
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def convnet():
    """A small conv net over [N, 1, 8, 8] images: padding, stride, groups,
    max pooling, flatten and a linear head."""
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(24, 3),
    )


MODELS = {"mlp": mlp, "convnet": convnet}
INPUT_SHAPES = {"mlp": (5, 4), "convnet": (2, 1, 8, 8)}


def build(name):
    return MODELS[name]()


def torch_version_ok():
    return hasattr(torch, "frombuffer")
