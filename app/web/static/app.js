// Render $...$ and $$...$$ in server-rendered Markdown with the vendored KaTeX, and bring a form error into view.
document.addEventListener("DOMContentLoaded", function () {
  if (window.renderMathInElement) {
    document.querySelectorAll(".md, .opt-text, .problem-head h2").forEach(function (el) {
      window.renderMathInElement(el, {
        delimiters: [
          { left: "$$", right: "$$", display: true },
          { left: "$", right: "$", display: false },
        ],
        throwOnError: false,
      });
    });
  }
  var error = document.querySelector(".form-error");
  if (error) {
    error.scrollIntoView({ block: "center" });
  }
});
