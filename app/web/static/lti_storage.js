// An LTI login in the LMS's iframe, and LTI platform storage (1EdTech "OIDC login with LTI client-side
// postMessages"). The login page puts the OIDC state and nonce into the LMS's storage (lti.put_data) when it offers
// one, else checks the frame keeps a partitioned cookie (the state cookie), and goes on to the LMS; when neither
// works it shows the link opening the login in a new window. The launch page reads the state and nonce back
// (lti.get_data) and posts the launch again from this site only when both match. Messages go to the frame the LMS named (lti_storage_target) with its origin as the target, and only its
// answers are read. A file, not an inline script: the pages' policy runs none.
(function () {
  "use strict";
  var box = document.getElementById("lti-storage");
  if (!box) {
    return;
  }
  var d = box.dataset;
  var pending = {};
  var count = 0;
  var frame = null;
  try {
    var up = window.parent !== window ? window.parent : window.opener;
    frame = d.target === "_parent" ? up : up && up.frames[d.target];
  } catch (e) {
    frame = null;
  }
  window.addEventListener("message", function (event) {
    var data = event.data;
    if (event.origin !== d.origin || !data || typeof data !== "object" || !pending[data.message_id]) {
      return;
    }
    var done = pending[data.message_id];
    delete pending[data.message_id];
    done(data);
  });
  function ask(subject, key, value) {
    return new Promise(function (resolve) {
      if (!frame) {
        resolve({ error: { code: "no_target" } });
        return;
      }
      count += 1;
      var id = subject + "-" + count + "-" + Math.random().toString(36).slice(2);
      pending[id] = function (data) {
        resolve(data.subject === subject + ".response" ? data : { error: { code: "wrong_subject" } });
      };
      var message = { subject: subject, message_id: id, key: key };
      if (value !== undefined) {
        message.value = value;
      }
      frame.postMessage(message, d.origin);
      setTimeout(function () {
        if (pending[id]) {
          delete pending[id];
          resolve({ error: { code: "no_answer" } });
        }
      }, 5000);
    });
  }
  function cookieKept() {
    // The state cookie is set as this test cookie is: partitioned, and Secure (only where the page may set one).
    if (d.secure !== "1") {
      return false;
    }
    document.cookie = "lti_cookie_check=1; path=/; SameSite=None; Secure; Partitioned";
    var kept = document.cookie.indexOf("lti_cookie_check=1") !== -1;
    document.cookie = "lti_cookie_check=; path=/; max-age=0; SameSite=None; Secure; Partitioned";
    return kept;
  }
  function goOn(stored) {
    if (stored || cookieKept()) {
      window.location.replace(d.next);
    } else {
      document.getElementById("lti-storage-status").hidden = true;
      document.getElementById("lti-new-window").hidden = false;
    }
  }
  if (d.mode === "check") {
    goOn(false);
  } else if (d.mode === "put") {
    Promise.all([
      ask("lti.put_data", "state_" + d.state, d.state),
      ask("lti.put_data", "nonce_" + d.nonce, d.nonce),
    ]).then(function (answers) {
      goOn(!answers[0].error && !answers[1].error);
    });
  } else {
    Promise.all([ask("lti.get_data", "state_" + d.state), ask("lti.get_data", "nonce_" + d.nonce)]).then(
      function (answers) {
        var state = answers[0];
        var nonce = answers[1];
        if (!state.error && !nonce.error && state.value === d.state && nonce.value === d.nonce) {
          box.submit();
        } else {
          document.getElementById("lti-storage-status").textContent = d.failed;
        }
      }
    );
  }
})();
