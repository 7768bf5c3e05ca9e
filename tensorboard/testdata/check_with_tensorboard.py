"""Reads Ember's TensorBoard runs with TensorBoard's own Python readers.

Not run by go test: TensorBoard is not a dependency of the project. To run
it, check out TensorBoard's sources (github.com/tensorflow/tensorboard),
generate their Python protobuf modules, and install Debian's python3-absl,
python3-numpy and python3-protobuf:

    cd TENSORBOARD_CHECKOUT
    for f in $(find tensorboard -name '*.proto'); do protoc -I. --python_out=. $f; done
    echo 'VERSION = "0.0.0"' > tensorboard/version.py
    /usr/bin/python3 check_with_tensorboard.py TENSORBOARD_CHECKOUT RUN_DIR...

It loads each run with event_accumulator.EventAccumulator (the classic
scalars, histograms, images, audio and graph) and
plugin_event_accumulator.EventAccumulator (what the dashboards read after
TensorBoard's own migration of old-style values to tensors), prints what
each plugin sees, and parses projector_config.pbtxt when present.
"""
import os
import sys

sys.path.insert(0, sys.argv[1])
runs = sys.argv[2:]

from google.protobuf import text_format  # noqa: E402
from tensorboard.backend.event_processing import event_accumulator as ea  # noqa: E402
from tensorboard.backend.event_processing import plugin_event_accumulator as pea  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2 as hparams_pb2  # noqa: E402
from tensorboard.plugins.pr_curve import metadata as pr_meta  # noqa: E402
from tensorboard.plugins.projector import projector_config_pb2  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402

for run in runs:
    acc = ea.EventAccumulator(run, size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0})
    acc.Reload()
    tags = acc.Tags()
    print(run, {k: v for k, v in tags.items() if v})
    for t in tags.get("scalars", []):
        print("  scalar", t, [(e.step, round(e.value, 4)) for e in acc.Scalars(t)][:3])
    for t in tags.get("histograms", [])[:2]:
        h = acc.Histograms(t)[0]
        print("  histogram", t, h.step, h.histogram_value.num)
    for t in tags.get("images", []):
        im = acc.Images(t)[0]
        print("  image", t, im.width, im.height, len(im.encoded_image_string))
    if tags.get("graph"):
        g = acc.Graph()
        print("  graph nodes", len(g.node), [n.name for n in g.node[:4]])

    p = pea.EventAccumulator(run, size_guidance={pea.TENSORS: 0})
    p.Reload()
    for plugin in sorted(p.ActivePlugins()):
        for tag, content in sorted(p.PluginTagToContent(plugin).items()):
            arr = tensor_util.make_ndarray(p.Tensors(tag)[0].tensor_proto)
            extra = ""
            if plugin == "hparams":
                extra = hparams_pb2.HParamsPluginData.FromString(content).WhichOneof("data")
            elif plugin == "pr_curves":
                extra = "thresholds=%d" % pr_meta.parse_plugin_metadata(content).num_thresholds
            print("  plugin", plugin, tag, arr.shape, arr.dtype, extra)

    cfg = os.path.join(run, "projector_config.pbtxt")
    if os.path.exists(cfg):
        pc = text_format.Parse(open(cfg).read(), projector_config_pb2.ProjectorConfig())
        for e in pc.embeddings:
            print("  projector", e.tensor_name, e.tensor_path, e.metadata_path, e.sprite.image_path, list(e.sprite.single_image_dim))
