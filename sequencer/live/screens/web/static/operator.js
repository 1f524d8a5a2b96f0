// The operator page: the cue list, standby, and the commands (view only until the show's
// token is given: ?token=… in the address, or typed in).
"use strict";

const params = new URLSearchParams(location.search);
yz.token = params.get("token") || sessionStorage.getItem("yz-token") || "";
if (params.has("token")) history.replaceState(null, "", location.pathname);

let shownSeq = null;  // the show's last message shown

function render(state) {
  document.body.classList.toggle("control", yz.control);
  yz.text("role", !yz.connected ? "" : yz.control ? "control" : "view only");
  for (const button of document.querySelectorAll("button[data-command]")) {
    button.disabled = !yz.control || !yz.connected;
  }
  yz.showStatus(state);
  if (!state) return;
  yz.text("standby", state.standby ? `standby: ${state.standby}  (${state.standby_trigger})`
    : "standby: —");
  yz.text("standby-at", state.standby_at ? `「${state.standby_at}」` : "");
  // what the texts bind once the standby cue begins, and what is in force (「樂作，大夫不入」)
  const quoted = (rules) => rules.map((rule) => `「${rule}」`).join("");
  yz.text("standby-rules", state.standby_rules.length ?
    `once it begins: ${quoted(state.standby_rules)}` : "");
  yz.text("rules", state.rules.length ? `in force: ${quoted(state.rules)}` : "");
  // 無算樂: the piece sounding, the next, and the buttons to choose it
  document.body.classList.toggle("choosing", Boolean(state.piece));
  yz.text("piece", state.piece ? `無算樂　${state.piece}` : "");
  yz.text("panic", state.panic_stage === 1 ? "PANIC again: all notes off" : "PANIC");
  if (state.message && state.message_seq !== shownSeq) {  // news from any control
    shownSeq = state.message_seq;
    yz.text("message", state.message);
    document.getElementById("message").classList.remove("refused");
  }
  const rows = document.getElementById("cue-rows");
  const html = state.cues.map((cue) => {
    const cls = cue.running ? "running" : cue.standby ? "standby" : "";
    const mark = cue.running ? "▶" : cue.standby ? "→" : "";
    return `<tr class="${cls}" data-cue="${escape(cue.id)}"><td class="mark">${mark}</td>` +
      `<td>${escape(cue.id)}</td><td>${escape(cue.title)}</td><td>${escape(cue.status)}</td></tr>`;
  }).join("");
  if (rows.innerHTML !== html) rows.innerHTML = html;
  yz.drawStrip(state.heard);
}

function escape(text) {
  return String(text).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;",
    '"': "&quot;"})[c]);
}

function tick() {  // the 節 counter, from the show clock
  const state = yz.state;
  const now = yz.serverTime();
  let text = "";
  if (state && state.shooting && now !== null) {
    const s = state.shooting;
    const fallen = s.marks.filter((m) => m.t <= now);
    if (fallen.length) {
      const m = fallen[fallen.length - 1];
      text = `節 ${m.k} / ${s.n}${m.k <= s.listen ? "（先以聽）" : ""}　${(s.ou[m.cycle] || [""])[0]}`;
    }
  }
  yz.text("jie", text);
}

yz.onstate = render;
yz.onreply = (message) => {
  if (message.type === "hello") {
    if (message.control) sessionStorage.setItem("yz-token", yz.token);
    else if (yz.token) yz.text("message", "the token was not accepted: view only");
  } else if (message.type === "denied") yz.text("message", message.error);
  else if (message.type === "ok") yz.text("message", `${message.name} sent`);
  else if (message.type === "result") {  // what it did, or why it did nothing
    yz.text("message", `${message.name}: ${message.message}`);
    document.getElementById("message").classList.toggle("refused", !message.acted);
  }
  render(yz.state);
};

for (const button of document.querySelectorAll("button[data-command]")) {
  button.addEventListener("click", () => yz.send({type: "command", name: button.dataset.command}));
}
document.getElementById("auth").addEventListener("submit", (event) => {
  event.preventDefault();
  yz.token = document.getElementById("token").value;
  yz.send({type: "hello", token: yz.token});
});

yz.start();
setInterval(tick, 100);
