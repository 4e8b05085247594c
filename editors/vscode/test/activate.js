// Drive extension.js outside VS Code: `vscode` and the language client are
// stand-ins that record what the extension asks of them. Used by
// tests/highlight/test_textmate.py, which checks the command line, the document selector,
// restarts on a settings change and the stop on deactivate.
//
//   node test/activate.js '{"server.path": "...", "server.args": [...]}' '/workspace'
"use strict";
const Module = require("module");
const path = require("path");

const settings = JSON.parse(process.argv[2] || "{}");
const workspace = process.argv[3] || "/workspace";
const events = [];
const listeners = [];

const vscode = {
  workspace: {
    workspaceFolders: [{ uri: { fsPath: workspace } }],
    getConfiguration: (section) => ({
      get: (key, fallback) => (key in settings ? settings[key] : fallback),
    }),
    onDidChangeConfiguration: (listener) => { listeners.push(listener); return { dispose() {} }; },
    createFileSystemWatcher: (glob) => ({ glob }),
  },
  commands: {
    registerCommand: (name, fn) => { events.push(["command", name]); return { dispose() {} }; },
  },
  window: {
    showErrorMessage: (message) => events.push(["error", message]),
  },
};

class LanguageClient {
  constructor(id, name, serverOptions, clientOptions) {
    events.push(["client", id, name, serverOptions, clientOptions]);
    this.fail = settings["test.failStart"] === true;
  }
  async start() {
    events.push(["start"]);
    if (this.fail) throw new Error("spawn netdsl ENOENT");
  }
  async stop() { events.push(["stop"]); }
}

const realLoad = Module._load;
Module._load = function (request, parent, isMain) {
  if (request === "vscode") return vscode;
  if (request === "vscode-languageclient/node") return { LanguageClient };
  return realLoad.call(this, request, parent, isMain);
};

async function main() {
  // The real dependency must provide the entry point extension.js names.
  events.push(["resolved", path.relative(path.join(__dirname, ".."),
    require.resolve("vscode-languageclient/node"))]);
  const extension = require("../extension.js");
  const context = { subscriptions: [] };
  await extension.activate(context);
  events.push(["subscriptions", context.subscriptions.length]);
  for (const section of ["editor.fontSize", "netdsl.server"]) {
    events.push(["configuration changed", section]);
    for (const listener of listeners) {
      await listener({ affectsConfiguration: (name) => name === section || section.startsWith(name + ".") });
    }
  }
  await extension.deactivate();
  process.stdout.write(JSON.stringify(events));
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack || err) + "\n");
  process.exit(1);
});
