/* Uploads: the file picker and the drop zone, into the chosen collection, one file after the
 * other. Each failure keeps its own line (naming the file, in Chinese, the server's words in
 * small type under it) until it is dismissed.
 */

import { $, el } from "./dom.js";
import { state, api, errText, errDetail, canEdit } from "./api.js";
import { loadCollections } from "./collections.js";
import { loadDocs, flashRow } from "./documents.js";

function uploadFiles(fileList) {
  var files = Array.prototype.slice.call(fileList || []);
  if (!files.length) return Promise.resolve();
  if (!canEdit()) {
    addUploadError(state.me ? "上传需要 editor 角色（当前 key 为只读 reader）。" : "请先保存有效的 API key。");
    return Promise.resolve();
  }
  var accepted = [];
  var into = state.collection; // the collection chosen when the upload began
  var path = "/api/documents" + (into ? "?collection=" + encodeURIComponent(into) : "");
  var where = into ? "到集合「" + into + "」" : "";
  var chain = Promise.resolve();
  files.forEach(function (file) {
    chain = chain.then(function () {
      $("upload-status").textContent = "上传中：" + file.name + "…";
      var form = new FormData();
      form.append("file", file, file.name);
      return api(path, { method: "POST", form: form }).then(
        function (res) {
          accepted.push(res.filename || file.name);
          $("upload-status").textContent = "已上传「" + (res.filename || file.name) + "」" + where +
            "，解析进度见下方列表";
        },
        function (err) {
          var existing = (err.status === 409 && err.body && err.body.doc_id) || null;
          var held = existing ? flashRow(existing) : null;
          var item = addUploadError(uploadErrorText(file.name, err, held), errDetail(err), existing);
          if (!existing || held) return null;
          // not in the list shown (another collection's): its name asked of the server
          return api("/api/documents/" + encodeURIComponent(existing)).then(function (doc) {
            item.querySelector(".err-main").textContent =
              uploadErrorText(file.name, err, (doc && doc.filename) || null);
          }, function () { /* keep the text without its name */ });
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

/** What went wrong with the file `name`, in Chinese; a duplicate names the document that
 * already holds its content (`held`: its file name, when known). */
function uploadErrorText(name, err, held) {
  var lead = "「" + name + "」上传失败：";
  var existing = err.status === 409 && err.body && err.body.doc_id;
  if (!existing) return lead + errText(err);
  var text = lead + "相同内容已经上传过" + (held ? "，见文档「" + held + "」" : "") + "。";
  if (state.collection) {
    text += "要把它放进集合「" + state.collection + "」：勾选“显示全部文档”，在它的 ⋯ 菜单中选“加入集合”。";
  }
  return text;
}

// Upload errors stay until dismissed (each its own line with a close button): the next upload
// does not wipe out what went wrong with the last one.
function addUploadError(text, detail, docId) {
  var box = $("upload-error");
  var close = el("button", {
    type: "button", class: "ghost small", "data-testid": "upload-error-dismiss",
    title: "关闭", "aria-label": "关闭这条错误", text: "×",
  });
  var words = el("span", { class: "upload-error-text" }, el("span", { class: "err-main", text: text }));
  if (detail) words.appendChild(el("span", { class: "err-detail", "data-testid": "err-detail", text: detail }));
  var item = el("div", { class: "upload-error-item", "data-testid": "upload-error-item" }, words, close);
  if (docId) item.setAttribute("data-doc-id", docId);
  close.addEventListener("click", function () {
    item.remove();
    box.hidden = !box.children.length;
  });
  box.appendChild(item);
  box.hidden = false;
  return item;
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

export { setupDropzone };
