'use strict';
// index.d.ts tells the truth: every class member and export it declares exists at run time,
// and every export exists in it. (tests/it/language_apis.rs checks the declarations against
// the Rust API, so that together the package cannot drift from it.)

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const embedis = require('embedis');

const declarations = fs.readFileSync(path.join(path.dirname(require.resolve('embedis')), 'index.d.ts'), 'utf8');

/** `{ ClassName: [{ name, isStatic }] }` from the declaration file's `export class` blocks. */
function declaredClasses() {
  const classes = {};
  let current = null;
  for (const line of declarations.split('\n')) {
    const opening = line.match(/^export class (\w+)/);
    if (opening) {
      classes[opening[1]] = [];
      // `export class X extends Y {}` declares no members of its own.
      current = line.trimEnd().endsWith('{}') ? null : classes[opening[1]];
      continue;
    }
    if (line.startsWith('}')) current = null;
    const member = line.match(/^ {2}(static )?(readonly )?(\w+)\??[(:<]/);
    if (current && member) current.push({ name: member[3], isStatic: Boolean(member[1]) });
  }
  return classes;
}

test('every declared class member exists', () => {
  const classes = declaredClasses();
  assert.ok(Object.keys(classes).length >= 7, Object.keys(classes).join());
  assert.ok(classes.Server.length >= 12, 'the Server block was read');
  for (const [className, members] of Object.entries(classes)) {
    const cls = embedis[className];
    assert.equal(typeof cls, 'function', `${className} is exported`);
    for (const { name, isStatic } of members) {
      const where = isStatic ? cls : cls.prototype;
      assert.ok(name in where, `${className}${isStatic ? '.' : '#'}${name} is declared but missing`);
    }
  }
});

test('every export is declared and every declared export exists', () => {
  const declared = [...declarations.matchAll(/^export (?:class|function|const) (\w+)/gm)].map((m) => m[1]);
  assert.deepEqual([...declared].sort(), Object.keys(embedis).sort());
});
