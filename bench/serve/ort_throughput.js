// Throughput of one ONNX Runtime session (npm onnxruntime-node) under
// concurrent clients, the ORT line of bench/serve/run.sh.
//
//   node ort_throughput.js MODEL.onnx INPUT.npy THREADS CLIENTS REQUESTS
//
// CLIENTS async loops share REQUESTS runs of one session created with
// THREADS intra-op threads, after 5 warm-up runs. Prints one line:
// requests=… throughput=R/s p50_ms=… p95_ms=… p99_ms=… peak_rss_mb=…
// The input must be a little-endian float32 or int64 .npy file.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

function readNpy(path) {
  const b = fs.readFileSync(path);
  if (b.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(path + ': not an .npy file');
  const major = b[6];
  const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = b.toString('latin1', start, start + hlen);
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const bytes = b.buffer.slice(b.byteOffset + start + hlen, b.byteOffset + b.length);
  if (header.includes("'<f4'")) return new ort.Tensor('float32', new Float32Array(bytes), shape);
  if (header.includes("'<i8'")) return new ort.Tensor('int64', new BigInt64Array(bytes), shape);
  throw new Error(path + ': want little-endian float32 or int64, header ' + header);
}

async function main() {
  const [model, input, threads, clients, requests] = process.argv.slice(2);
  const sess = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = { [sess.inputNames[0]]: readNpy(input) };
  for (let i = 0; i < 5; i++) await sess.run(feeds);
  const total = Number(requests);
  const lat = [];
  let next = 0;
  const t0 = process.hrtime.bigint();
  async function client() {
    while (next < total) {
      next++;
      const s = process.hrtime.bigint();
      await sess.run(feeds);
      lat.push(Number(process.hrtime.bigint() - s) / 1e6);
    }
  }
  await Promise.all(Array.from({ length: Number(clients) }, client));
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  lat.sort((a, b) => a - b);
  const q = (p) => lat[Math.min(lat.length - 1, Math.max(0, Math.ceil(p * lat.length) - 1))].toFixed(2);
  const rss = (process.resourceUsage().maxRSS / 1024).toFixed(1);
  console.log(`requests=${lat.length} throughput=${(lat.length / wall).toFixed(2)}/s p50_ms=${q(0.5)} p95_ms=${q(0.95)} p99_ms=${q(0.99)} peak_rss_mb=${rss}`);
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});
