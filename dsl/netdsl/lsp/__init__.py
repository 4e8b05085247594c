"""The language server (`netdsl lsp`): the library in process, over stdio, without TensorFlow.

server.py wires the LSP methods to one module per feature: documents (open
buffers), checking + diagnostics (the same diagnostics as `netdsl check`),
names (where names are defined and used), hover, completion (and signature
help), navigation (definition, references, rename), symbols (outline and
inlay hints). Needs the `lsp` extra: pip install 'netdsl[lsp]'.
"""
