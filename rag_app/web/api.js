/* The API client and the key's identity: the page state, fetch with the Bearer key, errors in
 * words, /api/me (tenant and role, and what the role may do), /api/health.
 */

import { $, el, append, clear, show } from "./dom.js";

var ACTIVE = { PENDING: true, PROCESSING: true };

var state = {
  key: "",
  me: null, // {tenant, role, key_id}
  docs: [],
  rows: {}, // doc_id -> <tr>
  pollTimer: null,
  loadSeq: 0,
  chunkDocId: null,
  selected: {}, // doc_id -> filename: ask only within these documents (doc_ids)
  collections: [], // [{name, documents, created_at}]: the key's collections
  collection: "", // the chosen one (知识范围): the question's scope, the list, uploads; "": all
  showAllDocs: false, // with a collection chosen: list every document (to add some to it)
  authStatus: 0, // the HTTP status of the last rejected key check (401, 403; 0: none)
};

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
          // quiet: the caller shows a 403 itself (no page-wide banner)
          if (resp.status === 401 || (resp.status === 403 && !opts.quiet)) noteAuthError(err);
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
      state.authStatus = 0;
      show($("auth-error"), "");
      renderWhoami();
      return me;
    },
    function (err) {
      state.me = null;
      state.authStatus = err.status || 0;
      renderWhoami();
      if (err.status !== 401 && err.status !== 403) show($("auth-error"), errText(err));
      return null;
    }
  );
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

export {
  ACTIVE, state, ApiError, api, errText, canEdit, renderWhoami, applyRowRole, loadMe, loadHealth,
};
