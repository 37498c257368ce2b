/* Knowledge-base browser UI: plain JS, no build step, no external resources.
 * Every piece of server text is inserted with textContent (never innerHTML).
 */
(function () {
  "use strict";

  var KEY_STORAGE = "rag_api_key";
  var POLL_MS = 1500;
  var DOC_PAGE = 1000; // the API's largest page: the list shows that many documents at most
  var ACTIVE = { PENDING: true, PROCESSING: true };
  var STATUS_LABEL = {
    PENDING: "排队中 PENDING",
    PROCESSING: "解析中 PROCESSING",
    SUCCESS: "完成 SUCCESS",
    FAILED: "失败 FAILED",
  };

  var state = {
    key: "",
    me: null, // {tenant, role, key_id}
    docs: [],
    rows: {}, // doc_id -> <tr>
    pollTimer: null,
    loadSeq: 0,
    chunkDocId: null,
    selected: {}, // doc_id -> filename: ask only within these documents (doc_ids)
  };

  // ---------------------------------------------------------------- helpers

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

  // ---------------------------------------------------------------- API

  function ApiError(status, detail, body) {
    this.status = status;
    this.detail = detail;
    this.body = body;
    this.message = detail;
  }

  function detailText(body, status) {
    if (body && body.detail !== undefined) {
      var d = body.detail;
      if (typeof d === "string") return d;
      if (Array.isArray(d)) {
        // FastAPI validation errors: [{loc, msg, type}, ...]
        return d.map(function (e) {
          if (e && typeof e === "object") {
            var loc = Array.isArray(e.loc) ? e.loc.join(".") + ": " : "";
            return loc + (e.msg || JSON.stringify(e));
          }
          return String(e);
        }).join("; ");
      }
      return JSON.stringify(d);
    }
    return "HTTP " + status;
  }

  function api(path, opts) {
    opts = opts || {};
    var headers = {};
    if (state.key) headers["Authorization"] = "Bearer " + state.key;
    var init = { method: opts.method || "GET", headers: headers };
    if (opts.json !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(opts.json);
    } else if (opts.form) {
      init.body = opts.form; // the browser sets the multipart boundary
    }
    return fetch(path, init).then(
      function (resp) {
        return resp.text().then(function (raw) {
          var body = null;
          if (raw) {
            try { body = JSON.parse(raw); } catch (e) { body = { detail: raw.slice(0, 300) }; }
          }
          if (!resp.ok) {
            var err = new ApiError(resp.status, detailText(body, resp.status), body);
            if (resp.status === 401 || resp.status === 403) noteAuthError(err);
            throw err;
          }
          return body;
        });
      },
      function (netErr) {
        throw new ApiError(0, "无法连接服务 (network error): " + netErr.message, null);
      }
    );
  }

  // What an HTTP status means, in words; the server's reason follows when it gave one.
  var STATUS_WORDS = {
    400: "请求有误", 401: "API key 无效或缺失", 403: "权限不足", 404: "未找到",
    409: "与当前状态冲突", 413: "文件过大", 415: "文件类型不支持", 422: "请求内容无效",
    429: "请求过于频繁，请稍后再试", 500: "服务器内部错误", 502: "服务暂不可用",
    503: "服务暂不可用", 504: "服务响应超时",
  };
  // bodies that only repeat the status line ("Internal Server Error") are no reason
  var GENERIC_DETAIL = /^(HTTP \d+|internal server error|bad gateway|service unavailable|gateway timeout|not found)$/i;

  function errText(err) {
    if (!(err instanceof ApiError)) return String(err && err.message ? err.message : err);
    if (!err.status) return err.detail;
    var words = STATUS_WORDS[err.status] || (err.status >= 500 ? "服务器错误" : "请求失败");
    var detail = String(err.detail || "").trim();
    var reason = detail && !GENERIC_DETAIL.test(detail) ? "：" + detail : "";
    return words + reason + "（HTTP " + err.status + "）";
  }

  function noteAuthError(err) {
    var msg;
    if (err.status === 401) {
      msg = state.key
        ? "API key 无效或已失效（401 Unauthorized）：" + err.detail
        : "请先粘贴 API key（401 Unauthorized）";
    } else {
      msg = "权限不足（403 Forbidden）：" + err.detail;
    }
    show($("auth-error"), msg);
    if (err.status === 401) {
      state.me = null;
      renderWhoami();
    }
  }

  // ---------------------------------------------------------------- key + identity

  function canEdit() {
    return !!(state.me && state.me.role === "editor");
  }

  function renderWhoami() {
    var who = $("whoami");
    clear(who);
    who.className = "whoami";
    if (!state.key) {
      who.classList.add("muted");
      who.textContent = "未设置 key";
    } else if (!state.me) {
      who.classList.add("muted");
      who.textContent = "未验证";
    } else {
      append(
        who,
        el("span", { class: "tenant", "data-testid": "whoami-tenant", text: state.me.tenant }),
        " · ",
        el("span", {
          class: "role role-" + state.me.role,
          "data-testid": "whoami-role",
          text: state.me.role === "editor" ? "editor 编辑" : "reader 只读",
        })
      );
      who.title = "key_id: " + (state.me.key_id || "");
    }
    applyRole();
  }

  function applyRole() {
    var edit = canEdit();
    var dz = $("dropzone");
    dz.classList.toggle("disabled", !edit);
    dz.setAttribute("aria-disabled", edit ? "false" : "true");
    dz.title = edit ? "" : "上传需要 editor 角色";
    $("dz-hint").textContent = edit
      ? "Markdown / TXT / HTML / PDF / DOCX / XLSX / CSV / PPTX"
      : state.me
        ? "只读 key（reader）：上传、重新解析、删除需要 editor 角色"
        : "保存有效的 API key 后可上传";
    $("upload-input").disabled = !edit;
    Object.keys(state.rows).forEach(function (id) { applyRowRole(state.rows[id]); });
  }

  function applyRowRole(tr) {
    var edit = canEdit();
    var busy = !!ACTIVE[tr.getAttribute("data-status")];
    tr.querySelectorAll("button.edit-only").forEach(function (b) {
      b.disabled = !edit;
      b.title = edit ? "" : "需要 editor 角色";
    });
    if (edit && busy) {
      var rp = tr.querySelector("[data-testid=reparse-button]");
      rp.disabled = true;
      rp.title = "处理中";
    }
  }

  function loadMe() {
    if (!state.key) {
      state.me = null;
      renderWhoami();
      show($("auth-error"), "请先粘贴 API key 并保存。");
      return Promise.resolve(null);
    }
    return api("/api/me").then(
      function (me) {
        state.me = me;
        show($("auth-error"), "");
        renderWhoami();
        return me;
      },
      function (err) {
        state.me = null;
        renderWhoami();
        if (err.status !== 401 && err.status !== 403) show($("auth-error"), errText(err));
        return null;
      }
    );
  }

  function saveKey(key) {
    state.key = key.trim();
    try {
      if (state.key) localStorage.setItem(KEY_STORAGE, state.key);
      else localStorage.removeItem(KEY_STORAGE);
    } catch (e) { /* storage disabled: keep the key in memory only */ }
    return loadMe().then(function (me) {
      if (me) return loadDocs();
      renderDocs([]);
    });
  }

  function loadHealth() {
    fetch("/api/health").then(function (r) { return r.json(); }).then(
      function (h) {
        var q = h.queue || {}, w = h.workers || {};
        $("health").textContent =
          "v" + (h.version || "?") + " · " + (h.embedding || "?") +
          " · 队列 " + (q.pending || 0) + " 待处理 / " + (q.processing || 0) + " 处理中" +
          (w.configured ? (w.mode === "threads" ? " · 工作线程 " : " · 工作进程 ") + w.alive +
            "/" + w.configured + (w.restarts ? "（重启 " + w.restarts + " 次）" : "") : "");
      },
      function () { $("health").textContent = "服务不可达"; }
    );
  }

  // ---------------------------------------------------------------- documents

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
    return api("/api/documents?limit=" + DOC_PAGE).then(
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
        show($("doc-error"), "加载文档列表失败：" + errText(err));
        // keep polling while work is in flight, a transient error should not freeze the list
        schedulePoll();
      }
    );
  }

  function renderDocs(docs) {
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
    $("doc-empty").hidden = docs.length > 0;
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
      el("div", { class: "sub muted", "data-testid": "doc-sub" })
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
        show($("upload-error"), ""); // e.g. a 409 naming the document just deleted
        if (state.chunkDocId === id) closeChunks();
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
      show($("upload-error"), state.me ? "上传需要 editor 角色（当前为 reader）。" : "请先保存有效的 API key。");
      return;
    }
    show($("upload-error"), "");
    var errors = [];
    var accepted = [];
    var chain = Promise.resolve();
    files.forEach(function (file) {
      chain = chain.then(function () {
        $("upload-status").textContent = "上传中：" + file.name + "…";
        var form = new FormData();
        form.append("file", file, file.name);
        return api("/api/documents", { method: "POST", form: form }).then(
          function (res) {
            accepted.push(res.filename || file.name);
            $("upload-status").textContent =
              "已上传 " + (res.filename || file.name) + "（job " + res.job_id + "），解析进度见下方列表";
          },
          function (err) {
            errors.push(uploadErrorText(file.name, err));
          }
        );
      });
    });
    return chain.then(function () {
      $("upload-input").value = "";
      if (errors.length) show($("upload-error"), errors.join("\n"));
      if (accepted.length > 1) {
        $("upload-status").textContent =
          "已上传 " + accepted.length + " 个文件：" + accepted.join("、") + "，解析进度见下方列表";
      } else if (!accepted.length) {
        $("upload-status").textContent = "";
      }
      return loadDocs();
    });
  }

  function uploadErrorText(name, err) {
    var prefix = "「" + name + "」上传失败";
    switch (err.status) {
      case 409: {
        var existing = err.body && err.body.doc_id;
        if (existing) flashRow(existing);
        return prefix + "（409 重复文件）：" + err.detail + (existing ? "（已有文档 doc_id: " + existing + "）" : "");
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

  // ---------------------------------------------------------------- chunk viewer

  function closeChunks() {
    state.chunkDocId = null;
    $("chunk-panel").hidden = true;
    clear($("chunk-list"));
  }

  function openChunks(id) {
    var panel = $("chunk-panel");
    var list = $("chunk-list");
    var doc = state.docs.filter(function (d) { return d.doc_id === id; })[0];
    state.chunkDocId = id;
    panel.hidden = false;
    clear(list);
    show($("chunk-error"), "");
    $("chunk-title").textContent = "分块 Chunks · " + (doc ? doc.filename : id);
    $("chunk-meta").textContent = "加载中…";
    api("/api/documents/" + encodeURIComponent(id) + "/chunks").then(
      function (body) {
        if (state.chunkDocId !== id) return;
        var chunks = (body && body.chunks) || [];
        $("chunk-meta").textContent = chunks.length + " 个分块 · v" + body.version;
        chunks.forEach(function (c) { list.appendChild(chunkItem(c)); });
        panel.scrollIntoView({ behavior: "smooth", block: "start" });
      },
      function (err) {
        $("chunk-meta").textContent = "";
        show($("chunk-error"), "加载分块失败：" + errText(err));
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
        ? el("span", { class: "badge table", "data-testid": "chunk-table-badge", text: "表格 table" })
        : null,
      el("span", {
        class: "chip", "data-testid": "chunk-span", title: "字符区间 start_char–end_char",
        text: c.start_char + "–" + c.end_char,
      }),
      el("span", { class: "chip", "data-testid": "chunk-tokens", text: c.token_count + " tokens" })
    );
    return el(
      "li",
      { class: "chunk", "data-testid": "chunk-item", "data-chunk-id": c.chunk_id },
      head,
      chunkTextNode(c)
    );
  }

  // ---------------------------------------------------------------- ask + citations

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
    var body = { question: q, top_k: 5, doc_ids: ids.length ? ids : null };
    api("/api/ask", { method: "POST", json: body }).then(
      function (res) {
        renderAnswer(res, scope);
      },
      function (err) {
        show($("ask-error"), "提问失败：" + errText(err));
      }
    ).then(function () {
      btn.disabled = false;
      $("ask-status").textContent = "";
    });
  }

  /** `scope`: the names of the documents the question was limited to (null: all of them). */
  function renderAnswer(res, scope) {
    lastAnswer = res;
    show($("answer-scope"), scope ? "仅限选中的文档 (" + scope.length + ")：" + scope.join("、") : "");
    var sources = res.sources || [];
    var box = $("answer-box");
    var out = $("answer");
    clear(out);
    box.hidden = false;
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
    } else show(reason, "");

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
    $("timings").textContent = parts.join(" · ");
  }

  function fmtScore(v) {
    var n = Number(v);
    return isNaN(n) ? String(v) : n.toFixed(4);
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
    $("cite-title").textContent = "来源 [" + n + "]";
    var meta = $("cite-meta");
    clear(meta);
    function row(label, value, testid) {
      append(meta, el("dt", { text: label }), el("dd", { "data-testid": testid || null }, value));
    }
    row("文件", s.filename || "—", "citation-filename");
    row("标题路径", pathNode(s.title_path, "citation-path"));
    row("分块", "#" + s.chunk_index + (s.version !== undefined ? " · v" + s.version : ""));
    row("字符区间", s.start_char + "–" + s.end_char);
    row("相关度 score", fmtScore(s.score));
    if (hasBlockType(s.block_types, "table")) row("类型", el("span", { class: "badge table", text: "表格 table" }));
    // the cited units of this source (sentence, list item, table row) highlighted in its text
    var cites = (lastAnswer.citations || []).filter(function (c) { return c.source === n; });
    var citeText = $("cite-text");
    clear(citeText);
    append(citeText, chunkTextNode(s, cites)); // repeated header / lead-in dimmed, as in the viewer
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

  // ---------------------------------------------------------------- boot

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
    $("refresh").addEventListener("click", function () { loadMe().then(loadDocs); });
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
    renderWhoami();
    loadHealth();
    saveKey(state.key);
  }

  if (typeof document === "undefined" && typeof module !== "undefined") {
    // loaded by node for tests/service/test_web_js.py: the pure helpers only, no page
    module.exports = { fmtTime: fmtTime, errText: errText, ApiError: ApiError };
    return;
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
