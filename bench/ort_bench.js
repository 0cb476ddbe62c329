// ONNX Runtime's side of bench/bench-vs-onnxruntime and of export-onnx's
// check: runs an ONNX model (scripts/export-onnx's: ids (B, T) int64 ->
// probs (B, K)) on batches given as JSON, with ONNX Runtime's CPU build
// (npm onnxruntime-node).
//
// usage: node ort_bench.js MODEL.onnx BATCHES.json probs
//          prints the probabilities of every batch's rows, as JSON
//        node ort_bench.js MODEL.onnx BATCHES.json bench THREADS SECONDS
//          whole passes over the batches (at least one) until SECONDS have
//          passed, after one untimed pass; prints examples/s as JSON
// BATCHES.json: [{"rows": B, "seq": T, "ids": [B*T ids]}, ...]
"use strict";
const fs = require("fs");
const path = require("path");
const ort = require(process.env.ORT_NODE_MODULE || "onnxruntime-node");

async function main() {
  const [model, batchesPath, mode, threads = "1", seconds = "5"] = process.argv.slice(2);
  const batches = JSON.parse(fs.readFileSync(batchesPath, "utf8")).map((b) => ({
    rows: b.rows,
    tensor: new ort.Tensor("int64", BigInt64Array.from(b.ids.map(BigInt)), [b.rows, b.seq]),
  }));
  const session = await ort.InferenceSession.create(path.resolve(model), {
    intraOpNumThreads: Number(threads),
    interOpNumThreads: 1,
    executionMode: "sequential",
    graphOptimizationLevel: "all",
  });
  if (mode === "probs") {
    const out = [];
    for (const b of batches) {
      const probs = (await session.run({ ids: b.tensor })).probs;
      const k = probs.dims[1];
      for (let r = 0; r < b.rows; ++r) out.push(Array.from(probs.data.slice(r * k, (r + 1) * k)));
    }
    process.stdout.write(JSON.stringify(out) + "\n");
    return;
  }
  const pass = async () => {
    for (const b of batches) await session.run({ ids: b.tensor });
  };
  await pass();  // warm-up
  const examples = batches.reduce((n, b) => n + b.rows, 0);
  let passes = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0;
  while (passes < 1 || elapsed < Number(seconds)) {
    await pass();
    ++passes;
    elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  }
  process.stdout.write(JSON.stringify({ seconds: elapsed, passes, examples: passes * examples,
                                        examples_per_s: (passes * examples) / elapsed, ort: ort.env.versions }) + "\n");
}

main().catch((e) => {
  process.stderr.write(`ort_bench: ${e.stack || e}\n`);
  process.exit(2);
});
