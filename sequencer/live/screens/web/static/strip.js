// The drum heard (live --hear): a strip the drummer reads at a glance. The last strokes, each
// placed by its distance from the 節 being kept (left: early, right: late; ±SCALE_MS across
// the strip, the tolerance marked), the newest largest, the older fading; green within the
// tolerance, yellow within twice it, red beyond; the last stroke in ms and the 間若一 verdict
// of the 射節 so far (as `check` fits it).
"use strict";

(function () {
  const SCALE_MS = 60;

  function grade(dev, tol) {
    const a = Math.abs(dev);
    return a <= tol ? "ok" : a <= 2 * tol ? "near" : "off";
  }

  function place(ms) {
    return 50 + Math.max(-1, Math.min(1, ms / SCALE_MS)) * 50;
  }

  yz.drawStrip = function (heard) {
    const box = document.getElementById("strip");
    if (!box) return;
    box.classList.toggle("shown", Boolean(heard));
    if (!heard) return;
    const tol = heard.tolerance_ms;
    const strokes = heard.strokes;
    const n = strokes.length;
    const dots = strokes.map((s, i) => {
      const age = n - 1 - i;
      const opacity = (1 - age / (n + 1)).toFixed(2);
      return `<span class="dot ${grade(s.deviation_ms, tol)}${age === 0 ? " newest" : ""}" ` +
        `style="left:${place(s.deviation_ms).toFixed(2)}%;opacity:${opacity}"></span>`;
    }).join("");
    const band = `<span class="band" style="left:${place(-tol).toFixed(2)}%;` +
      `right:${(100 - place(tol)).toFixed(2)}%"></span><span class="centre"></span>`;
    const track = box.querySelector(".track");
    const html = band + dots;
    if (track.innerHTML !== html) track.innerHTML = html;
    const last = n ? strokes[n - 1] : null;
    const lastText = last ? `${last.deviation_ms >= 0 ? "+" : "−"}` +
      `${Math.abs(last.deviation_ms).toFixed(0)} ms` : "—";
    const lastEl = box.querySelector(".last");
    lastEl.textContent = lastText;
    lastEl.className = `last ${last ? grade(last.deviation_ms, tol) : ""}`;
    const v = heard.verdict;
    const verdict = box.querySelector(".verdict");
    verdict.textContent = heard.problem ? heard.problem :
      !v ? "聽" : v.ok ? `間若一 ✓ ${v.count}` : `✗ ${v.max_deviation_ms.toFixed(0)} ms`;
    verdict.className = `verdict ${heard.problem ? "off" : !v ? "" : v.ok ? "ok" : "off"}`;
  };
})();
