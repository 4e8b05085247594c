"""Syntax highlighting for `.net` specs: a Pygments lexer (`pygments_lexer`)
and the TextMate grammar editors use (`textmate`), both built from the grammar
file and the registry's names (`vocabulary`)."""
