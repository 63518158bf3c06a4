"""The generators: runtime files from runtime/stack.json, the option table of docs/options.md from k6/contract.json."""
