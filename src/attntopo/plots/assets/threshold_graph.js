/* attntopo threshold graph: the Vietoris–Rips complex of one distance matrix, recomputed in
 * the browser for the scale ε chosen on attntopo's one ε slider (scale_slider.js, inlined
 * before this file: the widget, the data encoding and the complex at a step).  No request, no
 * library but the page's plotly.js; attached to a figure of attntopo.plots.iplot_threshold_graph
 * by the post-script attntopo's HTML writers add: attntopoThresholdGraph(plotDiv).
 *
 * The figure's layout.meta.attntopo is the slider record of plots/slider.py (n, scales,
 * start, steps, dtype, max_edges, max_triangles) plus the traces to redraw and the title.
 * Drawing is capped: beyond a cap the figure draws the edges (triangles) of the largest
 * earlier step within it and says so; the counts stay exact.
 */
(function () {
  "use strict";
  if (window.attntopoThresholdGraph) return;
  const { Complex, slider, segments, outlines, fmt, plural } = window.attntopoScale;

  function attach(gd) {
    const meta = gd.layout && gd.layout.meta && gd.layout.meta.attntopo;
    if (!meta || meta.kind !== "threshold_graph" || gd.dataset.attntopoEps) return;
    const C = Complex(meta);
    const T = meta.traces;
    const xs = Array.from(gd.data[T.nodes].x), ys = Array.from(gd.data[T.nodes].y);
    const note = document.createElement("div");
    note.className = "attntopo-eps-note";
    note.style.cssText = "font:12px system-ui,sans-serif;color:#59636e;margin:-8px 0 12px";

    function draw(k, eps) {
      const nE = C.edges(k), nT = C.triangles(k, false);
      const [dE, dT] = C.drawnSteps(k);
      const [ex, ey] = segments(C, dE, xs, ys, null);
      const [tx, ty] = outlines(dT >= 0 ? C.triangles(dT, true) : [], xs, ys, null);
      const text = `ε = ${fmt(eps)} · ${plural(nE, "edge")} · ${plural(nT, "triangle")}`;
      const drawnPart = (s, count, word, cap) => s === k ? "" : s < 0
        ? `no ${word}s (more than ${cap} at the smallest ε)`
        : `the ${plural(count, word)} present at ε = ${fmt(meta.scales[s])}`;
      const parts = [drawnPart(dE, dE >= 0 ? C.edges(dE) : 0, "edge", meta.max_edges),
                     drawnPart(dT, dT >= 0 ? C.triangles(dT, false) : 0, "triangle", meta.max_triangles)]
        .filter((x) => x);
      note.textContent = parts.length
        ? `Too many to draw: drawn are ${parts.join(" and ")}; the counts are those at ε = ${fmt(eps)}.` : "";
      // the data attributes say what is drawn once plotly has drawn it (tests wait for them)
      return Plotly.update(gd, { x: [tx, ex], y: [ty, ey] },
                           { "title.text": `${meta.title_prefix}threshold graph at ${text}` }, [T.triangles, T.edges])
        .then(() => {
          Object.assign(s.box.dataset, {
            edges: String(nE), triangles: String(nT), drawnEdges: String(dE), drawnTriangles: String(dT),
          });
          return text;
        });
    }
    const s = slider({ scales: meta.scales, start: meta.start, draw, width: meta.width || 760,
                       aria: "scale ε of the threshold graph" });
    gd.after(s.box, note);
    gd.dataset.attntopoEps = "1";
  }

  window.attntopoThresholdGraph = attach;
})();
