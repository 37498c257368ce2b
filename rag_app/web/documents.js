/* The documents panel: the polled document list, one line per document (name, status, chunks,
 * collections, updated; of the chosen collection unless 显示全部文档) with its actions in a ⋯
 * menu (查看分块, 重新解析, 加入/移出集合, 删除), and the 只在选中的文档中提问 filter. Uploads:
 * upload.js.
 */

import { $, el, append, clear, show, fmtTime, fmtShortTime, fmtBytes } from "./dom.js";
import { ACTIVE, state, api, showError, canEdit, applyRowRole, loadHealth } from "./api.js";
import { parseErrText } from "./messages.js";
import { closeChunks, openChunks } from "./chunks.js";
import { loadCollections, setMembership } from "./collections.js";

var POLL_MS = 1500;
var DOC_PAGE = 1000; // the API's largest page: the list shows that many documents at most

var STATUS_LABEL = {
  PENDING: "排队中",
  PROCESSING: "解析中",
  SUCCESS: "完成",
  FAILED: "失败",
};
var menuSeq = 0;

function schedulePoll() {
  if (state.pollTimer) {
    clearTimeout(state.pollTimer);
    state.pollTimer = null;
  }
  var active = state.docs.some(function (d) { return ACTIVE[d.status]; });
  if (active) state.pollTimer = setTimeout(loadDocs, POLL_MS);
}

function loadDocs() {
  if (!state.key) return Promise.resolve();
  var seq = ++state.loadSeq;
  var within = state.collection && !state.showAllDocs
    ? "&collection=" + encodeURIComponent(state.collection) : "";
  return api("/api/documents?limit=" + DOC_PAGE + within).then(
    function (body) {
      if (seq !== state.loadSeq) return;
      show($("doc-error"), "");
      var docs = (body && body.documents) || [];
      var total = (body && body.total) || docs.length;
      $("doc-count").textContent = docs.length ? "(" + total + ")" : "";
      show(
        $("doc-more"),
        total > docs.length ? "显示按路径排序的前 " + docs.length + " 个文档，共 " + total + " 个。" : ""
      );
      renderDocs(docs);
      schedulePoll();
    },
    function (err) {
      if (seq !== state.loadSeq) return;
      if (err.status === 401 || err.status === 403) {
        // not an empty knowledge base: a key that may not list it; show no one's documents
        renderDocs([], true);
        showError($("doc-error"), "无法列出文档：", err);
        return;
      }
      showError($("doc-error"), "加载文档列表失败：", err);
      // keep polling while work is in flight, a transient error should not freeze the list
      schedulePoll();
    }
  );
}

function renderDocs(docs, unknown) {
  state.docs = docs;
  var body = $("doc-body");
  var seen = {};
  docs.forEach(function (doc) {
    seen[doc.doc_id] = true;
    var tr = state.rows[doc.doc_id];
    if (!tr) {
      tr = buildRow(doc);
      state.rows[doc.doc_id] = tr;
    }
    updateRow(tr, doc);
    body.appendChild(tr); // (re)appending keeps the server's order
  });
  Object.keys(state.rows).forEach(function (id) {
    if (!seen[id]) {
      state.rows[id].remove();
      delete state.rows[id];
    }
  });
  Object.keys(state.selected).forEach(function (id) {
    if (!seen[id]) delete state.selected[id]; // a deleted document leaves the filter
  });
  renderFilter();
  $("doc-empty").textContent = state.collection && !state.showAllDocs
    ? "集合「" + state.collection + "」中暂无文档。上传一个文件，或勾选“显示全部文档”把已有文档加入。"
    : "暂无文档。上传一个文件开始。";
  $("doc-empty").hidden = docs.length > 0 || !!unknown; // unknown: the list could not be read
  loadHealth();
}

function buildRow(doc) {
  var id = doc.doc_id;
  var tr = el("tr", { "data-testid": "doc-row", "data-doc-id": id });
  var pick = el("input", {
    type: "checkbox", class: "pick", "data-testid": "doc-select",
    title: "只在选中的文档中提问", "aria-label": "选中此文档（只在选中的文档中提问）",
  });
  pick.addEventListener("change", function () { toggleSelected(id, pick.checked); });
  var nameCell = el(
    "td",
    { class: "name" },
    el(
      "div",
      { class: "name-line" },
      pick,
      el("span", { class: "filename", "data-testid": "doc-filename" }),
      el("span", { class: "sub muted", "data-testid": "doc-sub" })
    ),
    el("div", { class: "doc-error-text", "data-testid": "doc-error-text", hidden: true })
  );
  var statusCell = el(
    "td",
    { class: "status" },
    el("span", { class: "badge", "data-testid": "doc-status" }),
    el("span", { class: "version muted", "data-testid": "doc-version" })
  );
  append(
    tr,
    nameCell,
    statusCell,
    // data-label: the column's name, shown beside the value when a narrow screen stacks a row
    el("td", { class: "num", "data-testid": "doc-chunks", "data-label": "分块" }),
    el("td", { class: "colls" }, el("div", { class: "tags", "data-testid": "doc-collections" })),
    el("td", { class: "time", "data-testid": "doc-updated" }),
    el("td", { class: "actions" }, rowMenu(id, tr))
  );
  applyRowRole(tr);
  return tr;
}

/** The row's actions as a ⋯ menu (a popover: above the table, never clipped by its scroller). */
function rowMenu(id, tr) {
  var menuId = "doc-menu-" + ++menuSeq;
  var button = el("button", {
    type: "button", class: "ghost small menu-button", "data-testid": "doc-menu-button",
    "aria-label": "文档操作", "aria-haspopup": "menu", title: "操作", text: "⋯",
  });
  var menu = el("div", { id: menuId, class: "row-menu", role: "menu", "data-testid": "doc-menu" });
  function item(testid, text, action, extra) {
    var b = el("button", Object.assign({
      type: "button", role: "menuitem", class: "menu-item", "data-testid": testid, text: text,
    }, extra || {}));
    b.addEventListener("click", function () {
      closeMenu(menu);
      action();
    });
    menu.appendChild(b);
    return b;
  }
  item("chunks-button", "查看分块", function () { openChunks(id); });
  item("reparse-button", "重新解析", function () { reparse(id); }, { class: "menu-item edit-only" });
  item("membership-button", "加入集合", function () {
    setMembership(id, tr.getAttribute("data-member") !== "1").then(loadDocs);
  }, { class: "menu-item edit-only", hidden: true });
  item("delete-button", "删除", function () { removeDoc(id); }, { class: "menu-item danger edit-only" });
  var popover = typeof menu.showPopover === "function";
  if (popover) {
    menu.setAttribute("popover", "auto");
    button.setAttribute("popovertarget", menuId);
    menu.addEventListener("toggle", function (e) {
      button.setAttribute("aria-expanded", e.newState === "open" ? "true" : "false");
      if (e.newState === "open") placeMenu(menu, button);
    });
  } else { // no popover: shown in place
    menu.hidden = true;
    button.addEventListener("click", function () { menu.hidden = !menu.hidden; });
  }
  return el("div", { class: "menu-wrap" }, button, menu);
}

function closeMenu(menu) {
  if (typeof menu.hidePopover === "function" && menu.matches(":popover-open")) menu.hidePopover();
  else if (typeof menu.showPopover !== "function") menu.hidden = true;
}

/** Under the ⋯ button, right-aligned with it; above it when there is no room below. */
function placeMenu(menu, button) {
  var r = button.getBoundingClientRect();
  var h = menu.offsetHeight;
  var below = r.bottom + 4 + h <= window.innerHeight;
  menu.style.top = (below ? r.bottom + 4 : Math.max(4, r.top - 4 - h)) + "px";
  menu.style.left = Math.max(4, r.right - menu.offsetWidth) + "px";
}

function updateRow(tr, doc) {
  var status = String(doc.status || "");
  tr.setAttribute("data-status", status);
  var name = tr.querySelector("[data-testid=doc-filename]");
  name.textContent = doc.filename || doc.doc_id;
  // the size beside the name (it goes first when the name needs the room); all on hover
  var size = doc.size_bytes !== undefined ? fmtBytes(doc.size_bytes) : "";
  tr.querySelector("[data-testid=doc-sub]").textContent = size;
  var about = [doc.filename || doc.doc_id];
  if (doc.title && doc.title !== doc.filename) about.push("标题：" + doc.title);
  about.push([doc.doc_type, size].filter(Boolean).join(" · "));
  tr.querySelector("td.name").title = about.join("\n");
  renderMembership(tr, doc.collections || []);

  var badge = tr.querySelector("[data-testid=doc-status]");
  badge.textContent = STATUS_LABEL[status] || status;
  badge.className = "badge status-" + status.toLowerCase();
  if (ACTIVE[status]) badge.classList.add("pulse");
  badge.title = status;

  // FAILED: why, in a sentence, on one line; a click adds the reader's own message
  var errNode = tr.querySelector("[data-testid=doc-error-text]");
  var jobErr = doc.job && doc.job.status === "FAILED" ? doc.job.error : null;
  var raw = status === "FAILED" ? doc.error || jobErr || "" : "";
  errNode.hidden = status !== "FAILED";
  if (status === "FAILED" && errNode.getAttribute("data-raw") !== raw) {
    clear(errNode);
    append(
      errNode,
      el("span", { class: "err-main", text: "解析失败：" + (raw ? parseErrText(raw) : "（无错误信息）") }),
      raw ? el("span", { class: "err-detail", "data-testid": "doc-error-detail", text: raw }) : null
    );
    errNode.setAttribute("data-raw", raw);
    errNode.title = raw ? raw + "（点击展开）" : "";
    errNode.classList.remove("open");
  }
  errNode.onclick = function () { errNode.classList.toggle("open"); };

  tr.querySelector("[data-testid=doc-chunks]").textContent =
    doc.chunk_count === undefined || doc.chunk_count === null ? "—" : String(doc.chunk_count);
  tr.querySelector("[data-testid=doc-version]").textContent =
    doc.version === undefined || doc.version === null ? "" : "v" + doc.version;
  var upd = tr.querySelector("[data-testid=doc-updated]");
  upd.textContent = fmtShortTime(doc.updated_at);
  upd.title = doc.updated_at ? fmtTime(doc.updated_at) : "";

  tr.querySelector("[data-testid=chunks-button]").disabled = !(doc.chunk_count > 0);
  var pick = tr.querySelector("[data-testid=doc-select]");
  pick.checked = !!state.selected[doc.doc_id];
  if (pick.checked) state.selected[doc.doc_id] = doc.filename || doc.doc_id;
  applyRowRole(tr);
}

// The document's collections as tags (the chosen one marked); 加入集合 / 移出集合 for the chosen.
function renderMembership(tr, names) {
  var tags = tr.querySelector("[data-testid=doc-collections]");
  clear(tags);
  names.forEach(function (name) {
    append(tags, el("span", {
      class: "tag" + (name === state.collection ? " current" : ""),
      "data-testid": "doc-collection", title: "集合", text: name,
    }));
  });
  tags.parentNode.title = names.length ? "集合：" + names.join("、") : "";
  var member = !!state.collection && names.indexOf(state.collection) !== -1;
  tr.setAttribute("data-member", member ? "1" : "0");
  var button = tr.querySelector("[data-testid=membership-button]");
  button.hidden = !state.collection;
  button.textContent = member ? "移出集合" : "加入集合";
  button.setAttribute(
    "aria-label",
    (member ? "从集合「" : "加入集合「") + state.collection + (member ? "」移出" : "」")
  );
}

// ---------------------------------------------------------------- document filter

function toggleSelected(id, on) {
  if (on) {
    var doc = state.docs.filter(function (d) { return d.doc_id === id; })[0];
    state.selected[id] = (doc && doc.filename) || id;
  } else delete state.selected[id];
  renderFilter();
}

function clearSelected() {
  state.selected = {};
  Object.keys(state.rows).forEach(function (id) {
    state.rows[id].querySelector("[data-testid=doc-select]").checked = false;
  });
  renderFilter();
}

/** The chosen documents' names, in the list's order. */
function selectedNames() {
  return Object.keys(state.selected).map(function (id) { return state.selected[id]; });
}

function renderFilter() {
  var ids = Object.keys(state.selected);
  var box = $("doc-filter");
  box.hidden = ids.length === 0;
  $("doc-filter-count").textContent = "只在选中的文档中提问 (" + ids.length + ")";
  $("doc-filter-names").textContent = selectedNames().join("、");
}

function reparse(id) {
  if (!canEdit()) return;
  api("/api/documents/" + encodeURIComponent(id) + "/reparse", { method: "POST" }).then(
    function () {
      show($("doc-error"), "");
      return loadDocs();
    },
    function (err) { showError($("doc-error"), "重新解析失败：", err); }
  );
}

function removeDoc(id) {
  if (!canEdit()) return;
  var doc = state.docs.filter(function (d) { return d.doc_id === id; })[0];
  var name = doc ? doc.filename : id;
  if (!window.confirm("确定删除「" + name + "」？此操作会删除其全部分块。")) return;
  api("/api/documents/" + encodeURIComponent(id), { method: "DELETE" }).then(
    function () {
      show($("doc-error"), "");
      dropUploadErrors(id); // e.g. a 409 naming the document just deleted
      if (state.chunkDocId === id) closeChunks();
      loadCollections(); // their counts
      return loadDocs();
    },
    function (err) { showError($("doc-error"), "删除失败：", err); }
  );
}

/** Take away the upload errors about document `docId` (it was deleted). */
function dropUploadErrors(docId) {
  var box = $("upload-error");
  Array.prototype.slice.call(box.children).forEach(function (item) {
    if (item.getAttribute("data-doc-id") === docId) item.remove();
  });
  box.hidden = !box.children.length;
}

/** The row of document `id` scrolled into view and flashed; its file name (null: not listed). */
function flashRow(id) {
  var tr = state.rows[id];
  if (!tr) return null;
  tr.classList.remove("flash");
  void tr.offsetWidth; // restart the animation
  tr.classList.add("flash");
  tr.scrollIntoView({ block: "nearest" });
  return tr.querySelector("[data-testid=doc-filename]").textContent;
}

export { loadDocs, renderDocs, clearSelected, selectedNames, dropUploadErrors, flashRow };
