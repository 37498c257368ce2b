/* Shared DOM and formatting helpers of the browser UI: element building (text always as text
 * nodes), showing and clearing, times, sizes, scores and heading paths. No page state.
 */

function $(id) {
  return document.getElementById(id);
}

/** el("div", {class: "x", "data-testid": "y"}, child, "text", ...) — text children via textNodes. */
function el(tag, attrs) {
  var node = document.createElement(tag);
  if (attrs) {
    Object.keys(attrs).forEach(function (name) {
      var value = attrs[name];
      if (value === null || value === undefined || value === false) return;
      if (name === "text") node.textContent = String(value);
      else if (name === "onclick") node.addEventListener("click", value);
      else if (value === true) node.setAttribute(name, "");
      else node.setAttribute(name, String(value));
    });
  }
  for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
  return node;
}

/** append(node, child, child, ...): nodes as they are, arrays flattened, anything else as text. */
function append(node) {
  for (var i = 1; i < arguments.length; i++) {
    var child = arguments[i];
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) child.forEach(function (c) { append(node, c); });
    else if (child instanceof Node) node.appendChild(child);
    else node.appendChild(document.createTextNode(String(child)));
  }
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

function show(node, text) {
  node.textContent = text;
  node.hidden = !text;
}

// The browser's local time with its UTC offset ("2024-05-01 16:30:00 UTC+8"). A server time
// without a zone is UTC (the ledger stores UTC); without this it would be read as local time.
function fmtTime(value) {
  if (!value) return "—";
  var raw = String(value);
  if (/^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(raw) && !/(Z|[+-]\d\d:?\d\d)$/i.test(raw)) raw += "Z";
  var d = new Date(raw);
  if (isNaN(d.getTime())) return String(value);
  function p(n) { return (n < 10 ? "0" : "") + n; }
  var off = -d.getTimezoneOffset();
  var zone = "UTC" + (off < 0 ? "-" : "+") + Math.floor(Math.abs(off) / 60) +
    (Math.abs(off) % 60 ? ":" + p(Math.abs(off) % 60) : "");
  return (
    d.getFullYear() + "-" + p(d.getMonth() + 1) + "-" + p(d.getDate()) + " " +
    p(d.getHours()) + ":" + p(d.getMinutes()) + ":" + p(d.getSeconds()) + " " + zone
  );
}

/** A short local time for a list: 今天 16:30, 昨天 16:30, 5月1日 16:30, 2023-05-01 (another
 * year); `value`: a server time (as fmtTime) or epoch seconds; `now`: for tests. */
function fmtShortTime(value, now) {
  if (value === null || value === undefined || value === "") return "—";
  var d;
  if (typeof value === "number") d = new Date(value * 1000);
  else {
    var raw = String(value);
    if (/^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(raw) && !/(Z|[+-]\d\d:?\d\d)$/i.test(raw)) raw += "Z";
    d = new Date(raw);
  }
  if (isNaN(d.getTime())) return String(value);
  function p(n) { return (n < 10 ? "0" : "") + n; }
  var today = now ? new Date(now) : new Date();
  var clock = p(d.getHours()) + ":" + p(d.getMinutes());
  function sameDay(a, b) {
    return a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() &&
      a.getDate() === b.getDate();
  }
  if (sameDay(d, today)) return "今天 " + clock;
  var yesterday = new Date(today.getFullYear(), today.getMonth(), today.getDate() - 1);
  if (sameDay(d, yesterday)) return "昨天 " + clock;
  if (d.getFullYear() === today.getFullYear()) {
    return (d.getMonth() + 1) + "月" + d.getDate() + "日 " + clock;
  }
  return d.getFullYear() + "-" + p(d.getMonth() + 1) + "-" + p(d.getDate());
}

function fmtBytes(n) {
  if (typeof n !== "number") return "";
  if (n < 1024) return n + "\u00a0B";
  if (n < 1024 * 1024) return (n / 1024).toFixed(1) + "\u00a0KB";
  return (n / 1024 / 1024).toFixed(1) + "\u00a0MB";
}

function pathSegments(titlePath) {
  if (!titlePath) return [];
  if (Array.isArray(titlePath)) return titlePath.map(String);
  return String(titlePath).split(" > ").filter(function (s) { return s.length > 0; });
}

function hasBlockType(blockTypes, kind) {
  if (!blockTypes) return false;
  var list = Array.isArray(blockTypes) ? blockTypes : String(blockTypes).split(/[,\s]+/);
  return list.indexOf(kind) !== -1;
}

/** A heading path as "A › B › C" segments (each its own span, so long paths wrap cleanly). */
function pathNode(titlePath, testid) {
  var segs = pathSegments(titlePath);
  var node = el("span", { class: "path", "data-testid": testid || null });
  if (!segs.length) {
    node.classList.add("muted");
    node.textContent = "（无标题路径）";
    return node;
  }
  segs.forEach(function (s, i) {
    if (i) append(node, el("span", { class: "sep", "aria-hidden": "true", text: " › " }));
    append(node, el("span", { class: "seg", text: s }));
  });
  node.title = segs.join(" > ");
  return node;
}

function fmtScore(v) {
  var n = Number(v);
  return isNaN(n) ? String(v) : n.toFixed(4);
}

// a probability to three significant digits (0.836, 0.0046)
function fmtProb(v) {
  var n = Number(v);
  return isNaN(n) ? String(v) : String(Number(n.toPrecision(3)));
}

export { $, el, append, clear, show, fmtTime, fmtShortTime, fmtBytes, fmtScore, fmtProb, hasBlockType, pathNode };
