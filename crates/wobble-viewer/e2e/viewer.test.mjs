// End-to-end tests of `wobble view`: the real binary, the real page, Debian's
// Chromium in headless mode (WebGL through SwiftShader). Every check waits on
// simulated time or on state the server reports — never on wall-clock sleeps — and
// every test loads the page afresh.
//
// Run: npm ci && npm test (the binary is WOBBLE_BIN, else target/release/wobble or
// target/debug/wobble, whichever is newer). Screenshots go to target/e2e-screenshots/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const shots = path.join(root, 'target', 'e2e-screenshots');
const BACKGROUND = [0x20, 0x24, 0x2b];

// The default scene's cloth: 32 × 32 particles, the first body.
const CLOTH_N = 32;
const CLOTH_MIDDLE = 16 * CLOTH_N + 16;

function wobbleBinary() {
  if (process.env.WOBBLE_BIN) return process.env.WOBBLE_BIN;
  const found = ['release', 'debug']
    .map((p) => path.join(root, 'target', p, 'wobble'))
    .filter((p) => fs.existsSync(p))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  if (!found.length) throw new Error('no wobble binary: run `cargo build -p wobble-cli` first or set WOBBLE_BIN');
  return found[0];
}

let server;
let url;
let context;
let userDataDir;
/** Uncaught exceptions in any page: none expected. */
const pageErrors = [];

before(async () => {
  fs.mkdirSync(shots, { recursive: true });
  server = spawn(wobbleBinary(), ['view', '--port', '0'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  url = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (chunk) => {
      out += chunk;
      // The URL carries the launch token; the page trades it for a cookie.
      const m = out.match(/http:\/\/127\.0\.0\.1:\d+\/\?t=[0-9a-f]{32}/);
      if (m) resolve(m[0]);
    });
    server.on('exit', (code) => reject(new Error(`wobble view exited with ${code}: ${out}`)));
  });
  userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wobble-e2e-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1000, height: 700 },
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--use-angle=swiftshader', '--enable-unsafe-swiftshader',
    ],
  });
});

after(async () => {
  assert.deepEqual(pageErrors, [], 'uncaught exceptions in the page');
  if (context) await context.close();
  if (server) server.kill();
  if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
});

/** A freshly loaded page on a paused, freshly reset default scene at step 0. */
async function freshPage() {
  const page = await context.newPage();
  page.setDefaultTimeout(60000);
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForFunction(() => window.wobble && window.wobble.state.ready);
  const generation = await page.evaluate(() => window.wobble.state.topology.generation);
  await page.evaluate(() => { window.wobble.send({ type: 'pause' }); window.wobble.send({ type: 'reset' }); });
  await page.waitForFunction((g) => {
    const s = window.wobble.state;
    return s.topology.generation > g && s.status && s.status.generation === s.topology.generation
      && !s.status.playing && s.status.steps === 0 && s.frameSteps === 0;
  }, generation);
  // One more animation frame so the canvas shows the reset state.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  return page;
}

/** Steps the paused simulation `n` times and resolves once the server has done so. */
async function step(page, n) {
  return page.evaluate(async (n) => {
    const before = (await window.wobble.query([0])).steps;
    window.wobble.send({ type: 'step', n });
    // The server answers after the steps: a second or several for 1000 steps of the
    // default scene in a debug build sharing two cores with Chromium's software GL.
    const after = await window.wobble.request({ type: 'query', particles: [0] }, 'particles', 60000);
    if (after.steps !== before + n) throw new Error(`stepped ${after.steps - before}, not ${n}`);
    return after.steps;
  }, n);
}

const query = (page, particles) => page.evaluate((p) => window.wobble.query(p), particles);
const dist = (a, b) => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);

/** RGB of canvas pixels at client positions, read from the WebGL drawing buffer. */
async function pixels(page, points) {
  return page.evaluate((points) => {
    const gl = document.querySelector('#view canvas');
    const c = document.createElement('canvas');
    c.width = gl.width; c.height = gl.height;
    const ctx = c.getContext('2d');
    ctx.drawImage(gl, 0, 0);
    const r = gl.getBoundingClientRect();
    const all = ctx.getImageData(0, 0, c.width, c.height).data;
    const at = (p) => {
      const x = Math.round((p.x - r.left) * (c.width / r.width));
      const y = Math.round((p.y - r.top) * (c.height / r.height));
      const k = 4 * (y * c.width + x);
      return [all[k], all[k + 1], all[k + 2]];
    };
    let differing = 0;
    for (let k = 0; k < all.length; k += 4) {
      if (Math.abs(all[k] - 0x20) + Math.abs(all[k + 1] - 0x24) + Math.abs(all[k + 2] - 0x2b) > 24) differing++;
    }
    return { at: points.map(at), fraction: differing / (c.width * c.height) };
  }, points);
}

const differs = (rgb) => Math.abs(rgb[0] - BACKGROUND[0]) + Math.abs(rgb[1] - BACKGROUND[1]) + Math.abs(rgb[2] - BACKGROUND[2]) > 24;

test('the canvas shows the bodies where they are and background elsewhere', async () => {
  const page = await freshPage();
  const topo = await page.evaluate(() => window.wobble.state.topology);
  assert.equal(topo.scene, '<built-in default: scenes/default.toml>');
  const ball = topo.bodies.find((b) => b.name === 'ball');
  // Inside the cloth (between particles, so on triangles) and the ball's centre.
  const targets = await page.evaluate(([m, ballStart, ballEnd]) => {
    const x = window.wobble.state;
    const mid = (a, b) => { const p = window.wobble.screenOf(a), q = window.wobble.screenOf(b); return { x: (p.x + q.x) / 2, y: (p.y + q.y) / 2 }; };
    // Ball centre on screen: mean of its particles' screen positions.
    let sx = 0, sy = 0;
    for (let i = ballStart; i < ballEnd; i++) { const p = window.wobble.screenOf(i); sx += p.x; sy += p.y; }
    return [mid(m, m + 33), mid(m - 40, m - 7), { x: sx / (ballEnd - ballStart), y: sy / (ballEnd - ballStart) }];
  }, [CLOTH_MIDDLE, ball.start, ball.end]);
  // Background: the view's top-left corner, above and left of everything.
  const result = await pixels(page, [...targets, { x: 3, y: 3 }]);
  await page.screenshot({ path: path.join(shots, 'viewer.png') });
  for (let k = 0; k < 3; k++) assert.ok(differs(result.at[k]), `body pixel ${k} at ${JSON.stringify(targets[k])} is background: ${result.at[k]}`);
  assert.ok(!differs(result.at[3]), `the corner is not background: ${result.at[3]}`);
  assert.ok(result.fraction > 0.02 && result.fraction < 0.8, `fraction of body pixels ${result.fraction}`);
  // Springs coloured by stretch (000 Fig. 3): drawn where the cloth is.
  await page.check('#show-springs');
  await page.uncheck('#show-surface');
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const springPixels = await pixels(page, [targets[0]]);
  await page.screenshot({ path: path.join(shots, 'springs.png') });
  const [r, g] = springPixels.at[0];
  assert.ok(g > r + 40, `the slack springs of the cloth at rest are green: ${springPixels.at[0]}`);
  await page.uncheck('#show-springs');
  await page.check('#show-surface');
  // Running: the cloth drapes over the post; wait on simulated time.
  await page.click('#play');
  await page.waitForFunction(() => window.wobble.state.frameTime > 1.0, null, { timeout: 120000 });
  await page.click('#pause');
  await page.screenshot({ path: path.join(shots, 'viewer-running.png') });
  await page.close();
});

test('dragging a surface particle with the mouse pulls it toward the cursor', async () => {
  const page = await freshPage();
  const p = await page.evaluate((i) => window.wobble.screenOf(i), CLOTH_MIDDLE);
  await page.mouse.move(p.x, p.y);
  await page.mouse.down();
  await page.mouse.move(p.x + 60, p.y - 70, { steps: 6 });
  // The server reports the grab and the cursor the page sent last: the point under
  // the mouse on the plane through the particle facing the camera.
  await page.waitForFunction(() => window.wobble.state.grabbed !== null);
  const target = await page.evaluate(({ x, y }) => window.wobble.worldAt(x, y, window.wobble.state.grabbed),
    { x: p.x + 60, y: p.y - 70 });
  await page.waitForFunction((t) => {
    const g = window.wobble.state.status.grab;
    return g && Math.hypot(g.cursor[0] - t[0], g.cursor[1] - t[1], g.cursor[2] - t[2]) < 1e-4;
  }, target);
  const grab = await page.evaluate(() => window.wobble.state.status.grab);
  const i = grab.particle;
  assert.ok(Math.abs(Math.floor(i / CLOTH_N) - 16) <= 1 && Math.abs((i % CLOTH_N) - 16) <= 1, `picked particle ${i} is under the pointer`);
  const x0 = (await query(page, [i])).x[0];
  const d0 = dist(x0, grab.cursor);
  await step(page, 1000); // 0.2 s
  const x1 = (await query(page, [i])).x[0];
  const d1 = dist(x1, grab.cursor);
  await page.screenshot({ path: path.join(shots, 'drag.png') });
  assert.ok(d0 > 0.05, `the cursor moved away from the particle: ${d0} m`);
  assert.ok(d1 < 0.5 * d0, `the particle went from ${d0} m to ${d1} m of the cursor`);
  await page.mouse.up();
  await page.waitForFunction(() => window.wobble.state.status.grab === null);
  await page.close();
});

test('moving a parameter slider changes the simulation', async () => {
  // Reference: the cloth's middle falls under the scene's gravity.
  let page = await freshPage();
  const start = (await query(page, [CLOTH_MIDDLE])).x[0];
  await step(page, 1000);
  const dropDefault = start[1] - (await query(page, [CLOTH_MIDDLE])).x[0][1];
  await page.close();

  page = await freshPage();
  const slider = page.locator('input[data-key="gravity.g"]');
  await slider.scrollIntoViewIfNeeded();
  const box = await slider.boundingBox();
  await page.mouse.click(box.x + 1, box.y + box.height / 2); // to the left end: g = 0
  await page.waitForFunction(() => {
    const g = window.wobble.state.params.find((p) => p.key === 'gravity.g');
    return g && g.value < 0.5;
  });
  const g = await page.evaluate(() => window.wobble.state.params.find((p) => p.key === 'gravity.g').value);
  await step(page, 1000);
  const dropSlider = start[1] - (await query(page, [CLOTH_MIDDLE])).x[0][1];
  await page.screenshot({ path: path.join(shots, 'slider.png') });
  assert.ok(dropDefault > 0.05, `with g = 9.81 the middle falls ${dropDefault} m in 0.2 s`);
  assert.ok(dropSlider < 0.2 * dropDefault, `with g = ${g} it falls ${dropSlider} m, with 9.81 ${dropDefault} m`);
  await page.close();
});

test('shift-click pins a particle and it stays put', async () => {
  const page = await freshPage();
  const before = await page.evaluate(() => window.wobble.state.pinned.slice());
  const p = await page.evaluate((i) => window.wobble.screenOf(i), CLOTH_MIDDLE);
  await page.keyboard.down('Shift');
  await page.mouse.click(p.x, p.y);
  await page.keyboard.up('Shift');
  await page.waitForFunction((n) => window.wobble.state.pinned.length === n + 1, before.length);
  const pinned = (await page.evaluate(() => window.wobble.state.pinned)).find((i) => !before.includes(i));
  const neighbour = pinned + 3;
  const q0 = await query(page, [pinned, neighbour]);
  await step(page, 1000);
  const q1 = await query(page, [pinned, neighbour]);
  await page.screenshot({ path: path.join(shots, 'pin.png') });
  assert.deepEqual(q1.pinned, [true, false]);
  assert.deepEqual(q1.x[0], q0.x[0], 'the pinned particle has not moved at all');
  assert.ok(dist(q1.x[1], q0.x[1]) > 1e-3, 'a free particle three columns away moved');
  // Shift-click again unpins.
  await page.keyboard.down('Shift');
  await page.mouse.click(p.x, p.y);
  await page.keyboard.up('Shift');
  await page.waitForFunction((n) => window.wobble.state.pinned.length === n, before.length);
  await page.close();
});

test('the token is needed, traded for a cookie, and dropped from the address bar', async () => {
  const origin = new URL(url).origin;
  // Without the cookie and without the token, the page and its script are refused.
  const request = context.request;
  await context.clearCookies();
  const page = await context.newPage();
  let response = await page.goto(`${origin}/`);
  assert.equal(response.status(), 403);
  response = await page.goto(`${origin}/?t=${'0'.repeat(32)}`);
  assert.equal(response.status(), 403, 'a wrong token of the right length');
  response = await request.get(`${origin}/app.js`);
  assert.equal(response.status(), 403);
  // With the token: redirected to a clean address, the page connects over the cookie.
  response = await page.goto(url, { waitUntil: 'load' });
  assert.equal(response.status(), 200);
  assert.equal(page.url(), `${origin}/`);
  await page.waitForFunction(() => window.wobble && window.wobble.state.ready);
  const cookies = await context.cookies(origin);
  const cookie = cookies.find((c) => c.name === `wobble-${new URL(url).port}`);
  assert.ok(cookie && cookie.httpOnly && cookie.sameSite === 'Strict', JSON.stringify(cookies));
  assert.equal(await page.evaluate(() => document.cookie), '', 'the page script cannot read the cookie');
  await page.close();
});

test('a malformed WebSocket message is answered with an error and the server keeps running', async () => {
  const page = await freshPage();
  await page.evaluate(() => window.wobble.sendRaw('{"type": "step", "n": }'));
  await page.waitForFunction(() => window.wobble.state.errors.some((e) => e.startsWith('malformed message')));
  await page.evaluate(() => window.wobble.sendRaw('\u0000\u0001 garbage'));
  await page.waitForFunction(() => window.wobble.state.errors.filter((e) => e.startsWith('malformed message')).length >= 2);
  await page.screenshot({ path: path.join(shots, 'error.png') });
  // The same connection and a new page are still served.
  assert.equal(await step(page, 10), 10);
  await page.close();
  const again = await freshPage();
  assert.equal(await step(again, 5), 5);
  await again.close();
});

test('two tabs watch the same simulation, and closing one leaves the other running', async () => {
  const a = await freshPage();
  const b = await context.newPage();
  b.setDefaultTimeout(60000);
  await b.goto(url, { waitUntil: 'load' });
  await b.waitForFunction(() => window.wobble && window.wobble.state.ready);
  const steps = await step(a, 50);
  // b draws the frame of the step a asked for.
  await b.waitForFunction((n) => window.wobble.state.frameSteps === n, steps);
  const [xa, xb] = await Promise.all([query(a, [CLOTH_MIDDLE]), query(b, [CLOTH_MIDDLE])]);
  assert.deepEqual(xa.x, xb.x);
  await b.waitForFunction(() => window.wobble.state.status.clients >= 2);
  await a.close();
  await b.click('#play');
  await b.waitForFunction((n) => window.wobble.state.frameSteps > n + 100, steps);
  await b.click('#pause');
  await b.close();
});

test('a blow-up shows the CLI text on the page and reset recovers', async () => {
  const page = await freshPage();
  await page.fill('#dt', '0.05');
  await page.locator('#dt').dispatchEvent('change');
  await page.waitForFunction(() => window.wobble.state.status.dt === 0.05);
  await page.fill('#step-n', '100');
  await page.click('#step');
  await page.waitForFunction(() => window.wobble.state.status.halted !== null);
  const banner = await page.locator('#banner').innerText();
  const halted = await page.evaluate(() => window.wobble.state.status.halted);
  assert.match(halted, /^the simulation blew up at step \d+/);
  assert.ok(banner.startsWith(halted), banner);
  await page.screenshot({ path: path.join(shots, 'blowup.png') });
  await page.click('#reset');
  await page.waitForFunction(() => window.wobble.state.status.halted === null && window.wobble.state.status.steps === 0);
  assert.equal(await page.locator('#banner').isHidden(), true);
  assert.equal(await step(page, 10), 10);
  await page.close();
});
