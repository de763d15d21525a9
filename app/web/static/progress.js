// Progress of a long job (a bulk regrade, an upload's validation gate), updated in place: the page works without
// this script (it refreshes itself); with it, the progress part is fetched again every second and swapped in,
// the live region says how far it is, and polling stops when the server answers X-Progress: done.
(function () {
  "use strict";
  function follow(box) {
    var url = box.dataset.progress;
    var live = document.getElementById("progress-status");
    function ask() {
      fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
        .then(function (r) {
          var state = r.headers.get("X-Progress");
          return r.text().then(function (html) { return { ok: r.ok, state: state, html: html }; });
        })
        .then(function (answer) {
          if (!answer.ok || !answer.state) throw new Error("no progress");  // a login or error page
          box.innerHTML = answer.html;
          box.dataset.state = answer.state;
          var heading = box.querySelector("h2");
          if (live && heading) live.textContent = heading.textContent.replace(/\s+/g, " ").trim();
          if (answer.state === "done") {
            var target = box.dataset.doneUrl;
            if (target) window.location.assign(target);
          } else {
            setTimeout(ask, 1000);
          }
        })
        .catch(function () { setTimeout(ask, 5000); });
    }
    if (box.dataset.state !== "done") setTimeout(ask, 1000);
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-progress]").forEach(follow);
  });
})();
