#!/usr/bin/env bash
# Installs the component toolchains for plugins written in JavaScript and Python (issue 15),
# pinned, from the package registries, into a cache directory that later runs reuse:
#   $PADDOCK_AUTHORING_TOOLS (default ~/.cache/paddock/authoring-tools)
#     js/node_modules/.bin/componentize-js   (npm: @bytecodealliance/componentize-js, .ci/authoring/package-lock.json)
#     py/bin/componentize-py                 (PyPI: componentize-py, .ci/authoring/requirements.txt)
# A run with both already at the pinned versions installs nothing. Prints the time it took.
# `cargo xtask build-plugins` builds plugins/examples/{js,py}-* with them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tools="${PADDOCK_AUTHORING_TOOLS:-$HOME/.cache/paddock/authoring-tools}"
mkdir -p "$tools/js"
start=$(date +%s)

if ! cmp -s "$here/authoring/package-lock.json" "$tools/js/package-lock.json" \
    || [ ! -x "$tools/js/node_modules/.bin/componentize-js" ]; then
    cp "$here/authoring/package.json" "$here/authoring/package-lock.json" "$tools/js/"
    (cd "$tools/js" && npm ci --no-audit --no-fund --loglevel=error)
fi

if ! cmp -s "$here/authoring/requirements.txt" "$tools/py/requirements.txt" \
    || [ ! -x "$tools/py/bin/componentize-py" ]; then
    rm -rf "$tools/py"
    python3 -m venv "$tools/py"
    "$tools/py/bin/pip" install --quiet --disable-pip-version-check -r "$here/authoring/requirements.txt"
    cp "$here/authoring/requirements.txt" "$tools/py/requirements.txt"
fi

echo "authoring tools in $tools: $("$tools/js/node_modules/.bin/componentize-js" --version) (componentize-js)," \
    "$("$tools/py/bin/componentize-py" --version); installed in $(( $(date +%s) - start )) s"
