/* Knowledge-base browser UI: plain JS modules, no build step, no external resources.
 * Every piece of server text is inserted with textContent (never innerHTML).
 *
 * Modules: dom.js (helpers), messages.js (errors in Chinese), api.js (API client, key identity),
 * chunks.js (chunk viewer, beside the answer), documents.js (document list, filter), upload.js,
 * ask.js (asking, citations), thread.js (a turn's answer, sources, 详情), conversation.js (the
 * turns, history, feedback), collections.js (the 知识范围 selector, 新建集合, recent 👎); this
 * one boots.
 * markdown.js is a classic script (window.RagMarkdown), loaded before the modules run.
 */

import { $, show } from "./dom.js";
import { state, renderWhoami, loadMe, loadHealth } from "./api.js";
import { closeChunks } from "./chunks.js";
import { loadDocs, renderDocs, clearSelected } from "./documents.js";
import { setupDropzone } from "./upload.js";
import { ask, renderAnswer, openCitation, setupPopup } from "./ask.js";
import { loadHistory, newConversation, setupConversation } from "./conversation.js";
import { loadCollections, setupCollections } from "./collections.js";

var KEY_STORAGE = "rag_api_key";

function saveKey(key) {
  // another key: the conversation was the last key's (this one could not continue it)
  if (state.key && key.trim() !== state.key) newConversation("已更换 API key：新对话。");
  state.key = key.trim();
  try {
    if (state.key) localStorage.setItem(KEY_STORAGE, state.key);
    else localStorage.removeItem(KEY_STORAGE);
  } catch (e) { /* storage disabled: keep the key in memory only */ }
  return loadMe().then(function (me) {
    if (me) {
      loadHistory();
      return loadCollections(true).then(loadDocs);
    }
    loadCollections(true); // none: back to all documents
    // no valid key: the list is unknown, not empty ("暂无文档" would say the KB is empty)
    renderDocs([], true);
    show(
      $("doc-error"),
      state.key
        ? "无法列出文档：API key 未通过验证" +
            (state.authStatus ? "（HTTP " + state.authStatus + "）" : "") + "。"
        : "请先保存 API key 以列出文档。"
    );
  });
}

function init() {
  try { state.key = localStorage.getItem(KEY_STORAGE) || ""; } catch (e) { state.key = ""; }
  $("api-key").value = state.key;

  $("key-form").addEventListener("submit", function (e) {
    e.preventDefault();
    saveKey($("api-key").value);
  });
  $("key-clear").addEventListener("click", function () {
    $("api-key").value = "";
    saveKey("");
  });
  $("refresh").addEventListener("click", function () {
    loadMe().then(function () { return loadCollections(); }).then(loadDocs);
  });
  $("doc-show-all").addEventListener("change", function (e) {
    state.showAllDocs = e.target.checked;
    loadDocs();
  });
  $("chunk-close").addEventListener("click", closeChunks);
  $("doc-filter-clear").addEventListener("click", clearSelected);
  $("ask-form").addEventListener("submit", function (e) {
    e.preventDefault();
    ask();
  });
  $("ask-input").addEventListener("keydown", function (e) {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      ask();
    }
  });
  setupDropzone();
  setupPopup();
  setupConversation(renderAnswer, openCitation);
  // a conversation stays in one scope: another collection, a new conversation
  setupCollections(function () {
    newConversation(
      "已切换到" + (state.collection ? "集合「" + state.collection + "」" : "全部文档") +
        "：新对话。"
    );
    loadDocs();
  });
  renderWhoami();
  loadHealth();
  saveKey(state.key);
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
else init();
