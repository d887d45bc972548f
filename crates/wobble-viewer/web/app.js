// wobble viewer page: draws the frames the server streams and sends the user's
// gestures back as JSON control messages (see crates/wobble-viewer/src/protocol.rs).
import * as THREE from 'three';
import { OrbitControls } from '/vendor/OrbitControls.js';

const FRAME_MAGIC = 0x31464257; // "WBF1" little-endian
const HEADER_BYTES = 40;

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- scene graph
const container = $('view');
const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
renderer.setPixelRatio(window.devicePixelRatio);
renderer.setClearColor(0x20242b);
container.appendChild(renderer.domElement);

const scene = new THREE.Scene();
const camera = new THREE.PerspectiveCamera(45, 1, 0.01, 1000);
scene.add(new THREE.HemisphereLight(0xffffff, 0x404050, 1.6));
const sun = new THREE.DirectionalLight(0xffffff, 1.8);
sun.position.set(2, 4, 3);
scene.add(sun);

// The gesture handler is registered before OrbitControls so that it can switch
// the controls off when the pointer lands on a body.
renderer.domElement.addEventListener('pointerdown', onPointerDown);
const controls = new OrbitControls(camera, renderer.domElement);
controls.enableDamping = false;

const group = new THREE.Group();
scene.add(group);

/** Everything built from one topology message. */
let model = null;
/** Client state visible to tests through window.wobble. */
const state = {
  ready: false,
  connected: false,
  hello: null,
  topology: null,
  status: null,
  params: [],
  pinned: [],
  frames: 0,
  frameSteps: -1,
  frameTime: 0,
  errors: [],
  replies: [],
  grabbed: null,
};

function resize() {
  const w = container.clientWidth, h = container.clientHeight;
  renderer.setSize(w, h);
  camera.aspect = w / Math.max(h, 1);
  camera.updateProjectionMatrix();
}
window.addEventListener('resize', resize);
resize();

function disposeModel() {
  if (!model) return;
  group.clear();
  for (const g of model.geometries) g.dispose();
  model = null;
}

function buildModel(topo, keepCamera) {
  disposeModel();
  const n = topo.vertices; // particles, then vertices of drawn surfaces (tubes, rigid shapes)
  const positions = new THREE.BufferAttribute(new Float32Array(3 * n), 3);
  positions.setUsage(THREE.DynamicDrawUsage);
  const colors = new THREE.BufferAttribute(new Float32Array(3 * n).fill(0.8), 3);
  colors.setUsage(THREE.DynamicDrawUsage);
  const geometries = [];
  const geometry = (index) => {
    const g = new THREE.BufferGeometry();
    g.setAttribute('position', positions);
    g.setAttribute('color', colors);
    if (index) g.setIndex(index);
    geometries.push(g);
    return g;
  };

  // Which particles a triangle or a line draws; the others are drawn as points.
  const covered = new Uint8Array(n);
  for (const i of topo.triangles) covered[i] = 1;
  for (const i of topo.lines) covered[i] = 1;
  const loose = [];
  for (let i = 0; i < n; i++) if (!covered[i]) loose.push(i);

  const surfaceGeometry = geometry(topo.triangles.length ? topo.triangles : null);
  const surface = new THREE.Mesh(surfaceGeometry, new THREE.MeshStandardMaterial({
    vertexColors: true, side: THREE.DoubleSide, roughness: 0.7, metalness: 0.0,
    polygonOffset: true, polygonOffsetFactor: 1, polygonOffsetUnits: 1,
  }));
  surface.visible = topo.triangles.length > 0;
  const lines = new THREE.LineSegments(geometry(topo.lines.length ? topo.lines : null),
    new THREE.LineBasicMaterial({ vertexColors: true }));
  lines.visible = topo.lines.length > 0;
  // Springs have a colour each (green slack, red stretched, as in 000 Fig. 3), so
  // their geometry has two vertices of its own per segment, refreshed every frame.
  const springGeometry = new THREE.BufferGeometry();
  const S = topo.segments.length / 2;
  springGeometry.setAttribute('position', new THREE.BufferAttribute(new Float32Array(6 * S), 3).setUsage(THREE.DynamicDrawUsage));
  springGeometry.setAttribute('color', new THREE.BufferAttribute(new Float32Array(6 * S), 3).setUsage(THREE.DynamicDrawUsage));
  geometries.push(springGeometry);
  const springs = new THREE.LineSegments(springGeometry, new THREE.LineBasicMaterial({ vertexColors: true }));
  const pointSize = Math.max(topo.size * 0.012, 1e-4);
  const allPoints = new THREE.Points(geometry(null),
    new THREE.PointsMaterial({ vertexColors: true, size: pointSize }));
  const loosePoints = new THREE.Points(geometry(loose.length ? loose : null),
    new THREE.PointsMaterial({ vertexColors: true, size: pointSize * 1.5 }));
  loosePoints.visible = loose.length > 0;
  const pins = new THREE.Points(geometry(null), new THREE.PointsMaterial({ color: 0xff3b3b, size: pointSize * 2.2 }));
  const grabLine = new THREE.Line(new THREE.BufferGeometry(), new THREE.LineBasicMaterial({ color: 0xffe14d }));
  grabLine.geometry.setAttribute('position', new THREE.BufferAttribute(new Float32Array(6), 3));
  geometries.push(grabLine.geometry);
  grabLine.visible = false;
  for (const o of [surface, lines, springs, allPoints, loosePoints, pins, grabLine]) {
    o.frustumCulled = false;
    group.add(o);
  }
  const colliders = topo.colliders.map((c) => colliderObject(c, topo));
  for (const o of colliders) {
    group.add(o);
    o.traverse((x) => { if (x.geometry) geometries.push(x.geometry); });
  }

  // Strain: incident segments per particle, rest lengths (measured from the first
  // frame where the server does not know them).
  const seg = Uint32Array.from(topo.segments);
  const rest = new Float32Array(topo.rest.length);
  const restKnown = new Uint8Array(topo.rest.length);
  topo.rest.forEach((r, k) => { if (r !== null) { rest[k] = r; restKnown[k] = 1; } });

  model = {
    topo, n, positions, colors, geometries, surface, lines, springs, allPoints, loosePoints, pins, grabLine, colliders,
    seg, rest, restKnown, restMeasured: false, strain: new Float32Array(n), hasFrame: false,
  };
  setPins(topo.pinned);
  applyVisibility();
  if (!keepCamera) frameCamera(topo);
}

// Colliders: spheres, boxes and meshes drawn solid and dim; floors (upward planes) as a grid around
// the bodies; other planes (walls, ceilings) are left out so that they never hide
// the bodies. Every collider gets an object, so frame offsets match by index.
function colliderObject(c, topo) {
  let o;
  if (c.shape === 'sphere') {
    o = new THREE.Mesh(new THREE.SphereGeometry(c.radius * 0.995, 48, 24),
      new THREE.MeshStandardMaterial({ color: 0x59606b, roughness: 0.9 }));
    o.position.set(...c.center);
  } else if (c.shape === 'mesh') {
    // Boxes and triangle meshes arrive as triangles in world coordinates at t = 0.
    const g = new THREE.BufferGeometry();
    g.setAttribute('position', new THREE.Float32BufferAttribute(c.vertices, 3));
    g.setIndex(c.triangles);
    g.computeVertexNormals();
    o = new THREE.Mesh(g, new THREE.MeshStandardMaterial({ color: 0x59606b, roughness: 0.9, side: THREE.DoubleSide }));
  } else if (c.normal[1] > 0.9) {
    const extent = Math.max(topo.size * 3, 0.5);
    o = new THREE.GridHelper(extent, 24, 0x56606e, 0x3a414c);
    const centre = topo.center;
    o.position.set(centre[0], c.point[1], centre[2]);
  } else {
    o = new THREE.Group();
    o.visible = false;
    o.position.set(...c.point);
  }
  o.userData.base = o.position.clone();
  o.frustumCulled = false;
  return o;
}

function frameCamera(topo) {
  const c = new THREE.Vector3(...topo.center);
  const d = Math.max(topo.size, 0.1);
  camera.near = d * 0.005;
  camera.far = d * 100;
  camera.position.copy(c).add(new THREE.Vector3(0.5, 0.45, 1.0).normalize().multiplyScalar(d * 1.5));
  camera.updateProjectionMatrix();
  controls.target.copy(c);
  controls.update();
}

function applyVisibility() {
  if (!model) return;
  model.surface.visible = $('show-surface').checked && model.topo.triangles.length > 0;
  model.springs.visible = $('show-springs').checked && model.topo.segments.length > 0;
  if (model.springs.visible && model.hasFrame) drawSprings();
  model.allPoints.visible = $('show-particles').checked;
}
for (const id of ['show-surface', 'show-springs', 'show-particles']) $(id).addEventListener('change', applyVisibility);

function setPins(list) {
  state.pinned = list;
  if (!model) return;
  model.pins.geometry.setIndex(list.length ? list : null);
  model.pins.visible = list.length > 0;
}

// ---------------------------------------------------------------- frames
function onFrame(buffer) {
  const view = new DataView(buffer);
  if (buffer.byteLength < HEADER_BYTES || view.getUint32(0, true) !== FRAME_MAGIC) return;
  const generation = view.getUint32(4, true);
  const n = view.getUint32(8, true);
  const m = view.getUint32(32, true);
  if (!model || generation !== model.topo.generation || n !== model.n) return;
  if (buffer.byteLength !== HEADER_BYTES + 12 * (n + m)) return;
  state.frameSteps = Number(view.getBigUint64(16, true));
  state.frameTime = view.getFloat64(24, true);
  model.positions.array.set(new Float32Array(buffer, HEADER_BYTES, 3 * n));
  model.positions.needsUpdate = true;
  const offsets = new Float32Array(buffer, HEADER_BYTES + 12 * n, 3 * m);
  model.colliders.forEach((o, k) => {
    if (k < m) o.position.set(o.userData.base.x + offsets[3 * k], o.userData.base.y + offsets[3 * k + 1], o.userData.base.z + offsets[3 * k + 2]);
  });
  if (!model.restMeasured) measureRest();
  colourByStrain();
  if (model.springs.visible) drawSprings();
  if (model.surface.visible) model.surface.geometry.computeVertexNormals();
  for (const g of model.geometries) { g.boundingSphere = null; g.boundingBox = null; }
  updateGrabLine();
  model.hasFrame = true;
  state.frames++;
}

function segLength(k) {
  const x = model.positions.array, a = 3 * model.seg[2 * k], b = 3 * model.seg[2 * k + 1];
  return Math.hypot(x[a] - x[b], x[a + 1] - x[b + 1], x[a + 2] - x[b + 2]);
}

function measureRest() {
  for (let k = 0; k < model.rest.length; k++) if (!model.restKnown[k]) model.rest[k] = segLength(k);
  model.restMeasured = true;
}

// Strain ε = (r − L)/L of each segment; a particle takes the ε of largest magnitude
// among its segments: red stretched, blue compressed, grey at rest.
function colourByStrain() {
  const c = model.colors.array, s = model.strain;
  if (!$('show-strain').checked || model.rest.length === 0) {
    c.fill(0.78);
    model.colors.needsUpdate = true;
    return;
  }
  s.fill(0);
  for (let k = 0; k < model.rest.length; k++) {
    const L = model.rest[k];
    if (!(L > 0)) continue;
    const e = (segLength(k) - L) / L;
    const a = model.seg[2 * k], b = model.seg[2 * k + 1];
    if (Math.abs(e) > Math.abs(s[a])) s[a] = e;
    if (Math.abs(e) > Math.abs(s[b])) s[b] = e;
  }
  const scale = Number($('strain-scale').value);
  for (let i = 0; i < model.n; i++) {
    const t = Math.max(-1, Math.min(1, s[i] / scale));
    const base = 0.78;
    if (t >= 0) { c[3 * i] = base + (1 - base) * t; c[3 * i + 1] = base * (1 - t) + 0.15 * t; c[3 * i + 2] = base * (1 - t) + 0.1 * t; }
    else { const u = -t; c[3 * i] = base * (1 - u) + 0.15 * u; c[3 * i + 1] = base * (1 - u) + 0.35 * u; c[3 * i + 2] = base + (1 - base) * u; }
  }
  model.colors.needsUpdate = true;
}

// Each spring at its ends' positions, green when slack or compressed through red at
// a stretch of the strain scale.
function drawSprings() {
  const x = model.positions.array, seg = model.seg;
  const p = model.springs.geometry.attributes.position, c = model.springs.geometry.attributes.color;
  const scale = Number($('strain-scale').value);
  for (let k = 0; k < model.rest.length; k++) {
    const a = 3 * seg[2 * k], b = 3 * seg[2 * k + 1];
    p.array.set([x[a], x[a + 1], x[a + 2], x[b], x[b + 1], x[b + 2]], 6 * k);
    const L = model.rest[k];
    const t = L > 0 ? Math.max(0, Math.min(1, (segLength(k) - L) / L / scale)) : 0;
    const r = 0.2 + 0.75 * t, g = 0.8 - 0.65 * t, bl = 0.25 - 0.15 * t;
    c.array.set([r, g, bl, r, g, bl], 6 * k);
  }
  p.needsUpdate = true;
  c.needsUpdate = true;
}

function updateGrabLine() {
  const g = state.status && state.status.grab;
  if (!model) return;
  if (!g || g.particle >= model.n) { model.grabLine.visible = false; return; }
  const x = model.positions.array, a = model.grabLine.geometry.attributes.position;
  const cursor = dragCursor || g.cursor;
  a.array.set([x[3 * g.particle], x[3 * g.particle + 1], x[3 * g.particle + 2], cursor[0], cursor[1], cursor[2]]);
  a.needsUpdate = true;
  model.grabLine.visible = true;
}

// ---------------------------------------------------------------- socket
let ws = null;
const waiters = [];

function send(message) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
}

/** Resolves with the next reply of `type` (after sending `message`, if given). */
function request(message, type, timeoutMs = 10000) {
  return new Promise((resolve, reject) => {
    const waiter = { type, resolve };
    waiters.push(waiter);
    setTimeout(() => {
      const i = waiters.indexOf(waiter);
      if (i >= 0) { waiters.splice(i, 1); reject(new Error(`no ${type} reply within ${timeoutMs} ms`)); }
    }, timeoutMs);
    if (message !== null) send(message);
  });
}

function connect() {
  ws = new WebSocket(`ws://${location.host}/ws`);
  ws.binaryType = 'arraybuffer';
  ws.onopen = () => { state.connected = true; $('connection').textContent = 'connected'; };
  ws.onclose = () => {
    state.connected = false;
    $('connection').textContent = 'disconnected — retrying';
    setTimeout(connect, 1000);
  };
  ws.onmessage = (event) => {
    if (event.data instanceof ArrayBuffer) { onFrame(event.data); return; }
    let msg;
    try { msg = JSON.parse(event.data); } catch { return; }
    onReply(msg);
    for (let i = 0; i < waiters.length; i++) {
      if (waiters[i].type === msg.type) { waiters.splice(i, 1)[0].resolve(msg); break; }
    }
  };
}

function onReply(msg) {
  state.replies.push(msg.type);
  if (state.replies.length > 200) state.replies.shift();
  switch (msg.type) {
    case 'hello': {
      state.hello = msg;
      fillSelect($('integrator'), msg.integrators);
      fillSelect($('scene'), msg.scenes);
      break;
    }
    case 'topology': {
      const sameScene = state.topology && state.topology.scene === msg.scene;
      state.topology = msg;
      state.frameSteps = -1;
      state.frameTime = -1;
      buildModel(msg, sameScene);
      $('scene-name').textContent = msg.scene;
      if (![...$('scene').options].some((o) => o.value === msg.scene)) {
        $('scene').prepend(Object.assign(document.createElement('option'), { value: msg.scene, textContent: msg.scene }));
      }
      $('scene').value = msg.scene;
      $('integrator').value = msg.integrator;
      $('dt').value = msg.dt;
      buildParams(msg.params);
      break;
    }
    case 'status': onStatus(msg); break;
    case 'params': updateParams(msg.params); break;
    case 'pins': setPins(msg.pinned); break;
    case 'grabbed': onGrabbed(msg); break;
    case 'error': showError(msg.message); break;
    case 'busy': showError(msg.message); break;
    default: break;
  }
}

function fillSelect(select, values) {
  select.replaceChildren(...values.map((v) => { const o = document.createElement('option'); o.value = o.textContent = v; return o; }));
}

function fmt(x, digits = 3) {
  if (x === null || x === undefined || !Number.isFinite(x)) return '–';
  return Math.abs(x) >= 1e4 || (Math.abs(x) < 1e-3 && x !== 0) ? x.toExponential(digits - 1) : x.toFixed(digits);
}

function onStatus(s) {
  state.status = s;
  $('o-time').textContent = fmt(s.time, 3);
  $('o-steps').textContent = s.steps;
  $('o-sps').textContent = Math.round(s.steps_per_second);
  $('o-ratio').textContent = fmt(s.realtime_ratio, 2);
  $('o-sfps').textContent = Math.round(s.frames_per_second);
  $('o-ke').textContent = fmt(s.energy.kinetic);
  $('o-pe').textContent = fmt(s.energy.potential);
  $('o-te').textContent = fmt(s.energy.total);
  $('o-vol').textContent = s.volume === null ? '–' : `${fmt(s.volume, 4)} m³`;
  $('play').disabled = s.playing || s.halted !== null;
  $('pause').disabled = !s.playing;
  const banner = $('banner');
  banner.hidden = s.halted === null;
  banner.textContent = s.halted === null ? '' : `${s.halted}\n\nPress Reset to rebuild the scene.`;
  if (document.activeElement !== $('dt')) $('dt').value = s.dt;
  if (document.activeElement !== $('integrator')) $('integrator').value = s.integrator;
}

let errorTimer = null;
function showError(message) {
  state.errors.push(message);
  if (message.startsWith('the simulation blew up')) return; // the banner shows it
  $('errors').textContent = message;
  clearTimeout(errorTimer);
  errorTimer = setTimeout(() => { $('errors').textContent = ''; }, 6000);
}

// ---------------------------------------------------------------- parameters
const paramInputs = new Map();

function buildParams(params) {
  state.params = params;
  const box = $('params');
  box.replaceChildren(Object.assign(document.createElement('h3'), { textContent: 'Parameters' }));
  paramInputs.clear();
  for (const p of params) {
    const row = document.createElement('div');
    row.className = 'param';
    const label = p.key === 'drag.stiffness' ? `${p.key} (MKS)` : p.key === 'drag.damping' ? `${p.key} (MKD)` : p.key;
    const name = document.createElement('div');
    name.className = 'name';
    const value = document.createElement('span');
    name.append(Object.assign(document.createElement('span'), { textContent: `${label} [${p.unit}]` }), value);
    const input = document.createElement('input');
    input.type = 'range';
    input.dataset.key = p.key;
    input.min = Math.min(p.min, p.value);
    input.max = Math.max(p.max, p.value);
    input.step = 'any';
    input.value = p.value;
    value.textContent = fmt(p.value);
    input.addEventListener('input', () => {
      value.textContent = fmt(Number(input.value));
      send({ type: 'param', key: p.key, value: Number(input.value) });
    });
    row.append(name, input);
    box.append(row);
    paramInputs.set(p.key, { input, value });
  }
}

function updateParams(params) {
  state.params = params;
  for (const p of params) {
    const e = paramInputs.get(p.key);
    if (!e) continue;
    if (document.activeElement !== e.input) e.input.value = p.value;
    e.value.textContent = fmt(p.value);
  }
}

// ---------------------------------------------------------------- controls
$('play').onclick = () => send({ type: 'play' });
$('pause').onclick = () => send({ type: 'pause' });
$('step').onclick = () => send({ type: 'step', n: Math.max(1, Math.floor(Number($('step-n').value) || 1)) });
$('reset').onclick = () => send({ type: 'reset' });
$('scene').onchange = () => send({ type: 'load', scene: $('scene').value });
$('integrator').onchange = () => send({ type: 'integrator', name: $('integrator').value });
$('dt').onchange = () => send({ type: 'dt', value: Number($('dt').value) });
$('strain-scale').onchange = () => model && model.hasFrame && colourByStrain();
$('show-strain').onchange = () => model && model.hasFrame && colourByStrain();

// ---------------------------------------------------------------- gestures
const raycaster = new THREE.Raycaster();
let dragPlane = null;
let dragCursor = null;
let pendingCursor = null;

function rayAt(event) {
  const r = renderer.domElement.getBoundingClientRect();
  const ndc = new THREE.Vector2(((event.clientX - r.left) / r.width) * 2 - 1, -((event.clientY - r.top) / r.height) * 2 + 1);
  raycaster.setFromCamera(ndc, camera);
  raycaster.params.Points.threshold = model ? Math.max(model.topo.size * 0.015, 1e-4) : 0.01;
  raycaster.params.Line.threshold = raycaster.params.Points.threshold;
  return raycaster.ray;
}

/** True when the ray meets something the server can pick. */
function hitsBody() {
  if (!model || !model.hasFrame) return false;
  const targets = [model.surface, model.lines, model.loosePoints].filter((o) => o.visible);
  return raycaster.intersectObjects(targets, false).length > 0;
}

function onPointerDown(event) {
  if (event.button !== 0) return;
  const ray = rayAt(event);
  if (!hitsBody()) return; // let OrbitControls orbit
  controls.enabled = false;
  const origin = ray.origin.toArray(), dir = ray.direction.toArray();
  if (event.shiftKey) {
    send({ type: 'pin', origin, dir });
    window.addEventListener('pointerup', () => { controls.enabled = true; }, { once: true });
    return;
  }
  renderer.domElement.setPointerCapture(event.pointerId);
  send({ type: 'grab', origin, dir });
  window.addEventListener('pointermove', onPointerMove);
  window.addEventListener('pointerup', onPointerUp, { once: true });
}

function onGrabbed(msg) {
  state.grabbed = msg.particle;
  if (msg.particle === null || msg.point === null) { dragPlane = null; return; }
  const p = new THREE.Vector3(...msg.point);
  const normal = camera.getWorldDirection(new THREE.Vector3());
  dragPlane = new THREE.Plane().setFromNormalAndCoplanarPoint(normal, p);
  dragCursor = msg.point;
  if (pendingCursor) { moveTo(pendingCursor); pendingCursor = null; }
}

// Pointer events can come faster than the screen refreshes; the server takes a
// bounded number of messages a second, so the cursor goes out once per frame.
let dragQueued = false;
function moveTo(event) {
  const ray = rayAt(event);
  const hit = new THREE.Vector3();
  if (!ray.intersectPlane(dragPlane, hit)) return;
  dragCursor = hit.toArray();
  updateGrabLine();
  if (dragQueued) return;
  dragQueued = true;
  requestAnimationFrame(() => {
    dragQueued = false;
    if (dragCursor) send({ type: 'drag', cursor: dragCursor });
  });
}

function onPointerMove(event) {
  if (!dragPlane) { pendingCursor = { clientX: event.clientX, clientY: event.clientY }; return; }
  moveTo(event);
}

function onPointerUp() {
  window.removeEventListener('pointermove', onPointerMove);
  send({ type: 'release' });
  dragPlane = null;
  dragCursor = null;
  pendingCursor = null;
  controls.enabled = true;
}

// ---------------------------------------------------------------- loop
let drawn = 0;
let fpsSince = performance.now();
function animate() {
  requestAnimationFrame(animate);
  controls.update();
  renderer.render(scene, camera);
  drawn++;
  const now = performance.now();
  if (now - fpsSince >= 1000) {
    $('o-fps').textContent = Math.round((drawn * 1000) / (now - fpsSince));
    drawn = 0;
    fpsSince = now;
  }
  if (model && model.hasFrame) state.ready = true;
}

// Test and console hooks: the state the page sees, and ways to talk to the server.
window.wobble = {
  state,
  send,
  request,
  sendRaw: (text) => ws.send(text),
  query: (particles) => request({ type: 'query', particles }, 'particles'),
  /** Screen position (CSS pixels, relative to the page) of particle i in the last frame. */
  screenOf(i) {
    const x = model.positions.array;
    const v = new THREE.Vector3(x[3 * i], x[3 * i + 1], x[3 * i + 2]).project(camera);
    const r = renderer.domElement.getBoundingClientRect();
    return { x: r.left + ((v.x + 1) / 2) * r.width, y: r.top + ((1 - v.y) / 2) * r.height };
  },
  /** World point under a screen position on the plane through particle i facing the camera. */
  worldAt(clientX, clientY, i) {
    const x = model.positions.array;
    const ray = rayAt({ clientX, clientY });
    const plane = new THREE.Plane().setFromNormalAndCoplanarPoint(camera.getWorldDirection(new THREE.Vector3()),
      new THREE.Vector3(x[3 * i], x[3 * i + 1], x[3 * i + 2]));
    const hit = new THREE.Vector3();
    return ray.intersectPlane(plane, hit) ? hit.toArray() : null;
  },
};

connect();
animate();
