/* The documents panel: the polled document list (status, error, chunks, version, collections;
 * of the chosen collection unless 显示全部文档), the 只在选中的文档中提问 filter, reparse, delete,
 * 加入/移出集合, and uploads (file picker and drop zone; into the chosen collection).
 */

import { $, el, append, clear, show, fmtTime, fmtBytes } from "./dom.js";
import { ACTIVE, state, api, errText, canEdit, applyRowRole, loadHealth } from "./api.js";
import { closeChunks, openChunks } from "./chunks.js";
import { loadCollections, setMembership } from "./collections.js";

var POLL_MS = 1500;
var DOC_PAGE = 1000; // the API's largest page: the list shows that many documents at most

var STATUS_LABEL = {
  PENDING: "排队中 PENDING",
  PROCESSING: "解析中 PROCESSING",
  SUCCESS: "完成 SUCCESS",
  FAILED: "失败 FAILED",
};

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
        show($("doc-error"), "无法列出文档：" + errText(err) + "。请检查 API key。");
        return;
      }
      show($("doc-error"), "加载文档列表失败：" + errText(err));
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
      el("div", { class: "filename", "data-testid": "doc-filename" })
    ),
    el("div", { class: "sub muted", "data-testid": "doc-sub" }),
    el("div", { class: "tags", "data-testid": "doc-collections", hidden: true })
  );
  var statusCell = el(
    "td",
    { class: "status" },
    el("span", { class: "badge", "data-testid": "doc-status" }),
    el("div", { class: "doc-error-text", "data-testid": "doc-error-text", hidden: true })
  );
  var actions = el(
    "td",
    { class: "actions" },
    el("div", { class: "btns" })
  );
  append(
    actions.firstChild,
    el("button", {
      type: "button", class: "small", "data-testid": "chunks-button", text: "查看分块",
      onclick: function () { openChunks(id); },
    }),
    el("button", {
      type: "button", class: "small edit-only", "data-testid": "reparse-button", text: "重新解析",
      onclick: function () { reparse(id); },
    }),
    el("button", {
      type: "button", class: "small ghost edit-only", "data-testid": "membership-button",
      hidden: true,
      onclick: function () { setMembership(id, tr.getAttribute("data-member") !== "1").then(loadDocs); },
    }),
    el("button", {
      type: "button", class: "small danger edit-only", "data-testid": "delete-button", text: "删除",
      onclick: function () { removeDoc(id); },
    })
  );
  append(
    tr,
    nameCell,
    statusCell,
    // data-label: the column's name, shown beside the value when a narrow screen stacks a row
    el("td", { class: "num", "data-testid": "doc-chunks", "data-label": "分块" }),
    el("td", { class: "num", "data-testid": "doc-version", "data-label": "版本" }),
    el("td", { class: "time", "data-testid": "doc-updated", "data-label": "更新" }),
    actions
  );
  applyRowRole(tr);
  return tr;
}

function updateRow(tr, doc) {
  var status = String(doc.status || "");
  tr.setAttribute("data-status", status);
  tr.querySelector("[data-testid=doc-filename]").textContent = doc.filename || doc.doc_id;
  tr.querySelector("[data-testid=doc-filename]").title = doc.filename || "";
  var sub = [];
  if (doc.title && doc.title !== doc.filename) sub.push(doc.title);
  if (doc.doc_type) sub.push(doc.doc_type);
  if (doc.size_bytes !== undefined) sub.push(fmtBytes(doc.size_bytes));
  tr.querySelector("[data-testid=doc-sub]").textContent = sub.join(" · ");
  renderMembership(tr, doc.collections || []);

  var badge = tr.querySelector("[data-testid=doc-status]");
  badge.textContent = STATUS_LABEL[status] || status;
  badge.className = "badge status-" + status.toLowerCase();
  if (ACTIVE[status]) badge.classList.add("pulse");

  // FAILED: the document's error (or its last job's error) in full, readable.
  var errNode = tr.querySelector("[data-testid=doc-error-text]");
  var jobErr = doc.job && doc.job.status === "FAILED" ? doc.job.error : null;
  var errMsg = status === "FAILED" ? doc.error || jobErr || "（无错误信息）" : "";
  show(errNode, errMsg);

  tr.querySelector("[data-testid=doc-chunks]").textContent =
    doc.chunk_count === undefined || doc.chunk_count === null ? "—" : String(doc.chunk_count);
  tr.querySelector("[data-testid=doc-version]").textContent =
    doc.version === undefined || doc.version === null ? "—" : "v" + doc.version;
  var upd = tr.querySelector("[data-testid=doc-updated]");
  upd.textContent = fmtTime(doc.updated_at);
  upd.title = doc.updated_at ? String(doc.updated_at) : "";

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
      "data-testid": "doc-collection", title: "集合 Collection", text: name,
    }));
  });
  tags.hidden = !names.length;
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
    function (err) { show($("doc-error"), "重新解析失败：" + errText(err)); }
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
    function (err) { show($("doc-error"), "删除失败：" + errText(err)); }
  );
}

// ---------------------------------------------------------------- upload

function uploadFiles(fileList) {
  var files = Array.prototype.slice.call(fileList || []);
  if (!files.length) return;
  if (!canEdit()) {
    addUploadError(state.me ? "上传需要 editor 角色（当前为 reader）。" : "请先保存有效的 API key。");
    return;
  }
  var accepted = [];
  var into = state.collection; // the collection chosen when the upload began
  var path = "/api/documents" + (into ? "?collection=" + encodeURIComponent(into) : "");
  var where = into ? "到集合「" + into + "」" : "";
  var whereOne = where ? " " + where : "";
  var chain = Promise.resolve();
  files.forEach(function (file) {
    chain = chain.then(function () {
      $("upload-status").textContent = "上传中：" + file.name + "…";
      var form = new FormData();
      form.append("file", file, file.name);
      return api(path, { method: "POST", form: form }).then(
        function (res) {
          accepted.push(res.filename || file.name);
          $("upload-status").textContent = "已上传 " + (res.filename || file.name) + whereOne +
            "（job " + res.job_id + "），解析进度见下方列表";
        },
        function (err) {
          addUploadError(uploadErrorText(file.name, err), err.body && err.body.doc_id);
        }
      );
    });
  });
  return chain.then(function () {
    $("upload-input").value = "";
    if (accepted.length > 1) {
      $("upload-status").textContent = "已上传 " + accepted.length + " 个文件" + where + "：" +
        accepted.join("、") + "，解析进度见下方列表";
    } else if (!accepted.length) {
      $("upload-status").textContent = "";
    }
    if (into && accepted.length) loadCollections(); // its count
    return loadDocs();
  });
}

// Upload errors stay until dismissed (each its own line with a close button): the next upload
// does not wipe out what went wrong with the last one.
function addUploadError(text, docId) {
  var box = $("upload-error");
  var close = el("button", {
    type: "button", class: "ghost small", "data-testid": "upload-error-dismiss",
    title: "关闭", "aria-label": "关闭这条错误", text: "×",
  });
  var item = el("div", { class: "upload-error-item", "data-testid": "upload-error-item" },
    el("span", { text: text }), close);
  if (docId) item.setAttribute("data-doc-id", docId);
  close.addEventListener("click", function () {
    item.remove();
    box.hidden = !box.children.length;
  });
  box.appendChild(item);
  box.hidden = false;
}

function dropUploadErrors(docId) {
  var box = $("upload-error");
  Array.prototype.slice.call(box.children).forEach(function (item) {
    if (item.getAttribute("data-doc-id") === docId) item.remove();
  });
  box.hidden = !box.children.length;
}

function uploadErrorText(name, err) {
  var prefix = "「" + name + "」上传失败";
  switch (err.status) {
    case 409: {
      var existing = err.body && err.body.doc_id;
      if (existing) flashRow(existing);
      return prefix + "（409 重复文件）：" + err.detail + (existing ? "（已有文档 doc_id: " + existing + "）" : "") +
        (state.collection ? "。要把它放进「" + state.collection + "」：勾选“显示全部文档”，点它的“加入集合”。" : "");
    }
    case 413:
      return prefix + "（413 文件过大）：" + err.detail;
    case 415:
      return prefix + "（415 不支持的类型）：" + err.detail;
    default:
      return prefix + "：" + errText(err);
  }
}

function flashRow(id) {
  var tr = state.rows[id];
  if (!tr) return;
  tr.classList.remove("flash");
  void tr.offsetWidth; // restart the animation
  tr.classList.add("flash");
  tr.scrollIntoView({ block: "nearest" });
}

function setupDropzone() {
  var dz = $("dropzone");
  var input = $("upload-input");
  var depth = 0;
  dz.addEventListener("click", function (e) {
    if (e.target.tagName === "LABEL") return; // label already opens the picker
    if (!input.disabled) input.click();
  });
  dz.addEventListener("keydown", function (e) {
    if ((e.key === "Enter" || e.key === " ") && !input.disabled) {
      e.preventDefault();
      input.click();
    }
  });
  input.addEventListener("change", function () { uploadFiles(input.files); });
  ["dragenter", "dragover"].forEach(function (type) {
    dz.addEventListener(type, function (e) {
      e.preventDefault();
      if (type === "dragenter") depth++;
      dz.classList.add("over");
      if (e.dataTransfer) e.dataTransfer.dropEffect = canEdit() ? "copy" : "none";
    });
  });
  dz.addEventListener("dragleave", function () {
    depth = Math.max(0, depth - 1);
    if (!depth) dz.classList.remove("over");
  });
  dz.addEventListener("drop", function (e) {
    e.preventDefault();
    depth = 0;
    dz.classList.remove("over");
    if (e.dataTransfer) uploadFiles(e.dataTransfer.files);
  });
  // A file dropped elsewhere on the page must not navigate away from it.
  window.addEventListener("dragover", function (e) { e.preventDefault(); });
  window.addEventListener("drop", function (e) { e.preventDefault(); });
}

export { loadDocs, renderDocs, clearSelected, selectedNames, setupDropzone };
