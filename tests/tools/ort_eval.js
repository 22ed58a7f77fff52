// Runs an ONNX model in onnxruntime (CPU) over raw float32 samples and writes the argmax of each output row, or
// with "values" last the output itself as float32 (a regression's predictions).
//   node ort_eval.js MODEL.onnx INPUTS.f32 DIMS(comma-separated, per sample) PREDICTIONS.i32 [values]
// Prints one JSON line: {"samples", "classes", "input", "output"}.
const fs = require('fs');
const ort = require('onnxruntime-node');

async function main() {
  const [model, inputsPath, dimsText, outPath, mode] = process.argv.slice(2);
  const dims = dimsText.split(',').map(Number);
  const perSample = dims.reduce((a, b) => a * b, 1);
  const bytes = fs.readFileSync(inputsPath);
  const all = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  const samples = all.length / perSample;
  const session = await ort.InferenceSession.create(model, { executionProviders: ['cpu'] });
  const inputName = session.inputNames[0], outputName = session.outputNames[0];
  const predictions = new Int32Array(samples);
  const values = [];
  let classes = 0;
  const batch = 500;
  for (let start = 0; start < samples; start += batch) {
    const n = Math.min(batch, samples - start);
    const data = all.slice(start * perSample, (start + n) * perSample);
    const result = await session.run({ [inputName]: new ort.Tensor('float32', data, [n, ...dims]) });
    const logits = result[outputName];
    classes = logits.dims[1];
    for (let i = 0; i < n * classes; ++i) values.push(logits.data[i]);
    for (let i = 0; i < n; ++i) {
      let best = 0;
      for (let c = 1; c < classes; ++c)
        if (logits.data[i * classes + c] > logits.data[i * classes + best]) best = c;
      predictions[start + i] = best;
    }
  }
  const out = mode === 'values' ? new Float32Array(values) : predictions;
  fs.writeFileSync(outPath, Buffer.from(out.buffer));
  console.log(JSON.stringify({ samples, classes, input: inputName, output: outputName }));
}

main().catch((error) => { console.error(String(error)); process.exit(1); });
