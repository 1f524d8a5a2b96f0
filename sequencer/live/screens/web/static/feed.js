// The feed shared by both pages: one WebSocket to /feed, the state as the server publishes
// it, and the show clock estimated NTP-style: each ping's round trip gives
// offset = server - (sent + received) / 2; the sample with the shortest round trip among the
// last ones is the best (its error is at most half its round trip).
"use strict";

const yz = window.yz = {
  state: null, offset: null, rtt: null, control: false, connected: false,
  samples: [], flashes: [], onstate: null, onreply: null, ws: null,
};

// seconds on the show clock, as this page estimates it (null until the first pong)
yz.serverTime = function (pageMs) {
  if (yz.offset === null) return null;
  return (pageMs === undefined ? performance.now() : pageMs) / 1000 + yz.offset;
};

yz.send = function (message) {
  if (yz.ws && yz.ws.readyState === WebSocket.OPEN) yz.ws.send(JSON.stringify(message));
};

function ping() {
  yz.send({type: "ping", c: performance.now()});
}

function pong(message) {
  const received = performance.now();
  const sent = message.c;
  const rtt = (received - sent) / 1000;
  yz.samples.push({offset: message.s - (sent + received) / 2000, rtt: rtt});
  if (yz.samples.length > 24) yz.samples.shift();
  const best = yz.samples.reduce((a, b) => (b.rtt < a.rtt ? b : a));
  yz.offset = best.offset;
  yz.rtt = best.rtt;
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = yz.ws = new WebSocket(`${scheme}//${location.host}/feed`);
  let timer = null;
  let pings = 0;
  ws.onopen = () => {
    yz.connected = true;
    yz.samples = [];
    if (yz.token) yz.send({type: "hello", token: yz.token});
    const burst = () => {  // a burst of pings at first, then one every two seconds
      ping();
      pings += 1;
      timer = setTimeout(burst, pings < 12 ? 100 : 2000);
    };
    burst();
  };
  ws.onmessage = (event) => {
    const message = JSON.parse(event.data);
    if (message.type === "pong") pong(message);
    else if (message.type === "state") {
      yz.state = message;
      if (yz.onstate) yz.onstate(message);
    } else {
      if (message.type === "hello") yz.control = message.control;
      if (yz.onreply) yz.onreply(message);
    }
  };
  ws.onclose = () => {
    yz.connected = false;
    yz.control = false;
    clearTimeout(timer);
    if (yz.onstate) yz.onstate(yz.state);
    setTimeout(connect, 1000);
  };
}

yz.clock = function (seconds) {  // m:ss
  if (seconds === null || seconds === undefined) return "";
  const s = Math.max(0, Math.ceil(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
};

yz.text = function (id, text) {
  const el = document.getElementById(id);
  if (el.textContent !== text) el.textContent = text;
};

// the header both pages share: the rite, and LIVE / HELD / PANIC n / DONE / disconnected
yz.showStatus = function (state) {
  yz.text("status", !yz.connected ? "disconnected" :
    state && state.panic_stage ? `PANIC ${state.panic_stage}` :
    state && state.held ? "HELD" : state && state.done ? "DONE" : "LIVE");
  document.body.classList.toggle("held", Boolean(state && (state.held || state.panic_stage)));
  if (state) yz.text("rite", state.rite);
};

yz.start = connect;
