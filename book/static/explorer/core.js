// The explorer's computations: a text read as attnxai.explain reads it, and the page's explainers
// computed from the tables that attnxai.explorer.export writes (model.json, model.bin). No DOM, no
// dependency: the same module runs in the page (ui.js) and in the tests (tests/book/test_explorer.py).
//
// Every function below is a port of the package's, named where it is defined; all arithmetic is
// float64 (JavaScript numbers) on the exported tables (word projections in float32, the rest in
// float64). Shapes follow the package: K heads, C classes, T = n + 1 positions ([CLS] first), D =
// d_embed.
//
//   readText(model, text)      attnxai.explanation.read_document (and normalize_for_lime, Vocab)
//   explain(model, doc)        the prediction and every method of attnxai.explorer.METHODS

export const FORMAT = "attnxai-explorer/1";

// ---------------------------------------------------------------- loading the tables
/** The model of model.json (`meta`) and model.bin (`buffer`, an ArrayBuffer). A `meta` without
 * its word list (a worker's: it computes from rows, never reads a text) gives a model that cannot
 * read a text. */
export function modelFrom(meta, buffer) {
  if (meta.format !== FORMAT) throw new Error(`model.json is ${meta.format}, this page reads ${FORMAT}`);
  if (buffer.byteLength !== meta.binary.bytes)
    throw new Error(`model.bin has ${buffer.byteLength} bytes, model.json says ${meta.binary.bytes}`);
  const arr = {};
  for (const [name, a] of Object.entries(meta.binary.arrays)) {
    const size = a.shape.reduce((x, y) => x * y, 1);
    arr[name] = a.dtype === "f8" ? new Float64Array(buffer, a.offset, size)
                                 : new Float32Array(buffer, a.offset, size);
  }
  const words = new Map();
  const first = meta.rows.first_word;
  (meta.words || []).forEach((w, i) => words.set(w, first + i));
  words.set("unk", meta.rows.unk);            // the vocabulary reads "unk" as UNK (attnxai.text.Vocab)
  const d = meta.dims;
  return {meta, words, K: d.n_heads, C: d.n_classes, D: d.d_embed, maxLen: d.max_len,
          CLS: meta.rows.cls, UNK: meta.rows.unk, target: meta.target, ...arr};
}

/** Fetch and check model.json and model.bin from the folder `base` (a URL). */
export async function loadModel(base) {
  const metaUrl = new URL("model.json", base);
  const meta = await (await okFetch(metaUrl)).json();
  const buffer = await (await okFetch(new URL(meta.binary.file, base))).arrayBuffer();
  return modelFrom(meta, buffer);
}

async function okFetch(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r;
}

// ---------------------------------------------------------------- reading a text
// Python's str.isspace() characters (str.strip), \w (validate.text), [^\W\d_] (text._LETTER).
const PY_SPACE = /^[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/;
const PY_WORD = /[\p{L}\p{N}_]/u;
const PY_LETTER = /[\p{L}\p{Nl}\p{No}]/u;
const MEANING = /[\p{L}\p{N}\p{S}]/u;           // text.dropped_characters: categories L, N, S
const NON_ALNUM = /[^0-9A-Za-z]+/g;             // text._NON_ALNUM

/** Python's repr of a str, as the package's messages quote a text (enough of it for them). */
function pyRepr(s) {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'";
  const body = s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\r/g, "\\r")
    .replace(/\t/g, "\\t").replace(q === "'" ? /'/g : /"/g, "\\" + q);
  return q + body + q;
}

function head40(text) { return Array.from(text).slice(0, 40).join(""); }

/** The tokens of attnxai.tokenize(attnxai.normalize_for_lime(text, any length)). */
export function normalizedTokens(text) {
  return text.replace(NON_ALNUM, " ").toLowerCase().split(" ").filter(Boolean);
}

/** The distinct characters of `text` outside ASCII that carry meaning (letters, digits,
 * symbols such as emoji), which the reading drops (text.dropped_characters). */
export function droppedCharacters(text) {
  const seen = new Set();
  for (const ch of text) if (ch.codePointAt(0) > 127 && MEANING.test(ch)) seen.add(ch);
  return [...seen];
}

/** The document the methods read (attnxai.explanation.read_document): {tokens, rows, nTokens,
 * cut, unknown, dropped, text} or {error}. */
export function readText(model, text) {
  if (typeof text !== "string") return {error: `text must be a str, got ${typeof text}`};
  if (PY_SPACE.test(text)) return {error: "text is empty: there is nothing to explain"};
  if (!PY_WORD.test(text))
    return {error: `text has no letter or digit, so no word to explain: ${pyRepr(head40(text))}`};
  const full = normalizedTokens(text);
  if (full.length === 0) {
    if (PY_LETTER.test(text))
      return {error: `text has letters but none in A-Z (${pyRepr(head40(text))}): normalize_for_lime ` +
        "keeps only ASCII letters and digits (the authors' preprocessing), so nothing is left to " +
        "explain; the model's vocabulary holds only the words of English IMDb reviews"};
    return {error: "text has no alphanumeric character: nothing is left to explain"};
  }
  const tokens = full.slice(0, model.maxLen - 1);
  const rows = tokens.map(w => model.words.get(w) ?? model.UNK);
  if (!rows.some(r => r !== model.UNK))
    return {error: `no word of ${pyRepr(head40(text))} is in the model's vocabulary: all ` +
      `${tokens.length} token(s) are read as the same UNK token, so the model cannot tell them ` +
      "apart and a word-level explanation would only measure rounding noise or the number of UNK " +
      "tokens. Nothing to explain", tokens, nTokens: full.length};
  const unknown = [...new Set(tokens.filter(w => !model.words.has(w)))];
  return {text: tokens.join(" "), tokens, rows, nTokens: full.length, cut: full.length - tokens.length,
          unknown, dropped: droppedCharacters(text)};
}

// ---------------------------------------------------------------- the forward pass
/** Per head the attention logits s[k][t] and value scores v[k][t][c] of the document
 * (attnxai.model.network.DocumentTables: word part + position part), its attention and output. */
function forward(model, rows) {
  const {K, C} = model, T = rows.length + 1;
  const ids = [model.CLS, ...rows];
  const s = [], v = [], alpha = [], out = [];
  for (let k = 0; k < K; k++) {
    const sk = new Float64Array(T), vk = new Float64Array(T * C);
    for (let t = 0; t < T; t++) {
      sk[t] = model.word_score[ids[t] * K + k] + model.pos_score[t * K + k];
      for (let c = 0; c < C; c++)
        vk[t * C + c] = model.word_value[(ids[t] * K + k) * C + c] + model.pos_value[(t * K + k) * C + c];
    }
    const ak = softmax(sk);
    const ok = new Float64Array(C);
    for (let t = 0; t < T; t++) for (let c = 0; c < C; c++) ok[c] += ak[t] * vk[t * C + c];
    s.push(sk); v.push(vk); alpha.push(ak); out.push(ok);
  }
  return {T, ids, s, v, alpha, out};
}

function softmax(x) {
  let m = -Infinity;
  for (const a of x) if (a > m) m = a;
  const e = new Float64Array(x.length);
  let z = 0;
  for (let i = 0; i < x.length; i++) { e[i] = Math.exp(x[i] - m); z += e[i]; }
  for (let i = 0; i < x.length; i++) e[i] /= z;
  return e;
}

// ---------------------------------------------------------------- attention and gradients
/** alpha-avg, alpha-max (explainers.attention) and G-avg, G-l1, G-l2, GxI from the gradient
 * theorem (theory.gradient_theorem: grad_{e_t} f = (1/K) sum_i alpha_t [H_i + (v_t - v~) U_i] for
 * t >= 1, and its corollary for G x I), tokens 1..n. */
function attentionAndGradients(model, f, target) {
  const {K, C, D} = model, n = f.T - 1;
  const out = {"alpha-avg": new Float64Array(n), "alpha-max": new Float64Array(n),
               "G-avg": new Float64Array(n), "G-l1": new Float64Array(n),
               "G-l2": new Float64Array(n), "GxI": new Float64Array(n)};
  const g = new Float64Array(D);
  for (let t = 1; t <= n; t++) {
    g.fill(0);
    let avg = 0, max = -Infinity, gxi = 0;
    for (let k = 0; k < K; k++) {
      const a = f.alpha[k][t], vt = f.v[k][t * C + target], vbar = f.out[k][target];
      avg += a; if (a > max) max = a;
      const key = a * (vt - vbar);
      for (let d = 0; d < D; d++) g[d] += a * model.H[(d * K + k) * C + target] + key * model.U[d * K + k];
      gxi += a * (vt + (vt - vbar) * f.s[k][t]);
    }
    let sum = 0, l1 = 0, l2 = 0;
    for (let d = 0; d < D; d++) { const x = g[d] / K; sum += x; l1 += Math.abs(x); l2 += x * x; }
    out["alpha-avg"][t - 1] = avg / K; out["alpha-max"][t - 1] = max;
    out["G-avg"][t - 1] = sum / D; out["G-l1"][t - 1] = l1; out["G-l2"][t - 1] = Math.sqrt(l2);
    out["GxI"][t - 1] = gxi / K;
  }
  return out;
}

// ---------------------------------------------------------------- quadrature
const gaussCache = new Map();
/** Gauss-Legendre nodes and weights on [0, 1], ascending (theory.shapley_values.gauss_nodes). */
export function gaussNodes(n) {
  if (gaussCache.has(n)) return gaussCache.get(n);
  const x = new Float64Array(n), w = new Float64Array(n);
  for (let i = 0; i < Math.ceil(n / 2); i++) {
    let z = Math.cos(Math.PI * (i + 0.75) / (n + 0.5)), dp = 0;
    for (let it = 0; it < 100; it++) {
      let p0 = 1, p1 = z;
      for (let j = 2; j <= n; j++) { const p2 = ((2 * j - 1) * z * p1 - (j - 1) * p0) / j; p0 = p1; p1 = p2; }
      if (n === 1) { p1 = z; p0 = 1; }
      dp = n * (z * p1 - p0) / (z * z - 1);
      const dz = p1 / dp;
      z -= dz;
      if (Math.abs(dz) < 1e-16) break;
    }
    let p0 = 1, p1 = z;
    for (let j = 2; j <= n; j++) { const p2 = ((2 * j - 1) * z * p1 - (j - 1) * p0) / j; p0 = p1; p1 = p2; }
    if (n === 1) p0 = 1;
    dp = n * (z * p1 - p0) / (z * z - 1);
    const wt = 2 / ((1 - z * z) * dp * dp);
    x[i] = (1 - z) / 2; w[i] = wt / 2;                 // z > 0: the node 1 - z ... ascending
    x[n - 1 - i] = (1 + z) / 2; w[n - 1 - i] = wt / 2;
  }
  const out = {x, w};
  gaussCache.set(n, out);
  return out;
}

const X_LOW = 0.002, X_HIGH = 20.0, MAX_RANGE = 1e250, MAX_LAMBDA_NODES = 4000;

class ClosedFormError extends Error {}

function checkRange(nMin, nMax) {
  if (!(Number.isFinite(nMin) && Number.isFinite(nMax)) || !(nMin > 0))
    throw new ClosedFormError("the attention scores of this model span too wide a range: some " +
      "configuration's softmax denominator is not representable in float64");
  if (nMax / nMin > MAX_RANGE)
    throw new ClosedFormError(`the attention scores of this model span too wide a range: softmax ` +
      `denominators differ by a factor ${nMax / nMin} > 1e250 between configurations`);
}

function countNodes(n) {
  if (n > MAX_LAMBDA_NODES)
    throw new ClosedFormError(`the lambda rule would need ${n} nodes (> ${MAX_LAMBDA_NODES}): the ` +
      "attention scores span too wide a range for the closed forms");
  return n;
}

/** sum_k wTail[k] l_i(uTail[k]) for the Lagrange basis l_i on uNodes (lime_quadrature._tail_weights). */
function tailWeights(uNodes, uTail, wTail) {
  const out = new Float64Array(uNodes.length);
  for (let i = 0; i < uNodes.length; i++) {
    let acc = 0;
    for (let q = 0; q < uTail.length; q++) {
      let li = 1;
      for (let m = 0; m < uNodes.length; m++)
        if (m !== i) li = li * (uTail[q] - uNodes[m]) / (uNodes[i] - uNodes[m]);
      acc += wTail[q] * li;
    }
    out[i] = acc;
  }
  return out;
}

/** lime_quadrature.lambda_rule_profile: the nodes exp(y), y from log(1e-10 / n_max) to
 * log(40 / n_min) by `step` (numpy's arange), those below X_LOW / n_max folded into four. */
function lambdaRuleProfile(nMin, nMax, step) {
  checkRange(nMin, nMax);
  const lo = Math.log(1e-10 / nMax), hi = Math.log(40.0 / nMin);
  countNodes(Math.trunc((hi - lo) / step) + 2);
  const stop = hi + step, len = Math.max(Math.ceil((stop - lo) / step), 0);
  const delta = (lo + step) - lo;                  // numpy's arange fills start + i * delta
  const lam = new Float64Array(len);
  for (let i = 0; i < len; i++) lam[i] = Math.exp(i === 1 ? lo + step : lo + i * delta);
  const wts = lam.map(x => step * x);
  let first = 0;
  const low = X_LOW / nMax;
  while (first < len && lam[first] < low) first++;          // np.searchsorted, side="left"
  first = Math.min(first, Math.max(len - 4, 0));
  if (first === 0) return {lam, wts};
  const keep = lam.slice(first), w = wts.slice(first), u0 = keep[0];
  const k = Math.min(4, keep.length);
  const tw = tailWeights(keep.slice(0, k).map(x => x / u0), lam.slice(0, first).map(x => x / u0),
                         wts.slice(0, first));
  for (let i = 0; i < k; i++) w[i] += tw[i];
  return {lam: keep, wts: w};
}

const doublingTails = new Map();
function doublingTail(ksub) {
  if (!doublingTails.has(ksub)) {
    const h = Math.log(2.0) / ksub, m = Math.trunc(80 / h);
    const uTail = new Float64Array(m);
    for (let i = 0; i < m; i++) uTail[i] = Math.exp(-h * (i + 1));
    const uNodes = Float64Array.from([0, 1, 2, 3], i => Math.exp(h * i));
    doublingTails.set(ksub, tailWeights(uNodes, uTail, uTail.map(u => h * u)));
  }
  return doublingTails.get(ksub);
}

/** lime_quadrature.lambda_rule_doubling: nodes lambda_0 2^(l / ksub) from X_LOW / n_max until
 * lambda n_min >= X_HIGH, the tail below folded into the four lowest. */
function lambdaRuleDoubling(nMin, nMax, ksub) {
  checkRange(nMin, nMax);
  const h = Math.log(2.0) / ksub, lam0 = X_LOW / nMax;
  const span = Math.log(X_HIGH / X_LOW) + Math.log(nMax) - Math.log(nMin);
  const n = countNodes(Math.max(Math.ceil(span / h) + 1, 4));
  const first = Float64Array.from({length: ksub}, (_, j) => lam0 * Math.exp(h * j));
  const lam = Float64Array.from({length: n}, (_, l) => first[l % ksub] * 2.0 ** Math.floor(l / ksub));
  const wts = lam.map(x => h * x);
  const tail = doublingTail(ksub);
  for (let i = 0; i < 4; i++) wts[i] += lam0 * tail[i];
  return {lam, wts};
}

// ---------------------------------------------------------------- replacement by UNK
/** Head k's terms for replacement by UNK in place, every position its own feature
 * (theory.lime_chain.replace_terms): kept gk, hk and replaced gr, hr (n each), [CLS]'s g0, h0. */
function replaceTerms(model, f, k, target) {
  const {K, C} = model, T = f.T;
  const aUnk = model.word_score[model.UNK * K + k];
  const cUnk = model.word_value[(model.UNK * K + k) * C + target];
  const sTok = f.s[k], sUnk = new Float64Array(T);
  let shift = -Infinity;
  for (let t = 0; t < T; t++) {
    sUnk[t] = aUnk + model.pos_score[t * K + k];
    if (sTok[t] > shift) shift = sTok[t];
    if (t >= 1 && sUnk[t] > shift) shift = sUnk[t];
  }
  const n = T - 1;
  const gk = new Float64Array(n), hk = new Float64Array(n), gr = new Float64Array(n), hr = new Float64Array(n);
  const G0 = Math.exp(sTok[0] - shift);
  const h0 = G0 * f.v[k][target];
  let nMin = G0, nMax = G0;
  for (let t = 1; t < T; t++) {
    const G = Math.exp(sTok[t] - shift), Gu = Math.exp(sUnk[t] - shift);
    gk[t - 1] = G; hk[t - 1] = G * f.v[k][t * C + target];
    gr[t - 1] = Gu; hr[t - 1] = Gu * (cUnk + model.pos_value[(t * K + k) * C + target]);
  }
  for (let j = 0; j < n; j++) { nMin += Math.min(gk[j], gr[j]); nMax += Math.max(gk[j], gr[j]); }
  return {gk, hk, gr, hr, g0: G0, h0, nMin, nMax};
}

/** theory.lime_kernels._bernoulli_sums: at each kept fraction p = nodes[i], every feature kept
 * independently with probability p, delta[i * d + j] = E[f | z_j = 1] - E[f | z_j = 0] and phi[i] =
 * E[f] for one head, f = M / N, E[M / N] = sum_l wts[l] E[M exp(-lambda_l (N - g0))]. */
function bernoulliSums(tm, nodes, lam, wts) {
  const d = tm.gr.length, nP = nodes.length;
  const {gk, hk, gr, hr, h0} = tm;
  const delta = new Float64Array(nP * d);                    // delta[i * d + j]
  const phi = new Float64Array(nP);
  const RE = new Float64Array(d), RH = new Float64Array(d), dK = new Float64Array(d), dH = new Float64Array(d);
  const inv = new Float64Array(d), rat = new Float64Array(d), Lv = new Float64Array(d);
  const big = 1e200, tiny = 1e-200, logTiny = Math.log(tiny);
  for (let l = 0; l < lam.length; l++) {
    const lm = lam[l], w = wts[l];
    for (let j = 0; j < d; j++) {             // p KE + (1 - p) RE = RE + p (KE - RE), the same for H
      const re = Math.exp(-lm * gr[j]), ke = Math.exp(-lm * gk[j]);
      RE[j] = re; RH[j] = hr[j] * re; dK[j] = ke - re; dH[j] = hk[j] * ke - RH[j];
    }
    for (let i = 0; i < nP; i++) {
      const p = nodes[i];
      // the product of the factors L_j (a mantissa and powers of 1e-200) and the sum of the
      // ratios r_j, in two interleaved halves: shorter chains of dependent operations
      let m0 = 1.0, m1 = 1.0, e0 = 0, e1 = 0, R0 = 0.0, R1 = 0.0, j = 0;
      for (; j + 1 < d; j += 2) {
        let L0 = RE[j] + p * dK[j], L1 = RE[j + 1] + p * dK[j + 1];
        if (!(L0 >= 1e-300)) L0 = 1e-300;
        if (!(L1 >= 1e-300)) L1 = 1e-300;
        Lv[j] = L0; Lv[j + 1] = L1;
        const i0 = 1.0 / L0, i1 = 1.0 / L1;
        inv[j] = i0; inv[j + 1] = i1;
        const r0 = (RH[j] + p * dH[j]) * i0, r1 = (RH[j + 1] + p * dH[j + 1]) * i1;
        rat[j] = r0; rat[j + 1] = r1;
        R0 += r0; R1 += r1;
        m0 *= L0; m1 *= L1;
        if (m0 < tiny) { m0 *= big; e0 += 1; }
        if (m1 < tiny) { m1 *= big; e1 += 1; }
      }
      for (; j < d; j++) {
        let L0 = RE[j] + p * dK[j];
        if (!(L0 >= 1e-300)) L0 = 1e-300;
        Lv[j] = L0;
        const i0 = 1.0 / L0;
        inv[j] = i0;
        const r0 = (RH[j] + p * dH[j]) * i0;
        rat[j] = r0; R0 += r0; m0 *= L0;
        if (m0 < tiny) { m0 *= big; e0 += 1; }
      }
      let mant = m0 * m1, expo = e0 + e1;                     // (each half in [1e-300, 1])
      if (mant < tiny) { mant = (m0 * big) * m1; expo += 1; }
      if (mant < tiny) { mant *= big; expo += 1; }
      const S = h0 + R0 + R1, off = i * d;
      if (expo < 2) {
        const c = w * mant * (expo === 0 ? 1.0 : Math.exp(logTiny));
        phi[i] += c * S;
        for (let k = 0; k < d; k++) delta[off + k] += c * inv[k] * (dK[k] * (S - rat[k]) + dH[k]);
      } else {
        // the scale 1e-200^expo underflows to 0: only the features whose own factor is tiny
        // (L < 1e-90) carry a conditional term, through logarithms
        const logP = Math.log(mant) + expo * logTiny;
        for (let k = 0; k < d; k++) {
          if (Lv[k] < 1e-90) {
            const q = Math.exp(logP - Math.log(Lv[k]));
            delta[off + k] += w * q * (dK[k] * (S - rat[k]) + dH[k]);
          }
        }
      }
    }
  }
  return {delta, phi};
}

// ---------------------------------------------------------------- LIME's limit (replacement)
/** theory.lime_text.removal_law and lime_quadrature.profile_weights (law "discrete", 25
 * Chebyshev-Lobatto nodes and barycentric interpolation beyond 25 values of p): the nodes in p
 * and the weights U, V of beta_j = sum_i U_i (delta_j(p_i) - mean delta(p_i)) + sum_i V_i Phi(p_i) / d. */
function profileWeights(d, nu, nNodes) {
  const p = new Float64Array(d), wgt = new Float64Array(d);
  let wsum = 0;
  for (let s = 1; s <= d; s++) {
    p[s - 1] = (d - s) / d;
    const dist = 100.0 * (1.0 - Math.sqrt((d - s) / d));
    wgt[s - 1] = Math.sqrt(Math.exp(-(dist * dist) / (nu * nu)));
    wsum += wgt[s - 1];
  }
  if (!(wsum > 0)) throw new ClosedFormError(`kernel_width=${nu} is so small that every perturbation ` +
    `of a ${d}-feature document gets weight 0`);
  const q = wgt.map(x => x / wsum);
  let nodes, B;                                   // B[q][i]: interpolation from the nodes to p[q]
  if (d > nNodes) {
    let lo = Infinity, hi = -Infinity;
    for (const x of p) { if (x < lo) lo = x; if (x > hi) hi = x; }
    nodes = Float64Array.from({length: nNodes},
      (_, i) => lo + (hi - lo) * (1 - Math.cos(Math.PI * i / (nNodes - 1))) / 2);
    const bw = Float64Array.from({length: nNodes}, (_, i) => (i % 2 ? -1 : 1) * (i === 0 || i === nNodes - 1 ? 0.5 : 1));
    B = Array.from(p, xq => {
      const row = new Float64Array(nNodes);
      const hit = nodes.findIndex(x => xq - x === 0);
      if (hit >= 0) { row[hit] = 1; return row; }
      let sum = 0;
      for (let i = 0; i < nNodes; i++) { row[i] = bw[i] / (xq - nodes[i]); sum += row[i]; }
      for (let i = 0; i < nNodes; i++) row[i] /= sum;
      return row;
    });
  } else {
    nodes = p;
    B = Array.from(p, (_, qi) => { const row = new Float64Array(d); row[qi] = 1; return row; });
  }
  let mp = 0, epp = 0;
  for (let i = 0; i < d; i++) { mp += q[i] * p[i]; epp += q[i] * p[i] * (1 - p[i]); }
  let v = 0;
  for (let i = 0; i < d; i++) v += q[i] * (p[i] - mp) ** 2;
  if (!(v > 1e-9 * Math.max(epp, 1e-300) && epp > 0))
    throw new ClosedFormError(d === 1
      ? "LIME's limit is undefined for a text of one token: lime's perturbations then all remove " +
        "that token, so its weighted law of the kept fraction has no variance (the package refuses it too)"
      : `kernel_width=${nu} is so narrow for d=${d} features that the weighted law of the kept ` +
        "fraction has no variance: LIME's limit is undefined");
  const m = nodes.length, U = new Float64Array(m), V = new Float64Array(m);
  for (let i = 0; i < m; i++) {
    let a = 0, b = 0;
    for (let qi = 0; qi < d; qi++) { a += q[qi] * p[qi] * (1 - p[qi]) * B[qi][i]; b += q[qi] * (p[qi] - mp) * B[qi][i]; }
    U[i] = a / epp; V[i] = b / v;
  }
  return {nodes, U, V};
}

/** Head k's share of theory.lime_limit(pre, text, bow=False) with its defaults (law
 * "discrete", 25 nodes in p, lambda step 0.7, lime's kernel width 25): one coefficient per token,
 * divided by K (the limit is the mean over heads of each head's own). */
function limeLimitHead(model, f, k, target) {
  const n = f.T - 1, K = model.K;
  const pw = profileWeights(n, 25.0, 25);
  const tm = replaceTerms(model, f, k, target);
  const rule = lambdaRuleProfile(tm.nMin, tm.nMax, 0.7);
  const wts = rule.wts.map((w, l) => w * Math.exp(-rule.lam[l] * tm.g0));
  const {delta, phi} = bernoulliSums(tm, pw.nodes, rule.lam, wts);
  let slope = 0;
  for (let i = 0; i < pw.nodes.length; i++) slope += pw.V[i] * phi[i];
  const beta = new Float64Array(n).fill(slope / n);
  for (let i = 0; i < pw.nodes.length; i++) {
    let mean = 0;
    for (let j = 0; j < n; j++) mean += delta[i * n + j];
    mean /= n;
    for (let j = 0; j < n; j++) beta[j] += pw.U[i] * (delta[i * n + j] - mean);
  }
  return beta.map(x => x / K);
}

// ---------------------------------------------------------------- Shapley values (replacement)
/** Head k's share of theory.shapley(pre, text, bow=False) with its defaults: Gauss-Legendre in p
 * with min(ceil(d / 2), 25) nodes (exact up to d = 50), the doubling lambda rule with 2 steps per
 * octave; one value per token, divided by K. */
function shapleyHead(model, f, k, target) {
  const n = f.T - 1, K = model.K;
  const {x, w} = gaussNodes(Math.min(Math.max(1, Math.ceil(n / 2)), 25));
  const tm = replaceTerms(model, f, k, target);
  const rule = lambdaRuleDoubling(tm.nMin, tm.nMax, 2);
  const wts = rule.wts.map((v, l) => v * Math.exp(-rule.lam[l] * tm.g0));
  const {delta} = bernoulliSums(tm, x, rule.lam, wts);
  const out = new Float64Array(n);
  for (let i = 0; i < x.length; i++) for (let j = 0; j < n; j++) out[j] += w[i] * delta[i * n + j] / K;
  return out;
}

// ---------------------------------------------------------------- Integrated Gradients
const IG_FIRST = 16, IG_MAX_NODES = 4096, IG_TOL = 1e-12;

/** Head k's share of theory.integrated_gradients(pre, text) from the UNK baseline: the gradient
 * theorem along the straight path, Gauss-Legendre in sigma, the nodes doubled from 16 until two
 * rules agree to 1e-12 of the head's largest attribution (the package asks it of the largest over
 * the heads, a weaker condition: both answers are within 1e-12 of the integral); divided by K. */
function integratedGradientsHead(model, f, k, target) {
  const {K, C} = model, T = f.T;
  const aUnk = model.word_score[model.UNK * K + k];
  const cUnk = model.word_value[(model.UNK * K + k) * C + target];
  const s0 = new Float64Array(T), u0 = new Float64Array(T), ds = new Float64Array(T), du = new Float64Array(T);
  for (let t = 0; t < T; t++) {
    const s1 = f.s[k][t], u1 = f.v[k][t * C + target];
    if (t === 0 || f.ids[t] === model.UNK) { s0[t] = s1; u0[t] = u1; continue; }  // they do not move
    s0[t] = aUnk + model.pos_score[t * K + k];
    u0[t] = cUnk + model.pos_value[(t * K + k) * C + target];
    ds[t] = s1 - s0[t]; du[t] = u1 - u0[t];
  }
  const s = new Float64Array(T), u = new Float64Array(T), e = new Float64Array(T);
  const rule = n => {
    const {x, w} = gaussNodes(n);
    const out = new Float64Array(T);
    for (let i = 0; i < n; i++) {
      let m = -Infinity;
      for (let t = 0; t < T; t++) { s[t] = s0[t] + x[i] * ds[t]; if (s[t] > m) m = s[t]; }
      let z = 0;
      for (let t = 0; t < T; t++) { e[t] = Math.exp(s[t] - m); z += e[t]; }
      let F = 0;
      for (let t = 0; t < T; t++) { e[t] /= z; u[t] = u0[t] + x[i] * du[t]; F += e[t] * u[t]; }
      for (let t = 0; t < T; t++) out[t] += w[i] * e[t] * (du[t] + ds[t] * (u[t] - F));
    }
    return out;
  };
  let n = IG_FIRST, coarse = rule(IG_FIRST / 2), fine = rule(n);
  for (;;) {
    let gap = 0, top = 0;
    for (let t = 0; t < T; t++) { gap = Math.max(gap, Math.abs(fine[t] - coarse[t])); top = Math.max(top, Math.abs(fine[t])); }
    if (!(gap > IG_TOL * Math.max(top, 1e-300))) break;
    if (2 * n > IG_MAX_NODES)
      throw new ClosedFormError(`Integrated Gradients did not converge to tol=1e-12 within ` +
        `${IG_MAX_NODES} nodes: the attention logits move too steeply along the path`);
    n *= 2; coarse = fine; fine = rule(n);
  }
  return fine.slice(1).map(x => x / K);
}

// ---------------------------------------------------------------- every method
/** The closed forms, each computed head by head (a task a worker can take): label -> (model,
 * forward, head, target) -> that head's share (n,). */
export const HEAD_METHODS = {
  "IG": integratedGradientsHead,
  "LIME limit (replace)": limeLimitHead,
  "Shapley (replace)": shapleyHead,
};

/** The forward pass of the document `rows` (what every head task reads). */
export function prepare(model, rows) { return forward(model, rows); }

/** One task: head k's share of the closed form `label` ({values} or {error}). */
export function runHead(model, f, label, k) {
  try { return {values: HEAD_METHODS[label](model, f, k, model.target)}; }
  catch (e) { if (e instanceof ClosedFormError) return {error: e.message}; throw e; }
}

/** The prediction and the explainers that need no closed form (attention, gradients): instant. */
export function explainFast(model, doc, f = forward(model, doc.rows)) {
  const C = model.C;
  const logits = Array.from({length: C}, (_, c) => f.out.reduce((a, o) => a + o[c], 0) / model.K);
  const mx = Math.max(...logits), ex = logits.map(l => Math.exp(l - mx)), z = ex.reduce((a, b) => a + b);
  return {logits, probability: ex.map(e => e / z), predicted: logits.indexOf(mx),
          target: model.target, scores: attentionAndGradients(model, f, model.target), errors: {}};
}

/** Every method of model.json's list for the document `doc` (readText), in this thread:
 * {logits, probability, predicted, target, scores: {label: Float64Array(n)}, errors: {label:
 * message}, ms}. A method that cannot answer on this text (LIME's limit on one token) has an
 * error instead of scores. */
export function explain(model, doc) {
  const t0 = performance.now();
  const f = forward(model, doc.rows);
  const res = explainFast(model, doc, f);
  res.ms = {"attention and gradients": performance.now() - t0};
  const n = doc.rows.length;
  for (const m of model.meta.methods) {
    if (m.label in res.scores || !(m.label in HEAD_METHODS)) continue;
    const t1 = performance.now(), sum = new Float64Array(n);
    for (let k = 0; k < model.K; k++) {
      const r = runHead(model, f, m.label, k);
      if (r.error) { res.errors[m.label] = r.error; break; }
      for (let j = 0; j < n; j++) sum[j] += r.values[j];
    }
    if (!(m.label in res.errors)) res.scores[m.label] = sum;
    res.ms[m.label] = performance.now() - t1;
  }
  res.total_ms = performance.now() - t0;
  return res;
}

/** The page's result as JSON, laid out as attnxai.Explanation.to_json (token level). */
export function toJSON(model, doc, res) {
  const token_scores = {};
  for (const [k, v] of Object.entries(res.scores)) token_scores[k] = Array.from(v);
  return {text: doc.text, tokens: doc.tokens, token_scores, logits: res.logits,
          probability: res.probability, predicted: res.predicted, target: res.target,
          n_tokens: doc.nTokens, cut: doc.cut, unknown: doc.unknown, dropped: doc.dropped,
          not_computed: res.errors, model: model.meta.model.model,
          weights_sha256: (model.meta.model.fingerprint || {}).weights_sha256 || null,
          export_sha256: model.meta.binary.sha256,
          settings: Object.fromEntries(model.meta.methods.map(m => [m.label, {method: m.method, ...m.settings}]))};
}
