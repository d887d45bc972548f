// Converts the Stanford bunny shipped by the npm package `bunny` (public domain;
// scanned by the Stanford Computer Graphics Laboratory) into scenes/meshes/bunny.obj.
// Run once, from the repository root, after `npm pack bunny && tar xzf bunny-*.tgz`:
//   node scripts/bunny-to-obj.mjs package/index.js > scenes/meshes/bunny.obj
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const src = process.argv[2];
if (!src) {
  console.error('usage: node scripts/bunny-to-obj.mjs PATH/TO/bunny/index.js > bunny.obj');
  process.exit(2);
}
const bunny = require(path.resolve(src));
const out = ['# The Stanford bunny (Stanford 3D Scanning Repository), from the npm package',
  '# `bunny` 1.0.1 (licence: public domain), converted by scripts/bunny-to-obj.mjs.',
  `# ${bunny.positions.length} vertices, ${bunny.cells.length} triangles; units as in the package`,
  '# (about 10 units tall): scale it in the scene.'];
for (const [x, y, z] of bunny.positions) out.push(`v ${x} ${y} ${z}`);
for (const [a, b, c] of bunny.cells) out.push(`f ${a + 1} ${b + 1} ${c + 1}`);
process.stdout.write(out.join('\n') + '\n');
