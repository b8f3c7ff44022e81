// The PromQL editor: CodeMirror 6 with @prometheus-io/codemirror-promql,
// completing metric names, label names and values from Aerie's own API.

import { autocompletion, closeBrackets, closeBracketsKeymap, completionKeymap, completionStatus, acceptCompletion } from '@codemirror/autocomplete';
import { defaultKeymap, history, historyKeymap, insertNewlineAndIndent } from '@codemirror/commands';
import { bracketMatching, HighlightStyle, indentOnInput, syntaxHighlighting } from '@codemirror/language';
import { lintKeymap } from '@codemirror/lint';
import { EditorState, Prec, StateEffect, StateField } from '@codemirror/state';
import { Decoration, DecorationSet, drawSelection, EditorView, highlightSpecialChars, keymap, placeholder } from '@codemirror/view';
import { tags } from '@lezer/highlight';
import { PromQLExtension } from '@prometheus-io/codemirror-promql';

const highlight = HighlightStyle.define([
  { tag: tags.number, color: '#09885a' },
  { tag: tags.string, color: '#a31515' },
  { tag: tags.keyword, color: '#008080' },
  { tag: tags.function(tags.variableName), color: '#008080' },
  { tag: tags.labelName, color: '#800000' },
  { tag: tags.modifier, color: '#008080' },
  { tag: tags.invalid, color: 'red' },
  { tag: tags.comment, color: '#888', fontStyle: 'italic' },
]);

// The server's error position, marked until the text changes.
const setServerError = StateEffect.define<{ from: number; to: number } | null>();
const serverError = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(deco, tr) {
    if (tr.docChanged) deco = Decoration.none;
    for (const e of tr.effects) {
      if (e.is(setServerError)) {
        deco = e.value === null ? Decoration.none
          : Decoration.set([Decoration.mark({ class: 'cm-server-error', attributes: { title: 'error position from the server' } }).range(e.value.from, e.value.to)]);
      }
    }
    return deco;
  },
  provide: (f) => EditorView.decorations.from(f),
});

export interface Editor {
  view: EditorView;
  text(): string;
  // markError marks the position of a server error given as 1-based line
  // and column, the column counted in bytes as Prometheus does.
  markError(line: number, col: number): void;
  clearError(): void;
}

export function newEditor(parent: HTMLElement, doc: string, execute: () => void): Editor {
  const promql = new PromQLExtension()
    .activateCompletion(true)
    .activateLinter(true)
    .setComplete({
      remote: {
        url: window.location.origin,
        httpMethod: 'GET',
        // Completion is a convenience: a failed look-up must not flood the
        // console (the browser tests treat console errors as failures).
        httpErrorHandler: () => undefined,
      },
    });
  // Enter picks the selected completion while the list is open and takes
  // keys (CodeMirror ignores them for 75 ms after it opens); otherwise it
  // runs the query. It never inserts a line: Shift+Enter does.
  const run = (v: EditorView): boolean => {
    if (completionStatus(v.state) === 'active' && acceptCompletion(v)) return true;
    execute();
    return true;
  };
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        highlightSpecialChars(),
        history(),
        drawSelection(),
        indentOnInput(),
        bracketMatching(),
        closeBrackets(),
        autocompletion(),
        syntaxHighlighting(highlight),
        placeholder('PromQL expression (Enter runs it, Shift+Enter adds a line)'),
        promql.asExtension(),
        serverError,
        EditorView.lineWrapping,
        Prec.highest(keymap.of([
          { key: 'Enter', run },
          { key: 'Mod-Enter', run: () => { execute(); return true; } },
          { key: 'Shift-Enter', run: insertNewlineAndIndent },
        ])),
        keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, ...completionKeymap, ...lintKeymap]),
      ],
    }),
  });
  return {
    view,
    text: () => view.state.doc.toString(),
    markError(line: number, col: number) {
      const doc = view.state.doc;
      if (line < 1 || line > doc.lines) return;
      const l = doc.line(line);
      // Bytes to characters: count the UTF-8 length of the line's prefix.
      const bytes = new TextEncoder().encode(l.text);
      const prefix = new TextDecoder().decode(bytes.slice(0, Math.max(0, col - 1)));
      let from = l.from + Math.min(prefix.length, l.length);
      let to = from;
      while (to < l.to && !/\s/.test(doc.sliceString(to, to + 1))) to++;
      if (to === from) {
        if (from < l.to) to = from + 1; // a blank: mark it
        else if (from > l.from) to = from--; // the line's end: its last character
      }
      if (to === from) return;
      view.dispatch({ effects: setServerError.of({ from, to }) });
    },
    clearError() {
      view.dispatch({ effects: setServerError.of(null) });
    },
  };
}

// parseErrorPosition finds Prometheus' "LINE:COL: parse error" in an error
// message.
export function parseErrorPosition(msg: string): { line: number; col: number } | null {
  const m = /(\d+):(\d+): parse error/.exec(msg);
  return m ? { line: Number(m[1]), col: Number(m[2]) } : null;
}
