// Times ONNX Runtime (npm onnxruntime-node) on one model and input, for
// bench/onnx/compare.sh.
//
//   node ort_bench.js MODEL.onnx INPUT.npy THREADS ITERS [REFERENCE.npy]
//
// Prints one JSON line: median and min latency in ms over ITERS runs (after
// 5 warm-up runs), peak RSS in MiB, and the largest absolute difference
// from REFERENCE.npy when given. The input must be a little-endian float32
// .npy file (what gen_onnx_zoo.py writes).
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

function readNpy(path) {
  const b = fs.readFileSync(path);
  if (b.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(path + ': not an .npy file');
  const major = b[6];
  const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12);
  const header = b.toString('latin1', start, start + hlen);
  if (!header.includes("'<f4'")) throw new Error(path + ': want little-endian float32, header ' + header);
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const off = start + hlen;
  const data = new Float32Array(b.buffer.slice(b.byteOffset + off, b.byteOffset + b.length));
  return { shape, data };
}

async function main() {
  const [model, input, threads, iters, ref] = process.argv.slice(2);
  const sess = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const x = readNpy(input);
  const feeds = { [sess.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) };
  let out;
  for (let i = 0; i < 5; i++) out = await sess.run(feeds);
  const times = [];
  for (let i = 0; i < Number(iters); i++) {
    const t0 = process.hrtime.bigint();
    out = await sess.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  const res = {
    engine: 'onnxruntime-node ' + require('onnxruntime-node/package.json').version,
    threads: Number(threads),
    median_ms: times[Math.floor(times.length / 2)],
    min_ms: times[0],
    peak_rss_mib: process.resourceUsage().maxRSS / 1024,
  };
  if (ref) {
    const r = readNpy(ref);
    const y = out[sess.outputNames[0]].data;
    let d = 0;
    for (let i = 0; i < r.data.length; i++) d = Math.max(d, Math.abs(y[i] - r.data[i]));
    res.max_abs_diff = d;
  }
  console.log(JSON.stringify(res));
}

main().catch(e => { console.error(e); process.exit(1); });
