/* attntopo's one ε slider: the widget and the data encoding of every threshold-graph slider.
 * Self-contained, no request, no library.  Three pages use it: the one-text threshold graph
 * (threshold_graph.js), the two-text graphs (compare_graphs.js), both inlined in the HTML
 * attntopo writes, and the explorer (attntopo serve: /static/scale_slider.js, app.js).
 *
 * The data (built by attntopo/plots/slider.py): per token pair i < j (NumPy's triu_indices
 * order), the index of the first slider step whose ε reaches D[i, j] (complex_at's rule
 * D[i, j] <= ε, computed in float64), base64 bytes of uint8 or little-endian uint16.  At step k:
 *   edge i–j        iff  step[i, j] <= k
 *   triangle i–j–l  iff  all three of its edges are present
 * so the counts equal attntopo.complex_at(D, scales[k]) exactly, ties included.
 *
 * window.attntopoScale:
 *   Complex(rec)   the complex at every step of one record {n, scales, steps, dtype,
 *                  max_edges, max_triangles}: edges(k), triangles(k, collect), drawnSteps(k)
 *                  (drawing is capped: beyond a cap, the edges (triangles) of the largest
 *                  earlier step within it are drawn; the counts stay exact)
 *   slider(opts)   the widget: a range input over the step indices and a label, in a
 *                  <div class="attntopo-eps">.  opts: scales, start, draw(k) (returns the
 *                  label's text, or a promise of it), aria, id, labelId, width.  Moves
 *                  collapse into the latest (one redraw at a time); once step k is drawn the
 *                  box's data-step, data-eps say so and data-ready is "1" (tests wait for it).
 *                  Returns {box, input, label, set(k), reset(scales, start), step()}.
 */
(function () {
  "use strict";
  if (window.attntopoScale) return;

  function decode(b64, dtype) {
    const s = atob(b64);
    const bytes = new Uint8Array(s.length);
    for (let t = 0; t < s.length; t++) bytes[t] = s.charCodeAt(t);
    if (dtype === "u1") return bytes;
    const view = new DataView(bytes.buffer), out = new Uint16Array(bytes.length / 2);
    for (let t = 0; t < out.length; t++) out[t] = view.getUint16(2 * t, true);
    return out;
  }

  function popcount(x) {
    x = x - ((x >>> 1) & 0x55555555);
    x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
    return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
  }

  // the same number format as Python's f"{x:.3g}" for the values a slider shows
  function fmt(x) { return String(Number(x.toPrecision(3))); }
  function plural(k, word) { return `${k} ${word}${k === 1 ? "" : "s"}`; }

  function Complex(rec) {
    const n = rec.n, K = rec.scales.length;
    const step = decode(rec.steps, rec.dtype);
    const m = step.length;
    const pi = new Uint16Array(m), pj = new Uint16Array(m);
    for (let i = 0, p = 0; i < n; i++) for (let j = i + 1; j < n; j++, p++) { pi[p] = i; pj[p] = j; }
    // pairs ordered by step (counting sort): the edges at step k are order[0 .. cum[k])
    const cum = new Int32Array(K + 1);
    for (let p = 0; p < m; p++) cum[step[p]]++;
    for (let k = 1; k <= K; k++) cum[k] += cum[k - 1];
    const order = new Int32Array(m), next = new Int32Array(K + 1);
    for (let k = 1; k <= K; k++) next[k] = cum[k - 1];
    for (let p = 0; p < m; p++) order[next[step[p]]++] = p;
    const W = (n + 31) >>> 5;
    const bits = new Uint32Array(n * W);
    const triCount = new Map();

    function adjacency(k) {  // bitset rows of the graph at step k
      bits.fill(0);
      for (let r = 0; r < cum[k]; r++) {
        const p = order[r], i = pi[p], j = pj[p];
        bits[i * W + (j >>> 5)] |= 1 << (j & 31);
        bits[j * W + (i >>> 5)] |= 1 << (i & 31);
      }
    }

    // triangles i < j < l at step k: for each edge i–j, the common neighbours l > j
    function triangles(k, collect) {
      if (!collect && triCount.has(k)) return triCount.get(k);
      adjacency(k);
      let count = 0;
      const out = collect ? [] : null;
      for (let r = 0; r < cum[k]; r++) {
        const p = order[r], i = pi[p], j = pj[p];
        const a = i * W, b = j * W;
        for (let w = (j + 1) >>> 5; w < W; w++) {
          let x = bits[a + w] & bits[b + w];
          if (w === (j + 1) >>> 5) x &= ~0 << ((j + 1) & 31);
          if (!x) continue;
          count += popcount(x);
          if (collect) {
            while (x) {
              const low = x & -x;
              out.push(i, j, (w << 5) + 31 - Math.clz32(low));
              x ^= low;
            }
          }
        }
      }
      triCount.set(k, count);
      return collect ? out : count;
    }

    // the largest step s <= k with fits(s) (-1: none), for a monotone fits
    function largest(k, fits) {
      if (k < 0 || fits(k)) return k;
      let lo = -1, hi = k;
      while (hi - lo > 1) {
        const mid = (lo + hi) >> 1;
        if (fits(mid)) lo = mid; else hi = mid;
      }
      return lo;
    }

    // the steps whose edges and whose triangles are drawn at step k: each the largest within
    // its cap, triangles no later than edges (a shaded triangle's edges are drawn); -1: none
    function drawnSteps(k) {
      const e = largest(k, (s) => cum[s] <= rec.max_edges);
      return [e, largest(e, (s) => triangles(s, false) <= rec.max_triangles)];
    }

    return { n, K, cum, order, pi, pj, edges: (k) => cum[k], triangles, drawnSteps };
  }

  // the x and y of plotly polylines through the edges of step s (a b null) and through
  // triangles (a b c a null); map: token positions of the complex's vertices (null: itself)
  function segments(C, s, xs, ys, map) {
    const x = [], y = [];
    for (let r = 0; s >= 0 && r < C.cum[s]; r++) {
      const p = C.order[r], i = map ? map[C.pi[p]] : C.pi[p], j = map ? map[C.pj[p]] : C.pj[p];
      x.push(xs[i], xs[j], null);
      y.push(ys[i], ys[j], null);
    }
    return [x, y];
  }
  function outlines(tri, xs, ys, map) {
    const x = [], y = [];
    const at = (i) => (map ? map[i] : i);
    for (let t = 0; t < tri.length; t += 3) {
      const i = at(tri[t]), j = at(tri[t + 1]), l = at(tri[t + 2]);
      x.push(xs[i], xs[j], xs[l], xs[i], null);
      y.push(ys[i], ys[j], ys[l], ys[i], null);
    }
    return [x, y];
  }

  function slider(opts) {
    const box = document.createElement("div");
    box.className = "attntopo-eps";
    box.style.cssText = "display:flex;align-items:center;gap:10px;font:13px system-ui,sans-serif;" +
      "margin:2px 0 12px" + (opts.width ? ";max-width:" + opts.width + "px" : "");
    const input = document.createElement("input");
    input.type = "range";
    input.min = "0";
    input.step = "1";
    input.setAttribute("aria-label", opts.aria || "scale ε");
    input.style.flex = "1";
    if (opts.id) input.id = opts.id;
    const label = document.createElement("span");
    label.className = "attntopo-eps-label";
    label.style.cssText = "min-width:22em;font-variant-numeric:tabular-nums";
    if (opts.labelId) label.id = opts.labelId;
    box.append(input, label);
    let scales = [];

    // one redraw at a time; steps asked for meanwhile (a drag) collapse into the latest
    let busy = false, wanted = null;
    function pump() {
      const k = wanted;
      wanted = null;
      Promise.resolve(opts.draw(k, scales[k])).then((text) => {
        if (typeof text === "string") label.textContent = text;
        Object.assign(box.dataset, { step: String(k), eps: String(scales[k]) });
        if (wanted !== null) return requestAnimationFrame(pump);
        busy = false;
        box.dataset.ready = "1";
      }, (err) => { busy = false; box.dataset.ready = "1"; throw err; });
    }
    function set(k) {
      k = Math.max(0, Math.min(scales.length - 1, k | 0));
      input.value = String(k);
      wanted = k;
      box.dataset.ready = "0";
      if (!busy) { busy = true; requestAnimationFrame(pump); }
    }
    function reset(newScales, start) {
      scales = Array.from(newScales);
      input.max = String(scales.length - 1);
      set(start);
    }
    input.addEventListener("input", () => set(+input.value));
    reset(opts.scales || [0], opts.start || 0);
    return { box, input, label, set, reset, step: () => +input.value, scales: () => scales };
  }

  window.attntopoScale = { decode, Complex, slider, segments, outlines, fmt, plural };
})();
