/* A small, local API reference rendered from /openapi.json (FastAPI's Swagger UI would load
 * its assets from a CDN; this page needs nothing but this server). */
"use strict";

(function () {
  const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));

  function resolve(spec, schema) {
    let s = schema || {};
    for (let k = 0; k < 10 && s.$ref; k++) {
      const name = s.$ref.split("/").pop();
      s = (spec.components && spec.components.schemas && spec.components.schemas[name]) || {};
    }
    return s;
  }

  function typeOf(spec, s) {
    s = resolve(spec, s);
    if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(" | ");
    if (s.const !== undefined) return JSON.stringify(s.const);
    if (s.anyOf) return s.anyOf.map((x) => typeOf(spec, x)).join(" | ");
    if (s.type === "array") return `array of ${typeOf(spec, s.items)}`;
    if (s.type === "object" && s.additionalProperties) return `object of ${typeOf(spec, s.additionalProperties)}`;
    if (s.title && !s.type && s.properties) return s.title;
    return s.type || (s.properties ? "object" : "any");
  }

  function limits(spec, s) {
    s = resolve(spec, s);
    if (s.anyOf) return s.anyOf.map((x) => limits(spec, x)).filter(Boolean).join(" ");
    const out = [];
    if (s.minLength !== undefined) out.push(`min length ${s.minLength}`);
    if (s.maxLength !== undefined) out.push(`max length ${s.maxLength}`);
    if (s.minimum !== undefined) out.push(`≥ ${s.minimum}`);
    if (s.maximum !== undefined) out.push(`≤ ${s.maximum}`);
    return out.join(", ");
  }

  function fieldsTable(spec, schema) {
    const s = resolve(spec, schema);
    if (!s.properties) return `<p><code>${esc(typeOf(spec, schema))}</code></p>`;
    const req = new Set(s.required || []);
    const rows = Object.entries(s.properties).map(([name, p]) => {
      const def = p.default !== undefined ? `<code>${esc(JSON.stringify(p.default))}</code>` : "";
      return `<tr><td><code>${esc(name)}</code>${req.has(name) ? " <b>required</b>" : ""}</td><td><code>${esc(typeOf(spec, p))}</code></td>` +
        `<td>${esc(limits(spec, p))}</td><td>${def}</td><td>${esc(p.description || "")}</td></tr>`;
    });
    return `<table class="fields"><tr><th>field</th><th>type</th><th>limits</th><th>default</th><th>meaning</th></tr>${rows.join("")}</table>`;
  }

  function example(path, method, spec, schema) {
    const url = `${location.origin}${path}`;
    if (method === "get") return `curl -s ${url}`;
    const s = resolve(spec, schema);
    const body = {};
    for (const name of s.required || []) {
      body[name] = name.startsWith("text") ? "Quantum information theory allows us to study attention" : "";
    }
    if (path.endsWith("/compare")) body.text_b = "Classical information theory studies entropy";
    body.layer = 1; body.head = 2;
    return `curl -s -X POST ${url} \\\n  -H 'Content-Type: application/json' \\\n  -d '${JSON.stringify(body)}'`;
  }

  async function main() {
    let spec;
    try {
      const r = await fetch("/openapi.json");
      spec = await r.json();
    } catch (e) {
      const el = document.getElementById("error");
      el.textContent = "cannot load /openapi.json from this server";
      el.hidden = false;
      return;
    }
    document.getElementById("intro").innerHTML =
      `<h2>${esc(spec.info.title)} ${esc(spec.info.version)}</h2><p>${esc(spec.info.description || "")}</p>`;
    const out = [];
    for (const [path, ops] of Object.entries(spec.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const body = op.requestBody && op.requestBody.content && op.requestBody.content["application/json"];
        const ok = op.responses && op.responses["200"] && op.responses["200"].content && op.responses["200"].content["application/json"];
        const codes = Object.entries(op.responses || {}).map(([c, r]) => `<li><code>${esc(c)}</code> ${esc(r.description)}</li>`).join("");
        out.push(`<div class="card doc-route" id="${esc(method + path.replace(/\//g, "-"))}">` +
          `<h3><span class="method ${esc(method)}">${esc(method.toUpperCase())}</span> ${esc(path)}</h3>` +
          `<p><b>${esc(op.summary || "")}</b></p><p>${esc(op.description || "")}</p>` +
          (body ? `<h4>Request body (JSON)</h4>${fieldsTable(spec, body.schema)}` : "") +
          (ok ? `<h4>Response 200</h4>${fieldsTable(spec, ok.schema)}` : "") +
          `<h4>Status codes</h4><ul>${codes}</ul>` +
          `<h4>Example</h4><pre>${esc(example(path, method, spec, body && body.schema))}</pre></div>`);
      }
    }
    document.getElementById("routes").innerHTML = out.join("");
    document.body.dataset.ready = "1";
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", main);
  else main();
})();
