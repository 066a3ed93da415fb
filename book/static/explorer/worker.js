// A worker of the explorer's pool (ui.js): it holds a copy of the model's tables and computes the
// closed forms' head tasks it is given (core.js runHead), so that the page stays responsive and
// the heads run in parallel on a machine with several cores.
import {modelFrom, prepare, runHead} from "./core.js";

let model = null;

self.onmessage = (event) => {
  const msg = event.data;
  if (msg.type === "init") {
    model = modelFrom(msg.meta, msg.buffer);
    self.postMessage({type: "ready"});
    return;
  }
  if (msg.type === "run") {
    const t0 = performance.now();
    const f = prepare(model, msg.rows);
    const results = msg.tasks.map(([label, k]) => ({label, k, ...runHead(model, f, label, k)}));
    self.postMessage({id: msg.id, results, ms: performance.now() - t0});
  }
};
