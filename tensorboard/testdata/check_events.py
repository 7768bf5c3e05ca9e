"""Reads TensorBoard event files with the Python protobuf runtime.

Usage: check_events.py PROTO_OUT_DIR EVENT_FILE...

PROTO_OUT_DIR holds the modules protoc --python_out generated from
tensorboard/internal/tbpb/proto. Every record's framing and both masked
CRC-32C checksums are verified independently of the Go code, every payload is
parsed as tensorboard.Event, plugin data is parsed with the plugins' own
messages, and one JSON object per event is printed for the Go test to compare.
"""
import json
import struct
import sys

sys.path.insert(0, sys.argv[1])

from tensorboard.compat.proto import event_pb2  # noqa: E402
from tensorboard.plugins.custom_scalar import layout_pb2  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2 as hparams_pb2  # noqa: E402
from tensorboard.plugins.pr_curve import plugin_data_pb2 as pr_pb2  # noqa: E402
from tensorboard.plugins.text import plugin_data_pb2 as text_pb2  # noqa: E402


def crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


TABLE = crc32c_table()


def masked_crc(data):
    c = 0xFFFFFFFF
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    c ^= 0xFFFFFFFF
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    off = 0
    while off < len(data):
        head = data[off:off + 8]
        (length,) = struct.unpack("<Q", head)
        (crc,) = struct.unpack("<I", data[off + 8:off + 12])
        if crc != masked_crc(head):
            raise SystemExit("length CRC mismatch at offset %d" % off)
        payload = data[off + 12:off + 12 + length]
        (crc,) = struct.unpack("<I", data[off + 12 + length:off + 16 + length])
        if crc != masked_crc(payload):
            raise SystemExit("payload CRC mismatch at offset %d" % off)
        yield payload
        off += 16 + length


def describe(value):
    out = {"tag": value.tag, "kind": value.WhichOneof("value")}
    plugin = value.metadata.plugin_data
    out["plugin"] = plugin.plugin_name
    kind = out["kind"]
    if kind == "simple_value":
        out["scalar"] = value.simple_value
    elif kind == "histo":
        out["num"] = value.histo.num
        out["buckets"] = sum(value.histo.bucket)
    elif kind == "image":
        out["png"] = value.image.encoded_image_string[:4] == b"\x89PNG"
        out["size"] = [value.image.width, value.image.height]
    elif kind == "audio":
        out["wav"] = value.audio.encoded_audio_string[:4] == b"RIFF"
    elif kind == "tensor":
        out["dims"] = [d.size for d in value.tensor.tensor_shape.dim]
    if plugin.plugin_name == "hparams":
        data = hparams_pb2.HParamsPluginData.FromString(plugin.content)
        which = data.WhichOneof("data")
        out["hparams"] = which
        if which == "session_start_info":
            hp = data.session_start_info.hparams
            out["values"] = {k: hp[k].WhichOneof("kind") for k in hp}
    elif plugin.plugin_name == "pr_curves":
        out["thresholds"] = pr_pb2.PrCurvePluginData.FromString(plugin.content).num_thresholds
    elif plugin.plugin_name == "text":
        text_pb2.TextPluginData.FromString(plugin.content)
        out["text"] = value.tensor.string_val[0].decode()
    elif plugin.plugin_name == "custom_scalars":
        layout = layout_pb2.Layout.FromString(value.tensor.string_val[0])
        out["categories"] = [c.title for c in layout.category]
    return out


def main():
    for path in sys.argv[2:]:
        for payload in records(path):
            ev = event_pb2.Event.FromString(payload)
            obj = {"step": ev.step, "what": ev.WhichOneof("what")}
            if obj["what"] == "file_version":
                obj["file_version"] = ev.file_version
            elif obj["what"] == "summary":
                obj["values"] = [describe(v) for v in ev.summary.value]
            elif obj["what"] == "graph_def":
                from tensorboard.compat.proto import graph_pb2
                g = graph_pb2.GraphDef.FromString(ev.graph_def)
                obj["nodes"] = [[n.name, n.op, list(n.input)] for n in g.node]
            print(json.dumps(obj, sort_keys=True))


main()
