// The explorer on the page: every element <div class="attnxai-explorer"> becomes a text box whose
// text is explained as the reader types (book/explore.md; compact versions in chapters 2, 3, 5, 9).
//
// Attributes of the element: data-variant "full" (loads the model at once) or "compact" (loads it
// when the reader starts: focus, typing or the Explain button); data-methods, the labels shown
// (default: every method of model.json); data-text, the text it starts with.
//
// The model's tables (model.json, model.bin beside this file, written by attnxai.explorer.export
// when the book is built) are fetched once per page. The prediction, attention and gradients are
// computed here; the closed forms (IG, LIME's limit, Shapley values) head by head in a pool of
// workers (worker.js), or here where workers are unavailable (and until they have started: the
// first result does not wait for them). Nothing leaves the page.
//
// For scripts (the book's tests, a reader's console): element.explorer is the Explorer, with
// .json() (the copy-as-JSON content), .seq (updates finished), .timings.
import {explain as explainHere, explainFast, modelFrom, readText, toJSON} from "./core.js";

const BASE = new URL("./", import.meta.url);
const DEBOUNCE_MS = 150;
const TOWARDS = [46, 125, 50], AWAY = [198, 40, 40];       // attnxai.chapters.plots
const COSTS = {"Shapley (replace)": 2, "LIME limit (replace)": 1, "IG": 1};

// ---------------------------------------------------------------- the model and the workers
let shared = null;
/** The model and the pool, fetched and started once per page. */
function resources() {
  if (!shared) shared = (async () => {
    if (location.protocol === "file:")
      throw new Error("the explorer needs the book served over HTTP (a page opened from a file " +
        "cannot load its model): run `python -m http.server -d _build/html 8000` and open " +
        "http://localhost:8000");
    const get = async (name, read) => {                    // both files at once
      const r = await fetch(new URL(name, BASE));
      if (!r.ok) throw new Error(`the explorer's model is missing (${name}: HTTP ${r.status})`);
      return read(r);
    };
    const [meta, buffer] = await Promise.all([get("model.json", r => r.json()),
                                              get("model.bin", r => r.arrayBuffer())]);
    if (meta.binary.file !== "model.bin") throw new Error(`model.json names ${meta.binary.file}`);
    const model = modelFrom(meta, buffer);
    return {model, pool: Pool.start(meta, buffer)};
  })();
  return shared;
}

class Pool {
  static start(meta, buffer) {
    const size = Math.max(1, Math.min(navigator.hardwareConcurrency || 1, 6));
    if (typeof Worker === "undefined" || size < 2) return null;
    try { return new Pool(meta, buffer, size); } catch (e) { return null; }
  }

  constructor(meta, buffer, size) {
    this.size = size;
    this.next = 1;
    this.started = 0;                                   // workers that hold the model
    this.waiting = new Map();
    const light = {...meta, words: null};              // a worker reads no text: no word list
    this.workers = Array.from({length: size}, () => {
      const w = new Worker(new URL("worker.js", BASE), {type: "module"});
      w.onmessage = (e) => this.receive(e.data);
      w.postMessage({type: "init", meta: light, buffer: buffer.slice(0)});
      return w;
    });
  }

  /** Whether every worker holds the model (until then the page computes in its own thread, so
   * that the first result does not wait for the workers to start). */
  get ready() { return this.started === this.size; }

  receive(msg) {
    if (msg.type === "ready") { this.started++; return; }
    const job = this.waiting.get(msg.id);
    if (!job) return;
    job.results.push(...msg.results);
    if (--job.left === 0) { this.waiting.delete(msg.id); job.resolve(job.results); }
  }

  /** The head tasks [label, k] of `labels` for the document `rows`, spread over the workers
   * (the costliest first, each to the least loaded): resolves to their results. */
  run(rows, labels, K) {
    const tasks = labels.flatMap(l => Array.from({length: K}, (_, k) => [l, k]))
      .sort((a, b) => (COSTS[b[0]] || 1) - (COSTS[a[0]] || 1));
    const load = new Array(this.size).fill(0), parts = this.workers.map(() => []);
    for (const t of tasks) {
      const i = load.indexOf(Math.min(...load));
      parts[i].push(t); load[i] += COSTS[t[0]] || 1;
    }
    return new Promise(resolve => {
      const used = parts.map((p, i) => [p, i]).filter(([p]) => p.length);
      const id = this.next++;
      this.waiting.set(id, {left: used.length, results: [], resolve});
      for (const [p, i] of used) this.workers[i].postMessage({type: "run", id, rows, tasks: p});
    });
  }
}

/** The closed forms of `labels` for `doc`: in the pool, else here. {scores, errors}. */
async function closedForms(res, doc, labels) {
  const {model, pool} = res;
  if (!labels.length) return {scores: {}, errors: {}};
  if (!pool || !pool.ready) {
    const r = explainHere(model, doc);
    const pick = o => Object.fromEntries(Object.entries(o).filter(([k]) => labels.includes(k)));
    return {scores: pick(r.scores), errors: pick(r.errors)};
  }
  const results = await pool.run(doc.rows, labels, model.K);
  const n = doc.rows.length, scores = {}, errors = {};
  for (const r of results) {
    if (r.error) { errors[r.label] = r.error; continue; }
    const sum = scores[r.label] || (scores[r.label] = new Float64Array(n));
    for (let j = 0; j < n; j++) sum[j] += r.values[j];
  }
  for (const l of Object.keys(errors)) delete scores[l];
  return {scores, errors};
}

// ---------------------------------------------------------------- colours and numbers
function shade(rgb, strength) { return rgb.map(c => Math.round(255 - strength * (255 - c))); }
function luminance(rgb) {
  const lin = rgb.map(c => { c /= 255; return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
}
function contrast(a, b) {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}
/** A score to read: 3 significant digits, a sign, never "-0"; powers of ten below 0.001 and
 * from 10,000 ("1.08e-6", never "0.00000108"). */
export function fmt(x) {
  if (!Number.isFinite(x)) return "n/a";
  if (x === 0) return "0";
  const a = Math.abs(x);
  const s = a < 1e-3 || a >= 1e4 ? a.toExponential(2) : a.toPrecision(3);
  return (x < 0 ? "\u2212" : "+") + s;
}
function pct(x) { return (100 * x).toFixed(1) + " %"; }

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== false && v != null) e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

// ---------------------------------------------------------------- one explorer
let counter = 0;

class Explorer {
  constructor(root) {
    this.root = root;
    this.id = `attnxai-explorer-${++counter}`;
    this.variant = root.dataset.variant === "compact" ? "compact" : "full";
    this.only = root.dataset.methods ? root.dataset.methods.split(",").map(s => s.trim()) : null;
    this.seq = 0;
    this.started = 0;
    this.timer = null;
    this.timings = {updates: []};
    this.result = null;
    this.build(root.dataset.text || "");
    root.explorer = this;
  }

  build(text) {
    const id = this.id, compact = this.variant === "compact";
    this.root.replaceChildren();
    this.root.classList.add("ax-explorer");
    this.text = el("textarea", {id: `${id}-text`, rows: compact ? 3 : 6, spellcheck: "false",
      "aria-describedby": `${id}-help`, class: "ax-text"});
    this.text.value = text;
    this.text.addEventListener("input", () => this.schedule());
    this.text.addEventListener("focus", () => this.start());
    this.status = el("div", {id: `${id}-status`, class: "ax-status", role: "status", "aria-live": "polite"});
    this.copyBtn = el("button", {type: "button", class: "ax-button", text: "Copy as JSON",
      onclick: () => this.copy()});
    this.goBtn = compact ? el("button", {type: "button", class: "ax-button", text: "Explain this text",
      onclick: () => this.start(true)}) : null;
    this.copied = el("span", {class: "ax-copied", role: "status", "aria-live": "polite"});
    this.methodBox = el("fieldset", {class: "ax-choice"}, el("legend", {text: "Shade the tokens by"}));
    this.viewBox = el("fieldset", {class: "ax-choice"}, el("legend", {text: "Show"}));
    for (const [value, label] of [["shading", "shaded tokens"], ["table", "a table of every score"]]) {
      const input = el("input", {type: "radio", name: `${id}-view`, id: `${id}-view-${value}`, value,
        checked: value === "shading", onchange: () => this.render()});
      this.viewBox.append(el("span", {class: "ax-option"}, input, el("label", {for: input.id, text: label})));
    }
    this.prediction = el("p", {class: "ax-prediction"});
    this.notes = el("ul", {class: "ax-notes"});
    this.view = el("div", {class: "ax-view"});
    this.details = el("details", {class: "ax-model", hidden: true},
      el("summary", {text: "Which model answered"}));
    this.controls = el("div", {class: "ax-controls", hidden: true}, this.methodBox, this.viewBox);
    this.timing = el("p", {class: "ax-timing"});
    this.root.append(
      el("label", {for: this.text.id, class: "ax-label",
        text: compact ? "Try it on your own text" : "Your review (English)"}),
      this.text,
      el("p", {id: `${id}-help`, class: "ax-help", text: "The scores update as you type. The text is " +
        "read as the package reads it (letters and digits, lower case, the first 255 tokens); " +
        "everything is computed in your browser, nothing is sent anywhere."}),
      el("div", {class: "ax-actions"}, this.goBtn, this.copyBtn, this.copied),
      this.prediction, this.status, this.notes,
      this.controls,
      this.view, this.timing, this.details);
    this.copyBtn.disabled = true;
    this.say(compact ? "The explorer loads the model (a few MB, once) when you start typing or " +
      "press Explain this text." : "Loading the model\u2026");
  }

  say(text) { this.status.textContent = text; }

  /** Load the model (once) and explain the current text; resolves once the first result is
   * shown (or the reason there is none). */
  start(now = false) {
    if (!this.starting) {
      this.say("Loading the model\u2026");
      this.starting = resources().then(res => {
        this.res = res;
        this.setupModel(res.model);
        return this.update();
      }, err => {
        this.root.dataset.state = "error";
        this.say(`The explorer could not start: ${err.message}`);
      });
    } else if (now && this.res) this.update();
    return this.starting;
  }

  labels() {
    const all = this.res.model.meta.methods.map(m => m.label);
    return this.only ? all.filter(l => this.only.includes(l)) : all;
  }

  setupModel(model) {
    const labels = this.labels();
    const about = Object.fromEntries(model.meta.methods.map(m => [m.label, m.about]));
    for (const [i, label] of labels.entries()) {
      const input = el("input", {type: "radio", name: `${this.id}-method`, id: `${this.id}-method-${i}`,
        value: label, checked: i === labels.length - 1, onchange: () => this.render()});
      this.methodBox.append(el("span", {class: "ax-option"}, input,
        el("label", {for: input.id, text: label, title: about[label]})));
    }
    const info = model.meta.model, fp = info.fingerprint || {};
    const rows = [
      ["model", info.model],
      ["weights sha256", fp.weights_sha256],
      ["test accuracy", info.test_accuracy != null ? `${pct(info.test_accuracy)} on ${info.n_test} reviews` : null],
      ["origin", typeof info.origin === "string" ? info.origin : info.origin && info.origin.url],
      ["trained with", fp.torch ? `torch ${fp.torch}, ${fp.threads} thread(s)` : null],
      ["exported tables", `model.bin, ${(model.meta.binary.bytes / 1e6).toFixed(2)} MB, sha256 ${model.meta.binary.sha256}`],
    ].filter(([, v]) => v);
    const dl = el("dl");
    for (const [k, v] of rows) dl.append(el("dt", {text: k}), el("dd", {text: v}));
    this.controls.hidden = false;
    this.details.hidden = false;
    this.details.append(dl, el("p", {text: "python -m attnxai info prints the same model name and " +
      "weights sha256 for the cached model that the book was built with."}));
  }

  schedule() {
    if (!this.res) { this.start(); return; }
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.update(), DEBOUNCE_MS);
  }

  /** Explain the text now; resolves once this update is shown (a newer one may replace it). */
  async update() {
    const {model} = this.res;
    const mine = ++this.started;
    const t0 = performance.now();
    this.root.dataset.state = "computing";
    const doc = readText(model, this.text.value);
    if (doc.error) {
      this.result = {doc, error: doc.error};
      this.finish(mine, t0, null);
      return;
    }
    const labels = this.labels();
    const fast = explainFast(model, doc);
    const t1 = performance.now();
    const workers = !!(this.res.pool && this.res.pool.ready);
    const closed = await closedForms(this.res, doc, labels.filter(l => !(l in fast.scores)));
    if (mine !== this.started) return;                    // a newer text is being explained
    const scores = {}, errors = {};
    for (const l of labels) {
      if (l in fast.scores) scores[l] = fast.scores[l];
      else if (l in closed.scores) scores[l] = closed.scores[l];
      else errors[l] = closed.errors[l] || "not computed";
    }
    this.result = {doc, res: {...fast, scores, errors}};
    this.finish(mine, t0, {fast_ms: t1 - t0, workers});
  }

  finish(mine, t0, parts) {
    if (mine !== this.started) return;
    this.render();
    const ms = performance.now() - t0;
    this.seq++;
    const nav = performance.getEntriesByType("navigation")[0];
    if (this.timings.first == null) {
      this.timings.first = performance.now();
      this.timings.first_after_load = nav && nav.loadEventEnd ? performance.now() - nav.loadEventEnd : null;
    }
    this.timings.last = {ms, tokens: this.result.doc.tokens ? this.result.doc.tokens.length : 0, ...parts};
    this.timings.updates.push(this.timings.last);
    if (this.timings.updates.length > 50) this.timings.updates.shift();
    const pool = this.res.pool;
    this.timing.textContent = this.result.error ? "" : `Computed in ${Math.round(ms)} ms in your ` +
      `browser (${parts && parts.workers ? pool.size + " workers" : "one thread"}).`;
    this.root.dataset.state = this.result.error ? "refused" : "ready";
    this.root.dataset.seq = String(this.seq);
    if (window.attnxaiSettle) window.attnxaiSettle();         // wide content: the book's cues
  }

  /** What Copy as JSON copies (null before the first result). */
  json() {
    const r = this.result;
    if (!r) return null;
    if (r.error) return {text: this.text.value, error: r.error, model: this.res.model.meta.model.model};
    return toJSON(this.res.model, r.doc, r.res);
  }

  async copy() {
    const data = this.json();
    if (!data) return;
    const text = JSON.stringify(data, null, 1);
    try {
      await navigator.clipboard.writeText(text);
      this.copied.textContent = `Copied (${text.length.toLocaleString("en")} characters of JSON).`;
    } catch (e) {
      const area = el("textarea", {class: "ax-offscreen", "aria-hidden": "true"});
      area.value = text;
      document.body.append(area);
      area.select();
      const ok = document.execCommand && document.execCommand("copy");
      area.remove();
      this.copied.textContent = ok ? `Copied (${text.length.toLocaleString("en")} characters of JSON).`
                                   : "Your browser refused to copy: use the table view instead.";
    }
  }

  // ---------------------------------------------------------------- rendering
  render() {
    const r = this.result;
    if (!r) return;
    this.notes.replaceChildren();
    this.view.replaceChildren();
    this.copyBtn.disabled = false;
    if (r.error) {
      this.prediction.textContent = "";
      this.say(`Nothing to explain: ${r.error}.`);
      return;
    }
    const {doc, res} = r, model = this.res.model;
    const names = model.meta.class_names, p = res.probability[model.target];
    this.prediction.textContent = `Predicted: ${names[res.predicted]} (P(${names[model.target]}) = ` +
      `${p.toFixed(3)}; logits ${res.logits.map(fmt).join(", ")}).`;
    const notes = [];
    if (doc.cut > 0) notes.push(`The text has ${doc.nTokens} tokens and the model reads ` +
      `${doc.tokens.length}: the last ${doc.cut} were cut from every explanation.`);
    if (doc.unknown.length) notes.push(`${doc.unknown.length} word(s) unknown to the model, read as ` +
      `UNK: ${doc.unknown.slice(0, 8).join(", ")}${doc.unknown.length > 8 ? " \u2026" : ""}.`);
    if (doc.dropped.length) notes.push(`${doc.dropped.length} character(s) outside A-Z and 0-9 ` +
      `were dropped (the model reads only ASCII letters and digits): ${doc.dropped.slice(0, 8).join(" ")}` +
      `${doc.dropped.length > 8 ? " \u2026" : ""}.`);
    for (const [l, e] of Object.entries(res.errors)) notes.push(`${l}: not computed, ${e}.`);
    for (const n of notes) this.notes.append(el("li", {text: n}));
    const label = this.selected();
    const view = this.root.querySelector(`input[name="${this.id}-view"]:checked`).value;
    if (view === "table") this.view.append(this.table(doc, res));
    else if (res.scores[label]) this.view.append(this.shading(doc, res, label));
    else this.view.append(el("p", {text: `${label}: not computed on this text (see above).`}));
    this.say(this.summary(doc, res, label, notes));
  }

  selected() {
    const c = this.root.querySelector(`input[name="${this.id}-method"]:checked`);
    return c ? c.value : this.labels()[0];
  }

  summary(doc, res, label, notes) {
    const names = this.res.model.meta.class_names;
    let s = `Predicted ${names[res.predicted]}, P(${names[this.res.model.target]}) = ` +
      `${res.probability[this.res.model.target].toFixed(2)}, ${doc.tokens.length} tokens.`;
    const w = res.scores[label];
    if (w) {
      let hi = 0, lo = 0;
      for (let i = 1; i < w.length; i++) { if (w[i] > w[hi]) hi = i; if (w[i] < w[lo]) lo = i; }
      s += ` ${label}: strongest push towards ${names[this.res.model.target]}: ` +
        `"${doc.tokens[hi]}" (${fmt(w[hi])})`;
      s += w[lo] < 0 ? `; strongest push away: "${doc.tokens[lo]}" (${fmt(w[lo])}).` :
        "; no token pushes away.";
    }
    if (notes.length) s += ` ${notes.length} note(s) below the prediction.`;
    return s;
  }

  /** The tokens shaded by the book's colour key (attnxai.shading.token_html). */
  shading(doc, res, label) {
    const w = res.scores[label];
    let top = 0;
    for (const x of w) if (Number.isFinite(x)) top = Math.max(top, Math.abs(x));
    top = top || 1;
    const about = this.res.model.meta.methods.find(m => m.label === label).about;
    const towards = `"${this.res.model.meta.class_names[this.res.model.target]}"`;
    const swatch = rgb => el("span", {class: "ax-swatch", style: `background: rgb(${rgb.join(",")})`});
    const key = el("div", {class: "attnxai-key"},
      `Shaded: each token's ${label} score for logit ${this.res.model.target}, from ${about}. `,
      swatch(TOWARDS), `towards ${towards}, `, swatch(AWAY),
      "away (underlined); strength |weight| / largest |weight| of the row (the table view lists every score).");
    const row = el("div", {class: "attnxai-row"});
    doc.tokens.forEach((tok, i) => {
      const x = w[i];
      const span = el("span", {class: "attnxai-tok", "data-weight": String(x), title: fmt(x), text: tok});
      if (Number.isFinite(x)) {
        const bg = shade(x >= 0 ? TOWARDS : AWAY, Math.min(Math.abs(x) / top, 1));
        span.style.background = `rgb(${bg.join(",")})`;
        span.style.color = contrast(bg, [255, 255, 255]) > contrast(bg, [0, 0, 0]) ? "#fff" : "#000";
        if (x < 0) span.style.textDecoration = "underline";
      }
      row.append(span, " ");
    });
    return el("div", {class: "attnxai-shading ax-shading"}, key, row);
  }

  /** Every score as text, one row per token. */
  table(doc, res) {
    const labels = this.labels();
    const head = el("tr", {}, el("th", {scope: "col", text: "#"}), el("th", {scope: "col", text: "token"}),
      ...labels.map(l => el("th", {scope: "col", text: l})));
    const body = el("tbody");
    doc.tokens.forEach((tok, i) => body.append(el("tr", {},
      el("td", {text: String(i + 1)}), el("th", {scope: "row", text: tok}),
      ...labels.map(l => el("td", {text: res.scores[l] ? fmt(res.scores[l][i]) : "n/a"})))));
    const table = el("table", {class: "ax-table"},
      el("caption", {text: `Each token's score for logit ${this.res.model.target} ` +
        `("${this.res.model.meta.class_names[this.res.model.target]}"), by explainer`}),
      el("thead", {}, head), body);
    return el("div", {class: "ax-table-box attnxai-scroll", tabindex: "0",
      "aria-label": "table of scores (scrolls sideways)"}, table);
  }
}

// ---------------------------------------------------------------- the page
const explorers = Array.from(document.querySelectorAll(".attnxai-explorer"), root => new Explorer(root));
// The book's script (attnxai.js) measures a page once it has settled: a full explorer's first
// result is part of the page, so the page settles after it.
window.attnxaiPending = window.attnxaiPending || [];
for (const x of explorers) if (x.variant === "full") window.attnxaiPending.push(x.start());
