'use strict';
// Builds the native addon (cargo, release, stripped) and puts it beside index.js as
// embedis.node, the one file `require('./embedis.node')` loads. `npm pack` then makes the
// package from it.

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
execFileSync('cargo', ['build', '--release'], { cwd: root, stdio: 'inherit' });
const names = {
  linux: 'libembedis_node.so',
  darwin: 'libembedis_node.dylib',
  win32: 'embedis_node.dll',
};
const built = path.join(root, 'target', 'release', names[process.platform]);
fs.copyFileSync(built, path.join(root, 'embedis.node'));
console.log(`embedis.node: ${(fs.statSync(built).size / 1e6).toFixed(1)} MB`);
