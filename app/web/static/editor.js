// The code editor: CodeMirror 6 (vendored in vendor/codemirror/, see BUILD.md there) over each code text box,
// with Python highlighting and Tab to indent. Progressive enhancement: without this script the text box is the
// editor; with it the text box is hidden and kept in step, so the form posts the same `code` field either way.
import {
  EditorState, Compartment, EditorView, keymap, lineNumbers, highlightActiveLine, highlightActiveLineGutter,
  drawSelection, highlightSpecialChars, defaultKeymap, history, historyKeymap, indentWithTab, bracketMatching,
  indentOnInput, indentUnit, syntaxHighlighting, defaultHighlightStyle, python,
} from "./vendor/codemirror/codemirror.min.js";

function attach(box) {
  const label = document.querySelector(`label[for="${box.id}"]`);
  if (label && !label.id) label.id = `${box.id}-label`;
  const help = document.createElement("p");
  help.className = "meta editor-help";
  help.id = `${box.id}-editor-help`;
  help.textContent = box.dataset.editorHelp || "";
  const holder = document.createElement("div");
  holder.className = "code-editor";
  const editable = new Compartment();
  const described = [box.getAttribute("aria-describedby") || "", help.id].join(" ").trim();
  // In the page before the editor is made: it measures its lines (and the gutter's) on creation.
  box.hidden = true;
  box.insertAdjacentElement("afterend", holder);
  holder.insertAdjacentElement("afterend", help);
  const view = new EditorView({
    parent: holder,
    state: EditorState.create({
      doc: box.value,
      extensions: [
        lineNumbers(), highlightActiveLineGutter(), highlightSpecialChars(), history(), drawSelection(),
        indentOnInput(), bracketMatching(), highlightActiveLine(), indentUnit.of("    "), python(),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
        editable.of(EditorView.editable.of(!box.disabled)),
        EditorView.contentAttributes.of({
          "aria-labelledby": label ? label.id : "", "aria-describedby": described, spellcheck: "false",
        }),
        EditorView.updateListener.of((update) => {
          if (!update.docChanged) return;
          box.value = update.state.doc.toString();
          box.dispatchEvent(new Event("input", { bubbles: true })); // the byte counter listens here
        }),
      ],
    }),
  });
  if (label) label.addEventListener("click", (event) => { event.preventDefault(); view.focus(); });
  // A chosen file sets the text box aside (app.js disables it): the editor follows.
  new MutationObserver(() => {
    view.dispatch({ effects: editable.reconfigure(EditorView.editable.of(!box.disabled)) });
    holder.classList.toggle("disabled", box.disabled);
  }).observe(box, { attributes: true, attributeFilter: ["disabled"] });
  box.codeEditor = view; // for tests and the console
}

document.querySelectorAll("textarea[data-editor=python]").forEach(attach);
