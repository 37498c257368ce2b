/* Asking, in a conversation (conversation.js; /api/chat): the question (within the chosen
 * collection, optionally limited to the chosen documents) shown at once in the thread and taken
 * out of the box, the answer streamed as it is written (plain text, 生成中…; stream: true) and
 * then shown whole with its [n] citation markers, a refusal's reason, its closest unit and
 * 最接近的资料 (thread.js), and the citation pop-up of any turn's sources.
 */

import { $, el, append, clear, show, hasBlockType, pathNode } from "./dom.js";
import { state, api, apiStream, canStream, showError } from "./api.js";
import { chunkTextNode } from "./chunks.js";
import { selectedNames } from "./documents.js";
import { fillTurn } from "./thread.js";
import {
  conversationBody, currentConversation, recordTurn, showPending, restoreLatest,
} from "./conversation.js";

function ask() {
  var input = $("ask-input");
  var q = input.value.trim();
  if (!q) {
    input.focus();
    return;
  }
  var btn = $("ask-button");
  if (btn.disabled) return; // one question at a time (Ctrl+Enter while one is asked)
  btn.disabled = true;
  input.value = ""; // asked: the box is for the next question
  $("ask-status").textContent = "检索并生成答案中…";
  showError($("ask-error"), "", null);
  var ids = Object.keys(state.selected);
  var scope = ids.length ? selectedNames() : null;
  var within = state.collection || null;
  var body = conversationBody({
    question: q, top_k: 5, doc_ids: ids.length ? ids : null, collection: within,
  });
  var asking = currentConversation();
  showPending(function () { clearLatest(q, scope, within); });
  function current() { // not left meanwhile (新对话, another collection, a reopened one)
    return within === (state.collection || null) && asking === currentConversation();
  }
  var asked = canStream()
    ? apiStream("/api/chat", body, function (piece, sofar) {
      if (current()) renderPartial(sofar);
    })
    : api("/api/chat", { method: "POST", json: body });
  asked.then(
    function (res) {
      if (!current()) return;
      recordTurn(q, res, within, scope); // the answer event's text counts, not the pieces
    },
    function (err) {
      if (current()) {
        restoreLatest(); // half an answer is none: the thread as it was
        if (!input.value) input.value = q; // to send again
      }
      showError($("ask-error"), "提问失败：", err);
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

/** The latest turn emptied for the question `q` being asked: no answer (检索中…), sources,
 * reason, diagnostics or feedback yet. */
function clearLatest(q, scope, collection) {
  var out = $("answer");
  clear(out);
  out.classList.add("pending");
  $("answer-question").textContent = q;
  renderScope(scope, collection);
  show($("answer-resolved"), "");
  show($("answer-reason"), "");
  show($("answer-annotation"), "");
  clear($("answer-closest"));
  $("answer-closest").hidden = true;
  $("sources").hidden = true;
  clear($("source-list"));
  clear($("timings"));
  $("diagnostics").hidden = true;
  $("feedback").hidden = true;
  out.classList.remove("refused");
  $("answer-box").hidden = false;
}

/** The answer as it is being written: plain text (its [n] not yet links), 生成中…. */
function renderPartial(text) {
  var out = $("answer");
  if (!out.classList.contains("streaming")) {
    out.classList.remove("pending");
    out.classList.add("streaming");
    out.setAttribute("aria-busy", "true");
    $("ask-status").textContent = "生成中…";
  }
  out.textContent = text;
}

/** The latest turn: `q` its question, `res` its answer; `scope`: the names of the documents
 * it was limited to (null: all of them); `collection`: the collection it was asked in. */
function renderAnswer(q, res, scope, collection) {
  clearLatest(q, scope, collection);
  var out = $("answer");
  out.classList.remove("pending", "streaming");
  out.removeAttribute("aria-busy");
  fillTurn({
    answer: out, annotation: $("answer-annotation"), reason: $("answer-reason"), closest: $("answer-closest"),
    heading: $("source-heading"), count: $("source-count"), list: $("source-list"),
    sources: $("sources"), diagnostics: $("timings"),
  }, res, openCitation);
  $("diagnostics").hidden = false;
}

/** The pop-up of source `n` of the answer `res` (any turn's). */
function openCitation(res, n) {
  var s = res && res.sources && res.sources[n - 1];
  if (!s) return;
  // a refusal cites nothing: its closest unit is what gets highlighted, and the title says so
  var marked = res.refused ? res.closest || [] : res.citations || [];
  var cites = marked.filter(function (c) { return c.source === n; });
  $("cite-title").textContent =
    "来源 [" + n + "]" + (res.refused && cites.length ? " · 高亮为最接近的内容" : "");
  var meta = $("cite-meta");
  clear(meta);
  function row(label, value, testid) {
    append(meta, el("dt", { text: label }), el("dd", { "data-testid": testid || null }, value));
  }
  row("文件", s.filename || "—", "citation-filename");
  row("标题路径", pathNode(s.title_path, "citation-path"));
  row("分块", "#" + s.chunk_index + (s.version !== undefined ? " · v" + s.version : ""), "citation-chunk");
  row("字符区间", s.start_char + "–" + s.end_char, "citation-span");
  if (hasBlockType(s.block_types, "table")) row("类型", el("span", { class: "badge table", text: "表格" }));
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

export { ask, renderAnswer, openCitation, setupPopup };
