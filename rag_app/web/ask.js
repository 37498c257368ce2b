/* Asking, in a conversation (conversation.js; /api/chat): the question (within the chosen
 * collection, optionally limited to the chosen documents), the answer streamed as it is written
 * (plain text, 生成中…; stream: true) and then shown whole with its [n] citation markers, a
 * refusal's reason, its closest unit and 最接近的资料, timings, and the citation pop-up.
 */

import { $, el, append, clear, show, fmtScore, fmtProb, hasBlockType, pathNode } from "./dom.js";
import { state, api, apiStream, canStream, errText } from "./api.js";
import { chunkTextNode } from "./chunks.js";
import { selectedNames } from "./documents.js";
import { conversationBody, currentConversation, recordTurn } from "./conversation.js";

var lastAnswer = null;

function ask() {
  var q = $("ask-input").value.trim();
  if (!q) {
    $("ask-input").focus();
    return;
  }
  var btn = $("ask-button");
  btn.disabled = true;
  $("ask-status").textContent = "检索并生成答案中…";
  show($("ask-error"), "");
  var ids = Object.keys(state.selected);
  var scope = ids.length ? selectedNames() : null;
  var within = state.collection || null;
  var body = conversationBody({
    question: q, top_k: 5, doc_ids: ids.length ? ids : null, collection: within,
  });
  var streamed = false;
  var asking = currentConversation();
  function current() { // not left meanwhile (新对话, another collection, a reopened one)
    return within === (state.collection || null) && asking === currentConversation();
  }
  var asked = canStream()
    ? apiStream("/api/chat", body, function (piece, sofar) {
      if (!current()) return;
      streamed = true;
      renderPartial(sofar, scope, within);
    })
    : api("/api/chat", { method: "POST", json: body });
  asked.then(
    function (res) {
      if (!current()) return;
      renderAnswer(res, scope, within); // the answer event's text counts, not the pieces
      recordTurn(q, res, within);
    },
    function (err) {
      if (streamed && current()) $("answer-box").hidden = true; // half an answer is none
      show($("ask-error"), "提问失败：" + errText(err));
    }
  ).then(function () {
    $("answer").classList.remove("streaming");
    $("answer").removeAttribute("aria-busy");
    btn.disabled = false;
    $("ask-status").textContent = "";
  });
}

function renderScope(scope, collection) {
  var docs = scope ? "仅限选中的文档 (" + scope.length + ")：" + scope.join("、") : "";
  show($("answer-scope"), [collection ? "集合「" + collection + "」" : "", docs]
    .filter(Boolean).join(" · "));
}

/** The answer as it is being written: plain text (its [n] not yet links), 生成中…; the last
 * answer's sources, reason, timings and feedback are gone. */
function renderPartial(text, scope, collection) {
  var out = $("answer");
  if (!out.classList.contains("streaming")) {
    lastAnswer = null;
    renderScope(scope, collection);
    show($("answer-resolved"), "");
    show($("answer-reason"), "");
    clear($("answer-closest"));
    $("answer-closest").hidden = true;
    show($("source-heading"), "");
    clear($("source-list"));
    $("timings").textContent = "";
    $("feedback").hidden = true;
    out.classList.remove("refused");
    out.classList.add("streaming");
    out.setAttribute("aria-busy", "true");
    $("answer-box").hidden = false;
    $("ask-status").textContent = "生成中…";
  }
  out.textContent = text;
}

/** `scope`: the names of the documents the question was limited to (null: all of them);
 * `collection`: the collection it was asked in (null: none). */
function renderAnswer(res, scope, collection) {
  lastAnswer = res;
  renderScope(scope, collection);
  var sources = res.sources || [];
  var box = $("answer-box");
  var out = $("answer");
  clear(out);
  box.hidden = false;
  out.classList.remove("streaming");
  out.removeAttribute("aria-busy");
  out.classList.toggle("refused", !!res.refused);

  // Split on [n]: every valid marker becomes a button that opens sources[n-1].
  var text = String(res.answer || "");
  var re = /\[(\d{1,3})\]/g;
  var last = 0;
  var m;
  while ((m = re.exec(text)) !== null) {
    var n = parseInt(m[1], 10);
    if (m.index > last) append(out, text.slice(last, m.index));
    if (n >= 1 && n <= sources.length) append(out, markerButton(n));
    else append(out, m[0]);
    last = m.index + m[0].length;
  }
  if (last < text.length) append(out, text.slice(last));

  var reason = $("answer-reason");
  if (res.refused) {
    show(reason, "未作答 · " + (res.explanation || "原因: " + (res.reason || "unknown")) +
      (sources.length ? " 下面是最接近的资料。" : ""));
  } else if (res.outcome === "qualified") {
    // the first line of the answer already says it; the badge makes it visible at a glance
    show(reason, "有保留的回答 · 知识库可能没有所问的内容，下面是最接近的资料。");
  } else show(reason, "");

  // a refusal's closest unit: quoted with its marker, as the nearest the documents have
  var closestBox = $("answer-closest");
  clear(closestBox);
  var closest = res.refused ? res.closest || [] : [];
  closest.forEach(function (c) {
    var line = el("div", { class: "closest-line" }, "最接近的内容：" + c.text + " ");
    if (c.source >= 1 && c.source <= sources.length) append(line, markerButton(c.source));
    closestBox.appendChild(line);
  });
  closestBox.hidden = !closest.length;

  // a refusal keeps its closest sources: shown as such, not as citations of an answer
  var heading = $("source-heading");
  show(heading, res.refused && sources.length ? "最接近的资料" : "");
  var list = $("source-list");
  clear(list);
  list.classList.toggle("closest", !!res.refused);
  sources.forEach(function (s, i) {
    list.appendChild(
      el(
        "li",
        { class: "source", "data-testid": "source-item" },
        markerButton(i + 1),
        el("span", { class: "src-file", "data-testid": "source-file", text: s.filename || s.doc_id }),
        pathNode(s.title_path),
        el("span", { class: "chip", text: "score " + fmtScore(s.score) })
      )
    );
  });

  var t = res.timings || {};
  var parts = Object.keys(t).map(function (k) {
    var v = Number(t[k]);
    var label = k.replace(/_ms$/, "");
    return label + " " + (isNaN(v) ? t[k] : v.toFixed(v < 10 ? 1 : 0)) + (/_ms$/.test(k) ? " ms" : "");
  });
  if (res.mode) parts.unshift("mode " + res.mode);
  // the LLM failed (down, timed out, empty, citing nothing): answered without it
  if (res.llm_error) parts.unshift("LLM not used: " + res.llm_error);
  // how near a refusal the answer was: the gate refuses below its threshold
  if (typeof res.confidence === "number") {
    parts.unshift(
      "confidence " + fmtProb(res.confidence) +
        (res.threshold > 0 ? " (gate threshold " + fmtProb(res.threshold) + ")" : " (gate off)") +
        (res.reviewed ? " · below it, read by the LLM" : "")
    );
  }
  if (typeof res.reading === "number") parts.unshift("reader " + fmtProb(res.reading));
  $("timings").textContent = parts.join(" · ");
}

function markerButton(n) {
  return el("button", {
    type: "button",
    class: "marker",
    "data-testid": "citation-marker",
    "data-source": n,
    "aria-label": "查看来源 " + n,
    text: "[" + n + "]",
    onclick: function () { openCitation(n); },
  });
}

function openCitation(n) {
  var s = lastAnswer && lastAnswer.sources && lastAnswer.sources[n - 1];
  if (!s) return;
  // a refusal cites nothing: its closest unit is what gets highlighted, and the title says so
  var marked = lastAnswer.refused ? lastAnswer.closest || [] : lastAnswer.citations || [];
  var cites = marked.filter(function (c) { return c.source === n; });
  $("cite-title").textContent =
    "来源 [" + n + "]" + (lastAnswer.refused && cites.length ? " · 高亮为最接近的内容" : "");
  var meta = $("cite-meta");
  clear(meta);
  function row(label, value, testid) {
    append(meta, el("dt", { text: label }), el("dd", { "data-testid": testid || null }, value));
  }
  row("文件", s.filename || "—", "citation-filename");
  row("标题路径", pathNode(s.title_path, "citation-path"));
  row("分块", "#" + s.chunk_index + (s.version !== undefined ? " · v" + s.version : ""), "citation-chunk");
  row("字符区间", s.start_char + "–" + s.end_char, "citation-span");
  row("相关度 score", fmtScore(s.score));
  if (hasBlockType(s.block_types, "table")) row("类型", el("span", { class: "badge table", text: "表格 table" }));
  // the cited (or closest) units of this source (sentence, list item, table row) highlighted
  var citeText = $("cite-text");
  clear(citeText);
  append(citeText, chunkTextNode(s, cites)); // repeated header / lead-in dimmed, as in the viewer
  // merged evidence (a hit with its neighbours): show the chunk that holds the cited unit, as the
  // chunk viewer does (its number, span and repeated header), not the joined neighbours
  var part = citedPart(s, cites);
  if (part) showCitedChunk(s, cites, part, meta, citeText);
  var dlg = $("citation-popup");
  if (typeof dlg.showModal === "function") {
    if (dlg.open) dlg.close();
    dlg.showModal();
  } else {
    dlg.setAttribute("open", "");
  }
  var first = citeText.querySelector(".cited");
  if (first) first.scrollIntoView({ block: "nearest" });
}

function citedPart(s, cites) {
  var parts = s.chunk_parts || [];
  if (parts.length < 2 || !cites.length) return null;
  var at = cites[0].start, found = null;
  parts.forEach(function (p) { if (p[1] <= at) found = p; });
  return found;
}

function showCitedChunk(s, cites, part, meta, citeText) {
  var index = part[0], offset = part[1], base = part[2];
  api("/api/documents/" + encodeURIComponent(s.doc_id) + "/chunks").then(function (body) {
    var chunk = ((body && body.chunks) || []).filter(function (c) {
      return c.chunk_index === index;
    })[0];
    if (!chunk || body.version !== s.version) return; // reparsed since: keep the merged text
    var local = cites
      .filter(function (c) { return c.start >= offset; })
      .map(function (c) {
        return Object.assign({}, c, { start: c.start - offset + base, end: c.end - offset + base });
      })
      .filter(function (c) { return c.start >= base && c.start < chunk.text.length; });
    if (!local.length) return;
    meta.querySelectorAll("[data-testid=citation-chunk], [data-testid=citation-span]").forEach(
      function (dd) {
        dd.textContent = dd.getAttribute("data-testid") === "citation-chunk"
          ? "#" + chunk.chunk_index + " · v" + chunk.version + "（证据合并了相邻分块）"
          : chunk.start_char + "–" + chunk.end_char;
      }
    );
    clear(citeText);
    append(citeText, chunkTextNode(chunk, local));
    var first = citeText.querySelector(".cited");
    if (first) first.scrollIntoView({ block: "nearest" });
  }, function () { /* keep the merged text */ });
}

function setupPopup() {
  var dlg = $("citation-popup");
  $("cite-close").addEventListener("click", function () { dlg.close(); });
  // click on the backdrop (outside the dialog box) closes it
  dlg.addEventListener("click", function (e) {
    if (e.target !== dlg) return;
    var r = dlg.getBoundingClientRect();
    var inside = e.clientX >= r.left && e.clientX <= r.right && e.clientY >= r.top && e.clientY <= r.bottom;
    if (!inside) dlg.close();
  });
}

export { ask, renderAnswer, setupPopup };
