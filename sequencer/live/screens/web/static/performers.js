// The performers' page: the 節 counter and its flash, drawn on the show clock. Each frame
// finds the 節 that has fallen (its time within half a frame from now, so the nearest frame
// draws it) and, when it is a new one, flashes and records when the flash was drawn (and the
// frame before it: the nearer of the two is the one that should draw it).
"use strict";

let frameS = 1 / 60;  // the frame interval, measured
let lastFrame = null;
let shown = null;  // key of the 節 on the counter
const LATE_S = 0.25;  // a 節 found later than this (a page opened mid-節) shows without a flash

function currentMark(shooting, now) {
  let found = -1;
  const marks = shooting.marks;
  for (let i = 0; i < marks.length && marks[i].t <= now + frameS / 2; i++) found = i;
  return found;
}

function drawShooting(shooting, now, frameMs, previousMs) {
  const i = currentMark(shooting, now);
  if (i < 0) {
    yz.text("counter", `0 / ${shooting.n}`);
    yz.text("archer", `${shooting.song}`);
    document.body.classList.remove("listening");
    return;
  }
  const mark = shooting.marks[i];
  const key = `${shooting.cue}:${mark.pass_index}:${mark.cycle}:${mark.k}`;
  if (key !== shown) {
    shown = key;
    if (now - mark.t < LATE_S) {
      flash();
      yz.flashes.push({cue: shooting.cue, k: mark.k, cycle: mark.cycle, pass: mark.pass_index,
                       due: mark.t, frame: frameS,  // the interval its half-frame rule used
                       drawn: yz.serverTime(frameMs),
                       before: previousMs === null ? null : yz.serverTime(previousMs)});
    }
  }
  yz.text("counter", `${mark.k} / ${shooting.n}`);
  const listening = mark.k <= shooting.listen;
  document.body.classList.toggle("listening", listening);
  const ou = shooting.ou[mark.cycle] || ["", "上射", "下射"];
  if (listening) {
    yz.text("archer", `${ou[0]}　聽`);
    return;
  }
  const next = i + 1 < shooting.marks.length ? shooting.marks[i + 1].t : shooting.end;
  // two releases in each shooting 節 (拾發, 上射 first): the first half is the 上射's
  const upper = next === null || (now - mark.t) < (next - mark.t) / 2;
  const [role, who] = upper ? ["上射", ou[1]] : ["下射", ou[2]];
  yz.text("archer", `${ou[0]}　${role}${who === role ? "" : " " + who}`);
}

function flash() {
  const el = document.getElementById("flash");
  el.classList.remove("on");
  void el.offsetWidth;  // restart the fade
  el.classList.add("on");
}

function drawNext(state, now) {
  const parts = [];
  const current = state.current;
  if (current && current.end !== null) parts.push(`this cue ends in ${yz.clock(current.end - now)}`);
  if (state.next_start !== null) parts.push(`next cue in ${yz.clock(state.next_start - now)}`);
  else if (state.standby !== null) parts.push(`next: ${state.standby} on GO`);
  else if (state.done) parts.push("the show is done");
  yz.text("next", parts.join("　·　"));
}

function frame(frameMs) {
  const previousMs = lastFrame;
  if (previousMs !== null) {
    const dt = (frameMs - previousMs) / 1000;
    if (dt > 0.004 && dt < 0.1) frameS = 0.9 * frameS + 0.1 * dt;
  }
  lastFrame = frameMs;
  const state = yz.state;
  const now = yz.serverTime(frameMs);
  if (state && now !== null) {
    // no 射節: no counter at all (a "—" at the counter's size was a large white bar)
    document.body.classList.toggle("idle", !state.shooting);
    if (state.shooting) drawShooting(state.shooting, now, frameMs, previousMs);
    else {
      yz.text("counter", "");
      yz.text("archer", "");
      document.body.classList.remove("listening");
    }
    drawNext(state, now);
  }
  requestAnimationFrame(frame);
}

yz.onstate = (state) => {
  yz.showStatus(state);
  if (!state) return;
  const current = state.current;
  yz.text("cue-title", current ? current.title : (state.standby ? `standby: ${state.standby}` : ""));
  // a 無算樂: the piece sounding and the next, not the whole pool
  yz.text("pieces", state.piece ? state.piece :
    current ? current.pieces.join("　") : state.standby_at);
  // a cue that runs until stopped: the moment that stops it, to watch for
  yz.text("stop-at", state.stop_at ? `until 「${state.stop_at}」` : "");
  yz.text("tally", state.tally);
  yz.drawStrip(state.heard);
};

yz.start();
requestAnimationFrame(frame);
