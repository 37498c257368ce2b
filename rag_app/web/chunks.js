/* The chunk viewer: a document's chunks, each chunk's text rendered as Markdown (markdown.js)
 * with the repeated header / lead-in dimmed and cited units highlighted. On a wide screen it
 * takes the documents' place, beside the conversation (.layout.chunks-open); ← 文档列表 closes it.
 */

import { $, el, append, clear, show, hasBlockType, pathNode } from "./dom.js";
import { state, api, showError } from "./api.js";

function layout() {
  return document.querySelector(".layout");
}

function closeChunks() {
  state.chunkDocId = null;
  $("chunk-panel").hidden = true;
  layout().classList.remove("chunks-open");
  clear($("chunk-list"));
}

function openChunks(id) {
  var panel = $("chunk-panel");
  var list = $("chunk-list");
  var doc = state.docs.filter(function (d) { return d.doc_id === id; })[0];
  state.chunkDocId = id;
  panel.hidden = false;
  layout().classList.add("chunks-open");
  list.scrollTop = 0;
  clear(list);
  show($("chunk-error"), "");
  $("chunk-title").textContent = "分块 · " + (doc ? doc.filename : id);
  $("chunk-meta").textContent = "加载中…";
  api("/api/documents/" + encodeURIComponent(id) + "/chunks").then(
    function (body) {
      if (state.chunkDocId !== id) return;
      var chunks = (body && body.chunks) || [];
      $("chunk-meta").textContent = chunks.length + " 个分块 · v" + body.version;
      chunks.forEach(function (c) { list.appendChild(chunkItem(c)); });
      panel.scrollIntoView({ block: "nearest" }); // a narrow screen: under the answer
    },
    function (err) {
      $("chunk-meta").textContent = "";
      showError($("chunk-error"), "加载分块失败：", err);
    }
  );
}

/**
 * A chunk's text as rendered Markdown (markdown.js builds DOM nodes, never HTML strings): the
 * repeated prefix / suffix (header rows, lead-in) dimmed, the cited units (`cites`, from the
 * answer's citations) highlighted.
 */
function chunkTextNode(c, cites) {
  var pre = Math.max(0, Number(c.prefix_chars) || 0);
  var suf = Math.max(0, Number(c.suffix_chars) || 0);
  var node = el("div", { class: "chunk-text", "data-testid": "chunk-text" });
  if (pre) {
    append(node, el("div", {
      class: "repeat-note", "data-testid": "chunk-prefix",
      text: "灰色：前 " + pre + " 字符为重复表头/引导语",
    }));
  }
  append(node, window.RagMarkdown.render(c.text, { prefix: pre, suffix: suf, cites: cites || [] }));
  if (suf) {
    append(node, el("div", {
      class: "repeat-note", "data-testid": "chunk-suffix",
      text: "灰色：末 " + suf + " 字符在下一分块重复",
    }));
  }
  return node;
}

function chunkItem(c) {
  var head = el(
    "div",
    { class: "chunk-head" },
    el("span", { class: "chunk-index", "data-testid": "chunk-index", text: "#" + c.chunk_index }),
    pathNode(c.title_path, "chunk-path"),
    el("span", { class: "spacer" }),
    hasBlockType(c.block_types, "table")
      ? el("span", { class: "badge table", "data-testid": "chunk-table-badge", text: "表格" })
      : null,
    c.ocr
      ? el("span", {
          class: "badge ocr", "data-testid": "chunk-ocr-badge",
          title: "文字由 OCR 从扫描页识别，可能有误", text: "OCR",
        })
      : null,
    c.pages
      ? el("span", { class: "chip", "data-testid": "chunk-pages", text: "第 " + c.pages + " 页" })
      : null,
    el("span", {
      class: "chip", "data-testid": "chunk-span", title: "字符区间 start_char–end_char",
      text: c.start_char + "–" + c.end_char,
    }),
    el("span", { class: "chip", "data-testid": "chunk-tokens", title: "词元数（token）", text: c.token_count + " token" })
  );
  return el(
    "li",
    { class: "chunk", "data-testid": "chunk-item", "data-chunk-id": c.chunk_id },
    head,
    chunkTextNode(c)
  );
}

export { closeChunks, openChunks, chunkTextNode };
