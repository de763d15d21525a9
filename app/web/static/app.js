// The pages work without this script; with it: math rendered by the vendored KaTeX, a live preview of how each
// formula/matrix/shape/size blank parses, character counters, and a submission's grade updated in place.
(function () {
  "use strict";

  // The page's words in its language (base.html's JSON block, from the gettext catalog); English without it.
  var words = {};
  try { words = JSON.parse(document.getElementById("script-messages").textContent) || {}; } catch (e) { words = {}; }
  function t(message, values) {
    var text = words[message] || message;
    Object.keys(values || {}).forEach(function (key) {
      text = text.replace("{" + key + "}", function () { return values[key]; }); // a name with "$&" stays as it is
    });
    return text;
  }

  function renderMath(root) {
    if (!window.renderMathInElement) return;
    root.querySelectorAll(".md, .opt-text, .problem-head h2").forEach(function (el) {
      window.renderMathInElement(el, {
        delimiters: [
          { left: "$$", right: "$$", display: true },
          { left: "$", right: "$", display: false },
        ],
        throwOnError: false,
      });
    });
    markScrollable(root);
  }

  // A formula wider than its box scrolls; keyboard users reach it with Tab and scroll it with the arrow keys.
  function markScrollable(root) {
    root.querySelectorAll(".katex-display").forEach(function (box) {
      if (box.scrollWidth > box.clientWidth + 1) {
        box.setAttribute("tabindex", "0");
        box.setAttribute("role", "group");
        box.setAttribute("aria-label", t("formula (scrolls sideways)"));
      } else {
        box.removeAttribute("tabindex");
      }
    });
  }
  window.addEventListener("resize", function () { markScrollable(document); });

  // Preview: the server parses with the grader's own readers (never eval) and answers LaTeX or the parse error.
  function setUpPreview(input) {
    var blank = input.closest(".blank");
    var note = blank.querySelector(".blank-note");
    var shown = blank.querySelector(".blank-preview");
    var timer = null;
    var asked = 0;
    function show() {
      var text = input.value;
      var mine = ++asked;
      if (!text.trim() || text.length > 2000) {
        shown.textContent = "";
        note.textContent = note.dataset.hint;
        note.classList.remove("parse-error");
        return;
      }
      fetch(input.dataset.preview + "&text=" + encodeURIComponent(text), { credentials: "same-origin" })
        .then(function (r) { return r.json(); })
        .then(function (data) {
          if (mine !== asked) return; // an older answer arriving late
          if (data.ok) {
            note.textContent = t("read as:");
            note.classList.remove("parse-error");
            if (window.katex) {
              window.katex.render(data.latex, shown, { throwOnError: false, displayMode: false });
            } else {
              shown.textContent = data.latex;
            }
          } else {
            shown.textContent = "";
            note.textContent = t("cannot read this yet:") + " " + data.error;
            note.classList.add("parse-error");
          }
        })
        .catch(function () {});
    }
    input.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(show, 250);
    });
    if (input.value.trim()) show();
  }

  // Counters: characters for answers, UTF-8 bytes for code (the limits the server enforces).
  function setUpCounter(box) {
    var limit = parseInt(box.dataset.limit, 10);
    var bytes = box.dataset.limitUnit === "bytes";
    var counter = document.getElementById(box.id + "-count");
    if (!counter) {
      if (box.tagName !== "TEXTAREA") return;
      counter = document.createElement("span");
      counter.className = "counter meta";
      counter.id = box.id + "-count";
      box.insertAdjacentElement("afterend", counter);
      box.setAttribute("aria-describedby", (box.getAttribute("aria-describedby") || "") + " " + counter.id);
    }
    function update() {
      var used = bytes ? new TextEncoder().encode(box.value).length : box.value.length;
      counter.textContent = used + " / " + limit + " " + (bytes ? t("bytes") : t("characters"));
      counter.classList.toggle("over", used > limit);
    }
    box.addEventListener("input", update);
    update();
  }

  // A submission waiting for its grade: ask the server (which answers when the grade is written, or after a
  // while) and swap the result in place; the live region announces the change; focus is left where it was.
  function follow(result) {
    var url = result.dataset.live;
    var live = document.getElementById("live-status");
    function ask() {
      fetch(url + "?wait=20", { credentials: "same-origin", headers: { Accept: "text/html" } })
        .then(function (r) {
          var status = r.headers.get("X-Submission-Status");
          return r.text().then(function (html) { return { status: status, html: html, ok: r.ok }; });
        })
        .then(function (answer) {
          // No status header: not our fragment (a login page after the session ended, an error page).
          if (!answer.ok || !answer.status) throw new Error("no result");
          if (answer.status !== result.dataset.status) {
            result.innerHTML = answer.html;
            result.dataset.status = answer.status;
            renderMath(result);
            var score = result.querySelector(".score-line");
            live.textContent = answer.status === "graded" ? t("Graded:") + " " + (score ? score.textContent.replace(/\s+/g, " ").trim() : "")
              : answer.status === "running" ? t("Grading now.") : answer.status === "error" ? t("Grading failed.") : "";
          }
          if (answer.status === "queued" || answer.status === "running") ask();
        })
        .catch(function () { setTimeout(ask, 5000); });
    }
    ask();
  }

  // A chosen file is what gets sent: the text box (which keeps the last code) steps aside instead of the server
  // refusing "a file and pasted code"; clearing the file brings the text box back.
  function setUpCodeForm(fileInput) {
    var box = document.getElementById(fileInput.id.replace(/-file$/, "-code"));
    if (!box) return;
    var note = document.createElement("span");
    note.className = "meta file-note";
    note.setAttribute("aria-live", "polite");
    fileInput.insertAdjacentElement("afterend", note);
    fileInput.addEventListener("change", function () {
      var chosen = fileInput.files && fileInput.files.length > 0;
      box.disabled = chosen;
      note.textContent = chosen ? t("The file {name} will be sent; the text box is set aside.", { name: fileInput.files[0].name }) : "";
    });
  }

  // The grading queue's running total: the points of the rubric items checked.
  function setUpRubric(form) {
    var total = document.getElementById("rubric-total");
    function update() {
      var sum = 0;
      form.querySelectorAll("input[name=met]:checked").forEach(function (box) { sum += parseFloat(box.dataset.points); });
      total.textContent = String(Math.round(sum * 100) / 100);
    }
    form.addEventListener("change", update);
    update();
  }

  // The browser's time zone, for the server to show dates in (without this script: each offering's zone).
  function rememberZone() {
    var zone = "";
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { return; }
    if (!/^[A-Za-z0-9_+\/-]{1,64}$/.test(zone)) return;
    if (document.cookie.split("; ").indexOf("tz=" + zone) === -1) {
      document.cookie = "tz=" + zone + "; path=/; max-age=31536000; samesite=lax";
    }
  }
  rememberZone();

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".rubric-form").forEach(setUpRubric);
    document.querySelectorAll(".answer-form input[type=file][id$='-file']").forEach(setUpCodeForm);
    renderMath(document);
    document.querySelectorAll("[data-preview]").forEach(setUpPreview);
    document.querySelectorAll("[data-limit]").forEach(setUpCounter);
    var result = document.getElementById("result");
    if (result && result.dataset.live) follow(result);
    var error = document.querySelector(".form-error");
    if (error) error.scrollIntoView({ block: "center" });
  });
})();
