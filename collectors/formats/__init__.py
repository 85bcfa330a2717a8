"""The format families, one folder each; `collectors.registry` lists their parsers."""
