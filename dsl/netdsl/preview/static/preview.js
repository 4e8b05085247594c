// The netdsl preview page: draws each snapshot the server pushes on /events.
// Everything taken from the spec is put in the page as text (textContent), never
// as markup; the diagram is Graphviz's SVG, imported as SVG with anything active
// removed (the Content-Security-Policy would block it anyway).
"use strict";

const page = {
  snapshot: null,   // the last snapshot applied
  svg: null,        // the SVG text now drawn
  selected: null,   // the drawn node id whose details are shown
};
// For tests and the curious: the version shown and when it was applied (ms since the epoch).
window.netdslPreview = { version: 0, appliedAt: 0 };

const $ = (id) => document.getElementById(id);

function element(tag, text, className) {
  const el = document.createElement(tag);
  if (text !== undefined) el.textContent = text;
  if (className) el.className = className;
  return el;
}

function apply(snapshot) {
  page.snapshot = snapshot;
  document.title = `netdsl preview \u2014 ${snapshot.spec}`;
  $("spec").textContent = snapshot.spec;
  $("model").textContent = snapshot.model ? `model ${snapshot.model}` : "";
  showStatus(snapshot);
  const diagnostics = $("diagnostics");
  diagnostics.textContent = snapshot.diagnostics;
  diagnostics.hidden = snapshot.diagnostics === "";
  diagnostics.classList.toggle("errors", snapshot.errors > 0);
  if (snapshot.svg !== page.svg) drawDiagram(snapshot.svg);
  $("diagram").classList.toggle("stale", snapshot.stale);
  showDetails(page.selected && snapshot.nodes[page.selected] ? page.selected : null);
  window.netdslPreview = { version: snapshot.version, appliedAt: Date.now() };
  document.body.dataset.version = String(snapshot.version);
}

function showStatus(snapshot) {
  const status = $("status");
  let text;
  if (snapshot.errors > 0) {
    const what = snapshot.errors === 1 ? "1 error" : `${snapshot.errors} errors`;
    text = snapshot.svg ? `${what} \u2014 showing the last good diagram` : what;
  } else {
    text = snapshot.certain ? "ok" : "ok \u2014 some shapes or counts unknown (? and +)";
  }
  status.textContent = text;
  status.className = snapshot.errors > 0 ? "errors" : "ok";
}

function drawDiagram(svgText) {
  const box = $("diagram");
  const scrolled = [box.scrollLeft, box.scrollTop];  // the reader stays where they were
  box.replaceChildren();
  page.svg = svgText;
  if (!svgText) {
    box.append(element("p", "No diagram yet: the spec has errors.", "hint"));
    return;
  }
  const parsed = new DOMParser().parseFromString(svgText, "image/svg+xml");
  const svg = parsed.documentElement;
  if (svg.nodeName !== "svg") {
    box.append(element("p", "The diagram could not be read.", "hint"));
    return;
  }
  disarm(svg);
  box.append(document.adoptNode(svg));
  [box.scrollLeft, box.scrollTop] = scrolled;
}

// Graphviz's SVG has no scripts or handlers; this keeps it so whatever it holds.
function disarm(root) {
  for (const el of root.querySelectorAll("script, foreignObject, iframe, object, embed")) el.remove();
  for (const el of [root, ...root.querySelectorAll("*")]) {
    for (const attr of [...el.attributes]) {
      const name = attr.name.toLowerCase();
      const value = attr.value.trim().toLowerCase();
      if (name.startsWith("on") || ((name === "href" || name.endsWith(":href")) && !value.startsWith("#"))) {
        el.removeAttribute(attr.name);
      }
    }
  }
}

function showDetails(key) {
  page.selected = key;
  for (const g of document.querySelectorAll("#diagram g.node.selected")) g.classList.remove("selected");
  const box = $("details");
  box.replaceChildren();
  const info = key ? page.snapshot.nodes[key] : null;
  if (!info) {
    box.append(element("p", "Click a layer to see its arguments, shapes and parameters.", "hint"));
    return;
  }
  const drawn = document.getElementById(`node-${key}`);
  if (drawn) drawn.classList.add("selected");
  box.append(element("h2", info.kind));
  box.append(element("div", info.name, "name"));
  const facts = [
    ["role", info.role],
    ["output shape", info.outputs.join(" | ")],
    ["input shapes", info.inputs.join(" | ")],
    ["parameters", info.params],
    ["cost", info.cost],
    ["copies", info.copies],
    ["calls", info.calls],
    ["dtype", info.dtype],
    ["block", info.block],
    ["defined at", info.where],
  ];
  box.append(table(facts.filter(([, value]) => value !== undefined && value !== "")));
  if (info.args.length) {
    box.append(element("h3", "arguments"));
    box.append(table(info.args));
  }
}

function table(rows) {
  const t = element("table");
  for (const [key, value] of rows) {
    const tr = element("tr");
    tr.append(element("th", String(key)), element("td", String(value)));
    t.append(tr);
  }
  return t;
}

function clicked(event) {
  const g = event.target.closest("g.node");
  if (!g || !g.id.startsWith("node-")) return;
  const key = g.id.slice("node-".length);
  if (page.snapshot && page.snapshot.nodes[key]) showDetails(key);
}

function connect() {
  const events = new EventSource("/events");
  events.addEventListener("snapshot", (event) => apply(JSON.parse(event.data)));
  events.addEventListener("error", () => {
    const status = $("status");
    status.textContent = "disconnected \u2014 is netdsl preview still running?";
    status.className = "offline";
  });
}

document.addEventListener("DOMContentLoaded", () => {
  $("diagram").addEventListener("click", clicked);
  $("fit").addEventListener("click", () => $("diagram").classList.add("fit"));
  $("actual").addEventListener("click", () => $("diagram").classList.remove("fit"));
  connect();
});
