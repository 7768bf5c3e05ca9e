# Golden values for data/transforms_test.go: bilinear resizing as
# torch.nn.functional.interpolate(mode="bilinear", align_corners=False,
# antialias=False) computes it (torchvision's Resize with antialias=False).
# Run with Debian's python3-torch:  /usr/bin/python3 data/testdata/transforms_golden.py
import json

import torch
import torch.nn.functional as F

cases = []
for (c, h, w), (oh, ow) in [((2, 5, 7), (3, 4)), ((1, 4, 3), (9, 5)), ((3, 6, 6), (6, 2))]:
    n = c * h * w
    # Values 0..n-1 scrambled by a fixed multiplier so that neighbours differ.
    x = torch.tensor([((i * 37) % n) / n for i in range(n)], dtype=torch.float32).reshape(1, c, h, w)
    y = F.interpolate(x, size=(oh, ow), mode="bilinear", align_corners=False)
    cases.append({"shape": [c, h, w], "out": [oh, ow], "x": x.flatten().tolist(), "want": y.flatten().tolist()})

with open(__file__.replace(".py", ".json"), "w") as f:
    json.dump({"torch": torch.__version__, "resize": cases}, f)
