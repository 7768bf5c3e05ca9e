// Runs ONNX models written by Ember's onnx.Export in ONNX Runtime
// (npm onnxruntime-node, installed with ONNXRUNTIME_NODE_INSTALL=skip) for
// the Go test onnx/export_ort_test.go.
//
// Usage: node run_onnxruntime.js MANIFEST.json
// The manifest lists runs: {"model": "m.onnx", "inputs": [{"name": "input_0",
// "dtype": "float32"|"int64", "shape": [1, 3], "file": "x.bin"}],
// "outputs": [{"name": "output_0", "file": "y.bin"}]}. Input files hold
// little-endian values; each output is written as little-endian float32 and
// its shape is added to the manifest printed on stdout.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

ort.env.logLevel = 'error';

async function main() {
  const runs = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  for (const run of runs) {
    const session = await ort.InferenceSession.create(run.model, { graphOptimizationLevel: 'all', logSeverityLevel: 3 });
    const feeds = {};
    for (const input of run.inputs) {
      const buf = fs.readFileSync(input.file);
      const bytes = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
      const data = input.dtype === 'int64' ? new BigInt64Array(bytes) : new Float32Array(bytes);
      feeds[input.name] = new ort.Tensor(input.dtype, data, input.shape);
    }
    const results = await session.run(feeds);
    for (const output of run.outputs) {
      const t = results[output.name];
      if (!t) throw new Error(`${run.model}: no output ${output.name}`);
      const data = Float32Array.from(t.data, Number);
      fs.writeFileSync(output.file, Buffer.from(data.buffer));
      output.shape = t.dims.map(Number);
    }
  }
  process.stdout.write(JSON.stringify(runs));
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});
