/* Collections: the 知识范围 selector (all documents, or one collection: the scope of every
 * question and of 有用/有误, the document list's filter, where uploads go; remembered per key),
 * 新建集合 (whole-tenant editor keys: a key limited to some collections manages none), and the
 * scope's latest 👎 (最近的差评, editor keys: GET /api/feedback is theirs).
 * Switching the scope starts a new conversation (setupCollections' onChange, given by app.js);
 * reopening a conversation chooses its collection without one (adoptScope).
 */

import { $, el, append, clear, show, fmtTime } from "./dom.js";
import { state, api, showError, canEdit, isLimited } from "./api.js";

var STORE = "rag_collection:"; // + tenant:key_id -> the chosen collection's name
var RECENT = 10;
var onChange = null;
var recentSeq = 0;

function storageName() {
  return state.me ? STORE + state.me.tenant + ":" + state.me.key_id : "";
}

function remembered() {
  try { return (storageName() && localStorage.getItem(storageName())) || ""; } catch (e) { return ""; }
}

function remember(name) {
  if (!storageName()) return;
  try {
    if (name) localStorage.setItem(storageName(), name);
    else localStorage.removeItem(storageName());
  } catch (e) { /* storage disabled: the choice lasts as long as the page */ }
}

/** The key's collections into the selector; `restore`: take up the choice saved for this key
 * (a new key). A chosen collection that is gone falls back to all documents (a new scope). */
function loadCollections(restore) {
  if (!state.me) {
    state.collections = [];
    state.collection = "";
    renderSelector();
    loadRecentDown();
    return Promise.resolve();
  }
  if (restore) state.collection = remembered();
  return api("/api/collections").then(
    function (body) {
      state.collections = (body && body.collections) || [];
      var known = state.collections.some(function (c) { return c.name === state.collection; });
      var gone = state.collection && !known;
      if (gone) {
        state.collection = "";
        remember("");
      }
      renderSelector();
      if (restore || gone) loadRecentDown();
      if (gone && !restore && onChange) onChange();
    },
    function (err) {
      state.collections = [];
      state.collection = "";
      renderSelector();
      showError($("collection-error"), "无法列出集合：", err);
    }
  );
}

function renderSelector() {
  var select = $("collection-select");
  clear(select);
  // a limited key's "all" is its own collections' documents
  append(select, el("option", {
    value: "", text: isLimited() ? "全部文档（本 key 可用的集合）" : "全部文档",
  }));
  state.collections.forEach(function (c) {
    append(select, el("option", { value: c.name, text: c.name + " (" + c.documents + ")" }));
  });
  select.value = state.collection;
  $("collection-new").hidden = !canEdit() || isLimited();
  renderScope();
}

/** What the chosen scope means elsewhere: the list's heading, the upload target. */
function renderScope() {
  var name = state.collection;
  show($("doc-scope"), name ? "集合「" + name + "」" : "");
  $("doc-show-all-box").hidden = !name;
  $("doc-show-all").checked = state.showAllDocs;
  show($("dz-target"), name ? "上传到集合「" + name + "」" : "");
}

function choose(name) {
  show($("collection-error"), "");
  if (name === state.collection) return;
  state.collection = name;
  remember(name);
  $("collection-select").value = name;
  renderScope();
  loadRecentDown();
  if (onChange) onChange();
}

/** Choose `name` (a reopened conversation's collection) without starting a new conversation;
 * one not (or no longer) among the key's collections: all documents. Returns the one chosen. */
function adoptScope(name) {
  var known = state.collections.some(function (c) { return c.name === name; });
  var chosen = name && known ? name : "";
  show($("collection-error"), "");
  if (chosen !== state.collection) {
    state.collection = chosen;
    remember(chosen);
    $("collection-select").value = chosen;
    renderScope();
    loadRecentDown();
  }
  return chosen;
}

/** 新建集合: the dialog, its name field empty and focused. */
function openCreateDialog() {
  if (!canEdit() || isLimited()) return;
  var dlg = $("collection-dialog");
  $("collection-name").value = "";
  showError($("collection-dialog-error"), "", null);
  $("collection-create").disabled = false;
  if (typeof dlg.showModal === "function") dlg.showModal();
  else dlg.setAttribute("open", "");
  $("collection-name").focus();
}

function closeCreateDialog() {
  var dlg = $("collection-dialog");
  if (typeof dlg.close === "function") dlg.close();
  else dlg.removeAttribute("open");
}

/** Create the collection named in the dialog and choose it; a taken or bad name is said in the
 * dialog, which stays open to correct it. */
function createCollection() {
  var name = $("collection-name").value.trim();
  var error = $("collection-dialog-error");
  if (!name) {
    showError(error, "请填写集合名称。", null);
    $("collection-name").focus();
    return;
  }
  var button = $("collection-create");
  button.disabled = true;
  api("/api/collections", { method: "POST", json: { name: name }, quiet: true }).then(
    function (created) {
      closeCreateDialog();
      show($("collection-error"), "");
      return loadCollections().then(function () { choose(created.name); });
    },
    function (err) {
      showError(error, "无法创建：", err);
      $("collection-name").focus();
      $("collection-name").select();
    }
  ).then(function () { button.disabled = false; });
}

/** Put the document into the chosen collection, or take it out (`into`: false). */
function setMembership(docId, into) {
  var name = state.collection;
  if (!name || !canEdit()) return Promise.resolve();
  var path = "/api/collections/" + encodeURIComponent(name) + "/documents";
  var opts = { method: into ? "POST" : "DELETE", json: { doc_ids: [docId] }, quiet: true };
  return api(path, opts).then(
    function () {
      show($("doc-error"), "");
      return loadCollections();
    },
    function (err) {
      showError($("doc-error"), into ? "加入集合失败：" : "移出集合失败：", err);
    }
  );
}

/** The chosen scope's latest 👎 (question, comment, local time); editor keys only. */
function loadRecentDown() {
  var box = $("recent-down");
  var seq = ++recentSeq;
  if (!canEdit()) {
    box.hidden = true;
    return Promise.resolve();
  }
  var path = "/api/feedback?rating=down&limit=" + RECENT +
    (state.collection ? "&collection=" + encodeURIComponent(state.collection) : "");
  return api(path, { quiet: true }).then(
    function (body) {
      if (seq !== recentSeq) return;
      renderRecentDown((body && body.feedback) || []);
      box.hidden = false;
    },
    function () {
      if (seq === recentSeq) box.hidden = true; // a key that may not read feedback
    }
  );
}

function renderRecentDown(records) {
  var list = $("recent-down-list");
  clear(list);
  $("recent-down-count").textContent =
    "(" + records.length + (records.length >= RECENT ? "+" : "") + ")";
  records.forEach(function (r) {
    var asked = r.resolved_question && r.resolved_question !== r.question
      ? "（理解为：" + r.resolved_question + "）" : "";
    // across all documents: the collection each question was asked in
    var within = (!state.collection && r.settings && r.settings.collections) || [];
    append(
      list,
      el(
        "li",
        { class: "recent-down-item", "data-testid": "recent-down-item" },
        el("div", { class: "rd-question", "data-testid": "recent-down-question" },
          r.question, el("span", { class: "muted", text: asked })),
        el("div", {
          class: "rd-comment" + (r.comment ? "" : " muted"),
          "data-testid": "recent-down-comment",
          text: r.comment ? "意见：" + r.comment : "（无意见）",
        }),
        el(
          "div",
          { class: "rd-time muted" },
          el("span", {
            "data-testid": "recent-down-time",
            text: fmtTime(r.created_at), // ISO 8601 (UTC) from the API
          }),
          within.length ? " · 集合「" + within.join("、") + "」" : ""
        )
      )
    );
  });
  $("recent-down-empty").hidden = records.length > 0;
}

function setupCollections(changed) {
  onChange = changed;
  $("collection-select").addEventListener("change", function (e) { choose(e.target.value); });
  $("collection-new").addEventListener("click", openCreateDialog);
  $("collection-form").addEventListener("submit", function (e) {
    e.preventDefault(); // the dialog stays open until the collection is made
    createCollection();
  });
  $("collection-cancel").addEventListener("click", closeCreateDialog);
}

export { adoptScope, loadCollections, loadRecentDown, setMembership, setupCollections };
