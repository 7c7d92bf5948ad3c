"""The CLI's commands, one module each: `register(commands)` adds its sub-parser and sets
`run` as the parser's handler (see harness/cli.py)."""
