#!/usr/bin/python3
"""Write the PyTorch-side interop fixtures for nn/interop_test.go.

For each model in torch_models.py this saves, with fixed seeds:

    nn/testdata/torch_<name>.safetensors     the model's state_dict
    nn/testdata/torch_<name>_io.safetensors  "input" and torch's "output"

The Go test loads the state dict into the Ember twin, checks the tensors
are identical and that the forward output matches torch's. Run with
Debian's interpreter:

    /usr/bin/python3 nn/testdata/make_torch_models.py
"""

import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import safetensors_io  # noqa: E402
import torch_models  # noqa: E402


def main():
    torch.set_num_threads(1)
    for i, name in enumerate(sorted(torch_models.MODELS)):
        torch.manual_seed(100 + i)
        model = torch_models.build(name).eval()
        x = torch.randn(*torch_models.INPUT_SHAPES[name])
        with torch.no_grad():
            y = model(x)
        safetensors_io.save(
            os.path.join(HERE, "torch_%s.safetensors" % name),
            model.state_dict(),
            {"format": "pt", "source": "make_torch_models.py", "torch": torch.__version__},
        )
        safetensors_io.save(os.path.join(HERE, "torch_%s_io.safetensors" % name), {"input": x, "output": y})
        print("wrote torch_%s.safetensors (%s)" % (name, ", ".join(model.state_dict())))


if __name__ == "__main__":
    main()
