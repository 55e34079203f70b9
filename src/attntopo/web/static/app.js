/* attntopo explorer: the page's logic (vanilla JS, no build step).
 *
 * The server sends, once per text and head, the token distance matrix, the persistence
 * diagram, the attention matrix, an MDS layout and the record of attntopo's one ε slider (per
 * token pair the first slider scale that reaches its distance; for two texts one record on
 * shared scales).  The slider is the reports' widget (/static/scale_slider.js, the same file
 * the reports inline: window.attntopoScale), which also computes the complex at a step.
 * Moving it only reads what the page already has: no request.  Changing the layer, head,
 * metric, model or text asks the server, which reuses its cached model run for the same text.
 */
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const DIM_COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7"];
  const DIM_SYMBOLS = ["circle", "triangle-up", "square", "diamond"];
  const TEXT_COLORS = ["#0072B2", "#E69F00"];
  const SHARED = "#009E73";
  const SPECIAL = "#999999";
  const EDGE = "#4D4D4D";
  const TRI_FILL = "rgba(86,180,233,0.18)";
  const SHARED_TRI_FILL = "rgba(0,158,115,0.35)";
  const Scale = window.attntopoScale;  // the one ε slider and its complex (scale_slider.js)
  const PLOT_CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["sendDataToCloud"] };

  const S = {
    maxChars: 2000,
    models: [],
    mode: null,        // "analyze" | "compare"
    body: null,        // the last request body (without layer/head)
    data: null,        // the last response
    texts: [],         // per text: prepared head data (its complex at every slider step, …)
    shared: null,      // compare mode: the complex of pairs that are edges in both texts
    slider: null,      // the ε slider widget (attntopoScale.slider)
    scales: [0],       // its scales; S.start: the suggested one
    start: 0,
    eps: 0,
    seq: 0,
    ctrl: null,
    statChosen: false, // the user picked the heads grid's column (else: the server's ranking column)
  };

  // ----------------------------------------------------------------- helpers
  const num = (v) => (typeof v === "number" ? v : v === "inf" ? Infinity : v === "-inf" ? -Infinity : NaN);
  const fmt = (v, d = 3) => {
    const x = num(v);
    if (x === Infinity) return "∞";
    if (x === -Infinity) return "−∞";
    if (Number.isNaN(x)) return "–";
    if (Number.isInteger(x)) return String(x);
    return Math.abs(x) >= 100 ? x.toFixed(1) : x.toPrecision(d);
  };
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  // plotly reads a few HTML tags in its texts: tokens such as "<b>" are shown literally
  const ptext = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const shortLabel = (s) => ptext(s.length > 14 ? s.slice(0, 13) + "…" : s);

  function showError(msg) {
    const el = $("error");
    el.textContent = msg;
    el.hidden = false;
  }
  function clearError() {
    $("error").hidden = true;
    $("error").textContent = "";
  }
  // Results that no longer answer the form (a run for new input failed) are greyed, made inert
  // and labelled, so an error is never read as being about the figures below it.
  function setStale(on) {
    const res = $("results");
    res.classList.toggle("stale", on);
    res.inert = on;
    res.setAttribute("aria-disabled", on ? "true" : "false");
    $("stale-note").hidden = !on;
    document.body.dataset.stale = on ? "1" : "0";
  }
  // the input a result answers: the request body without the head it shows in full
  function inputKey(body) {
    const b = { ...body };
    delete b.layer; delete b.head; delete b.auto_head;
    return JSON.stringify(b);
  }
  function setStatus(msg, busy) {
    const el = $("status");
    el.textContent = msg || "";
    el.classList.toggle("busy", !!busy);
  }

  async function api(path, body, signal) {
    const opts = { signal };
    if (body !== undefined) {
      opts.method = "POST";
      opts.headers = { "Content-Type": "application/json" };
      opts.body = JSON.stringify(body);
    }
    let resp;
    try {
      resp = await fetch(path, opts);
    } catch (e) {
      if (e.name === "AbortError") throw e;
      throw new Error("cannot reach the attntopo server: is `attntopo serve` still running?");
    }
    let data = null;
    try {
      data = await resp.json();
    } catch (_) {
      data = null;
    }
    if (!resp.ok) {
      const msg = data && typeof data.error === "string" ? data.error : `the server answered ${resp.status}`;
      const err = new Error(msg);
      err.status = resp.status;
      throw err;
    }
    return data;
  }

  // ------------------------------------------------------------------ set-up
  function fillSelect(sel, values, labels, value) {
    sel.innerHTML = "";
    values.forEach((v, k) => {
      const o = document.createElement("option");
      o.value = String(v);
      o.textContent = labels ? labels[k] : String(v);
      sel.appendChild(o);
    });
    if (value !== undefined && value !== null) sel.value = String(value);
  }

  function modelEntry(name) {
    return S.models.find((m) => m.name === name) || null;
  }

  function fillHeadPickers(nLayers, nHeads, layer, head) {
    if (!nLayers || !nHeads) return;
    fillSelect($("layer"), [...Array(nLayers).keys()], null, layer ?? 0);
    fillSelect($("head"), [...Array(nHeads).keys()], null, head ?? 0);
  }

  function updateCounts() {
    for (const [id, cid] of [["text-a", "count-a"], ["text-b", "count-b"]]) {
      const n = $(id).value.length;
      const el = $(cid);
      el.textContent = `${n} / ${S.maxChars} characters`;
      el.classList.toggle("over", n > S.maxChars);
    }
  }

  async function init() {
    $("run").addEventListener("click", () => run(true));
    for (const id of ["text-a", "text-b"]) {
      $(id).addEventListener("input", updateCounts);
      $(id).addEventListener("keydown", (e) => {
        if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(true); }
      });
    }
    for (const id of ["model", "metric", "maxdim", "drop-special", "truncate"]) {
      $(id).addEventListener("change", () => { if (S.data) run(id === "model"); });
    }
    $("layer").addEventListener("change", () => selectHead(+$("layer").value, +$("head").value));
    $("head").addEventListener("change", () => selectHead(+$("layer").value, +$("head").value));
    S.slider = Scale.slider({ scales: [0], start: 0, draw: redrawAtStep, id: "eps", labelId: "eps-value",
                              aria: "threshold ε" });
    $("eps-slider").append(S.slider.box);
    $("eps-reset").addEventListener("click", () => S.slider.set(S.start));
    $("grid-stat").addEventListener("change", () => { S.statChosen = true; drawHeadMap(); });
    $("heat-kind").addEventListener("change", drawHeatmaps);
    try {
      const [health, models] = await Promise.all([api("/api/health"), api("/api/models")]);
      S.maxChars = models.max_chars;
      S.models = models.models;
      fillSelect($("model"), models.models.map((m) => m.name),
        models.models.map((m) => (m.n_layers ? `${m.name} (${m.n_layers} × ${m.n_heads})` : m.name)), models.default);
      fillSelect($("metric"), models.metrics, models.metrics.map((m) => m.replace(/_/g, " ")), "jensen_shannon");
      const m = modelEntry(models.default);
      if (m) fillHeadPickers(m.n_layers, m.n_heads);
      $("server-status").textContent = `attntopo ${health.version} · up to ${health.max_chars} characters per text`;
    } catch (e) {
      $("server-status").textContent = "server unreachable";
      showError(e.message);
    }
    updateCounts();
    document.body.dataset.ready = "1";
  }

  // ---------------------------------------------------------------- requests
  function currentBody() {
    const a = $("text-a").value;
    const b = $("text-b").value;
    const common = {
      model: $("model").value || null,
      metric: $("metric").value || "jensen_shannon",
      maxdim: +$("maxdim").value,
      drop_special: $("drop-special").checked,
      truncate: $("truncate").checked,
    };
    if (b.trim() === "") return { mode: "analyze", path: "/api/analyze", body: { text: a, ...common } };
    return { mode: "compare", path: "/api/compare", body: { text_a: a, text_b: b, ...common } };
  }

  async function request(mode, path, body, what) {
    if (S.ctrl) S.ctrl.abort();
    const ctrl = new AbortController();
    S.ctrl = ctrl;
    const seq = ++S.seq;
    clearError();  // a new run makes any earlier error moot
    $("run").disabled = true;
    document.body.dataset.state = "busy";
    setStatus(what, true);
    const t0 = performance.now();
    try {
      const data = await api(path, body, ctrl.signal);
      if (seq !== S.seq) return;
      clearError();
      setStale(false);
      S.mode = mode;
      S.data = data;
      S.body = JSON.parse(inputKey(body));
      render();
      // for scripts and tests: how many results and errors the page has shown
      document.body.dataset.renders = String(+(document.body.dataset.renders || 0) + 1);
      document.body.dataset.state = "done";
      const secs = ((performance.now() - t0) / 1000).toFixed(2);
      const cut = cutNote(data);
      setStatus(`${data.cached ? "cached result" : "computed"} · ${secs} s${cut ? " · " + cut : ""}`, false);
    } catch (e) {
      if (e.name === "AbortError" || seq !== S.seq) return;
      showError(e.message);
      setStatus("", false);
      if (S.data) {
        if (S.body && inputKey(body) === inputKey(S.body)) {
          // only another head of the shown input failed: the figures still answer the form,
          // and the pickers go back to the head they show
          if (S.data.selected) { $("layer").value = String(S.data.selected[0]); $("head").value = String(S.data.selected[1]); }
        } else {
          setStale(true);
        }
      }
      document.body.dataset.errors = String(+(document.body.dataset.errors || 0) + 1);
      document.body.dataset.state = "error";
    } finally {
      if (seq === S.seq) { $("run").disabled = false; S.ctrl = null; }
    }
  }

  function run(newText) {
    const { mode, path, body } = currentBody();
    const keep = !newText && S.data && S.data.selected;
    const m = modelEntry(body.model);
    if (keep && (!m || !m.n_layers || (S.data.selected[0] < m.n_layers && S.data.selected[1] < m.n_heads))) {
      body.layer = S.data.selected[0];
      body.head = S.data.selected[1];
    } else {
      body.auto_head = true;
    }
    const what = mode === "compare" ? "comparing the two texts on every head…" : "analysing every head…";
    return request(mode, path, body, what);
  }

  function selectHead(layer, head) {
    if (!S.body) { $("layer").value = layer; $("head").value = head; return; }
    const path = S.mode === "compare" ? "/api/compare" : "/api/analyze";
    return request(S.mode, path, { ...S.body, layer, head }, `layer ${layer}, head ${head}…`);
  }

  // ------------------------------------------------------------ preparation
  // one text's head: what the page draws, and its complex at every slider step (rec: the
  // one-text slider record, or a panel of the two-text record with its scales and caps)
  function prepareText(h, info, rec) {
    return {
      n: h.n_tokens, D: h.distances, X: h.layout, labels: info.labels, special: info.special,
      xs: h.layout.map((p) => p[0]), ys: h.layout.map((p) => p[1]),
      C: Scale.Complex(rec), rec, dgm: h.diagram, head: h, sharedTok: new Set(),
    };
  }

  // two texts: the complex of the pairs of shared tokens that are edges in both texts
  function prepareShared(rec) {
    const common = { scales: rec.scales, max_edges: rec.max_edges, max_triangles: rec.max_triangles };
    const C = rec.shared.m >= 2 ? Scale.Complex({ ...common, ...rec.shared, n: rec.shared.m }) : null;
    return { C, rep: rec.panels.map((p) => p.rep) };
  }

  // "text A cut to 512 tokens" when "truncate long texts" shortened a text, else ""
  function cutNote(d) {
    const texts = d.kind === "comparison" ? [["text A", d.a], ["text B", d.b]] : [["text", d.text]];
    return texts.filter(([, t]) => t && t.truncated).map(([name, t]) => `${name} cut to ${t.n_tokens} tokens`).join(", ");
  }

  // ----------------------------------------------------------------- render
  function render() {
    const d = S.data;
    $("results").hidden = false;
    const compare = S.mode === "compare";
    const nL = d.model.n_layers || Math.max(...d.layers) + 1;
    const nH = d.model.n_heads || Math.max(...d.heads) + 1;
    fillHeadPickers(nL, nH, d.selected ? d.selected[0] : 0, d.selected ? d.selected[1] : 0);
    const entry = modelEntry(d.model.name);
    if (entry && !entry.n_layers) { entry.n_layers = nL; entry.n_heads = nH; }
    fillGridStats();
    for (const id of ["graph-b-card", "heat-b-card"]) $(id).hidden = !compare;
    S.texts = [];
    S.shared = null;
    if (d.head) {
      const rec = d.head.slider;
      if (compare) {
        const common = { scales: rec.scales, max_edges: rec.max_edges, max_triangles: rec.max_triangles };
        const A = prepareText(d.head.a, d.a, { ...common, ...rec.panels[0] });
        const B = prepareText(d.head.b, d.b, { ...common, ...rec.panels[1] });
        d.shared_tokens.forEach((s) => { s.tokens_a.forEach((t) => A.sharedTok.add(t)); s.tokens_b.forEach((t) => B.sharedTok.add(t)); });
        S.texts = [A, B];
        S.shared = prepareShared(rec);
      } else {
        S.texts = [prepareText(d.head, d.text, rec)];
      }
      S.scales = rec.scales;
      S.start = rec.start;
    }
    const [l, h] = d.selected || [null, null];
    $("graph-a-title").textContent = compare ? `Threshold graph · A · layer ${l}, head ${h}` : `Threshold graph · layer ${l}, head ${h}`;
    $("graph-b-title").textContent = `Threshold graph · B · layer ${l}, head ${h}`;
    drawHeadMap();
    if (d.head) {
      drawDiagram();
      drawBarcode();
      drawHeatmaps();
      S.slider.reset(S.scales, S.start);  // opens at the head's suggested scale
    }
  }

  // the slider's draw: everything that follows ε, at slider step k (the head's suggested
  // scale, S.start: for two texts the comparison scale, the median H0 death of both; for one
  // text the middle of its most persistent H1 bar, or its median H0 death); returns the label
  function redrawAtStep(k) {
    if (!S.texts.length) return "";
    const eps = S.scales[k];
    S.eps = eps;
    const info = S.texts.map((t, side) => drawGraph(side, k));
    const lines = epsShapes(eps);
    if ($("diagram").data) Plotly.relayout("diagram", { shapes: lines.diagram });
    if ($("barcode").data) Plotly.relayout("barcode", { shapes: lines.barcode });
    const parts = info.map((c, side) => `${S.texts.length > 1 ? "AB"[side] + ": " : ""}${c.edges} edges, ${c.tris} triangles`);
    if (S.shared) {
      const C = S.shared.C;
      parts.push(`in both: ${C ? C.edges(k) : 0} edges, ${C ? C.triangles(k, false) : 0} triangles`);
    }
    drawNumbers(info, k);
    return `ε = ${fmt(eps)} · ${parts.join(" · ")}`;
  }

  // ---------------------------------------------------------------- figures
  // graph `side` at slider step k: its own edges and triangles (drawing capped as in the
  // reports: beyond a cap, those of the largest earlier step within it) and those in both texts
  function graphTraces(side, k) {
    const T = S.texts[side];
    const C = T.C, X = T.X, xs = T.xs, ys = T.ys;
    const nE = C.edges(k), nT = C.triangles(k, false);
    const [dE, dT] = C.drawnSteps(k);
    const [ex, ey] = Scale.segments(C, dE, xs, ys, null);
    const [tx, ty] = Scale.outlines(dT >= 0 ? C.triangles(dT, true) : [], xs, ys, null);
    let [gx, gy] = [[], []], [sx, sy] = [[], []];
    if (S.shared && S.shared.C) {
      const rep = S.shared.rep[side];
      [gx, gy] = Scale.segments(S.shared.C, k, xs, ys, rep);
      [sx, sy] = Scale.outlines(S.shared.C.triangles(k, true), xs, ys, rep);
    }
    const kind = T.labels.map((_, t) => (T.sharedTok.has(t) ? "shared" : T.special[t] ? "special" : "token"));
    const nodes = {
      type: "scatter", mode: T.n <= 60 ? "markers+text" : "markers", name: "tokens",
      x: X.map((p) => p[0]), y: X.map((p) => p[1]),
      text: T.labels.map(shortLabel), textposition: "top right", textfont: { size: 10 },
      customdata: T.labels.map((s, t) => `${t}: ${ptext(s)}${kind[t] === "token" ? "" : " (" + kind[t] + ")"}`),
      hovertemplate: "%{customdata}<extra></extra>",
      marker: {
        color: kind.map((c) => (c === "shared" ? SHARED : c === "special" ? SPECIAL : TEXT_COLORS[side])),
        symbol: kind.map((c) => (c === "shared" ? "diamond" : "circle")),
        size: kind.map((c) => (c === "shared" ? 12 : 9)), line: { color: "white", width: 1 },
      },
      showlegend: false,
    };
    const traces = [
      { type: "scatter", mode: "lines", x: tx, y: ty, fill: "toself", fillcolor: TRI_FILL, line: { width: 0 }, hoverinfo: "skip", showlegend: false, name: "triangles" },
      { type: "scatter", mode: "lines", x: sx, y: sy, fill: "toself", fillcolor: SHARED_TRI_FILL, line: { width: 0 }, hoverinfo: "skip", showlegend: false, name: "triangles in both" },
      { type: "scatter", mode: "lines", x: ex, y: ey, line: { color: EDGE, width: 1 }, opacity: 0.55, hoverinfo: "skip", showlegend: false, name: "edges" },
      { type: "scatter", mode: "lines", x: gx, y: gy, line: { color: SHARED, width: 3.5 }, hoverinfo: "skip", showlegend: false, name: "edges in both" },
      nodes,
    ];
    return { traces, edges: nE, tris: nT, drawnEdges: dE >= 0 ? C.edges(dE) : 0, dE, dT };
  }

  function drawGraph(side, k) {
    const div = $(side === 0 ? "graph-a" : "graph-b");
    const g = graphTraces(side, k);
    const eps = S.scales[k];
    const notes = [];
    if (g.dE !== k) notes.push(`drawing the ${g.drawnEdges} edges present at ε = ${fmt(g.dE >= 0 ? S.scales[g.dE] : 0)}`);
    if (g.dT !== k) notes.push(g.dT >= 0 ? `triangles of ε = ${fmt(S.scales[g.dT])}` : "no triangles drawn");
    const layout = {
      margin: { l: 10, r: 10, t: 30, b: 10 }, height: 440,
      xaxis: { visible: false }, yaxis: { visible: false, scaleanchor: "x", scaleratio: 1 },
      title: { text: `ε = ${fmt(eps)} · ${g.edges} edges · ${g.tris} triangles`, font: { size: 13 }, x: 0.02, xanchor: "left" },
      annotations: notes.length ? [{ text: notes.join(" · "), xref: "paper", yref: "paper", x: 0, y: 0, showarrow: false, font: { size: 11, color: "#666" }, xanchor: "left" }] : [],
      uirevision: `${S.data.selected}-${side}`,
    };
    Plotly.react(div, g.traces, layout, PLOT_CONFIG);
    div.dataset.edges = String(g.edges);
    div.dataset.triangles = String(g.tris);
    div.dataset.drawnEdges = String(g.drawnEdges);
    div.dataset.eps = String(eps);
    return g;
  }

  function diagramExtent() {
    let hi = 0;
    for (const T of S.texts) for (const pts of Object.values(T.dgm)) for (const [b, d] of pts) {
      hi = Math.max(hi, num(b));
      if (Number.isFinite(num(d))) hi = Math.max(hi, num(d));
    }
    hi = hi > 0 ? hi : 1;
    return { hi, infY: hi * 1.1, top: hi * 1.16 };
  }

  function drawDiagram() {
    const { infY, top } = diagramExtent();
    const traces = [{ type: "scatter", mode: "lines", x: [0, top], y: [0, top], line: { color: "#888", width: 1 }, hoverinfo: "skip", showlegend: false }];
    const compare = S.texts.length > 1;
    S.texts.forEach((T, k) => {
      Object.keys(T.dgm).sort().forEach((key) => {
        const d = +key.slice(1);
        const pts = T.dgm[key];
        const x = pts.map((p) => num(p[0]));
        const y = pts.map((p) => (Number.isFinite(num(p[1])) ? num(p[1]) : infY));
        traces.push({
          type: "scatter", mode: "markers", x, y,
          name: `${compare ? "AB"[k] + " · " : ""}H${d} (${pts.length})`,
          text: pts.map((p) => `${compare ? "text " + "AB"[k] + " · " : ""}H${d}<br>birth ${fmt(p[0], 4)}<br>death ${fmt(p[1], 4)}`),
          hovertemplate: "%{text}<extra></extra>",
          marker: {
            color: compare ? TEXT_COLORS[k] : DIM_COLORS[d % 4],
            symbol: DIM_SYMBOLS[d % 4] + (compare && k === 1 ? "-open" : ""), size: 9, opacity: 0.85,
            line: { color: compare && k === 1 ? TEXT_COLORS[1] : "white", width: compare && k === 1 ? 2 : 0.5 },
          },
        });
      });
    });
    const layout = {
      height: 420, margin: { l: 55, r: 10, t: 20, b: 45 },
      xaxis: { title: { text: "birth" }, range: [0, top], constrain: "domain" },
      yaxis: { title: { text: "death" }, range: [0, top], scaleanchor: "x", scaleratio: 1, constrain: "domain" },
      legend: { x: 0.98, y: 0.02, xanchor: "right", yanchor: "bottom", bgcolor: "rgba(255,255,255,0.8)" },
      shapes: epsShapes(S.eps).diagram,
      annotations: [{ x: 0, y: infY, xref: "x", yref: "y", text: "∞", showarrow: false, xanchor: "right", font: { size: 12 } }],
    };
    Plotly.react("diagram", traces, layout, PLOT_CONFIG);
  }

  function drawBarcode() {
    const { infY } = diagramExtent();
    const traces = [];
    const compare = S.texts.length > 1;
    let row = 0;
    const ticks = [], tickText = [];
    S.texts.forEach((T, k) => {
      Object.keys(T.dgm).sort().forEach((key) => {
        const d = +key.slice(1);
        const pts = T.dgm[key].map((p) => [num(p[0]), num(p[1])]).sort((p, q) => p[0] - q[0] || q[1] - p[1]);
        if (!pts.length) return;
        const x = [], y = [];
        const start = row;
        for (const [b, e] of pts) {
          x.push(b, Number.isFinite(e) ? e : infY, null); y.push(row, row, null); row++;
        }
        ticks.push((start + row - 1) / 2); tickText.push(`${compare ? "AB"[k] + " " : ""}H${d}`);
        traces.push({
          type: "scatter", mode: "lines", x, y, name: `${compare ? "AB"[k] + " · " : ""}H${d}`,
          line: { color: compare ? TEXT_COLORS[k] : DIM_COLORS[d % 4], width: Math.max(1.5, Math.min(6, 300 / Math.max(1, pts.length))) },
          hoverinfo: "skip", showlegend: false,
        });
        row += 2;
      });
    });
    const layout = {
      height: Math.min(900, Math.max(320, 60 + row * 4)), margin: { l: 60, r: 10, t: 20, b: 45 },
      xaxis: { title: { text: "scale" }, range: [0, infY * 1.02] },
      yaxis: { autorange: "reversed", tickvals: ticks, ticktext: tickText, showgrid: false, zeroline: false },
      shapes: epsShapes(S.eps).barcode,
    };
    Plotly.react("barcode", traces, layout, PLOT_CONFIG);
  }

  function epsShapes(eps) {
    const line = { color: "#C0392B", width: 1.2, dash: "dot" };
    // the diagram's lines in data units: its square axes are narrower than the "paper", and a
    // paper-wide line ran into the margin
    const { top } = diagramExtent();
    return {
      diagram: [
        { type: "line", xref: "x", yref: "y", x0: eps, x1: eps, y0: 0, y1: top, line },
        { type: "line", xref: "x", yref: "y", x0: 0, x1: top, y0: eps, y1: eps, line },
      ],
      barcode: [{ type: "line", xref: "x", yref: "paper", x0: eps, x1: eps, y0: 0, y1: 1, line }],
    };
  }

  function tickLabels(labels) {
    const n = labels.length;
    const step = Math.max(1, Math.ceil(n / 40));
    const pos = [], txt = [];
    for (let i = 0; i < n; i += step) { pos.push(i); txt.push(shortLabel(labels[i])); }
    return { pos, txt };
  }

  function drawHeatmaps() {
    if (!S.texts.length) return;
    const kind = $("heat-kind").value;
    const compare = S.texts.length > 1;
    S.texts.forEach((T, k) => {
      const z = kind === "attention" ? T.head.attention : T.D;
      const { pos, txt } = tickLabels(T.labels);
      const names = T.labels.map((s, i) => `${i}: ${ptext(s)}`);
      const custom = z.map((row, i) => row.map((_, j) => [names[i], names[j]]));
      const trace = {
        type: "heatmap", z, colorscale: kind === "attention" ? "Cividis" : "Viridis", zmin: 0,
        customdata: custom, colorbar: { title: { text: kind === "attention" ? "weight" : "distance" } },
        hovertemplate: "%{customdata[0]} → %{customdata[1]}<br>%{z:.4f}<extra></extra>",
      };
      // automargin: the margins grow to fit the longest tick label (fixed ones clipped
      // "information" to "nformation"); square cells shrink the domain, not widen the range, and
      // no zero line: on a widened range the y zero line crossed the [CLS] row into the margins
      const axis = { tickvals: pos, ticktext: txt, showgrid: false, zeroline: false, automargin: true, constrain: "domain" };
      const layout = {
        height: 480, margin: { l: 10, r: 10, t: 10, b: 10 },
        xaxis: { ...axis, tickangle: -90, constraintoward: "right" },
        yaxis: { ...axis, autorange: "reversed", scaleanchor: "x", constraintoward: "middle" },
      };
      Plotly.react(k === 0 ? "heat-a" : "heat-b", [trace], layout, PLOT_CONFIG);
      const title = kind === "attention" ? "Attention" : "Distances";
      $(k === 0 ? "heat-a-title" : "heat-b-title").textContent = `${title}${compare ? " · " + "AB"[k] : ""}`;
    });
  }

  // --------------------------------------------------------------- head map
  function gridOptions() {
    const d = S.data;
    const opts = [];
    const skip = new Set(["layer", "head", "rank_by"]);
    const interesting = (k) => !/^n_infinite_/.test(k);
    if (S.mode === "compare") {
      Object.keys(d.summary).filter((k) => !skip.has(k)).forEach((k) => opts.push({ value: `c:${k}`, label: k.replace(/_/g, " ") }));
      for (const [side, key] of [["A", "summary_a"], ["B", "summary_b"]]) {
        Object.keys(d[key]).filter((k) => !skip.has(k) && interesting(k)).forEach((k) => opts.push({ value: `${side}:${k}`, label: `${side}: ${k.replace(/_/g, " ")}` }));
      }
    } else {
      Object.keys(d.summary).filter((k) => !skip.has(k) && interesting(k)).forEach((k) => opts.push({ value: `s:${k}`, label: k.replace(/_/g, " ") }));
    }
    return opts;
  }

  function fillGridStats() {
    const sel = $("grid-stat");
    const prev = sel.value;
    const opts = gridOptions();
    fillSelect(sel, opts.map((o) => o.value), opts.map((o) => o.label));
    // the server's ranking dimension: the highest one in which no value is shared by more than half
    // of the heads (H0 on short texts); a column the user picked is kept while it exists
    const dflt = `${S.mode === "compare" ? "c" : "s"}:${S.data.ranking.column}`;
    sel.value = S.statChosen && opts.some((o) => o.value === prev) ? prev : dflt;
  }

  function drawHeadMap() {
    const d = S.data;
    if (!d) return;
    const [src, col] = $("grid-stat").value.split(/:(.*)/s);
    const table = src === "A" ? d.summary_a : src === "B" ? d.summary_b : d.summary;
    const values = (table[col] || []).map(num);
    const L = d.layers.length, H = d.heads.length;
    const z = [];
    for (let i = 0; i < L; i++) z.push(values.slice(i * H, (i + 1) * H).map((v) => (Number.isFinite(v) ? v : null)));
    const shapes = [];
    if (d.selected) {
      const [l, h] = d.selected;
      shapes.push({ type: "rect", xref: "x", yref: "y", x0: h - 0.5, x1: h + 0.5, y0: l - 0.5, y1: l + 0.5, line: { color: "#C0392B", width: 3 } });
    }
    const trace = {
      type: "heatmap", z, x: d.heads, y: d.layers, colorscale: "Viridis",
      colorbar: { title: { text: col.replace(/_/g, " "), side: "right" } },
      hovertemplate: "layer %{y}, head %{x}<br>%{z:.4g}<extra></extra>", xgap: 1, ygap: 1,
    };
    const layout = {
      height: Math.min(820, Math.max(300, 80 + 20 * L)), margin: { l: 55, r: 10, t: 10, b: 45 },
      xaxis: { title: { text: "head" }, dtick: 1, showgrid: false, zeroline: false },
      yaxis: { title: { text: "layer" }, autorange: "reversed", dtick: 1, showgrid: false, zeroline: false },
      shapes,
    };
    const div = $("head-map");
    Plotly.react(div, [trace], layout, PLOT_CONFIG);
    if (!div.dataset.bound) {
      div.on("plotly_click", (ev) => {
        const p = ev && ev.points && ev.points[0];
        if (p) selectHead(+p.y, +p.x);
      });
      div.dataset.bound = "1";
    }
  }

  // ---------------------------------------------------------------- numbers
  function betti(T, eps) {
    return Object.keys(T.dgm).sort().map((key) => T.dgm[key].filter((p) => num(p[0]) <= eps && num(p[1]) > eps).length);
  }

  function drawNumbers(info, k) {
    const d = S.data;
    if (!d || !d.head) return;
    const eps = S.eps;
    const out = [];
    const dims = [...Array(d.settings.maxdim + 1).keys()];
    if (S.mode === "compare") {
      $("numbers-title").textContent = `Comparison · layer ${d.selected[0]}, head ${d.selected[1]}`;
      const r = d.head.report;
      out.push('<table class="nums"><tr><th></th>' + dims.map((k) => `<th>H${k}</th>`).join("") + "</tr>");
      for (const [name, lab] of [["bottleneck", "bottleneck"], ["wasserstein1", "Wasserstein-1"], ["wasserstein2", "Wasserstein-2"]]) {
        out.push(`<tr><td>${lab} (texts)</td>` + dims.map((k) => `<td>${fmt(r.diagram_distances[name][k])}</td>`).join("") + "</tr>");
      }
      out.push(`<tr><td>bottleneck (shared tokens)</td>` + dims.map((k) => `<td>${fmt(r.shared_diagram_distances.bottleneck[k])}</td>`).join("") + "</tr>");
      out.push("</table>");
      const [ia, ib] = info;
      const C = S.shared.C, se = C ? C.edges(k) : 0, st = C ? C.triangles(k, false) : 0;
      const [ba, bb] = [betti(S.texts[0], eps), betti(S.texts[1], eps)];
      out.push(`<table class="nums"><tr><th>at ε = ${fmt(eps)}</th><th>A</th><th>B</th><th>in both</th></tr>`);
      out.push(`<tr><td>edges</td><td>${ia.edges}</td><td>${ib.edges}</td><td>${se}</td></tr>`);
      out.push(`<tr><td>triangles</td><td>${ia.tris}</td><td>${ib.tris}</td><td>${st}</td></tr>`);
      dims.forEach((k) => out.push(`<tr><td>β${k} (bars alive)</td><td>${ba[k]}</td><td>${bb[k]}</td><td></td></tr>`));
      out.push("</table>");
      out.push(`<p class="note">Head scale (median H0 death of both texts): ${fmt(d.head.scale)}. Tokens: A ${d.a.n_tokens}, B ${d.b.n_tokens}.</p>`);
      const toks = d.shared_tokens.map((s) => `<span class="tok-shared">${esc(s.key)}</span>`).join(", ");
      out.push(`<p class="tokens">shared tokens (${d.shared_tokens.length}): ${toks || "none"}</p>`);
      const ties = d.most_similar_heads.slice(0, 3).some((x) => x[4] > 1);
      const sim = d.most_similar_heads.slice(0, 3).map((x) => `#${x[3]}${x[4] > 1 ? "=" : ""} L${x[0]} H${x[1]} (${fmt(x[2])})`).join(", ");
      out.push(`<p class="note">most similar heads by bottleneck H${d.ranking.dim}: ${esc(sim)}${ties ? " (“=”: tied)" : ""}</p>`);
    } else {
      $("numbers-title").textContent = `Persistence · layer ${d.selected[0]}, head ${d.selected[1]}`;
      const s = d.head.diagram_summary;
      out.push('<table class="nums"><tr><th></th>' + dims.map((k) => `<th>H${k}</th>`).join("") + "</tr>");
      for (const [key, lab] of [["n_bars", "bars"], ["max_persistence", "max persistence"], ["total_persistence", "total persistence"], ["persistence_entropy", "entropy (bits)"]]) {
        out.push(`<tr><td>${lab}</td>` + dims.map((k) => `<td>${fmt(s["h" + k][key])}</td>`).join("") + "</tr>");
      }
      const b = betti(S.texts[0], eps);
      out.push(`<tr><td>β at ε = ${fmt(eps)}</td>` + dims.map((k) => `<td>${b[k]}</td>`).join("") + "</tr>");
      out.push("</table>");
      out.push(`<p class="note">At ε = ${fmt(eps)}: ${info[0].edges} edges, ${info[0].tris} triangles. Suggested ε ${fmt(d.head.scale)}. ${d.text.n_tokens} tokens.</p>`);
      out.push(`<p class="tokens">${d.text.labels.map(esc).join(" · ")}</p>`);
    }
    const cut = cutNote(d);
    if (cut) out.push(`<p class="note cut">Truncated to the model's limit: ${esc(cut)}.</p>`);
    $("numbers").innerHTML = out.join("");
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
