// Converts the Stanford bunny of the npm package `bunny` (positions and cells as JS arrays) to
// assets/bunny.obj. Run once: cd /tmp && npm pack bunny && tar xzf bunny-*.tgz &&
//   node <repo>/scripts/convert-bunny.js /tmp/package <repo>/assets/bunny.obj
const path = require('path');
const fs = require('fs');
const [dir, out] = process.argv.slice(2);
if (!dir || !out) {
  console.error('usage: node convert-bunny.js <unpacked bunny package dir> <out.obj>');
  process.exit(1);
}
const bunny = require(path.resolve(dir));
const lines = [
  '# Stanford bunny (Stanford 3D Scanning Repository), from the npm package "bunny" 1.0.1',
  `# ${bunny.positions.length} vertices, ${bunny.cells.length} triangles; see assets/README.md`,
];
for (const p of bunny.positions) lines.push(`v ${p[0]} ${p[1]} ${p[2]}`);
for (const c of bunny.cells) lines.push(`f ${c[0] + 1} ${c[1] + 1} ${c[2] + 1}`);
fs.writeFileSync(out, lines.join('\n') + '\n');
console.log(`wrote ${out}: ${bunny.positions.length} vertices, ${bunny.cells.length} triangles`);
