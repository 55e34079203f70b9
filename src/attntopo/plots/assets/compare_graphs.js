/* attntopo two-text threshold graphs: both texts' Vietoris–Rips complexes of one head and
 * the edges and triangles present in both, recomputed in the browser for the scale ε chosen
 * on the figure's plotly slider.  Self-contained (no request, no library but the page's
 * plotly.js and threshold_graph.js, inlined before this file); attached to a figure of
 * attntopo.plots.iplot_compare_graphs by the post-script attntopo's HTML writers add:
 * attntopoCompareGraphs(plotDiv).
 *
 * layout.meta.attntopo holds, for each text and for the shared tokens, per pair i < j
 * (NumPy's triu_indices order) the first slider step whose ε reaches the pair (see
 * threshold_graph.js); for a pair of shared tokens that is the later of its two texts'
 * steps (present in both).  At step k the page draws exactly what the frame of step k of
 * the figure drew in Python before (same traces, same title); drawing of each text's own
 * edges and triangles is capped like the threshold graph's, the counts stay exact.
 */
(function () {
  "use strict";
  if (window.attntopoCompareGraphs) return;
  function plural(k, word) { return `${k} ${word}${k === 1 ? "" : "s"}`; }

  function attach(gd) {
    const meta = gd.layout && gd.layout.meta && gd.layout.meta.attntopo;
    if (!meta || meta.kind !== "compare_graphs" || gd.dataset.attntopoCompare) return;
    const Complex = window.attntopoThresholdGraph.Complex;
    const common = { scales: meta.scales, max_edges: meta.max_edges, max_triangles: meta.max_triangles };
    const panels = meta.panels.map((p) => Object.assign({ C: Complex(Object.assign({}, common, p)) }, p));
    const S = meta.shared.m >= 2 ? Complex(Object.assign({}, common, meta.shared, { n: meta.shared.m })) : null;
    const nodes = meta.traces.nodes.map((t) => [Array.from(gd.data[t].x), Array.from(gd.data[t].y)]);
    const note = document.createElement("div");
    note.className = "attntopo-compare-note";
    note.style.cssText = "font:12px system-ui,sans-serif;color:#59636e;margin:0 0 12px";
    gd.after(note);

    // token i of a complex (map: the shared tokens' positions in one text; null: itself)
    const at = (map, i) => (map ? map[i] : i);
    function segments(C, s, xs, ys, map) {  // the edges of step s, as plotly's a b NaN polylines
      const x = [], y = [];
      for (let r = 0; s >= 0 && r < C.cum[s]; r++) {
        const p = C.order[r], i = at(map, C.pi[p]), j = at(map, C.pj[p]);
        x.push(xs[i], xs[j], null);
        y.push(ys[i], ys[j], null);
      }
      return [x, y];
    }
    function outlines(tri, xs, ys, map) {  // closed triangles a b c a NaN
      const x = [], y = [];
      for (let t = 0; t < tri.length; t += 3) {
        const i = at(map, tri[t]), j = at(map, tri[t + 1]), l = at(map, tri[t + 2]);
        x.push(xs[i], xs[j], xs[l], xs[i], null);
        y.push(ys[i], ys[j], ys[l], ys[i], null);
      }
      return [x, y];
    }

    function draw(k) {
      const X = [], Y = [], counts = [], capped = [];
      const sE = S ? S.edges(k) : 0, sT = S ? S.triangles(k, false) : 0;
      const sTri = S && sT ? S.triangles(k, true) : [];
      panels.forEach((p, side) => {
        const [xs, ys] = nodes[side];
        const C = p.C, [dE, dT] = C.drawnSteps(k);
        const tris = outlines(dT >= 0 ? C.triangles(dT, true) : [], xs, ys, null);
        const shTris = outlines(sTri, xs, ys, p.rep);
        const edges = segments(C, dE, xs, ys, null);
        const shEdges = S ? segments(S, k, xs, ys, p.rep) : [[], []];
        for (const [x, y] of [tris, shTris, edges, shEdges]) { X.push(x); Y.push(y); }
        counts.push([C.edges(k), C.triangles(k, false)]);
        if (dE !== k || dT !== k) {
          const what = [dE !== k ? (dE < 0 ? "no edges" : `the edges present at ε = ${meta.labels[dE]}`) : "",
                        dT !== k ? (dT < 0 ? "no triangles" : `the triangles present at ε = ${meta.labels[dT]}`) : ""]
            .filter((s) => s).join(" and ");
          capped.push(`${side ? "B" : "A"}: ${what}`);
        }
      });
      const et = (e, t) => `${plural(e, "edge")}, ${plural(t, "triangle")}`;
      const title = `${meta.title_prefix} · ε = ${meta.labels[k]} · A: ${et(...counts[0])} · ` +
        `B: ${et(...counts[1])} · in both: ${et(sE, sT)}`;
      note.textContent = capped.length
        ? `Too many to draw: drawn are ${capped.join("; ")}; the counts are those at ε = ${meta.labels[k]}.` : "";
      return Plotly.update(gd, { x: X, y: Y }, { "title.text": title }, meta.traces.dynamic)
        .then(() => Object.assign(gd.dataset, {
          attntopoCompareStep: String(k), attntopoCompareEps: String(meta.scales[k]),
        }));
    }
    // one redraw at a time; steps asked for meanwhile (a drag) collapse into the latest, and
    // data-attntopo-compare-ready is "1" once the last one asked for is drawn (tests wait for it)
    let busy = false, wanted = null;
    function pump() {
      busy = true;
      const k = wanted;
      wanted = null;
      draw(k).then(() => {
        if (wanted !== null) return pump();
        busy = false;
        gd.dataset.attntopoCompareReady = "1";
      });
    }
    function request(k) {
      wanted = k;
      gd.dataset.attntopoCompareReady = "0";
      if (!busy) pump();
    }
    gd.on("plotly_sliderchange", (e) => request(e.slider.active));
    gd.dataset.attntopoCompare = "1";
    request(meta.start);
  }

  window.attntopoCompareGraphs = attach;
})();
