/* attntopo two-text threshold graphs: both texts' Vietoris–Rips complexes of one head and
 * the edges and triangles present in both, recomputed in the browser for the scale ε chosen
 * on attntopo's one ε slider (scale_slider.js, inlined before this file: the same widget and
 * data encoding as the one-text threshold graph's and the explorer's).  No request, no
 * library but the page's plotly.js; attached to a figure of attntopo.plots.iplot_compare_graphs
 * by the post-script attntopo's HTML writers add: attntopoCompareGraphs(plotDiv).
 *
 * layout.meta.attntopo is the two-text slider record of plots/slider.py: for each text
 * (panels) and for the shared tokens (shared), per pair i < j the first slider step whose ε
 * reaches the pair; for a pair of shared tokens that is the later of its two texts' steps
 * (present in both).  At step k the page draws exactly what a plotly frame of step k drew
 * in Python before (same traces, same title); drawing of each text's own edges and triangles
 * is capped like the threshold graph's, the counts stay exact.
 */
(function () {
  "use strict";
  if (window.attntopoCompareGraphs) return;
  const { Complex, slider, segments, outlines, plural } = window.attntopoScale;

  function attach(gd) {
    const meta = gd.layout && gd.layout.meta && gd.layout.meta.attntopo;
    if (!meta || meta.kind !== "compare_graphs" || gd.dataset.attntopoCompare) return;
    const common = { scales: meta.scales, max_edges: meta.max_edges, max_triangles: meta.max_triangles };
    const panels = meta.panels.map((p) => Object.assign({ C: Complex(Object.assign({}, common, p)) }, p));
    const S = meta.shared.m >= 2 ? Complex(Object.assign({}, common, meta.shared, { n: meta.shared.m })) : null;
    const nodes = meta.traces.nodes.map((t) => [Array.from(gd.data[t].x), Array.from(gd.data[t].y)]);
    const note = document.createElement("div");
    note.className = "attntopo-compare-note";
    note.style.cssText = "font:12px system-ui,sans-serif;color:#59636e;margin:-8px 0 12px";

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
      const text = `ε = ${meta.labels[k]} · A: ${et(...counts[0])} · B: ${et(...counts[1])} · in both: ${et(sE, sT)}`;
      note.textContent = capped.length
        ? `Too many to draw: drawn are ${capped.join("; ")}; the counts are those at ε = ${meta.labels[k]}.` : "";
      return Plotly.update(gd, { x: X, y: Y }, { "title.text": `${meta.title_prefix} · ${text}` }, meta.traces.dynamic)
        .then(() => text);
    }
    const s = slider({ scales: meta.scales, start: meta.start, draw, width: meta.width || 1200,
                       aria: "scale ε of both threshold graphs" });
    gd.after(s.box, note);
    gd.dataset.attntopoCompare = "1";
  }

  window.attntopoCompareGraphs = attach;
})();
