// The entry point of codemirror.min.js: the parts of CodeMirror 6 the code editor uses (see BUILD.md).
export { EditorState, Compartment } from "@codemirror/state";
export {
  EditorView, keymap, lineNumbers, highlightActiveLine, highlightActiveLineGutter, drawSelection,
  highlightSpecialChars,
} from "@codemirror/view";
export { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
export {
  bracketMatching, indentOnInput, indentUnit, syntaxHighlighting, defaultHighlightStyle,
} from "@codemirror/language";
export { python } from "@codemirror/lang-python";
