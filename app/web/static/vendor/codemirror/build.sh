#!/bin/sh
# Rebuilds codemirror.min.js from the npm registry in a temporary folder (nothing of npm is left in the repo).
# Usage: sh app/web/static/vendor/codemirror/build.sh   (needs node and npm; versions pinned below)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/entry.js" "$work/"
cd "$work"
npm init -y >/dev/null
npm install --no-audit --no-fund --save-exact \
  @codemirror/state@6.7.6 @codemirror/view@6.43.15 @codemirror/commands@6.11.1 \
  @codemirror/language@6.13.1 @codemirror/lang-python@6.2.1 esbuild@0.28.2 >/dev/null
npx esbuild entry.js --bundle --format=esm --minify --legal-comments=none --target=es2020 \
  --outfile="$here/codemirror.min.js"
# The licence of every bundled package (all MIT), for LICENSE beside the bundle.
for d in node_modules/@codemirror/* node_modules/@lezer/* node_modules/@marijn/* node_modules/crelt \
         node_modules/style-mod node_modules/w3c-keyname; do
  [ -f "$d/package.json" ] && node -e 'const p=require(require("path").resolve(process.argv[1])); console.log(p.name+"@"+p.version)' "$d/package.json"
done > "$here/VERSIONS.txt"
