/* attntopo threshold graph: the Vietoris–Rips complex of one distance matrix, recomputed in
 * the browser for the scale ε chosen on a slider.  Self-contained (no request, no library but
 * the page's plotly.js); attached to a figure of attntopo.plots.iplot_threshold_graph by the
 * post-script attntopo's HTML writers add: attntopoThresholdGraph(plotDiv).
 *
 * The figure's layout.meta.attntopo holds, per token pair i < j (NumPy's triu_indices order),
 * the index of the first slider step whose ε reaches D[i, j] (computed in float64 with
 * complex_at's rule D[i, j] <= ε), base64 bytes of uint8 or little-endian uint16.  At step k:
 *   edge i–j        iff  step[i, j] <= k
 *   triangle i–j–l  iff  all three of its edges are present
 * so the counts equal attntopo.complex_at(D, scales[k]) exactly, ties included.  Drawing is
 * capped (max_edges / max_triangles): beyond a cap the figure draws the edges (triangles) of
 * the largest earlier step within it and says so; the counts stay exact.
 */
(function () {
  "use strict";
  if (window.attntopoThresholdGraph) return;

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

  function Complex(meta) {
    const n = meta.n, K = meta.scales.length;
    const step = decode(meta.steps, meta.dtype);
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
      const e = largest(k, (s) => cum[s] <= meta.max_edges);
      return [e, largest(e, (s) => triangles(s, false) <= meta.max_triangles)];
    }

    return { n, K, cum, order, pi, pj, edges: (k) => cum[k], triangles, drawnSteps };
  }

  function attach(gd) {
    const meta = gd.layout && gd.layout.meta && gd.layout.meta.attntopo;
    if (!meta || meta.kind !== "threshold_graph" || gd.dataset.attntopoEps) return;
    const C = Complex(meta);
    const T = meta.traces;
    const xs = Array.from(gd.data[T.nodes].x), ys = Array.from(gd.data[T.nodes].y);

    const box = document.createElement("div");
    box.className = "attntopo-eps";
    box.style.cssText = "display:flex;align-items:center;gap:10px;font:13px system-ui,sans-serif;" +
      "margin:2px 0 12px;max-width:" + (meta.width || 760) + "px";
    const slider = document.createElement("input");
    slider.type = "range";
    slider.min = "0";
    slider.max = String(C.K - 1);
    slider.step = "1";
    slider.value = String(meta.start);
    slider.setAttribute("aria-label", "scale ε of the threshold graph");
    slider.style.flex = "1";
    const label = document.createElement("span");
    label.className = "attntopo-eps-label";
    label.style.cssText = "min-width:22em;font-variant-numeric:tabular-nums";
    const note = document.createElement("div");
    note.className = "attntopo-eps-note";
    note.style.cssText = "font:12px system-ui,sans-serif;color:#59636e;margin:-8px 0 12px";
    box.append(slider, label);
    gd.after(box, note);

    let pending = 0;
    function draw() {
      pending = 0;
      const k = +slider.value, eps = meta.scales[k];
      const nE = C.edges(k), nT = C.triangles(k, false);
      const [dE, dT] = C.drawnSteps(k);
      const ex = [], ey = [], tx = [], ty = [];
      for (let r = 0; dE >= 0 && r < C.cum[dE]; r++) {
        const p = C.order[r], i = C.pi[p], j = C.pj[p];
        ex.push(xs[i], xs[j], null);
        ey.push(ys[i], ys[j], null);
      }
      const tri = dT >= 0 ? C.triangles(dT, true) : [];
      for (let t = 0; t < tri.length; t += 3) {
        const i = tri[t], j = tri[t + 1], l = tri[t + 2];
        tx.push(xs[i], xs[j], xs[l], xs[i], null);
        ty.push(ys[i], ys[j], ys[l], ys[i], null);
      }
      const text = `ε = ${fmt(eps)} · ${plural(nE, "edge")} · ${plural(nT, "triangle")}`;
      label.textContent = text;
      const drawnPart = (s, count, word, cap) => s === k ? "" : s < 0
        ? `no ${word}s (more than ${cap} at the smallest ε)`
        : `the ${plural(count, word)} present at ε = ${fmt(meta.scales[s])}`;
      const parts = [drawnPart(dE, dE >= 0 ? C.edges(dE) : 0, "edge", meta.max_edges),
                     drawnPart(dT, dT >= 0 ? C.triangles(dT, false) : 0, "triangle", meta.max_triangles)]
        .filter((x) => x);
      note.textContent = parts.length
        ? `Too many to draw: drawn are ${parts.join(" and ")}; the counts are those at ε = ${fmt(eps)}.` : "";
      // the data attributes say what is drawn once plotly has drawn it (tests wait for them)
      Plotly.update(gd, { x: [tx, ex], y: [ty, ey] },
                    { "title.text": `${meta.title_prefix}threshold graph at ${text}` }, [T.triangles, T.edges])
        .then(() => Object.assign(box.dataset, {
          step: String(k), eps: String(eps), edges: String(nE), triangles: String(nT),
          drawnEdges: String(dE), drawnTriangles: String(dT), ready: "1",
        }));
    }
    slider.addEventListener("input", () => { if (!pending) pending = requestAnimationFrame(draw); });
    gd.dataset.attntopoEps = "1";
    draw();
  }

  attach.Complex = Complex;  // also drives the two-text graphs (compare_graphs.js)
  window.attntopoThresholdGraph = attach;
})();
