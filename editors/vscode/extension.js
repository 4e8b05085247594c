// The netdsl VS Code extension: starts `netdsl lsp` over stdio for `.net` files.
// Plain JavaScript (no build step); highlighting comes from the TextMate grammar
// in syntaxes/, everything else (diagnostics, hover, completion, ...) from the server.
"use strict";
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client = null;

// `${workspaceFolder}` in the configured path, as in VS Code's own settings.
function expandPath(value) {
  const folders = vscode.workspace.workspaceFolders;
  const root = folders && folders.length ? folders[0].uri.fsPath : "";
  return value.replace(/\$\{workspaceFolder\}/g, root);
}

function serverOptions() {
  const config = vscode.workspace.getConfiguration("netdsl");
  const command = expandPath(config.get("server.path", "netdsl") || "netdsl");
  const args = ["lsp", ...config.get("server.args", [])];
  // No `transport`: the client then speaks over the process's stdin/stdout
  // without adding a `--stdio` flag, so the command is exactly `netdsl lsp`.
  return { command, args };
}

function clientOptions() {
  return {
    documentSelector: [
      { scheme: "file", language: "netdsl" },
      { scheme: "untitled", language: "netdsl" },
    ],
    synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher("**/*.net") },
  };
}

async function start() {
  client = new LanguageClient("netdsl", "netdsl language server", serverOptions(), clientOptions());
  try {
    await client.start();
  } catch (err) {
    client = null;  // nothing to stop; the next restart starts afresh
    const path = serverOptions().command;
    vscode.window.showErrorMessage(
      `netdsl: could not start '${path} lsp' (${err && err.message ? err.message : err}). ` +
      "Install netdsl with its lsp extra (pip install 'netdsl[lsp]') or set netdsl.server.path.");
  }
}

async function stop() {
  if (client) {
    const running = client;
    client = null;
    await running.stop();
  }
}

async function restart() {
  await stop();
  await start();
}

async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand("netdsl.restartServer", restart),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("netdsl.server")) {
        return restart();
      }
      return undefined;
    }),
  );
  await start();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate };
