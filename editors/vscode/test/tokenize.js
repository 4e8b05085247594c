// Tokenize text with the TextMate grammar, using the engine VS Code uses
// (vscode-textmate + vscode-oniguruma). Used by tests/highlight/test_textmate.py.
//
//   node test/tokenize.js GRAMMAR.json < texts.json > tokens.json
//
// Reads a JSON list of texts; prints, for each text, for each of its lines,
// the line's tokens: [[[[text, [scope, ...]], ...], ...], ...]. A run of equal
// scopes (`meta.group` 300 parentheses deep) is given once, to keep it small.
"use strict";
const fs = require("fs");
const path = require("path");
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

async function main() {
  const grammarPath = process.argv[2];
  const wasm = fs.readFileSync(path.join(path.dirname(require.resolve("vscode-oniguruma")), "onig.wasm"));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async () => vsctm.parseRawGrammar(fs.readFileSync(grammarPath, "utf8"), grammarPath),
  });
  const grammar = await registry.loadGrammar("source.netdsl");
  const texts = JSON.parse(fs.readFileSync(0, "utf8"));
  process.stdout.write(JSON.stringify(texts.map((text) => tokenize(grammar, text))));
}

function tokenize(grammar, text) {
  let state = vsctm.INITIAL;
  const lines = [];
  for (const line of text.split("\n")) {
    const result = grammar.tokenizeLine(line, state);
    if (result.stoppedEarly) throw new Error("tokenizing stopped early on: " + line);
    lines.push(result.tokens.map((t) => [
      line.slice(t.startIndex, t.endIndex),
      t.scopes.filter((scope, i) => scope !== t.scopes[i - 1]),
    ]));
    state = result.ruleStack;
  }
  return lines;
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack || err) + "\n");
  process.exit(1);
});
