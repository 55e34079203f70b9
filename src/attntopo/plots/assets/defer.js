/* attntopo: draw a page's plotly figures one at a time, after the page has parsed, figures on
 * screen first.  plotly.js draws synchronously: ten large figures drawn while the page parses
 * (plotly's own HTML does that) keep the whole page blank and frozen until the last one is
 * done.  Each figure's script hands its drawing to attntopoDefer instead; the queue draws one
 * figure per task (the browser paints and answers input in between), always picking a figure
 * that is in the viewport if one is waiting, else the next in document order.  Without this
 * script (a figure's HTML pasted elsewhere) the call draws at once.  Self-contained, inlined.
 */
(function () {
  "use strict";
  if (window.attntopoDefer) return;
  const queue = [];
  let scheduled = false;

  function onScreen(task) {
    if (!task.div) return false;
    const r = task.div.getBoundingClientRect();
    return r.bottom > 0 && r.top < (window.innerHeight || document.documentElement.clientHeight);
  }

  function next() {
    scheduled = false;
    if (!queue.length) return;
    let k = queue.findIndex(onScreen);
    if (k < 0) k = 0;
    const task = queue.splice(k, 1)[0];
    schedule();  // before drawing: an error in one figure must not stop the others
    task.draw();
  }

  function schedule() {
    if (scheduled || !queue.length) return;
    scheduled = true;
    setTimeout(next, 0);
  }

  window.attntopoDefer = function (draw) {
    const script = document.currentScript;
    const holder = script && script.parentNode;
    const div = holder ? holder.querySelector(".plotly-graph-div") : null;
    queue.push({ draw: draw, div: div });
    schedule();
  };
})();
